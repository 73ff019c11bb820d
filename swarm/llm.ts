/**
 * How an agent uses an LLM: ask, and when the endpoint is absent, fails or
 * keeps answering badly, let the built-in brain answer instead. Every call
 * is recorded on the bus as an LlmCall event (tokens, latency, cost,
 * attempts, outcome and why), so the lineage shows which steps an LLM
 * authored and how each bad answer was handled.
 */
import { LlmClients, type LlmClient } from "../core/llm/client.js";
import { llmConfigFromFlags, type LlmRole } from "../core/llm/config.js";
import { agentConfig } from "../core/config.js";
import { ResearchError } from "../core/failure.js";
import type { Usage } from "../core/llm/usage.js";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { LlmCallSchema } from "../proto/gen/research/v1/events_pb.js";
import type { Prompt } from "./prompts.js";
import type { AgentContext } from "./runtime.js";

let clients: LlmClients | undefined;

/** LLM settings come from the launcher through the agent's config (LLM, LLM_MODEL, LLM_BASE_URL, LLM_CONFIG). */
function config() {
  const { llm, workspace } = agentConfig();
  return llmConfigFromFlags({ llm: llm.llm, file: llm.file, workspace }, { LLM_MODEL: llm.model, LLM_BASE_URL: llm.baseUrl });
}

export function llmFor(role: LlmRole): LlmClient | undefined {
  clients ??= new LlmClients(config());
  return clients.for(role);
}

export interface LlmStep<T> {
  role: LlmRole;
  /** Names the call in the lineage; unique per trial (the event id derives from it). */
  purpose: string;
  prompt: Prompt;
  ask(client: LlmClient): Promise<{ value: T; usage: Usage; attempts: number }>;
  /** The built-in brain's answer. */
  builtin(): T | Promise<T>;
}

export interface LlmAnswer<T> {
  value: T;
  /** The model that answered, or undefined when the built-in brain did. */
  model?: string;
  fallbackReason?: string;
}

function describe(err: unknown): string {
  const e = ResearchError.from(err);
  return e.reason ? `${e.reason}: ${e.message}${e.raw ? ` (last answer: ${e.raw.slice(0, 300)})` : ""}` : e.message;
}

export async function askLlm<T>(ctx: AgentContext, ids: { runId: string; trialId?: string }, step: LlmStep<T>): Promise<LlmAnswer<T>> {
  const client = llmFor(step.role);
  if (!client) return { value: await step.builtin() };
  const key = `${ids.trialId || "run"}/llm/${step.purpose}`;
  const t0 = Date.now();
  const base = { role: step.role, model: client.endpoint.model, purpose: step.purpose, promptVersion: step.prompt.version };
  const record = (value: MessageInitShape<typeof LlmCallSchema>) =>
    ctx.emit(key, { runId: ids.runId, trialId: ids.trialId ?? "", body: { case: "llmCall", value: { ...base, ...value } } });
  try {
    const r = await step.ask(client);
    await record({
      promptTokens: r.usage.promptTokens,
      completionTokens: r.usage.completionTokens,
      latencyMs: r.usage.latencyMs,
      costUsd: r.usage.costUsd,
      attempts: r.attempts,
      requests: r.usage.calls,
      outcome: r.attempts > 1 ? "repaired" : "ok",
    });
    return { value: r.value, model: client.endpoint.model };
  } catch (err) {
    const reason = describe(err);
    ctx.log.warn({ role: step.role, purpose: step.purpose, err: reason }, "LLM step failed; the built-in brain answers");
    await record({ latencyMs: Date.now() - t0, requests: ResearchError.from(err).attempts, outcome: "fallback", error: reason });
    return { value: await step.builtin(), fallbackReason: reason };
  }
}
