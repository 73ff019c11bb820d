/** What launch, ablation and serve share: the flags that shape a run and a swarm, their checks, and a swarm started and always stopped. */
import { create } from "@bufbuild/protobuf";
import { existsSync, mkdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { basename, delimiter, dirname, join, resolve, sep } from "node:path";
import type { ParseArgsConfig } from "node:util";
import { cliConfig } from "../core/config.js";
import { ResearchError } from "../core/failure.js";
import { DEFAULT_SLURM_JOBS, DEFAULT_TIME_BUDGET_S, searchDevice } from "../core/defaults.js";
import { jobsText } from "../core/format.js";
import { isId } from "../core/ids.js";
import { smallestTemplate } from "../core/tasks/fit.js";
import { templatesFor } from "../core/tasks/index.js";
import { parseDuration, parseGoal } from "../core/goal.js";
import { describeLlm, llmConfigFromFlags } from "../core/llm/config.js";
import type { Logger } from "../core/logger.js";
import { runSettings } from "../deploy/settings.js";
import { slurmTimeLimitMin, type SlurmRequest } from "../deploy/slurm.js";
import type { RunnerJobsRequest, RunOutcome, Swarm } from "../deploy/swarm.js";
import { parseDevice } from "../gpu-runner/device.js";
import { EventSchema, RunFinishedSchema, RunStartedSchema, RunStatus, SearchSpaceSchema, type Event, type Goal, type RunnerJobs, type StartingPoint } from "../proto/gen/research/v1/events_pb.js";
import type { DatasetInfo } from "../proto/gen/research/v1/runner_pb.js";
import { learningOf } from "../core/learning/index.js";
import { datasetSpec } from "../swarm/dataset-info.js";
import { argumentDefault, decodeText, searchableArguments } from "../core/model-config.js";
import { parseRunDocument, type RunDocumentFields } from "../core/run-document.js";
import { outsideSpace, parseSpace, spaceMessage, type SpaceSpec } from "../core/space.js";
import { args, CliFailure, EXIT, fail, positiveInt } from "./args.js";
import { quietLogger } from "./workspace.js";
import { parseSeed } from "./format.js";
import { cudaProblem, dataProblem } from "./preflight.js";
import { startingPointOf, startProblem, type Confine } from "./starting-point.js";

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

/** Exit statuses of a launch stopped by a signal, after its report is written. */
export const SIGNAL_EXIT: Record<string, number> = { SIGINT: 130, SIGTERM: 143 };

/**
 * A console line with the seconds since `t0`; --json keeps stdout for the one JSON document. On a
 * terminal a transient line (a training's progress) is rewritten in place by the next line, so
 * that epochs do not scroll away what the run decided; elsewhere every line is a plain line.
 */
export function sayer(json: boolean | undefined, tty = Boolean(process.stdout.isTTY)): (line: string, transient?: boolean) => void {
  const t0 = Date.now();
  let open = false;
  return (line, transient = false) => {
    if (json) return;
    const text = `[${((Date.now() - t0) / 1000).toFixed(0).padStart(5)}s] ${line}`;
    if (!tty) return void process.stdout.write(`${text}\n`);
    process.stdout.write(`${open ? "\r\x1b[K" : ""}${text}${transient ? "" : "\n"}`);
    open = transient;
  };
}

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

/** The folder the runner must be able to read for the goal's data: a CSV file's folder, else the data folder itself. */
function dataRootOf(goal: Goal | undefined): string | undefined {
  const dataDir = goal?.dataDir;
  return dataDir ? (statSync(dataDir, { throwIfNoEntry: false })?.isFile() ? dirname(dataDir) : dataDir) : undefined;
}

/**
 * Runner jobs for a run of `budgetS` seconds, said on the console as they change; `last` holds
 * the counts last seen. A run whose jobs never start ends at its budget, having trained nothing.
 */
export function runnerJobsFor(request: SlurmRequest, budgetS: number, say: (line: string) => void, runId?: string) {
  const seen: { last?: RunnerJobs } = {};
  const jobs: RunnerJobsRequest = {
    request,
    timeLimitMin: slurmTimeLimitMin(budgetS),
    waitMs: budgetS * 1000,
    runId,
    onChange: (counts) => {
      seen.last = counts;
      say(`runner jobs: ${jobsText(counts)}`);
    },
  };
  say(`submitting ${request.jobs} runner jobs to Slurm (time limit ${jobs.timeLimitMin} min each) ...`);
  return { jobs, seen };
}

/** Whether `err` says that no runner job came up before the run's budget was spent (SlurmRunners.waitForRunner). */
export const jobsNeverStarted = (err: unknown): err is ResearchError => err instanceof ResearchError && err.label === "runner_unavailable";

/**
 * The swarm, its runner told about (which device a run gets, before it spends any budget); exits 2
 * when it cannot start. `goal`: the run it starts for, whose budget sizes its runner jobs and
 * which gets a report when none of them starts (then exits 3).
 */
export async function startSwarmFor(a: RunArgs, flags: PreparedSwarm & { clusterBus?: boolean }, dataRoots: string[], say: (line: string) => void, log: Logger, goal?: Goal): Promise<Swarm> {
  say(`starting the swarm in ${flags.workspace} ...`);
  const slurm = flags.slurm && runnerJobsFor(flags.slurm, goal?.timeBudgetS || DEFAULT_TIME_BUDGET_S, say);
  // Runner jobs may wait in the queue for the run's whole budget: a signal meanwhile cancels them
  // (and stops what started) rather than leaving them queued, and the launch ends with its code.
  const waiting = new AbortController();
  const onSignal = (sig: NodeJS.Signals) => waiting.abort(sig);
  if (slurm) {
    slurm.jobs.signal = waiting.signal;
    for (const sig of Object.keys(SIGNAL_EXIT)) process.once(sig, onSignal);
  }
  const { startSwarm, newRunId } = await import("../deploy/swarm.js");
  let swarm: Swarm;
  try {
    swarm = await startSwarm({
      workspace: flags.workspace,
      natsUrl: a.nats,
      slots: flags.slots,
      device: flags.device,
      // Mounted read-only into the runner's sandbox.
      dataRoots,
      unsafeNoSandbox: a["unsafe-no-sandbox"],
      llm: flags.llmFlags,
      natsServer: cliConfig().natsServer,
      replicas: cliConfig().streamReplicas,
      secretsDir: cliConfig().secretsDir,
      slurm: slurm?.jobs,
      clusterBus: flags.clusterBus,
      logger: log,
      onRestart: (name, n) => say(`process ${name} exited; restarted (${n})`),
    });
  } catch (err) {
    if (waiting.signal.aborted) fail((err as Error).message, SIGNAL_EXIT[String(waiting.signal.reason)]!);
    if (slurm && goal && jobsNeverStarted(err)) {
      const report = await writeUnstartedReport(flags.workspace, newRunId(), goal, slurm.seen.last, err.message);
      fail(`${err.message}; report: ${report}`, EXIT.budgetSpent);
    }
    fail(`cannot start the swarm: ${(err as Error).message}`, EXIT.cannotRun);
  } finally {
    for (const sig of Object.keys(SIGNAL_EXIT)) process.off(sig, onSignal);
  }
  if (waiting.signal.aborted) {
    // After the first job came up, while the rest of the swarm started: stopped all the same.
    await swarm.stop();
    fail(`stopped by ${String(waiting.signal.reason)} while the swarm started`, SIGNAL_EXIT[String(waiting.signal.reason)]!);
  }
  const { slots, device } = swarm.runnerHealth;
  say(`runner: ${slots} slots on ${device?.kind ?? "?"}${device?.kind === "cuda" ? ` (${device.gpus} x ${device.name})` : ""}, torch ${device?.torchVersion ?? "?"}${device?.sandboxed ? ", sandboxed" : ", NOT sandboxed"}`);
  return swarm;
}

/**
 * Why the runner cannot train on the goal's dataset, or the starting point (--from) cannot
 * train on it; else the dataset's shape told on the console.
 */
export async function datasetProblem(swarm: Swarm, run: Pick<PreparedRun, "start" | "space">, goal: Goal, say: (line: string) => void): Promise<string | undefined> {
  const info = await swarm.runner.describe({ dataset: datasetSpec(goal) });
  if (info.failure) return `dataset ${goal.dataset}: ${info.failure.message}`;
  say(`dataset ${goal.dataset}: ${info.nTrain} train / ${info.nVal} val / ${info.nTest} test, input ${JSON.stringify(info.inputShape)}, ${learningOf(info.task).describeTarget(info)}`);
  if (!run.start) return familyProblem(swarm, run.space, info) ?? templateProblem(swarm, goal, info, run.space?.families);
  const problem = await startProblem(run.start, goal, info, swarm.runner);
  if (!problem && run.start.point.modelCode) say(startLine(run.start.point, info));
  return problem;
}

/** Why the built-in brain would have no model to start from: every template, narrowed, is over the goal's parameter limit. */
function templateProblem(swarm: Swarm, goal: Goal, info: DatasetInfo, families?: string[]): string | undefined {
  const max = Number(goal.maxParams);
  if (!max) return undefined;
  const smallest = smallestTemplate(info, searchDevice(swarm.runnerHealth.device?.kind), max, families);
  if (!smallest || smallest.params <= max) return undefined;
  return `the goal's limit of ${max.toLocaleString("en-US")} parameters is below every starting model for ${goal.dataset} (the smallest, ${smallest.name}, narrowed, has ${smallest.params.toLocaleString("en-US")}): raise the limit, or start from your own model with --from`;
}

/** Why the space's families (--space) leave the built-in brain no template for this data. */
function familyProblem(swarm: Swarm, space: SpaceSpec | undefined, info: DatasetInfo): string | undefined {
  if (!space?.families.length) return undefined;
  const names = templatesFor(info, searchDevice(swarm.runnerHealth.device?.kind)).map((t) => t.name);
  const unknown = space.families.filter((f) => !names.includes(f));
  return unknown.length ? `--space: no template ${unknown.join(", ")} for this data; its families are ${names.join(", ")}` : undefined;
}

/** A model in Python as the runner built it: its size, and the arguments the search may change. */
function startLine(p: StartingPoint, info: DatasetInfo): string {
  const args = searchableArguments(p.arguments, info);
  const named = args.map((a) => `${a.name}=${argumentDefault(a)}`).join(", ");
  return `starting point ${p.origin}: ${Number(p.params).toLocaleString("en-US")} parameters; ${args.length ? `constructor arguments the search may change: ${named}` : "no numeric or boolean constructor argument to search: the recipe only"}`;
}

/**
 * Starts the swarm, checks the dataset, runs `body`, and always stops the
 * swarm; exits with `body`'s code (2 when it threw). A SIGINT or SIGTERM
 * stops at once, unless `body` wraps up on `interrupt` (when `wrapsUp`):
 * then the first aborts it and a second stops at once.
 */
export async function withSwarm(
  a: RunArgs,
  run: PreparedRun,
  say: (line: string) => void,
  body: (swarm: Swarm, interrupt: AbortSignal, log: Logger) => Promise<number>,
  wrapsUp = false,
): Promise<never> {
  // Beside the swarm's own logs (deploy/supervisor.ts): the console shows `say` lines only.
  const log = quietLogger(join(run.workspace, "logs", "launcher.log"));
  const root = dataRootOf(run.goal);
  const swarm = await startSwarmFor(a, run, root ? [root] : [], say, log, run.goal);
  let stopping = false;
  const shutdown = async (code: number): Promise<never> => {
    if (!stopping) {
      stopping = true;
      say("stopping the swarm ...");
      await swarm.stop();
    }
    process.exit(code);
  };
  // fail(), once the swarm is stopped.
  const failStopping = (message: string, code: number): Promise<never> => {
    process.stderr.write(`research-agent: ${message}\n`);
    return shutdown(code);
  };
  const interrupt = new AbortController();
  for (const sig of Object.keys(SIGNAL_EXIT)) {
    process.on(sig, () => {
      if (!wrapsUp || interrupt.signal.aborted) return void shutdown(SIGNAL_EXIT[sig]!);
      say(`${sig}: writing the report so far, then stopping (again to stop at once) ...`);
      interrupt.abort(sig);
    });
  }
  try {
    const problem = run.goal && (await datasetProblem(swarm, run, run.goal, say));
    // The data or the starting point, as the runner found them: the user's input.
    if (problem) return await failStopping(problem, EXIT.badInput);
    if (interrupt.signal.aborted) return await shutdown(SIGNAL_EXIT[String(interrupt.signal.reason)]!);
    return await shutdown(await body(swarm, interrupt.signal, log));
  } catch (err) {
    return await failStopping((err as Error).message, err instanceof CliFailure ? err.code : EXIT.cannotRun);
  }
}

/**
 * An interrupted run's report so far, and its paths on the outcome: the lineage store writes
 * reports on RunFinished, which an interrupted run has not had.
 */
/**
 * The report of a run whose runner jobs never came up: its goal, the jobs as last seen, and why it
 * ended at its budget having trained nothing (no trial, so no lineage to tell). Returns its path.
 */
export async function writeUnstartedReport(workspace: string, runId: string, goal: Goal, jobs: RunnerJobs | undefined, reason: string): Promise<string> {
  const [{ writeReport }, { foldRun }] = await Promise.all([import("../lineage-store/report.js"), import("../swarm/run-state.js")]);
  const finished = create(RunFinishedSchema, { status: RunStatus.BUDGET_EXHAUSTED, reason, trials: 0, seconds: goal.timeBudgetS });
  const at = BigInt(Date.now());
  const bodies: Event["body"][] = [
    { case: "runStarted", value: create(RunStartedSchema, { goal }) },
    ...(jobs ? [{ case: "runnerJobs" as const, value: jobs }] : []),
    { case: "runFinished", value: finished },
  ];
  const state = foldRun(runId, bodies.map((body, i) => create(EventSchema, { runId, eventId: `${runId}/unstarted-${i}`, emittedAtMs: at, body })));
  const dir = join(workspace, "runs", runId);
  mkdirSync(dir, { recursive: true });
  await writeReport(dir, state, finished);
  return join(dir, "report.md");
}

export async function writeInterruptedReport(workspace: string, outcome: RunOutcome): Promise<void> {
  const [{ writeReport }, { REGISTRY_FILE }] = await Promise.all([import("../lineage-store/report.js"), import("../lineage-store/artifacts.js")]);
  const dir = join(workspace, "runs", outcome.runId);
  await writeReport(dir, outcome.state, outcome.finished);
  outcome.finished.reportPath = join(dir, "report.md");
  outcome.finished.registryPath = join(dir, REGISTRY_FILE);
}
