/** What every research-agent verb shares: its flags and its one-line failures. */
import { parseArgs, type ParseArgsConfig } from "node:util";
import { parsePositiveInt } from "./format.js";
import { verbHelp, type Verb } from "./help.js";

const COMMON = {
  workspace: { type: "string", default: "./workspace" },
  nats: { type: "string" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const satisfies ParseArgsConfig["options"];

/** The verb this process runs (research-agent.ts has checked it is one). */
const verb = process.argv[2] as Verb;

/** Flags renamed so that no two can be confused, by verb, each with what it is now: the old name is told, not guessed. */
const SEEDS = "--seeds-per-trial (a trial's seeds; --seed is the run's random seed)";
const RENAMED: Partial<Record<Verb, Record<string, string>>> = {
  launch: { "--seeds": SEEDS },
  ablation: { "--seeds": SEEDS },
  serve: { "--runs": "--max-runs (runs side by side; ablation's --runs is its number of pairs)" },
  propose: { "--train": "--recipe (a train_config, as launch --recipe takes)" },
};

/**
 * A verb's one-line refusal and its exit status. Thrown, not exited on the spot, so that serve
 * can answer a goal's refusal over HTTP with launch's own checks; research-agent.ts prints it
 * and exits with its status.
 */
export class CliFailure extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
  }
}

/** Exit statuses, the same for every verb (research-agent --help's "exit status", the README). */
export const EXIT = { ok: 0, cannotRun: 1, badInput: 2, budgetSpent: 3 } as const;

export function fail(message: string, code: number = EXIT.badInput): never {
  throw new CliFailure(message, code);
}

/** What a verb takes besides its flags: its positional arguments' names (absent: none; "words": any number, one text), and why it has no --json. */
export interface Accepts {
  positionals?: readonly string[] | "words";
  noJson?: string;
}

/** Whether this process's verb was asked for --json (and has it): its refusal is then a JSON document too. */
let jsonAsked = false;

/** A refusal as --json gives it: one document on stdout, as the verb's own output would be. */
export function refusalJson(err: CliFailure): string | undefined {
  return jsonAsked ? `${JSON.stringify({ error: err.message, exit: err.code })}\n` : undefined;
}

/** Node's parseArgs errors in one line of our own, naming the verb's help. */
function parseProblem(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  const help = `research-agent ${verb} --help lists its options`;
  const flag = /'(-[^' ]+)/.exec(e.message)?.[1] ?? "";
  switch (e.code) {
    case "ERR_PARSE_ARGS_UNKNOWN_OPTION":
      return `${verb} has no option ${flag} (${help})`;
    case "ERR_PARSE_ARGS_INVALID_OPTION_VALUE":
      // A value that starts with "-" reads as a flag; --flag=VALUE takes it.
      if (/ambiguous/.test(e.message)) return `${flag} needs a value: one that starts with "-" goes as ${flag}=VALUE`;
      if (/argument missing/.test(e.message)) return `${flag} needs a value (${help})`;
      return `${flag} ${/does not take an argument/.test(e.message) ? "takes no value" : "has a value of the wrong kind"} (${help})`;
    default:
      return `${e.message.split("\n")[0]} (${help})`;
  }
}

/**
 * The verb's flags; --help prints the verb's own help and exits. Every verb takes --json: one that
 * has no single document to give says why not (`noJson`), and --json is refused with it. Positional
 * arguments beyond those the verb names are refused, never ignored.
 */
export function args<O extends ParseArgsConfig["options"]>(argv: string[], options: O, accepts: Accepts = {}) {
  jsonAsked = !accepts.noJson && argv.includes("--json");
  for (const [old, now] of Object.entries(RENAMED[verb] ?? {})) {
    if (argv.some((x) => x === old || x.startsWith(`${old}=`))) fail(`${old} is now ${now}`);
  }
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: { ...COMMON, ...options }, allowPositionals: true });
  } catch (err) {
    fail(parseProblem(err));
  }
  // Every verb has COMMON's --help; the generic options type hides it.
  if ((parsed.values as { help?: boolean }).help) {
    process.stdout.write(verbHelp(verb));
    process.exit(0);
  }
  if (accepts.noJson && (parsed.values as { json?: boolean }).json) fail(`${verb} has no --json: ${accepts.noJson}`);
  const names = accepts.positionals ?? [];
  if (names !== "words" && parsed.positionals.length > names.length) {
    const extra = parsed.positionals.slice(names.length).map((x) => JSON.stringify(x)).join(" ");
    fail(`${verb} takes ${names.length ? `${names.join(" ")} and nothing more` : "no arguments besides its options"}, not ${extra} (research-agent ${verb} --help)`);
  }
  return parsed;
}

export const positiveInt = (flag: string, v?: string) => (v === undefined ? undefined : (parsePositiveInt(v) ?? fail(`--${flag} must be a positive integer, got "${v}"`)));

/** A dashboard's --port: 0 takes a free one. */
export function dashboardPort(v: string): number {
  const port = Number(v);
  return /^\d+$/.test(v) && port <= 65535 ? port : fail(`--port must be a whole number from 0 (a free port) to 65535, got "${v}"`);
}

/** Why a dashboard could not start on `port`, in one line. */
export function dashboardStartProblem(err: unknown, port: number): string {
  return (err as NodeJS.ErrnoException).code === "EADDRINUSE"
    ? `port ${port} is in use (another dashboard?): give --port N, or --port 0 for a free one`
    : `cannot start the dashboard: ${(err as Error).message}`;
}
