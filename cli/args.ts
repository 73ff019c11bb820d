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
export const EXIT = { ok: 0, badInput: 1, cannotRun: 2, budgetSpent: 3 } as const;

export function fail(message: string, code: number = EXIT.badInput): never {
  throw new CliFailure(message, code);
}

/**
 * The verb's flags; --help prints the verb's own help and exits. Every verb takes --json: one that
 * has no single document to give passes `noJson`, why not, and --json is refused with it.
 */
export function args<O extends ParseArgsConfig["options"]>(argv: string[], options: O, noJson?: string) {
  for (const [old, now] of Object.entries(RENAMED[verb] ?? {})) {
    if (argv.some((x) => x === old || x.startsWith(`${old}=`))) fail(`${old} is now ${now}`);
  }
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: { ...COMMON, ...options }, allowPositionals: true });
  } catch (err) {
    fail(`${(err as Error).message}\nrun research-agent ${verb} --help for usage`);
  }
  // Every verb has COMMON's --help; the generic options type hides it.
  if ((parsed.values as { help?: boolean }).help) {
    process.stdout.write(verbHelp(verb));
    process.exit(0);
  }
  if (noJson && (parsed.values as { json?: boolean }).json) fail(`${verb} has no --json: ${noJson}`);
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
