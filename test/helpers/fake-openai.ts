import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { ChatCompletionCreateParamsNonStreaming } from "openai/resources/chat/completions";

/**
 * A scripted OpenAI-compatible server over real HTTP, so the real `openai`
 * client (timeouts, error classes, headers) is what the tests exercise.
 * Every reply may add `delayMs` (answer late, e.g. past the client's
 * timeout) and `usage` (token counts reported back).
 */
interface ReplyTiming {
  delayMs?: number;
  usage?: { prompt_tokens: number; completion_tokens: number };
}

export type ScriptedReply = ReplyTiming &
  (
    | { content: string; finishReason?: "stop" | "length" | "content_filter" }
    | { toolCalls: Array<{ name: string; arguments: string | Record<string, unknown>; id?: string }>; content?: string }
    | { refusal: string }
    /** An error response; `body` replaces the default OpenAI-style error object. */
    | { status: number; retryAfter?: number; body?: unknown }
    /** A 200 whose body is sent verbatim: a broken server or proxy. */
    | { raw: string; contentType?: string }
  );

export interface RecordedRequest {
  /** 0-based position among chat completion requests. */
  index: number;
  body: ChatCompletionCreateParamsNonStreaming;
  headers: IncomingMessage["headers"];
}

export type Script = ScriptedReply[] | ((request: RecordedRequest) => ScriptedReply | Promise<ScriptedReply>);

export interface FakeOpenAI {
  /** Pass as the client's base URL (ends in /v1). */
  baseURL: string;
  requests: RecordedRequest[];
  embeddingRequests: Array<{ model: string; input: string | string[]; dimensions?: number; encoding_format?: string }>;
  /** The most chat requests that were ever open at the same time. */
  readonly maxInFlight: number;
  close(): Promise<void>;
}

export const DEFAULT_USAGE = { prompt_tokens: 10, completion_tokens: 5 };
const DEFAULT_EMBEDDING_DIM = 8;

export async function startFakeOpenAI(script: Script): Promise<FakeOpenAI> {
  const requests: RecordedRequest[] = [];
  const embeddingRequests: FakeOpenAI["embeddingRequests"] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const timers = new Set<NodeJS.Timeout>();

  const nextReply = async (request: RecordedRequest): Promise<ScriptedReply> => {
    if (typeof script === "function") return script(request);
    return (
      script[request.index] ?? {
        // A non-retryable status, so a test that under-scripts fails fast with a readable message.
        status: 400,
        body: { error: { message: `fake-openai: script exhausted (${script.length} replies, request #${request.index + 1})`, type: "invalid_request_error" } },
      }
    );
  };

  const wait = (ms: number, res: ServerResponse) =>
    new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve(!res.destroyed);
      }, ms);
      timers.add(timer);
      // The client gave up (timeout): stop waiting so the request is not left dangling.
      res.once("close", () => {
        clearTimeout(timer);
        timers.delete(timer);
        resolve(false);
      });
    });

  const chat = async (req: IncomingMessage, res: ServerResponse, body: unknown) => {
    const request: RecordedRequest = { index: requests.length, body: body as ChatCompletionCreateParamsNonStreaming, headers: req.headers };
    requests.push(request);
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    try {
      const reply = await nextReply(request);
      if (reply.delayMs && !(await wait(reply.delayMs, res))) return;
      send(res, reply, request.body.model);
    } finally {
      inFlight--;
    }
  };

  const embeddings = (res: ServerResponse, body: FakeOpenAI["embeddingRequests"][number]) => {
    embeddingRequests.push(body);
    const inputs = Array.isArray(body.input) ? body.input : [body.input];
    const dim = body.dimensions ?? DEFAULT_EMBEDDING_DIM;
    const data = inputs.map((text, index) => {
      const vector = deterministicVector(text, dim);
      const embedding = body.encoding_format === "base64" ? Buffer.from(new Float32Array(vector).buffer).toString("base64") : vector;
      return { object: "embedding", index, embedding };
    });
    const tokens = inputs.reduce((n, t) => n + t.split(/\s+/).filter(Boolean).length, 0);
    json(res, 200, { object: "list", model: body.model, data, usage: { prompt_tokens: tokens, total_tokens: tokens } });
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch {
        json(res, 400, { error: { message: "fake-openai: request body is not JSON", type: "invalid_request_error" } });
        return;
      }
      const path = (req.url ?? "").split("?")[0];
      if (req.method === "POST" && path === "/v1/chat/completions") {
        chat(req, res, body).catch((err: unknown) => json(res, 500, { error: { message: `fake-openai: ${(err as Error).message}` } }));
      } else if (req.method === "POST" && path === "/v1/embeddings") {
        embeddings(res, body as FakeOpenAI["embeddingRequests"][number]);
      } else {
        json(res, 404, { error: { message: `fake-openai: no route ${req.method} ${path}` } });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    embeddingRequests,
    get maxInFlight() {
      return maxInFlight;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const t of timers) clearTimeout(t);
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function send(res: ServerResponse, reply: ScriptedReply, model: string): void {
  if ("status" in reply) {
    const headers: Record<string, string> = {};
    if (reply.retryAfter !== undefined) headers["retry-after"] = String(reply.retryAfter);
    const body = reply.body ?? { error: { message: `fake-openai: scripted status ${reply.status}`, type: "server_error", code: null, param: null } };
    json(res, reply.status, body, headers);
    return;
  }
  if ("raw" in reply) {
    res.writeHead(200, { "content-type": reply.contentType ?? "application/json" });
    res.end(reply.raw);
    return;
  }
  const usage = reply.usage ?? DEFAULT_USAGE;
  let message: Record<string, unknown>;
  let finishReason: string;
  if ("refusal" in reply) {
    message = { role: "assistant", content: null, refusal: reply.refusal };
    finishReason = "stop";
  } else if ("toolCalls" in reply) {
    const toolCalls = reply.toolCalls.map((call, i) => ({
      id: call.id ?? `call_${i}_${Math.random().toString(36).slice(2, 10)}`,
      type: "function",
      function: { name: call.name, arguments: typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments) },
    }));
    message = { role: "assistant", content: reply.content ?? null, refusal: null, tool_calls: toolCalls };
    finishReason = "tool_calls";
  } else {
    message = { role: "assistant", content: reply.content, refusal: null };
    finishReason = reply.finishReason ?? "stop";
  }
  json(res, 200, {
    id: `chatcmpl-fake-${Date.now()}`,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, message, finish_reason: finishReason, logprobs: null }],
    usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
  });
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.destroyed) return;
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

/** Unit vectors seeded by the text, so equal texts embed equally across runs. */
function deterministicVector(text: string, dim: number): number[] {
  const v: number[] = [];
  for (let block = 0; v.length < dim; block++) {
    const digest = createHash("sha256").update(`${block}:${text}`).digest();
    for (let i = 0; i + 4 <= digest.length && v.length < dim; i += 4) v.push(digest.readInt32LE(i) / 2 ** 31);
  }
  const norm = Math.hypot(...v) || 1;
  return v.map((x) => x / norm);
}
