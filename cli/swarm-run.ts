/**
 * What launch, ablation and serve share once their flags are checked (run-flags.ts): a swarm
 * started for a run (its runner jobs too) and always stopped, the run's data checked by the
 * runner, and the reports of a run interrupted or whose runner jobs never came up.
 */
import { create } from "@bufbuild/protobuf";
import { mkdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { cliConfig } from "../core/config.js";
import { ResearchError } from "../core/failure.js";
import { DEFAULT_TIME_BUDGET_S, searchDevice } from "../core/defaults.js";
import { int, jobsText } from "../core/format.js";
import { smallestTemplate } from "../core/tasks/fit.js";
import { templatesFor } from "../core/tasks/index.js";
import type { Logger } from "../core/logger.js";
import { slurmTimeLimitMin, type SlurmRequest } from "../deploy/slurm.js";
import type { RunnerJobsRequest, RunOutcome, Swarm } from "../deploy/swarm.js";
import { EventSchema, RunFinishedSchema, RunStartedSchema, RunStatus, type Event, type Goal, type RunnerJobs, type StartingPoint } from "../proto/gen/research/v1/events_pb.js";
import type { DatasetInfo } from "../proto/gen/research/v1/runner_pb.js";
import { learningOf } from "../core/learning/index.js";
import { datasetSpec } from "../swarm/dataset-info.js";
import { argumentDefault, searchableArguments } from "../core/model-config.js";
import type { SpaceSpec } from "../core/space.js";
import { CliFailure, EXIT, fail } from "./args.js";
import { quietLogger } from "./workspace.js";
import { startProblem } from "./starting-point.js";
import type { PreparedRun, PreparedSwarm, RunArgs } from "./run-flags.js";

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

/** The folder the runner must be able to read for the goal's data: a CSV file's folder, else the data folder itself. */
function dataRootOf(goal: Goal | undefined): string | undefined {
  const dataDir = goal?.dataDir;
  return dataDir ? (statSync(dataDir, { throwIfNoEntry: false })?.isFile() ? dirname(dataDir) : dataDir) : undefined;
}

/**
 * Runner jobs for a run of `budgetS` seconds, said on the console as they change; `last` holds
 * the counts last seen. A run whose jobs never start ends at its budget, having trained nothing.
 */
export function runnerJobsFor(request: SlurmRequest, budgetS: number, say: (line: string) => void, opts: { runId?: string; signal?: AbortSignal } = {}) {
  const seen: { last?: RunnerJobs } = {};
  const jobs: RunnerJobsRequest = {
    request,
    timeLimitMin: slurmTimeLimitMin(budgetS),
    waitMs: budgetS * 1000,
    ...opts,
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
  // A signal while the swarm starts stops what has started (its nats-server and children are in
  // process groups of their own: a launcher killed by the signal's default would leave them), and
  // the launch ends with the signal's code. Runner jobs may wait in the queue for the run's whole
  // budget: the signal cancels them rather than leaving them queued.
  const waiting = new AbortController();
  const onSignal = (sig: NodeJS.Signals) => waiting.abort(sig);
  for (const sig of Object.keys(SIGNAL_EXIT)) process.once(sig, onSignal);
  const slurm = flags.slurm && runnerJobsFor(flags.slurm, goal?.timeBudgetS || DEFAULT_TIME_BUDGET_S, say, { signal: waiting.signal });
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
      signal: waiting.signal,
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
  return `the goal's limit of ${int(max)} parameters is below every starting model for ${goal.dataset} (the smallest, ${smallest.name}, narrowed, has ${int(smallest.params)}): raise the limit, or start from your own model with --from`;
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
  return `starting point ${p.origin}: ${int(Number(p.params))} parameters; ${args.length ? `constructor arguments the search may change: ${named}` : "no numeric or boolean constructor argument to search: the recipe only"}`;
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
