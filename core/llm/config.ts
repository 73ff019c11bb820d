import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { decodeText } from "../model-config.js";
import { ResearchError } from "../failure.js";

/**
 * Which LLM (if any) each role talks to. No endpoint for a role means the
 * built-in brain does that role's work; that is the default, so a swarm runs
 * with no LLM configured at all.
 */

export const LLM_ROLES = ["planner", "coder", "analyst", "researcher", "summary"] as const;
export type LlmRole = (typeof LLM_ROLES)[number];

const endpointFields = {
  provider: z.literal("openai").optional().describe("any OpenAI-compatible chat completions API"),
  model: z.string().min(1),
  base_url: z.url().optional().describe("API root, e.g. http://localhost:11434/v1; OpenAI's when absent"),
  api_key_env: z.string().min(1).optional().describe("name of the environment variable holding the key"),
  timeout_ms: z.int().positive().optional(),
  max_retries: z.int().min(0).max(10).optional().describe("retries on 429, 5xx, timeouts and network errors"),
  concurrency: z.int().positive().max(256).optional().describe("requests in flight at once against this server"),
  temperature: z.number().min(0).max(2).optional(),
  price_per_1k_input: z.number().min(0).optional().describe("USD per 1000 prompt tokens"),
  price_per_1k_output: z.number().min(0).optional().describe("USD per 1000 completion tokens"),
};

export const EndpointConfigSchema = z.strictObject(endpointFields);
export type EndpointConfig = z.infer<typeof EndpointConfigSchema>;

/** A role's entry inherits every field it leaves out from `default`; "none" pins the role to the built-in brain. */
const RoleEntrySchema = z.union([z.literal("none"), z.strictObject(endpointFields).partial()]);

export const LlmConfigSchema = z
  .strictObject({
    default: EndpointConfigSchema.optional(),
    roles: z.strictObject(Object.fromEntries(LLM_ROLES.map((r) => [r, RoleEntrySchema.optional()])) as Record<LlmRole, z.ZodOptional<typeof RoleEntrySchema>>).optional(),
  })
  .superRefine((config, ctx) => {
    if (config.default) return;
    for (const role of LLM_ROLES) {
      const entry = config.roles?.[role];
      if (entry && entry !== "none" && !entry.model) {
        ctx.addIssue({ code: "custom", path: ["roles", role, "model"], message: "required when there is no default endpoint" });
      }
    }
  });
export type LlmConfig = z.infer<typeof LlmConfigSchema>;

/** An endpoint with every default filled in: what a client is built from. */
export interface Endpoint {
  provider: "openai";
  model: string;
  base_url?: string;
  api_key_env: string;
  timeout_ms: number;
  max_retries: number;
  concurrency: number;
  temperature?: number;
  price_per_1k_input: number;
  price_per_1k_output: number;
}

export const ENDPOINT_DEFAULTS = {
  api_key_env: "OPENAI_API_KEY",
  // Long structured answers from a busy local server take minutes, not seconds.
  timeout_ms: 120_000,
  max_retries: 3,
  concurrency: 4,
} as const;

/** The built-in brain for every role. */
export const NO_LLM: LlmConfig = {};

export function endpointFor(config: LlmConfig, role: LlmRole): Endpoint | undefined {
  const entry = config.roles?.[role];
  if (entry === "none") return undefined;
  const merged = { ...config.default, ...entry };
  if (!merged.model) return undefined;
  return {
    provider: "openai",
    model: merged.model,
    ...(merged.base_url !== undefined ? { base_url: merged.base_url } : {}),
    api_key_env: merged.api_key_env ?? ENDPOINT_DEFAULTS.api_key_env,
    timeout_ms: merged.timeout_ms ?? ENDPOINT_DEFAULTS.timeout_ms,
    max_retries: merged.max_retries ?? ENDPOINT_DEFAULTS.max_retries,
    concurrency: merged.concurrency ?? ENDPOINT_DEFAULTS.concurrency,
    ...(merged.temperature !== undefined ? { temperature: merged.temperature } : {}),
    price_per_1k_input: merged.price_per_1k_input ?? 0,
    price_per_1k_output: merged.price_per_1k_output ?? 0,
  };
}

/** True when at least one role talks to an LLM. */
export function usesLlm(config: LlmConfig): boolean {
  return LLM_ROLES.some((role) => endpointFor(config, role) !== undefined);
}

export function parseLlmConfig(input: unknown, source = "llm config"): LlmConfig {
  const parsed = LlmConfigSchema.safeParse(input);
  if (parsed.success) return parsed.data;
  throw new ResearchError("invalid_config", `invalid ${source}:\n${z.prettifyError(parsed.error)}`);
}

export function loadLlmConfigFile(path: string): LlmConfig {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new ResearchError("invalid_config", `cannot read LLM config ${path}: ${(err as Error).message}`, "", { cause: err });
  }
  // One reader for llm.json and llm.yaml alike, as for model and recipe files.
  const data = decodeText(text);
  if (!data.ok) throw new ResearchError("invalid_config", `LLM config ${path} is ${data.error}`);
  return parseLlmConfig(data.value ?? {}, `LLM config ${path}`);
}

export const WORKSPACE_CONFIG_NAMES = ["llm.json", "llm.yaml", "llm.yml"] as const;

export function findWorkspaceLlmConfig(workspace: string): string | undefined {
  return WORKSPACE_CONFIG_NAMES.map((name) => join(workspace, name)).find((path) => existsSync(path));
}

export interface LlmFlags {
  /** `none` or `openai:MODEL`. */
  llm?: string;
  baseUrl?: string;
  /** An explicit config file; wins over the workspace's llm.json / llm.yaml. */
  file?: string;
  workspace?: string;
}

/**
 * Precedence flags > env (LLM_MODEL, LLM_BASE_URL) > file. Flags and env
 * override the default endpoint field by field (a file's prices, timeouts or
 * base URL survive a new model); a role the file configures explicitly keeps
 * its own settings and inherits the rest from the overridden default. OPENAI_API_KEY alone switches nothing on: without a model
 * there is nothing to ask, so the built-in brain stays in charge.
 */
export function llmConfigFromFlags(flags: LlmFlags, env: Record<string, string | undefined> = process.env): LlmConfig {
  if (flags.llm === "none") return NO_LLM;
  const flagModel = flags.llm === undefined ? undefined : parseLlmFlag(flags.llm);

  const path = flags.file ?? (flags.workspace ? findWorkspaceLlmConfig(flags.workspace) : undefined);
  const file = path ? loadLlmConfigFile(path) : NO_LLM;

  const model = flagModel ?? nonEmpty(env.LLM_MODEL);
  const baseUrl = nonEmpty(flags.baseUrl) ?? nonEmpty(env.LLM_BASE_URL);
  if (model === undefined && baseUrl === undefined) return file;

  const base: Partial<EndpointConfig> = file.default ?? {};
  const fallbackModel = model ?? base.model;
  if (fallbackModel === undefined) {
    throw new ResearchError("invalid_config", `an LLM base URL (${baseUrl}) was given without a model: pass --llm openai:MODEL or set LLM_MODEL`);
  }
  return parseLlmConfig(
    { ...file, default: { ...base, model: fallbackModel, ...(baseUrl !== undefined ? { base_url: baseUrl } : {}) } },
    "LLM settings from flags and environment",
  );
}

function parseLlmFlag(value: string): string {
  // Split at the first colon only: Ollama model tags contain one ("llama3.1:8b").
  const colon = value.indexOf(":");
  const provider = colon < 0 ? value : value.slice(0, colon);
  const model = colon < 0 ? "" : value.slice(colon + 1);
  if (provider !== "openai" || model === "") {
    throw new ResearchError("invalid_config", `--llm expects "none" or "openai:MODEL", got "${value}"`);
  }
  return model;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value.trim();
}

/** "none", or "provider:model" of the planner's endpoint: how a run records its brain. */
export function describeLlm(config: LlmConfig): string {
  const e = usesLlm(config) ? endpointFor(config, "planner") : undefined;
  return e ? `${e.provider}:${e.model}` : "none";
}
