import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { BriefSchema } from "../../core/brief.js";
import { ResearchError } from "../../core/failure.js";
import { LlmClient, LlmClients, type ChatCompletionMessageParam, type ToolDef } from "../../core/llm/client.js";
import type { Endpoint } from "../../core/llm/config.js";
import { LlmUsageLedger } from "../../core/llm/usage.js";
import { ModelConfigSchema } from "../../core/model-config.js";
import { startFakeOpenAI, type FakeOpenAI, type Script } from "../helpers/fake-openai.js";

const silent = pino({ level: "silent" });
const VALID_CONFIG = { name: "tiny", layers: [{ type: "conv2d", out_channels: 8, kernel_size: 3 }, { type: "global_avgpool" }] };
const BAD_KERNEL = { name: "tiny", layers: [{ type: "conv2d", out_channels: 8, kernel_size: -1 }, { type: "global_avgpool" }] };

let fakes: FakeOpenAI[] = [];
afterEach(async () => {
  await Promise.all(fakes.map((f) => f.close()));
  fakes = [];
});

async function fake(script: Script): Promise<FakeOpenAI> {
  const f = await startFakeOpenAI(script);
  fakes.push(f);
  return f;
}

function endpoint(baseURL: string, overrides: Partial<Endpoint> = {}): Endpoint {
  return {
    provider: "openai",
    model: "fake-model",
    base_url: baseURL,
    api_key_env: "FAKE_KEY",
    timeout_ms: 2_000,
    max_retries: 2,
    concurrency: 4,
    price_per_1k_input: 0,
    price_per_1k_output: 0,
    ...overrides,
  };
}

function client(f: FakeOpenAI, overrides: Partial<Endpoint> = {}, ledger?: LlmUsageLedger): LlmClient {
  return new LlmClient(endpoint(f.baseURL, overrides), { logger: silent, env: { FAKE_KEY: "sk-test" }, retryBaseMs: 5, retryMaxMs: 1_000, ledger });
}

const askConfig = (c: LlmClient, extra: { maxAttempts?: number } = {}) =>
  c.generateObject({ role: "planner", schema: ModelConfigSchema, schemaName: "model_config", system: "You design models.", prompt: "Propose a model.", ...extra });

async function rejection(p: Promise<unknown>): Promise<ResearchError> {
  const err = await p.then(
    () => {
      throw new Error("expected a rejection");
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ResearchError);
  return err as ResearchError;
}

function textOf(m: ChatCompletionMessageParam | undefined): string {
  return typeof m?.content === "string" ? m.content : JSON.stringify(m?.content);
}

describe("generateObject", () => {
  it("asks with json_schema and returns the validated value", async () => {
    const f = await fake([{ content: JSON.stringify(VALID_CONFIG) }]);
    const result = await askConfig(client(f));
    expect(result.attempts).toBe(1);
    expect(result.value.layers[0]).toMatchObject({ type: "conv2d", kernel_size: 3, stride: 1, padding: "same" });
    expect(result.raw).toBe(JSON.stringify(VALID_CONFIG));

    const body = f.requests[0]!.body;
    expect(f.requests[0]!.headers.authorization).toBe("Bearer sk-test");
    expect(body.model).toBe("fake-model");
    expect(body.messages[0]).toEqual({ role: "system", content: "You design models." });
    expect(body.messages[1]).toEqual({ role: "user", content: "Propose a model." });
    expect(body.response_format?.type).toBe("json_schema");
    const format = body.response_format as { json_schema: { name: string; strict: boolean; schema: Record<string, unknown> } };
    expect(format.json_schema.name).toBe("model_config");
    expect(format.json_schema.strict).toBe(false);
    expect(format.json_schema.schema.$schema).toBeUndefined();
    expect(format.json_schema.schema).toHaveProperty("properties.layers");
    // io "input": defaulted fields such as kernel_size are not required of the model.
    expect(JSON.stringify(format.json_schema.schema)).toContain('"required":["type","out_channels"]');
  });

  it("feeds a JSON parse error back and succeeds on the second answer", async () => {
    const f = await fake([{ content: "Sure! {layers: oops" }, { content: "```json\n" + JSON.stringify(VALID_CONFIG) + "\n```" }]);
    const result = await askConfig(client(f));
    expect(result.attempts).toBe(2);
    expect(result.value.name).toBe("tiny");
    const second = f.requests[1]!.body.messages;
    expect(second.at(-2)).toEqual({ role: "assistant", content: "Sure! {layers: oops" });
    expect(textOf(second.at(-1))).toMatch(/is not valid JSON/);
    // The model may not have seen the schema at all (a server that ignores response_format), so the feedback carries it.
    expect(textOf(second.at(-1))).toMatch(/conform to this JSON Schema:\n\{.*"layers"/s);
    expect(result.usage.calls).toBe(2);
    expect(result.usage.failures).toBe(1);
  });

  it("feeds zod issues with their paths back on a schema violation", async () => {
    const f = await fake([{ content: JSON.stringify(BAD_KERNEL) }, { content: JSON.stringify(VALID_CONFIG) }]);
    const result = await askConfig(client(f));
    expect(result.attempts).toBe(2);
    const feedback = textOf(f.requests[1]!.body.messages.at(-1));
    expect(feedback).toMatch(/does not match the schema/);
    expect(feedback).toContain("layers[0].kernel_size");
    expect(feedback).toContain("expected a positive integer");
    expect(feedback).not.toMatch(/JSON Schema/);
  });

  it("gives up after maxAttempts invalid answers with invalid_output and the last raw text", async () => {
    const f = await fake([{ content: "no" }, { content: JSON.stringify(BAD_KERNEL) }, { content: '{"name": ""}' }]);
    const err = await rejection(askConfig(client(f)));
    expect(err.reason).toBe("invalid_output");
    expect(err.raw).toBe('{"name": ""}');
    expect(err.attempts).toBe(3);
    expect(f.requests).toHaveLength(3);
  });

  it("lets a repair hook fix an answer without asking again", async () => {
    const f = await fake([{ content: JSON.stringify({ ...VALID_CONFIG, extra: 1 }) }]);
    const seen: string[] = [];
    const result = await client(f).generateObject({
      role: "planner",
      schema: ModelConfigSchema,
      schemaName: "model_config",
      prompt: "Propose a model.",
      repair: ({ raw, error, kind }) => {
        seen.push(kind, error);
        const { extra: _drop, ...rest } = JSON.parse(raw) as Record<string, unknown>;
        return JSON.stringify(rest);
      },
    });
    expect(f.requests).toHaveLength(1);
    expect(result.attempts).toBe(1);
    expect(seen[0]).toBe("validation");
    expect(seen[1]).toMatch(/extra/);
  });

  it("treats a refusal as a typed error and does not retry", async () => {
    const f = await fake([{ refusal: "I can't help with that." }, { content: "{}" }]);
    const err = await rejection(askConfig(client(f)));
    expect(err.reason).toBe("refusal");
    expect(err.raw).toBe("I can't help with that.");
    expect(f.requests).toHaveLength(1);

    const g = await fake([{ content: "", finishReason: "content_filter" }]);
    expect((await rejection(askConfig(client(g)))).reason).toBe("refusal");
  });

  it("honours retry-after on 429", async () => {
    const f = await fake([{ status: 429, retryAfter: 0.3 }, { content: JSON.stringify(VALID_CONFIG) }]);
    const ledger = new LlmUsageLedger();
    const started = performance.now();
    const result = await askConfig(client(f, {}, ledger));
    expect(performance.now() - started).toBeGreaterThanOrEqual(280);
    expect(result.attempts).toBe(1);
    expect(result.usage).toMatchObject({ calls: 2, failures: 1 });
    expect(ledger.forRole("planner")).toMatchObject({ calls: 2, failures: 1 });
  });

  it("retries 5xx and succeeds on the third request", async () => {
    const f = await fake([{ status: 500 }, { status: 503 }, { content: JSON.stringify(VALID_CONFIG) }]);
    const result = await askConfig(client(f));
    expect(result.value.name).toBe("tiny");
    expect(f.requests).toHaveLength(3);
  });

  it("gives up on persistent rate limiting with rate_limited", async () => {
    const f = await fake([{ status: 429 }, { status: 429 }]);
    const err = await rejection(askConfig(client(f, { max_retries: 1 })));
    expect(err.reason).toBe("rate_limited");
    expect(err.status).toBe(429);
    expect(err.attempts).toBe(2);
  });

  it("times out, retries, and reports timeout", async () => {
    const slow = { delayMs: 1_000, content: JSON.stringify(VALID_CONFIG) };
    const f = await fake([slow, slow]);
    const err = await rejection(askConfig(client(f, { timeout_ms: 100, max_retries: 1 })));
    expect(err.reason).toBe("timeout");
    expect(err.attempts).toBe(2);
    expect(f.requests).toHaveLength(2);
  });

  it("does not retry a plain 4xx", async () => {
    const f = await fake([{ status: 401, body: { error: { message: "bad key", type: "invalid_request_error" } } }]);
    const err = await rejection(askConfig(client(f)));
    expect(err.reason).toBe("http");
    expect(err.status).toBe(401);
    expect(f.requests).toHaveLength(1);
  });

  it("reports an unreachable server as network", async () => {
    const f = await startFakeOpenAI([]);
    await f.close();
    const err = await rejection(askConfig(client(f, { max_retries: 1 })));
    expect(err.reason).toBe("network");
    expect(err.attempts).toBe(2);
  });

  it("reports a 200 that is not a completion as http instead of crashing", async () => {
    const f = await fake([{ raw: "not json" }]);
    const err = await rejection(askConfig(client(f)));
    expect(err.reason).toBe("http");
    const g = await fake([{ raw: JSON.stringify({ hello: "world" }) }]);
    expect((await rejection(askConfig(client(g)))).message).toMatch(/not a chat completion/);
  });

  it("falls back to json_object when the endpoint rejects json_schema, and remembers it", async () => {
    const f = await fake((req) =>
      req.body.response_format?.type === "json_schema"
        ? { status: 400, body: { error: { message: "response_format json_schema is not supported", type: "invalid_request_error", param: "response_format" } } }
        : { content: "```json\n" + JSON.stringify(VALID_CONFIG) + "\n```" },
    );
    const c = client(f);
    const result = await askConfig(c);
    expect(result.value.name).toBe("tiny");
    expect(result.attempts).toBe(1);
    expect(c.structuredOutputMode).toBe("json_object");
    expect(f.requests.map((r) => r.body.response_format?.type)).toEqual(["json_schema", "json_object"]);
    const system = textOf(f.requests[1]!.body.messages[0]);
    expect(system).toMatch(/^You design models\./);
    expect(system).toMatch(/JSON Schema \(model_config\)/);
    expect(system).toContain('"layers"');

    await askConfig(c);
    expect(f.requests.map((r) => r.body.response_format?.type)).toEqual(["json_schema", "json_object", "json_object"]);
  });

  it("steps down to the schema in the prompt when json_object is rejected too", async () => {
    const f = await fake((req) =>
      req.body.response_format
        ? { status: 400, body: { error: { message: `'response_format.type' must be 'json_schema' or 'text'` } } }
        : { content: JSON.stringify({ summary_title: "t", insights: ["i"], architectural_suggestions: [], sources: [] }) },
    );
    const c = client(f);
    const result = await c.generateObject({ role: "researcher", schema: BriefSchema, schemaName: "brief", prompt: "Research." });
    expect(result.value.summary_title).toBe("t");
    expect(c.structuredOutputMode).toBe("prompt");
    expect(f.requests).toHaveLength(3);
    expect(f.requests[2]!.body.response_format).toBeUndefined();
    expect(textOf(f.requests[2]!.body.messages[0])).toMatch(/JSON Schema \(brief\)/);
  });
});

describe("generateText", () => {
  it("returns the text and its usage", async () => {
    const f = await fake([{ content: "A narrative.", usage: { prompt_tokens: 40, completion_tokens: 7 } }]);
    const result = await client(f).generateText({ role: "summary", system: "Summarise.", prompt: "The run." });
    expect(result.text).toBe("A narrative.");
    expect(result.usage).toMatchObject({ role: "summary", model: "fake-model", promptTokens: 40, completionTokens: 7, calls: 1, failures: 0 });
    expect(f.requests[0]!.body.response_format).toBeUndefined();
  });
});

describe("chatWithTools", () => {
  const lookup = (calls: string[]): ToolDef<{ query: string }> => ({
    name: "lookup",
    description: "Looks up past trials.",
    parameters: z.object({ query: z.string() }),
    run: async ({ query }) => {
      calls.push(query);
      return `results for ${query}`;
    },
  });

  it("runs tools until the model answers", async () => {
    const f = await fake([
      { toolCalls: [{ name: "lookup", arguments: { query: "resnet" } }] },
      { toolCalls: [{ name: "lookup", arguments: { query: "mixer" } }] },
      { content: "Use a resnet." },
    ]);
    const calls: string[] = [];
    const result = await client(f).chatWithTools({
      role: "planner",
      system: "Plan.",
      messages: [{ role: "user", content: "What next?" }],
      tools: [lookup(calls)],
      maxSteps: 5,
    });
    expect(calls).toEqual(["resnet", "mixer"]);
    expect(result).toMatchObject({ text: "Use a resnet.", stoppedAt: "final", steps: 3, toolCalls: 2 });
    expect(result.usage.calls).toBe(3);
    expect(result.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "tool", "assistant"]);

    const tools = f.requests[0]!.body.tools!;
    expect(tools[0]).toMatchObject({ type: "function", function: { name: "lookup", description: "Looks up past trials." } });
    const third = f.requests[2]!.body.messages;
    expect(third[0]).toEqual({ role: "system", content: "Plan." });
    expect(third.filter((m) => m.role === "tool").map(textOf)).toEqual(["results for resnet", "results for mixer"]);
  });

  it("returns invalid arguments to the model as the tool result", async () => {
    const f = await fake([
      { toolCalls: [{ name: "lookup", arguments: { query: 5 } }, { name: "lookup", arguments: "{not json" }, { name: "nope", arguments: {} }] },
      { content: "ok" },
    ]);
    const calls: string[] = [];
    const result = await client(f).chatWithTools({ role: "planner", messages: [{ role: "user", content: "Go." }], tools: [lookup(calls)], maxSteps: 3 });
    expect(calls).toEqual([]);
    expect(result.stoppedAt).toBe("final");
    const fed = f.requests[1]!.body.messages.filter((m) => m.role === "tool").map(textOf);
    expect(fed[0]).toMatch(/invalid arguments for lookup/);
    expect(fed[0]).toContain("query");
    expect(fed[1]).toMatch(/not valid JSON/);
    expect(fed[2]).toMatch(/unknown tool "nope"/);
  });

  it("stops at maxSteps with a well-formed transcript", async () => {
    const f = await fake(() => ({ toolCalls: [{ name: "lookup", arguments: { query: "again" } }] }));
    const calls: string[] = [];
    const result = await client(f).chatWithTools({ role: "planner", messages: [{ role: "user", content: "Loop." }], tools: [lookup(calls)], maxSteps: 3 });
    expect(result).toMatchObject({ stoppedAt: "max_steps", steps: 3, text: null, toolCalls: 3 });
    expect(f.requests).toHaveLength(3);
    expect(result.messages.at(-1)?.role).toBe("tool");
  });
});

describe("endpoint limits and accounting", () => {
  it("never has more requests in flight than the concurrency limit", async () => {
    const f = await fake(() => ({ delayMs: 80, content: "ok" }));
    const c = client(f, { concurrency: 2 });
    const results = await Promise.all(Array.from({ length: 5 }, (_, i) => c.generateText({ role: "analyst", prompt: `q${i}` })));
    expect(results.map((r) => r.text)).toEqual(["ok", "ok", "ok", "ok", "ok"]);
    expect(f.requests).toHaveLength(5);
    expect(f.maxInFlight).toBe(2);
  });

  it("sums tokens, calls and cost per role in the ledger", async () => {
    const f = await fake([
      { content: JSON.stringify(VALID_CONFIG), usage: { prompt_tokens: 1000, completion_tokens: 200 } },
      { content: "text", usage: { prompt_tokens: 500, completion_tokens: 100 } },
      { content: "more", usage: { prompt_tokens: 2000, completion_tokens: 1000 } },
    ]);
    const ledger = new LlmUsageLedger();
    const c = client(f, { price_per_1k_input: 0.5, price_per_1k_output: 2 }, ledger);
    await askConfig(c);
    await c.generateText({ role: "summary", prompt: "a" });
    await c.generateText({ role: "summary", prompt: "b" });

    const planner = ledger.forRole("planner")!;
    expect(planner).toMatchObject({ model: "fake-model", promptTokens: 1000, completionTokens: 200, calls: 1, failures: 0 });
    expect(planner.costUsd).toBeCloseTo(0.5 + 0.4);
    const summary = ledger.forRole("summary")!;
    expect(summary).toMatchObject({ promptTokens: 2500, completionTokens: 1100, calls: 2 });
    expect(summary.costUsd).toBeCloseTo(1.25 + 2.2);
    expect(summary.latencyMs).toBeGreaterThan(0);
    expect(ledger.snapshot().map((u) => u.role).sort()).toEqual(["planner", "summary"]);
    expect(ledger.total()).toMatchObject({ promptTokens: 3500, completionTokens: 1300, calls: 3 });
  });

  it("LlmClients shares a client per endpoint and leaves built-in roles without one", async () => {
    const f = await fake([]);
    const clients = new LlmClients(
      { default: { model: "m", base_url: f.baseURL, api_key_env: "FAKE_KEY" }, roles: { coder: "none", summary: { model: "other" } } },
      { logger: silent, env: { FAKE_KEY: "k" } },
    );
    expect(clients.for("coder")).toBeUndefined();
    expect(clients.for("planner")).toBe(clients.for("analyst"));
    expect(clients.for("summary")?.endpoint.model).toBe("other");
    expect(clients.for("summary")?.ledger).toBe(clients.ledger);
  });

  it("refuses to talk to OpenAI without a key", () => {
    const err = (() => {
      try {
        new LlmClient({ ...endpoint("unused"), base_url: undefined, api_key_env: "MISSING_KEY" }, { logger: silent, env: {} });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ResearchError);
    expect((err as ResearchError).label).toBe("invalid_config");
  });
});
