/**
 * Every setting a process of the swarm takes from its environment, in one
 * schema: each variable's accepted values, its default and what it means.
 * A process reads its pick of the schema once at start and passes the values
 * down; a bad value stops it with one line naming the variable. The table in
 * docs/DEPLOY.md is checked against this schema (test/core/config.test.ts).
 */
import { existsSync } from "node:fs";
import { hostname } from "node:os";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { ResearchError } from "./failure.js";
import { isId, toId } from "./ids.js";

export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export type Env = Record<string, string | undefined>;

/** What docs/DEPLOY.md says of a variable; `shown` replaces a default that is computed or differs per process. */
export interface VariableDoc {
  readBy: string;
  description: string;
  shown?: string;
}
export const VARIABLE_DOCS = z.registry<VariableDoc>();

const HOST_PORT = /^(\[[0-9A-Fa-f:.]+\]|[^\s:[\]/,]+):\d{1,5}$/;
const NATS_ADDRESS = /^([a-z]+:\/\/)?[^\s/,]+$/;

/** Debian's python3, which has torch 1.13 from python3-torch: the fallback. */
export const SYSTEM_PYTHON = "/usr/bin/python3";
/** The project's venv, made by scripts/setup.sh with torch 2.x, as users and GPU hosts have it. */
export const PROJECT_PYTHON = resolve(dirname(fileURLToPath(import.meta.url)), "..", ".venv", "bin", "python");
/** The runner's Python unless RUNNER_PYTHON or --python names another. */
export const DEFAULT_PYTHON = existsSync(PROJECT_PYTHON) ? PROJECT_PYTHON : SYSTEM_PYTHON;

const text = z.string({ error: "expected text" }).min(1);
const commaList = (item: z.ZodString) => z.string().transform((s) => s.split(",").map((p) => p.trim()).filter(Boolean)).pipe(z.array(item).min(1, { error: "expected at least one entry" }));
const wholeNumber = (max: number) => {
  const error = `expected a whole number from 1 to ${max}`;
  return z.coerce.number({ error }).int({ error }).min(1, { error }).max(max, { error });
};
const flag = z.enum(["0", "1"], { error: "expected 1 (on) or 0 (off)" });

export const ENV = z.object({
  LOG_LEVEL: z.enum(LOG_LEVELS, { error: `expected one of ${LOG_LEVELS.join(", ")}` }).optional().register(VARIABLE_DOCS, {
    readBy: "every process",
    description: "level of the JSON logs on stderr: fatal, error, warn, info, debug, trace or silent",
    shown: "`info`; the CLIs: `warn`",
  }),
  WORKSPACE: text.default("./workspace").register(VARIABLE_DOCS, {
    readBy: "agents, lineage-store",
    description: "the lineage store's LanceDB tables (`lineage/`) and run folders (`runs/`); the researcher's index and arXiv cache (local, need not be shared); the LLM coder's scratch folders; an `llm.json` or `llm.yaml` there configures the LLM",
  }),
  NATS_URL: commaList(z.string().regex(NATS_ADDRESS, { error: "expected NATS URLs such as nats://host:4222, comma-separated" })).default(["nats://127.0.0.1:4222"]).register(VARIABLE_DOCS, {
    readBy: "agents, lineage-store, gpu-runner (`--announce`)",
    description: "comma-separated NATS servers; a runner started with `--announce` joins the swarm there (a Slurm job, docs/DEPLOY.md)",
  }),
  NATS_STREAM_REPLICAS: wholeNumber(5).default(1).register(VARIABLE_DOCS, {
    readBy: "agents, lineage-store, CLI, gpu-runner (`--announce`)",
    description: "replicas of the `RESEARCH` stream (subjects `research.>`) when a process creates it; 3 on a 3-node NATS cluster, on every process including the CLI: whichever process creates the stream first decides",
  }),
  NATS_SERVER: text.optional().register(VARIABLE_DOCS, {
    readBy: "CLI (`launch` without `--nats`)",
    description: "the `nats-server` binary the launcher starts",
    shown: "`/usr/sbin/nats-server`, else `nats-server` on `PATH`",
  }),
  RUNNER_ADDRESS: commaList(z.string().regex(HOST_PORT, { error: "expected host:port, comma-separated" })).default(["127.0.0.1:50051"]).register(VARIABLE_DOCS, {
    readBy: "agents, lineage-store; gpu-runner",
    description: "agents: comma-separated `host:port` of gpu-runners, each call to the one with the most free slots net of its queue (`Health`, polled every 2 s; one that does not answer is passed over); lineage-store: the same list, asked at a run's end for the best trial's weights (`FetchWeights`); gpu-runner: the one `host:port` it listens on when `--address` is not given",
  }),
  RESEARCH_SECRETS: text.optional().register(VARIABLE_DOCS, {
    readBy: "agents, lineage-store, gpu-runner, CLI",
    description: "the deployment's credentials folder (`nats.json`, `runner-token`, `ca.pem`, `tls.pem`, `tls-key.pem`; docs/DEPLOY.md, \"Security model\"): bus clients log in over TLS, the runner serves TLS and wants the token. Unset: no authentication (loopback only). `launch` makes `<workspace>/secrets` and sets it for its processes",
    shown: "none; `launch`: `<workspace>/secrets`",
  }),
  RESEARCH_UI_TOKEN: z.string().regex(/^[A-Za-z0-9._~-]{16,}$/, { error: "expected 16 or more letters, digits, '.', '_', '~' or '-'" }).optional().register(VARIABLE_DOCS, {
    readBy: "CLI (`ui`, `serve`)",
    description: "the dashboard's access token, wanted on loopback too when set (`--token` wins): requests carry `Authorization: Bearer TOKEN`, or open the URL once with `?token=TOKEN` (an HttpOnly cookie then). Unset: none on loopback, beyond it a new one per start, printed in the URL",
    shown: "none",
  }),
  RUNNER_PYTHON: text.default(DEFAULT_PYTHON).register(VARIABLE_DOCS, {
    readBy: "gpu-runner, quick-evaluator, runner benchmark, CLI (launch's model and CUDA checks, predict, export --format)",
    description: "a Python with torch, numpy, scipy and scikit-learn (`--python` wins); on a GPU host, one with a CUDA build of torch",
    shown: "the project's `.venv/bin/python` (torch 2.13 CPU, made by `scripts/setup.sh`), else `/usr/bin/python3` (Debian's torch 1.13)",
  }),
  INSTANCE_ID: text.refine(isId, { error: "expected letters, digits, _ and - only (it is a NATS subject token)" }).default(() => `${toId(hostname())}-${process.pid}`).register(VARIABLE_DOCS, {
    readBy: "agents, lineage-store",
    description: "this process's name in heartbeats and logs; names the researcher's index folder. Letters, digits, `_` and `-`",
    shown: "`<hostname>-<pid>`",
  }),
  AGENT_CONCURRENCY: wholeNumber(64).optional().register(VARIABLE_DOCS, {
    readBy: "agents",
    description: "messages one agent process handles at once (keep the judge at 1 per process)",
    shown: "analyst 4, coder 2, the others 1",
  }),
  AGENT_ACK_WAIT_S: wholeNumber(600).optional().register(VARIABLE_DOCS, {
    readBy: "agents, lineage-store",
    description: "seconds before a message an agent took and did not acknowledge goes to another instance: how long the work of a crashed agent waits. A handler at work reports progress every half of it, so a long evaluation is never handed out twice",
    shown: "analyst and judge 60, the others 30",
  }),
  RESEARCH_NOTES: text.optional().register(VARIABLE_DOCS, {
    readBy: "researcher",
    description: "a folder of the user's papers and notes (`.md`, `.txt`; `.pdf` with `pdftotext`) searched next to the built-in corpus",
    shown: "none",
  }),
  RESEARCH_ARXIV: flag.default("0").register(VARIABLE_DOCS, {
    readBy: "researcher",
    description: "`1`: also search arXiv live (offline on failure)",
  }),
  LLM: z.string().regex(/^(none|openai:.+)$/, { error: "expected none or openai:MODEL" }).optional().register(VARIABLE_DOCS, {
    readBy: "agents",
    description: "`none` or `openai:MODEL` (docs/LLM.md); set by `launch --llm`",
    shown: "none",
  }),
  LLM_MODEL: text.optional().register(VARIABLE_DOCS, {
    readBy: "agents",
    description: "the default endpoint's model when `LLM` is not set",
    shown: "none",
  }),
  LLM_BASE_URL: z.url({ error: "expected a URL such as http://localhost:11434/v1" }).optional().register(VARIABLE_DOCS, {
    readBy: "agents",
    description: "an OpenAI-compatible API root; set by `launch --llm-base-url`",
    shown: "OpenAI's",
  }),
  LLM_CONFIG: text.optional().register(VARIABLE_DOCS, {
    readBy: "agents",
    description: "a file of per-role endpoints and models (JSON or YAML, docs/LLM.md); set by `launch --llm-config`",
    shown: "`llm.json` or `llm.yaml` in `WORKSPACE`",
  }),
  OPENAI_API_KEY: text.optional().register(VARIABLE_DOCS, {
    readBy: "agents with an LLM",
    description: "the key of an endpoint; an LLM config's `api_key_env` names another variable instead. Read only by the LLM client, when it calls",
    shown: "none",
  }),
  EMBEDDER: z.string().regex(/^(minilm|hashing|openai:.+:\d+)$/, { error: "expected minilm, hashing or openai:MODEL:DIM" }).optional().register(VARIABLE_DOCS, {
    readBy: "lineage-store",
    description: "the vectors of lineage similarity search: `minilm` (all-MiniLM-L6-v2 in `.venv`, installed by `scripts/setup.sh`), `hashing` (no model) or `openai:MODEL:DIM` (an `/embeddings` endpoint). A lineage directory keeps the embedder it was built with; a setting naming another stops the store with a message. The researcher's corpus index takes the default",
    shown: "`minilm` when `.venv` is installed, else `hashing`",
  }),
  EMBEDDER_BASE_URL: z.url({ error: "expected a URL such as http://localhost:11434/v1" }).optional().register(VARIABLE_DOCS, {
    readBy: "lineage-store",
    description: "the OpenAI-compatible API root of `EMBEDDER=openai:MODEL:DIM` (its key: `OPENAI_API_KEY`)",
    shown: "OpenAI's",
  }),
  SKIP_APT: flag.default("0").register(VARIABLE_DOCS, {
    readBy: "`scripts/setup.sh`",
    description: "`1`: only report missing Debian packages (containers, non-Debian hosts)",
  }),
  SETUP_QUIET: flag.default("0").register(VARIABLE_DOCS, {
    readBy: "`scripts/setup.sh`",
    description: "`1`: no notes when there is nothing to install (installs are announced whatever it says)",
  }),
});
type EnvValues = z.output<typeof ENV>;

/**
 * Parses the variables `schema` names; an empty value counts as unset (the
 * launcher passes "" for "not given"). `origin` names where a value came from
 * when it was not the environment (a command-line flag).
 */
function parse<S extends z.ZodObject>(schema: S, env: Env, origin: Record<string, string> = {}): z.output<S> {
  const input = Object.fromEntries(Object.keys(schema.shape).map((name) => [name, env[name]?.trim() || undefined]));
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  const byName = new Map<string, string[]>();
  for (const issue of parsed.error.issues) {
    const name = String(issue.path[0]);
    byName.set(name, [...(byName.get(name) ?? []), issue.message]);
  }
  const problems = [...byName].map(([name, messages]) => `${origin[name] ?? name}=${JSON.stringify(input[name])}: ${[...new Set(messages)].join(", ")}`);
  throw new ResearchError("invalid_config", `invalid setting ${problems.join("; ")}`);
}

/** A process cannot start on a bad setting: one line on stderr, exit status 2. */
function orExit<T>(read: () => T): T {
  try {
    return read();
  } catch (err) {
    if (!(err instanceof ResearchError && err.label === "invalid_config")) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exit(2);
  }
}

function once<T extends object>(read: () => T): () => T {
  let value: T | undefined;
  return () => (value ??= orExit(read));
}

/** Which embedder a process uses (core/embedder-select.ts); unset fields take its defaults. */
export interface EmbedderSettings {
  /** `minilm`, `hashing` or `openai:MODEL:DIM`. */
  choice?: string;
  baseUrl?: string;
}

/** Input to core/llm/config.ts's llmConfigFromFlags, which applies the precedence and reads the files. */
export interface LlmSettings {
  /** `none` or `openai:MODEL`. */
  llm?: string;
  model?: string;
  baseUrl?: string;
  file?: string;
}

export interface AgentConfig {
  logLevel: LogLevel;
  workspace: string;
  natsServers: string[];
  streamReplicas: number;
  runnerAddresses: string[];
  /** The deployment's credentials folder (core/secrets.ts); unset: none. */
  secretsDir?: string;
  instance: string;
  /** Unset: the role's own default. */
  concurrency?: number;
  /** Unset: the role's own default. */
  ackWaitS?: number;
  llm: LlmSettings;
  embedder: EmbedderSettings;
}

export interface ResearcherConfig extends AgentConfig {
  notesDir?: string;
  arxiv: boolean;
}

export interface RunnerConfig {
  logLevel: LogLevel;
  address: string;
  python: string;
  secretsDir?: string;
  /** Where a runner that announces itself (--announce) joins the bus. */
  natsServers: string[];
  streamReplicas: number;
}

export interface CliConfig {
  logLevel: LogLevel;
  streamReplicas: number;
  natsServer?: string;
  runnerPython: string;
  secretsDir?: string;
  /** The dashboard's access token beyond loopback; unset: one is made per start. */
  uiToken?: string;
}

const AGENT = ENV.pick({
  LOG_LEVEL: true,
  WORKSPACE: true,
  NATS_URL: true,
  NATS_STREAM_REPLICAS: true,
  RUNNER_ADDRESS: true,
  RESEARCH_SECRETS: true,
  INSTANCE_ID: true,
  AGENT_CONCURRENCY: true,
  AGENT_ACK_WAIT_S: true,
  LLM: true,
  LLM_MODEL: true,
  LLM_BASE_URL: true,
  LLM_CONFIG: true,
  EMBEDDER: true,
  EMBEDDER_BASE_URL: true,
});
const RESEARCHER = AGENT.extend(ENV.pick({ RESEARCH_NOTES: true, RESEARCH_ARXIV: true }).shape);
const RUNNER = ENV.pick({ LOG_LEVEL: true, RUNNER_PYTHON: true, RESEARCH_SECRETS: true, NATS_URL: true, NATS_STREAM_REPLICAS: true }).extend({
  RUNNER_ADDRESS: ENV.shape.RUNNER_ADDRESS.refine((a) => a.length === 1, { error: "the runner listens on one host:port" }),
});
const CLI = ENV.pick({ LOG_LEVEL: true, NATS_STREAM_REPLICAS: true, NATS_SERVER: true, RUNNER_PYTHON: true, RESEARCH_SECRETS: true, RESEARCH_UI_TOKEN: true });

function agentOf(e: Pick<EnvValues, keyof typeof AGENT.shape>): AgentConfig {
  return {
    logLevel: e.LOG_LEVEL ?? "info",
    workspace: e.WORKSPACE,
    natsServers: e.NATS_URL,
    streamReplicas: e.NATS_STREAM_REPLICAS,
    runnerAddresses: e.RUNNER_ADDRESS,
    secretsDir: e.RESEARCH_SECRETS,
    instance: e.INSTANCE_ID,
    concurrency: e.AGENT_CONCURRENCY,
    ackWaitS: e.AGENT_ACK_WAIT_S,
    llm: { llm: e.LLM, model: e.LLM_MODEL, baseUrl: e.LLM_BASE_URL, file: e.LLM_CONFIG },
    embedder: { choice: e.EMBEDDER, baseUrl: e.EMBEDDER_BASE_URL },
  };
}

/** Every agent process and the lineage store. */
export function parseAgentConfig(env: Env): AgentConfig {
  return agentOf(parse(AGENT, env));
}

export function parseResearcherConfig(env: Env): ResearcherConfig {
  const e = parse(RESEARCHER, env);
  return { ...agentOf(e), notesDir: e.RESEARCH_NOTES, arxiv: e.RESEARCH_ARXIV === "1" };
}

/** The gpu-runner service; its flags win over the environment. */
export function parseRunnerConfig(env: Env, flags: { address?: string; python?: string } = {}): RunnerConfig {
  const e = parse(
    RUNNER,
    { ...env, RUNNER_ADDRESS: flags.address ?? env.RUNNER_ADDRESS, RUNNER_PYTHON: flags.python ?? env.RUNNER_PYTHON },
    { ...(flags.address !== undefined && { RUNNER_ADDRESS: "--address" }), ...(flags.python !== undefined && { RUNNER_PYTHON: "--python" }) },
  );
  return {
    logLevel: e.LOG_LEVEL ?? "info",
    address: e.RUNNER_ADDRESS[0]!,
    python: e.RUNNER_PYTHON,
    secretsDir: e.RESEARCH_SECRETS,
    natsServers: e.NATS_URL,
    streamReplicas: e.NATS_STREAM_REPLICAS,
  };
}

/** research-agent, quick-evaluator and the benchmarks: quieter logs, since their output is for a person. */
export function parseCliConfig(env: Env): CliConfig {
  const e = parse(CLI, env);
  return { logLevel: e.LOG_LEVEL ?? "warn", streamReplicas: e.NATS_STREAM_REPLICAS, natsServer: e.NATS_SERVER, runnerPython: e.RUNNER_PYTHON, secretsDir: e.RESEARCH_SECRETS, uiToken: e.RESEARCH_UI_TOKEN };
}

// What a process calls: its config from process.env, read once; a bad value exits.
export const agentConfig = once(() => parseAgentConfig(process.env));
export const researcherConfig = once(() => parseResearcherConfig(process.env));
export const cliConfig = once(() => parseCliConfig(process.env));
export function runnerConfig(flags: { address?: string; python?: string }): RunnerConfig {
  return orExit(() => parseRunnerConfig(process.env, flags));
}
