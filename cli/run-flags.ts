/**
 * The run flags launch, ablation and serve share (a run document's fields too), checked before
 * anything starts: `prepareGoal` for a run's, `prepareSwarm` for the swarm's (its runners as
 * Slurm jobs included). A bad one is `fail`'s one line.
 */
import { create } from "@bufbuild/protobuf";
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { homedir } from "node:os";
import { basename, delimiter, dirname, join, resolve, sep } from "node:path";
import type { ParseArgsConfig } from "node:util";
import { cliConfig } from "../core/config.js";
import { DEFAULT_SLURM_JOBS, DEFAULT_TIME_BUDGET_S } from "../core/defaults.js";
import { isId } from "../core/ids.js";
import { parseGoal } from "../core/goal.js";
import { parseDuration } from "../core/goal-words.js";
import { describeLlm, llmConfigFromFlags } from "../core/llm/config.js";
import { runSettings } from "../deploy/settings.js";
import type { SlurmRequest } from "../deploy/slurm.js";
import type { Swarm } from "../deploy/swarm.js";
import { parseDevice } from "../gpu-runner/device.js";
import { SearchSpaceSchema, type Goal } from "../proto/gen/research/v1/events_pb.js";
import { decodeText } from "../core/model-config.js";
import { parseRunDocument, type RunDocumentFields } from "../core/run-document.js";
import { outsideSpace, parseSpace, spaceMessage, type SpaceSpec } from "../core/space.js";
import { args, fail, positiveInt } from "./args.js";
import { parseSeed } from "./format.js";
import { cudaProblem, dataProblem } from "./preflight.js";
import { startingPointOf, type Confine } from "./starting-point.js";

export const RUN_FLAGS = {
  goal: { type: "string" },
  from: { type: "string" },
  class: { type: "string" },
  recipe: { type: "string" },
  "max-trials": { type: "string" },
  "time-budget": { type: "string" },
  target: { type: "string" },
  "max-params": { type: "string" },
  "data-dir": { type: "string" },
  "seeds-per-trial": { type: "string" },
  parallel: { type: "string" },
  planner: { type: "string" },
  subset: { type: "string" },
  epochs: { type: "string" },
  "last-epochs": { type: "string" },
  "no-research": { type: "boolean" },
  "no-warm-start": { type: "boolean" },
  "warm-start-from": { type: "string" },
  seed: { type: "string" },
  slots: { type: "string" },
  resume: { type: "string" },
  "unsafe-no-sandbox": { type: "boolean" },
  device: { type: "string" },
  llm: { type: "string" },
  "llm-base-url": { type: "string" },
  "llm-config": { type: "string" },
  space: { type: "string" },
  runners: { type: "string" },
  "slurm-jobs": { type: "string" },
  "slurm-partition": { type: "string" },
  "slurm-account": { type: "string" },
  "slurm-gres": { type: "string" },
  "slurm-cpus": { type: "string" },
  "slurm-mem": { type: "string" },
} as const satisfies ParseArgsConfig["options"];

export type RunArgs = ReturnType<typeof args<typeof RUN_FLAGS>>["values"];

/** Where a run's runners run: a swarm's flags, which a run document may carry for launch. */
export const SLURM_FLAGS = ["runners", "slurm-jobs", "slurm-partition", "slurm-account", "slurm-gres", "slurm-cpus", "slurm-mem"] as const satisfies readonly (keyof RunArgs)[];

/** Flags that shape a run when it starts; a resumed run keeps its own. */
const RUN_SHAPE = ["goal", "from", "class", "recipe", "target", "max-params", "data-dir", "max-trials", "seeds-per-trial", "parallel", "subset", "epochs", "last-epochs", "seed", "planner", "space", "no-warm-start", "warm-start-from"] as const satisfies readonly (keyof RunArgs)[];

/** The --resume flags' own checks: a resumed run keeps its shape, and its events must be in the workspace. */
function checkResume(a: RunArgs, workspace: string): void {
  if (!a.goal && !a.resume) fail('--goal is required, e.g. --goal "fashion-mnist: reach 90% validation accuracy"');
  if (!a.resume) return;
  const fixed = RUN_SHAPE.filter((f) => a[f] !== undefined);
  if (fixed.length) fail(`--resume continues run ${a.resume} as it was set up; only --time-budget may change it (its new total of live time): drop --${fixed.join(", --")}`);
  // A run's events live in the workspace's NATS stream (its folder under runs/ may not exist yet);
  // whether this run is there is known once NATS is up, and said then.
  if (!existsSync(join(workspace, "nats"))) fail(`--resume: ${workspace} has no swarm data (nats/), so no run ${a.resume} to resume`);
}

/** The goal from --goal and the flags that override it; none for a resumed run, which keeps its own. */
function goalOf(a: RunArgs, confine?: Confine): Goal | undefined {
  const parse = (timeBudgetS: string | number | undefined) =>
    parseGoal(a.goal ?? "resume", {
      // Read in the goal's metric's units: "92%" or 0.92 for accuracy, 55 for an RMSE.
      target: a.target,
      maxParams: positiveInt("max-params", a["max-params"]),
      timeBudgetS,
      dataDir: a["data-dir"] ? resolve(a["data-dir"]) : undefined,
    });
  let parsed = parse(a["time-budget"]);
  if (parsed.ok && !parsed.goal.timeBudgetS) parsed = parse(DEFAULT_TIME_BUDGET_S);
  if (!parsed.ok && !a.resume) fail(`cannot understand the goal: ${parsed.error}`);
  const goal = parsed.ok ? parsed.goal : undefined;
  if (goal?.dataDir) {
    // The runner starts in the repository, not here: a path as the user wrote it is read from here.
    goal.dataDir = resolve(goal.dataDir.replace(/^~(?=\/|$)/, homedir()));
    confine?.(goal.dataDir, "the goal's data");
    const problem = dataProblem(goal);
    if (problem) fail(problem);
  }
  return goal;
}

/** --warm-start-from's runs (comma-separated run ids); it and --no-warm-start contradict each other. */
function warmStartFrom(a: RunArgs): string[] | undefined {
  const text = a["warm-start-from"];
  if (text === undefined) return undefined;
  if (a["no-warm-start"]) fail("--warm-start-from names runs to learn from, --no-warm-start learns from none: give one of them");
  const runs = text.split(",").map((r) => r.trim());
  const bad = runs.find((r) => !isId(r));
  if (bad !== undefined) fail(`--warm-start-from takes run ids separated by commas (research-agent runs lists them), got "${bad}"`);
  return runs;
}

/**
 * A run's goal, settings and starting point from its flags, checked before anything starts or
 * is written: a bad one fails with a line naming it. launch checks its command line here, and
 * serve each goal it is sent.
 */
export function prepareGoal(a: RunArgs, workspace: string, confine?: Confine) {
  if (a.planner && !["builtin", "random"].includes(a.planner)) fail(`--planner must be builtin or random, got "${a.planner}"`);
  checkResume(a, workspace);
  if (a["time-budget"] !== undefined && !((parseDuration(a["time-budget"]) ?? 0) > 0)) {
    fail(`--time-budget must be a duration such as 90s, 20m or 2h, got "${a["time-budget"]}"`);
  }
  const flags = {
    maxTrials: positiveInt("max-trials", a["max-trials"]),
    seeds: positiveInt("seeds-per-trial", a["seeds-per-trial"]),
    parallel: positiveInt("parallel", a.parallel),
    subset: positiveInt("subset", a.subset),
    epochs: positiveInt("epochs", a.epochs),
    lastEpochs: positiveInt("last-epochs", a["last-epochs"]),
    rngSeed: a.seed === undefined ? undefined : (parseSeed(a.seed) ?? fail(`--seed must be a whole number from 0 to 4294967295, got "${a.seed}"`)),
    noWarmStart: a["no-warm-start"] || undefined,
    warmStartFrom: warmStartFrom(a),
  };
  const goal = goalOf(a, confine);
  const start = startingPointOf(a, workspace, cliConfig().runnerPython, confine);
  const space = spaceFlag(a.space);
  const outside = space && start && outsideSpace(space, start.train);
  if (outside) fail(`--${a.recipe ? "recipe" : "from"}: the starting point's ${outside} (--space)`);
  /** The run's settings on the swarm it runs on, `llm` the description of its agents' LLM. */
  const settings = (running: Swarm, research: boolean, llm: string, seed?: number) =>
    runSettings(
      goal!,
      { ...flags, planner: a.planner, rngSeed: seed ?? flags.rngSeed, research, llm, space: space && create(SearchSpaceSchema, spaceMessage(space)) },
      workspace,
      running.runnerHealth,
      running.slurm?.requested,
    );
  return { goal, start, space, settings };
}

/**
 * A run document's fields (core/run-document.ts) as launch's flags, every run-shaping one (an
 * absent field undefined), so that one set of checks (prepareGoal) answers a file, a request
 * and a command line.
 */
export function documentFlags(f: RunDocumentFields): Pick<RunArgs, (typeof RUN_SHAPE)[number] | "time-budget" | "no-research" | (typeof SLURM_FLAGS)[number]> {
  return {
    runners: f.runners,
    "slurm-jobs": f.slurm_jobs,
    "slurm-partition": f.slurm_partition,
    "slurm-account": f.slurm_account,
    "slurm-gres": f.slurm_gres,
    "slurm-cpus": f.slurm_cpus,
    "slurm-mem": f.slurm_mem,
    goal: f.goal,
    "time-budget": f.time_budget,
    target: f.target,
    "max-params": f.max_params,
    "max-trials": f.max_trials,
    "seeds-per-trial": f.seeds_per_trial,
    parallel: f.parallel,
    subset: f.subset,
    epochs: f.epochs,
    "last-epochs": f.last_epochs,
    seed: f.seed,
    planner: f.planner,
    "data-dir": f.data_dir,
    from: f.from,
    class: f.class,
    recipe: f.recipe,
    "no-research": f.no_research,
    "no-warm-start": f.no_warm_start,
    "warm-start-from": f.warm_start_from,
    space: f.space === undefined ? undefined : JSON.stringify(typeof f.space === "string" ? spaceDocument(f.space) : f.space),
  };
}

/** A document's space given as text (the form's YAML or JSON): decoded here, so that --space never reads it as a path. */
function spaceDocument(text: string): unknown {
  const doc = decodeText(text);
  if (!doc.ok) fail(`--space: ${doc.error}`);
  // Anything but a mapping is refused here: as text it could name a file, which --space would read.
  const checked = parseSpace(doc.value);
  if (!checked.ok) fail(`--${checked.error}`);
  return doc.value;
}

/**
 * serve's rule for a posted goal's paths (the data, --from, --recipe): each, its symlinks and ".."
 * resolved (realpath), must lie under one of `roots`, also resolved; none means no path at all.
 */
export function confineTo(roots: string[]): Confine {
  const real = roots.map((r) => realpathSync(r));
  return (path, what) => {
    // A path that does not exist is judged by its nearest folder that does, so that whether a file
    // outside the roots exists is never told.
    const at = realOrNearest(path);
    if (!real.some((r) => at.path === r || at.path.startsWith(r === sep ? r : r + sep))) {
      fail(`${what} ${path} is outside the folders this swarm reads${real.length ? ` (${real.join(", ")})` : ""}: serve it with --data-root`);
    }
    if (!at.exists) fail(`${what}: no such file: ${path}`);
  };
}

/** The path with its symlinks and ".." resolved: all of it where it exists, else its longest existing prefix. */
function realOrNearest(path: string): { path: string; exists: boolean } {
  const missing: string[] = [];
  for (let p = resolve(path); ; p = dirname(p)) {
    try {
      return { path: join(realpathSync(p), ...missing.reverse()), exists: missing.length === 0 };
    } catch {
      if (dirname(p) === p) return { path: resolve(path), exists: false };
      missing.push(basename(p));
    }
  }
}

/** A --goal that names a run document rather than saying the goal: a YAML or JSON file. */
const GOAL_FILE = /\.(?:ya?ml|json)$/i;

/**
 * launch --goal run.yaml: the run document's fields (its goal and run flags, as serve's API takes
 * them), under the command line's flags, which win flag by flag. Only launch and ablation read a
 * file here: serve's goals arrive as documents already, and a posted goal is never a path.
 */
export function withGoalDocument<A extends RunArgs>(a: A): A {
  const file = a.goal?.trim();
  if (!file || !GOAL_FILE.test(file)) return a;
  if (!existsSync(file)) fail(`--goal: no file ${file} (a run document: goal: "fashion-mnist: reach 92% validation accuracy", with launch's flags in snake_case beside it)`);
  const doc = parseRunDocument(readFileSync(file, "utf8"));
  if (!doc.ok) fail(`--goal ${file}: ${doc.error}`);
  const given = Object.fromEntries(Object.entries(a).filter(([key, value]) => key !== "goal" && value !== undefined));
  return { ...a, ...documentFlags(doc.value), ...given };
}

/** --space: a YAML or JSON file, or the document itself when it starts with "{" (what serve passes on). */
function spaceFlag(value: string | undefined): SpaceSpec | undefined {
  if (value === undefined) return undefined;
  const inline = value.trimStart().startsWith("{");
  if (!inline && !existsSync(value)) fail(`--space: no file ${value} (a YAML or JSON space, or the document itself: --space '{lr: {low: 1e-4, high: 1e-2}}')`);
  const text = decodeText(inline ? value : readFileSync(value, "utf8"));
  if (!text.ok) fail(`--space: ${text.error}`);
  const parsed = parseSpace(text.value);
  if (!parsed.ok) fail(`--${parsed.error}`);
  return parsed.value;
}

/** A Slurm name (partition, account), a resource list (gpu:1, gpu:a100:2) and a memory size (16G) as sbatch takes them. */
const SLURM_VALUE = { partition: /^[\w.-]+$/, account: /^[\w.-]+$/, gres: /^[\w.-]+(:[\w.-]+)*(,[\w.-]+(:[\w.-]+)*)*$/, mem: /^\d+[KMGT]?$/ } as const;

/** --runners and its --slurm-* flags: undefined for the runner the launch starts itself. */
export function slurmFlags(a: Pick<RunArgs, (typeof SLURM_FLAGS)[number]>): SlurmRequest | undefined {
  const given = (["jobs", "partition", "account", "gres", "cpus", "mem"] as const).filter((k) => a[`slurm-${k}`] !== undefined);
  if (a.runners === undefined || a.runners === "local") {
    if (given.length) fail(`--slurm-${given[0]} applies to runners that are Slurm jobs: add --runners slurm`);
    return undefined;
  }
  if (a.runners !== "slurm") fail(`--runners must be local (a runner the launch starts) or slurm (runner jobs on the cluster), got "${a.runners}"`);
  for (const k of ["partition", "account", "gres", "mem"] as const) {
    const v = a[`slurm-${k}`];
    if (v !== undefined && !SLURM_VALUE[k].test(v)) fail(`--slurm-${k}: "${v}" is not ${k === "gres" ? "a resource list such as gpu:1" : k === "mem" ? "a size such as 16G" : `a Slurm ${k} name`}`);
  }
  if (!onPath("sbatch")) fail("--runners slurm: no sbatch on PATH; launch from a host of the cluster (a login node), docs/DEPLOY.md \"On a Slurm cluster\"");
  return {
    jobs: positiveInt("slurm-jobs", a["slurm-jobs"]) ?? DEFAULT_SLURM_JOBS,
    partition: a["slurm-partition"],
    account: a["slurm-account"],
    gres: a["slurm-gres"],
    cpus: positiveInt("slurm-cpus", a["slurm-cpus"]),
    mem: a["slurm-mem"],
  };
}

function onPath(command: string): boolean {
  return (process.env.PATH ?? "").split(delimiter).some((dir) => dir && existsSync(join(dir, command)));
}

/** The swarm's own flags: where it lives, its runner's slots and device, the LLM its agents use. */
export function prepareSwarm(a: RunArgs) {
  const workspace = resolve(a.workspace);
  const slots = positiveInt("slots", a.slots);
  const llmFlags = { llm: a.llm, baseUrl: a["llm-base-url"], file: a["llm-config"] ? resolve(a["llm-config"]) : undefined };
  let llm: string;
  try {
    llm = describeLlm(llmConfigFromFlags({ ...llmFlags, workspace }));
  } catch (err) {
    fail(`LLM settings: ${(err as Error).message}`);
  }
  const device = parseDevice(a.device);
  if (!device.ok) fail(device.error);
  const slurm = slurmFlags(a);
  // Last: it asks the runner's Python, which takes seconds where the other checks take none. A
  // Slurm job's runner is on another node, with a Python of its own (RUNNER_PYTHON there).
  const noCuda = device.device === "cuda" && !slurm ? cudaProblem(cliConfig().runnerPython) : undefined;
  if (noCuda) fail(noCuda);
  return { workspace, llmFlags, llm, slots, device: device.device, slurm };
}

export type PreparedSwarm = ReturnType<typeof prepareSwarm>;

/** launch's and ablation's every flag, the run's before the swarm's. */
export function prepareRun(a: RunArgs) {
  // The swarm's checks end with the slow CUDA probe.
  const goal = prepareGoal(a, resolve(a.workspace));
  const swarm = prepareSwarm(a);
  return { ...swarm, ...goal, settings: (running: Swarm, research: boolean, seed?: number) => goal.settings(running, research, swarm.llm, seed) };
}

export type PreparedRun = ReturnType<typeof prepareRun>;
