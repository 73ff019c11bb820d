import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError } from "openai";
import type {
  ChatCompletion,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessageFunctionToolCall,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from "openai/resources/chat/completions";
import { z } from "zod";
import { ResearchError } from "../failure.js";
import { safeParseJson, type JsonParseError } from "../json.js";
import { createLogger, type Logger } from "../logger.js";
import { endpointFor, LLM_ROLES, type Endpoint, type LlmConfig, type LlmRole } from "./config.js";
import { llmError } from "./errors.js";
import pLimit, { type LimitFunction } from "p-limit";
import { addUsage, emptyUsage, LlmUsageLedger, type Usage } from "./usage.js";

export type { ChatCompletionMessageParam };

/**
 * How structured output is requested. Servers differ: OpenAI, vLLM and
 * llama.cpp take a JSON Schema; some only a generic JSON mode; LM Studio
 * rejects json_object but not json_schema; the rest get the schema in the
 * prompt. Each step down puts the schema into the system prompt.
 */
export type JsonMode = "json_schema" | "json_object" | "prompt";
const JSON_MODES: readonly JsonMode[] = ["json_schema", "json_object", "prompt"];

export interface LlmClientOptions {
  ledger?: LlmUsageLedger;
  logger?: Logger;
  /** Where the key named by the endpoint's api_key_env is read from. */
  env?: Record<string, string | undefined>;
  /** Requests in flight, shared by clients that talk to the same server, so the limit holds per server (first come, first served). */
  limit?: LimitFunction;
  /** First back-off delay; doubled per retry, with jitter. */
  retryBaseMs?: number;
  /** Cap on one pause, for back-off and for a server's retry-after alike. */
  retryMaxMs?: number;
  random?: () => number;
}

export type PromptInput = { prompt: string; messages?: never } | { messages: ChatCompletionMessageParam[]; prompt?: never };

export interface RepairContext {
  raw: string;
  /** The same text the model would get back as feedback. */
  error: string;
  kind: JsonParseError["kind"];
  attempt: number;
}

/** Gets a chance to fix an invalid answer locally (return the fixed text) before the model is asked again. */
export type RepairFn = (ctx: RepairContext) => string | null | undefined | Promise<string | null | undefined>;

export type GenerateObjectOptions<T> = {
  role: LlmRole;
  schema: z.ZodType<T>;
  /** Sent as json_schema.name: letters, digits, "_" and "-", at most 64. */
  schemaName: string;
  schemaDescription?: string;
  system?: string;
  /** Answers asked for, the first included; transport retries do not count. */
  maxAttempts?: number;
  repair?: RepairFn;
} & PromptInput;

export interface GenerateObjectResult<T> {
  value: T;
  usage: Usage;
  /** Answers it took: 1 when the first one was valid. */
  attempts: number;
  /** The text the value was parsed from. */
  raw: string;
}

export type GenerateTextOptions = { role: LlmRole; system?: string } & PromptInput;

export interface GenerateTextResult {
  text: string;
  usage: Usage;
}

export interface ToolDef<A = unknown> {
  name: string;
  description: string;
  parameters: z.ZodType<A>;
  run(args: A): Promise<string>;
}

export interface ChatWithToolsOptions {
  role: LlmRole;
  system?: string;
  messages: ChatCompletionMessageParam[];
  tools: ToolDef[];
  /** Model calls at most; tool calls of the last step still run, so the transcript stays well formed. */
  maxSteps: number;
}

export interface ChatWithToolsResult {
  /** The conversation after the system prompt: the messages given, then every assistant turn and tool result. */
  messages: ChatCompletionMessageParam[];
  /** The final assistant text; null when stopped at max_steps. */
  text: string | null;
  stoppedAt: "final" | "max_steps";
  steps: number;
  toolCalls: number;
  usage: Usage;
}

const DEFAULT_RETRY_BASE_MS = 500;
const DEFAULT_RETRY_MAX_MS = 30_000;
const OPENAI_BASE_URL = "https://api.openai.com/v1";

/**
 * One OpenAI-compatible endpoint (server, key and model). Owns the retry
 * policy, the concurrency cap and the accounting; the SDK's own retries are
 * off so every retry is decided, paced and logged here.
 */
export class LlmClient {
  readonly endpoint: Endpoint;
  readonly ledger: LlmUsageLedger;
  private readonly openai: OpenAI;
  private readonly limit: LimitFunction;
  private readonly logger: Logger;
  private readonly retryBaseMs: number;
  private readonly retryMaxMs: number;
  private readonly random: () => number;
  private jsonMode: JsonMode = "json_schema";

  constructor(endpoint: Endpoint, options: LlmClientOptions = {}) {
    this.endpoint = endpoint;
    this.ledger = options.ledger ?? new LlmUsageLedger();
    this.limit = options.limit ?? pLimit(endpoint.concurrency);
    this.logger = (options.logger ?? createLogger("llm")).child({ model: endpoint.model, base_url: endpoint.base_url ?? OPENAI_BASE_URL });
    this.retryBaseMs = options.retryBaseMs ?? DEFAULT_RETRY_BASE_MS;
    this.retryMaxMs = options.retryMaxMs ?? DEFAULT_RETRY_MAX_MS;
    this.random = options.random ?? Math.random;
    const apiKey = (options.env ?? process.env)[endpoint.api_key_env];
    if (!apiKey && endpoint.base_url === undefined) {
      throw new ResearchError("invalid_config", `model ${endpoint.model} on OpenAI needs an API key in $${endpoint.api_key_env}`);
    }
    this.openai = new OpenAI({
      // Explicit, so the SDK's own OPENAI_BASE_URL lookup cannot bypass the config's precedence.
      baseURL: endpoint.base_url ?? OPENAI_BASE_URL,
      // Local servers ignore the key, but the SDK refuses to start without one.
      apiKey: apiKey || "unused",
      timeout: endpoint.timeout_ms,
      maxRetries: 0,
    });
  }

  /** The structured-output mode this endpoint has been found to accept. */
  get structuredOutputMode(): JsonMode {
    return this.jsonMode;
  }

  async generateObject<T>(options: GenerateObjectOptions<T>): Promise<GenerateObjectResult<T>> {
    const usage = emptyUsage(options.role, this.endpoint.model);
    const maxAttempts = Math.max(1, options.maxAttempts ?? 3);
    const jsonSchema = toJsonSchema(options.schema);
    const conversation = userMessages(options);
    let lastRaw = "";

    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      const completion = await this.completeStructured(options, jsonSchema, conversation, usage);
      const choice = completion.choices[0]!;
      lastRaw = choice.message.content ?? "";
      this.throwIfRefused(completion, usage);

      const answer = safeParseJson({ text: lastRaw, schema: options.schema });
      if (answer.success) return { value: answer.value, usage, attempts: attempt, raw: lastRaw };
      const { kind } = answer.error;
      const error = feedback(answer.error, choice.finish_reason === "length");

      if (options.repair) {
        const repaired = await options.repair({ raw: lastRaw, error, kind, attempt });
        if (typeof repaired === "string") {
          const fixed = safeParseJson({ text: repaired, schema: options.schema });
          if (fixed.success) return { value: fixed.value, usage, attempts: attempt, raw: repaired };
        }
      }

      this.account(usage, { failures: 1 });
      this.logger.warn({ role: options.role, attempt, kind, error }, "invalid structured output");
      // Servers that silently ignore response_format leave the model without the schema; prose instead of JSON is the tell.
      const schemaHint = kind === "parse" && this.jsonMode === "json_schema" ? ` It must conform to this JSON Schema:\n${JSON.stringify(jsonSchema)}` : "";
      conversation.push(
        { role: "assistant", content: lastRaw },
        { role: "user", content: `Your previous answer ${error}\nReply again with only the corrected JSON object for ${options.schemaName}.${schemaHint}` },
      );
    }
    throw llmError("invalid_output", `no valid ${options.schemaName} after ${maxAttempts} answers`, { raw: lastRaw, attempts: usage.calls });
  }

  async generateText(options: GenerateTextOptions): Promise<GenerateTextResult> {
    const usage = emptyUsage(options.role, this.endpoint.model);
    const completion = await this.complete(this.baseParams(withSystem(options.system, userMessages(options))), usage);
    this.throwIfRefused(completion, usage);
    const text = completion.choices[0]!.message.content ?? "";
    if (text.trim() === "") {
      this.account(usage, { failures: 1 });
      throw llmError("invalid_output", "the model answered with no text", { raw: text, attempts: usage.calls });
    }
    return { text, usage };
  }

  async chatWithTools(options: ChatWithToolsOptions): Promise<ChatWithToolsResult> {
    const usage = emptyUsage(options.role, this.endpoint.model);
    const tools = new Map(options.tools.map((t) => [t.name, t]));
    const toolSpecs: ChatCompletionTool[] = options.tools.map((t) => ({
      type: "function",
      function: { name: t.name, description: t.description, parameters: toJsonSchema(t.parameters) },
    }));
    const messages = [...options.messages];
    let toolCalls = 0;

    for (let step = 1; step <= options.maxSteps; step++) {
      const completion = await this.complete({ ...this.baseParams(withSystem(options.system, messages)), tools: toolSpecs }, usage);
      this.throwIfRefused(completion, usage);
      const message = completion.choices[0]!.message;
      const calls = message.tool_calls ?? [];
      if (calls.length === 0) {
        messages.push({ role: "assistant", content: message.content ?? "" });
        return { messages, text: message.content ?? "", stoppedAt: "final", steps: step, toolCalls, usage };
      }
      messages.push({ role: "assistant", content: message.content, tool_calls: calls });
      for (const call of calls) {
        toolCalls++;
        const result = call.type === "function" ? await this.runTool(tools, call, options.role) : `error: only function tools are available`;
        messages.push({ role: "tool", tool_call_id: call.id, content: result });
      }
    }
    return { messages, text: null, stoppedAt: "max_steps", steps: options.maxSteps, toolCalls, usage };
  }

  /** Problems go back to the model as the tool's result: it can correct its call, which a thrown error would not allow. */
  private async runTool(tools: Map<string, ToolDef>, call: ChatCompletionMessageFunctionToolCall, role: LlmRole): Promise<string> {
    const tool = tools.get(call.function.name);
    if (!tool) return `error: unknown tool "${call.function.name}"; available: ${[...tools.keys()].join(", ")}`;
    const text = call.function.arguments.trim() === "" ? "{}" : call.function.arguments;
    const args = safeParseJson({ text, schema: tool.parameters });
    if (!args.success) {
      return args.error.kind === "parse"
        ? `error: the arguments are not valid JSON (${args.error.message}); call ${tool.name} again with a JSON object`
        : `error: invalid arguments for ${tool.name}:\n${args.error.message}`;
    }
    try {
      return await tool.run(args.value);
    } catch (err) {
      this.logger.warn({ role, tool: tool.name, err }, "tool failed");
      return `error: ${tool.name} failed: ${(err as Error).message ?? String(err)}`;
    }
  }

  /** One answer in the best JSON mode the endpoint accepts, stepping down (and remembering it) when the server rejects a mode. */
  private async completeStructured<T>(
    options: GenerateObjectOptions<T>,
    jsonSchema: Record<string, unknown>,
    conversation: ChatCompletionMessageParam[],
    usage: Usage,
  ): Promise<ChatCompletion> {
    for (;;) {
      const mode = this.jsonMode;
      const params = this.structuredParams(mode, options, jsonSchema, conversation);
      try {
        return await this.complete(params, usage);
      } catch (err) {
        const failure = ResearchError.from(err);
        const next = JSON_MODES[JSON_MODES.indexOf(mode) + 1];
        if (!next || !rejectsResponseFormat(failure)) throw failure;
        // Another call may have stepped down already while this one was in flight.
        if (this.jsonMode === mode) this.jsonMode = next;
        this.logger.warn({ role: options.role, from: mode, to: this.jsonMode, error: failure.message }, "endpoint rejected the structured-output mode");
      }
    }
  }

  private structuredParams<T>(
    mode: JsonMode,
    options: GenerateObjectOptions<T>,
    jsonSchema: Record<string, unknown>,
    conversation: ChatCompletionMessageParam[],
  ): ChatCompletionCreateParamsNonStreaming {
    if (mode === "json_schema") {
      return {
        ...this.baseParams(withSystem(options.system, conversation)),
        response_format: {
          type: "json_schema",
          json_schema: {
            name: options.schemaName,
            ...(options.schemaDescription ? { description: options.schemaDescription } : {}),
            schema: jsonSchema,
            // Strict mode forbids optional fields and most keywords our schemas use; zod checks the answer anyway.
            strict: false,
          },
        },
      };
    }
    const instructions =
      `Reply with one JSON object and nothing else (no prose, no code fences). ` +
      `It must conform to this JSON Schema (${options.schemaName}):\n${JSON.stringify(jsonSchema)}`;
    const system = options.system ? `${options.system}\n\n${instructions}` : instructions;
    return {
      ...this.baseParams(withSystem(system, conversation)),
      ...(mode === "json_object" ? { response_format: { type: "json_object" as const } } : {}),
    };
  }

  private baseParams(messages: ChatCompletionMessageParam[]): ChatCompletionCreateParamsNonStreaming {
    return {
      model: this.endpoint.model,
      messages,
      ...(this.endpoint.temperature !== undefined ? { temperature: this.endpoint.temperature } : {}),
    };
  }

  /** One answer, retried on transient failures with back-off; the concurrency slot is held for the request only, not the pause. */
  private async complete(params: ChatCompletionCreateParamsNonStreaming, usage: Usage): Promise<ChatCompletion> {
    for (let retry = 0; ; retry++) {
      const answer = await this.limit(async (): Promise<ChatCompletion | ResearchError> => {
        const started = performance.now();
        try {
          const completion = await this.openai.chat.completions.create(params);
          checkCompletion(completion);
          const delta = {
            calls: 1,
            latencyMs: performance.now() - started,
            promptTokens: completion.usage?.prompt_tokens ?? 0,
            completionTokens: completion.usage?.completion_tokens ?? 0,
          };
          this.account(usage, delta);
          this.logger.debug({ role: usage.role, ...delta, finish_reason: completion.choices[0]!.finish_reason }, "LLM request");
          return completion;
        } catch (err) {
          this.account(usage, { calls: 1, failures: 1, latencyMs: performance.now() - started });
          return toLlmError(err);
        }
      });
      if (!(answer instanceof ResearchError)) return answer;
      const failure = answer;
      if (!failure.retryable || retry >= this.endpoint.max_retries) {
        failure.attempts = usage.calls;
        throw failure;
      }
      const delayMs = this.retryDelay(retry, failure);
      this.logger.warn({ role: usage.role, reason: failure.reason, status: failure.status, retry: retry + 1, delay_ms: Math.round(delayMs) }, "LLM request failed, retrying");
      await sleep(delayMs);
    }
  }

  private retryDelay(retry: number, failure: ResearchError): number {
    if (failure.retryAfterMs !== undefined) return Math.min(failure.retryAfterMs, this.retryMaxMs);
    // Jitter over the upper half keeps a floor while spreading clients that failed together.
    const ceiling = Math.min(this.retryMaxMs, this.retryBaseMs * 2 ** retry);
    return ceiling * (0.5 + 0.5 * this.random());
  }

  private throwIfRefused(completion: ChatCompletion, usage: Usage): void {
    const choice = completion.choices[0]!;
    const refusal = choice.message.refusal;
    if (!refusal && choice.finish_reason !== "content_filter") return;
    this.account(usage, { failures: 1 });
    throw llmError("refusal", refusal ? `the model refused: ${refusal}` : "the answer was withheld by the content filter", {
      raw: refusal || choice.message.content || "",
      attempts: usage.calls,
    });
  }

  private account(usage: Usage, delta: Partial<Omit<Usage, "role" | "model" | "costUsd">>): void {
    const d = { promptTokens: 0, completionTokens: 0, latencyMs: 0, calls: 0, failures: 0, ...delta };
    const costUsd = (d.promptTokens * this.endpoint.price_per_1k_input + d.completionTokens * this.endpoint.price_per_1k_output) / 1000;
    const entry = { ...d, costUsd, model: this.endpoint.model };
    addUsage(usage, entry);
    this.ledger.record({ ...entry, role: usage.role });
  }
}

/**
 * The clients of a run, one per distinct endpoint, built from the config;
 * roles without an endpoint get none (the built-in brain's turn). Clients on
 * the same server and key share one concurrency cap, the smallest configured.
 */
export class LlmClients {
  readonly ledger: LlmUsageLedger;
  private readonly byRole = new Map<LlmRole, LlmClient>();

  constructor(config: LlmConfig, options: Omit<LlmClientOptions, "limit"> = {}) {
    this.ledger = options.ledger ?? new LlmUsageLedger();
    const env = options.env ?? process.env;
    const endpoints = LLM_ROLES.flatMap((role) => {
      const endpoint = endpointFor(config, role);
      return endpoint ? [{ role, endpoint }] : [];
    });
    const serverKey = (e: Endpoint) => `${e.base_url ?? OPENAI_BASE_URL}\u0000${env[e.api_key_env] ?? ""}`;
    const limits = new Map<string, number>();
    for (const { endpoint } of endpoints) {
      const key = serverKey(endpoint);
      limits.set(key, Math.min(limits.get(key) ?? Infinity, endpoint.concurrency));
    }
    const perServer = new Map([...limits].map(([key, limit]) => [key, pLimit(limit)]));
    const clients = new Map<string, LlmClient>();
    for (const { role, endpoint } of endpoints) {
      const id = JSON.stringify(endpoint);
      let client = clients.get(id);
      if (!client) {
        client = new LlmClient(endpoint, { ...options, ledger: this.ledger, limit: perServer.get(serverKey(endpoint))! });
        clients.set(id, client);
      }
      this.byRole.set(role, client);
    }
  }

  for(role: LlmRole): LlmClient | undefined {
    return this.byRole.get(role);
  }
}

/** What the model is told about an answer that gave no value, so it can correct it. */
function feedback(error: JsonParseError, truncated: boolean): string {
  if (error.kind === "validation") return `does not match the schema:\n${error.message}`;
  const cut = truncated ? " It was cut off at the token limit: answer more briefly." : "";
  return `is not valid JSON: ${error.message}.${cut}`;
}

/** JSON Schema of what the model should write: the input side, so defaulted fields are optional. */
export function toJsonSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
  return rest;
}

function userMessages(options: PromptInput): ChatCompletionMessageParam[] {
  return options.messages ? [...options.messages] : [{ role: "user", content: options.prompt }];
}

function withSystem(system: string | undefined, messages: ChatCompletionMessageParam[]): ChatCompletionMessageParam[] {
  return system ? [{ role: "system", content: system }, ...messages] : [...messages];
}

/** A compatible server can answer 200 with something that is not a completion (a proxy's HTML page, an empty body). */
function checkCompletion(completion: unknown): asserts completion is ChatCompletion {
  const choices = (completion as { choices?: unknown } | null)?.choices;
  const message = Array.isArray(choices) ? (choices[0] as { message?: unknown } | undefined)?.message : undefined;
  if (typeof message !== "object" || message === null) {
    const preview = typeof completion === "string" ? completion.slice(0, 200) : JSON.stringify(completion)?.slice(0, 200);
    throw llmError("http", `the server's answer is not a chat completion: ${preview}`);
  }
}

function toLlmError(err: unknown): ResearchError {
  if (err instanceof ResearchError) return err;
  if (err instanceof APIConnectionTimeoutError) return llmError("timeout", "the LLM request timed out", { cause: err });
  if (err instanceof APIConnectionError) return llmError("network", `cannot reach the LLM endpoint: ${err.message}`, { cause: err });
  if (err instanceof APIError && err.status !== undefined) {
    const reason = err.status === 429 ? "rate_limited" : "http";
    return llmError(reason, err.message, { status: err.status, retryAfterMs: retryAfterMs(err), cause: err });
  }
  // The SDK throws a SyntaxError for a body that claims to be JSON and is not.
  return llmError("http", `bad answer from the LLM endpoint: ${(err as Error)?.message ?? String(err)}`, { cause: err });
}

function rejectsResponseFormat(err: ResearchError): boolean {
  if (err.reason !== "http" || (err.status !== 400 && err.status !== 422)) return false;
  const cause = err.cause instanceof APIError ? err.cause : undefined;
  return cause?.param === "response_format" || /response_format|json_schema|json_object/i.test(err.message);
}

/** retry-after-ms (OpenAI) or retry-after in seconds or as an HTTP date. */
function retryAfterMs(cause: APIError): number | undefined {
  if (!cause.headers) return undefined;
  const ms = Number.parseFloat(cause.headers.get("retry-after-ms") ?? "");
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const header = cause.headers.get("retry-after");
  if (!header) return undefined;
  const seconds = Number.parseFloat(header);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(header);
  return Number.isFinite(date) ? Math.max(0, date - Date.now()) : undefined;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
