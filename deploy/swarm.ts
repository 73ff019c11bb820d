/**
 * One machine's swarm: a local nats-server with JetStream (or an existing
 * NATS), the gpu-runner, the lineage store and one process per agent role,
 * all supervised; and running a goal on it to the end.
 */
import { DEFAULT_TIME_BUDGET_S, IDLE_GRACE_S } from "../core/defaults.js";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import { connectBus, EVENT_KINDS, freePort, progressSubject, startNatsServer, type Bus, type NatsServer } from "../bus/index.js";
import { parseResearcherConfig } from "../core/config.js";
import { ResearchError } from "../core/failure.js";
import { readJsonFile } from "../core/json.js";
import { z } from "zod";
import { alive } from "../core/process.js";
import type { Logger } from "../core/logger.js";
import { ensureSecrets, loadSecrets, type Secrets } from "../core/secrets.js";
import { connectRunner, type RunnerClient } from "../gpu-runner/client.js";
import type { RunnerDevice } from "../gpu-runner/device.js";
import type { DatasetInfo, HealthResponse } from "../proto/gen/research/v1/runner_pb.js";
import { datasetSpec } from "../swarm/dataset-info.js";
import { RunEnd, RunStatus, type Event, type RunnerJobs, type Goal, type RunFinished, type RunSettings, type StartingPoint } from "../proto/gen/research/v1/events_pb.js";
import { applyToRunState, downtimeSeconds, emptyRunState, inFlight, inFlightCount, isTerminal, liveSeconds, runSoFar, type RunState } from "../swarm/run-state.js";
import { budgetPlan, budgetSpent } from "../swarm/budget.js";
import { interventionEvent } from "../swarm/interventions.js";
import { SlurmRunners, type SlurmRequest } from "./slurm.js";
import { Supervisor } from "./supervisor.js";

export const ROLES = ["researcher", "planner", "coder", "analyst", "judge"] as const;

export interface SwarmOptions {
  workspace: string;
  /** Join this NATS instead of starting one. */
  natsUrl?: string;
  /**
   * The credentials of the deployment joined with natsUrl (RESEARCH_SECRETS). A swarm that
   * starts its own nats-server makes and uses `<workspace>/secrets` instead.
   */
  secretsDir?: string;
  /** Use these runners (host:port, comma-separated) instead of starting one. */
  runnerAddress?: string;
  /** The nats-server binary to start (default: Debian's, then PATH). */
  natsServer?: string;
  /** Stream replicas when joining a NATS cluster. */
  replicas?: number;
  slots?: number;
  /** The device of the runner this swarm starts (gpu-runner/server.ts); default auto. */
  device?: RunnerDevice;
  dataRoots?: string[];
  unsafeNoSandbox?: boolean;
  /**
   * Runners as Slurm jobs instead of one started here (deploy/slurm.ts): what each job asks
   * for, its time limit, and how long to wait for the first to come up.
   */
  slurm?: RunnerJobsRequest;
  /** The bus listens beyond loopback, behind its TLS and password, where runner jobs on the cluster's nodes reach it (implied by `slurm`; `serve --runners slurm`). */
  clusterBus?: boolean;
  /** Instances per role (default 1 each). */
  instances?: Partial<Record<(typeof ROLES)[number], number>>;
  /** LLM flags for every agent (see core/llm/config.ts); absent: the built-in brain. */
  llm?: { llm?: string; baseUrl?: string; file?: string };
  logger: Logger;
  onRestart?: (name: string, restarts: number) => void;
  /** Stops the start: what has started is stopped, and the start throws. */
  signal?: AbortSignal;
}

/** Runner jobs asked of Slurm: what each asks for, its time limit, how long to wait for the first to come up, the run they serve alone. */
export interface RunnerJobsRequest {
  request: SlurmRequest;
  timeLimitMin: number;
  waitMs: number;
  /** The one run whose trials they take (a run's own jobs under serve); absent: every run's. */
  runId?: string;
  onChange?: (jobs: RunnerJobs) => void;
  /** Stops the wait for the first runner (the jobs cancelled). */
  signal?: AbortSignal;
}

export interface Swarm {
  natsUrl: string;
  runnerAddress: string;
  bus: Bus;
  runner: RunnerClient;
  /** The first runner's health when the swarm came up: its device and slots size a run's defaults (runSettings). */
  runnerHealth: HealthResponse;
  supervisor: Supervisor;
  /** The runner jobs, when the runners are Slurm's. */
  slurm?: SlurmRunners;
  /**
   * Submits runner jobs that join this swarm and resolves with the first runner up; none within
   * `waitMs`: the jobs cancelled and a `runner_unavailable` error that says why they wait.
   */
  submitRunners(jobs: RunnerJobsRequest): Promise<{ pool: SlurmRunners; first: string }>;
  stop(): Promise<void>;
}

/** Lines of the runner's log a start that timed out carries in its error's detail. */
const RUNNER_LOG_TAIL = 20;

/**
 * Each try on a channel of its own: a channel refused while the runner imports torch backs off
 * (gpu-runner/client.ts RECONNECT, up to 2 s), and one kept across tries held a launch 1.9 s after
 * its runner listened. `log`: the runner's log file when this swarm started it; its last lines say
 * why it did not come up.
 */
async function waitForRunner(connect: () => RunnerClient, timeoutMs: number, log?: string, signal?: AbortSignal): Promise<HealthResponse> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (signal?.aborted) throw new Error(`stopped by ${String(signal.reason)} while the swarm started`);
    const client = connect();
    try {
      const h = await client.health({}, { timeoutMs: 2000 });
      if (h.workersReady > 0) return h;
    } catch {
      // not up yet
    } finally {
      client.close();
    }
    if (Date.now() > deadline) {
      const tail = log && existsSync(log) ? readFileSync(log, "utf8").trimEnd().split("\n").slice(-RUNNER_LOG_TAIL).join("\n") : "";
      throw new ResearchError(
        "runner_unavailable",
        `the runner did not come up within ${timeoutMs / 1000} s${log ? ` (${log})` : ""}`,
        tail && `the last lines of ${log}:\n${tail}`,
      );
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * A launcher that crashed leaves its nats-server running on the workspace's
 * JetStream directory; the agents end with it (core/process.ts), the
 * server does not. Stop it so this launch can open the same store.
 */
function stopStaleServer(workspace: string, log: Logger): void {
  const prev = readJsonFile(join(workspace, "swarm.json"), z.object({ pid: z.number().optional(), nats_pid: z.number().optional() }));
  if (!prev) return;
  const comm = (pid: number) => (existsSync(`/proc/${pid}/comm`) ? readFileSync(`/proc/${pid}/comm`, "utf8").trim() : "");
  // The pid may have been reused since; only a nats-server is ours to stop.
  if (prev.pid && !alive(prev.pid) && prev.nats_pid && alive(prev.nats_pid) && comm(prev.nats_pid) === "nats-server") {
    log.warn({ pid: prev.nats_pid }, "stopping the nats-server of a launcher that is gone");
    process.kill(prev.nats_pid, "SIGKILL");
  }
}

/**
 * The swarm's bus: the one at `natsUrl` with the deployment's secrets, or a nats-server of its own
 * (a stale one of a launcher that is gone stopped first) with the workspace's own credentials,
 * made once; `killNats` ends that server however this process ends (an uncaught error exits
 * without awaiting `stop`): the agents end with their parent (core/process.ts), the server, in a
 * process group of its own, would not.
 */
async function swarmBus(opts: SwarmOptions, workspace: string, log: Logger): Promise<{ secrets?: Secrets; nats?: NatsServer; natsUrl: string; killNats: () => void }> {
  stopStaleServer(workspace, log);
  // A local deployment is protected by default: its own credentials, made once per workspace.
  const secrets = opts.natsUrl ? (opts.secretsDir ? loadSecrets(opts.secretsDir) : undefined) : ensureSecrets(join(workspace, "secrets"));
  if (opts.natsUrl) return { secrets, natsUrl: opts.natsUrl, killNats: () => undefined };
  // Slurm's runners join from the cluster's nodes: the bus listens beyond loopback, behind its TLS and password.
  const nats = await startNatsServer({ dataDir: join(workspace, "nats"), binary: opts.natsServer, secrets, host: opts.slurm || opts.clusterBus ? "0.0.0.0" : undefined });
  const killNats = () => {
    try {
      process.kill(nats.pid, "SIGKILL");
    } catch {
      // already gone
    }
  };
  process.once("exit", killNats);
  return { secrets, nats, natsUrl: nats.url, killNats };
}

/** The lineage store and every role's agents (`instances` of each, default one), supervised, with `env`. */
function startAgents(supervisor: Supervisor, env: Record<string, string>, instances: SwarmOptions["instances"]): void {
  supervisor.start({ name: "lineage-store", entry: "lineage-store/main.ts", env: { ...env, INSTANCE_ID: "lineage-store" } });
  for (const role of ROLES) {
    for (let i = 0; i < (instances?.[role] ?? 1); i++) {
      const name = i === 0 ? role : `${role}-${i + 1}`;
      supervisor.start({ name, entry: `agents/${role}/main.ts`, env: { ...env, INSTANCE_ID: name } });
    }
  }
}

/** What this swarm sets in its children's environment beyond the launcher's own: LLM flags override it only when given. */
function childSettingsOf(opts: SwarmOptions): Record<string, string> {
  return {
    ...(opts.replicas !== undefined && { NATS_STREAM_REPLICAS: String(opts.replicas) }),
    ...(opts.llm?.llm !== undefined && { LLM: opts.llm.llm }),
    ...(opts.llm?.baseUrl !== undefined && { LLM_BASE_URL: opts.llm.baseUrl }),
    ...(opts.llm?.file !== undefined && { LLM_CONFIG: opts.llm.file }),
  };
}

/** The runner's flags from the swarm's options, for the runner it starts and its Slurm jobs alike. */
function runnerArgsOf(opts: SwarmOptions): string[] {
  return [
    ...(opts.slots ? ["--slots", String(opts.slots)] : []),
    ...(opts.device ? ["--device", opts.device] : []),
    ...(opts.dataRoots ?? []).flatMap((d) => ["--data-root", d]),
    ...(opts.unsafeNoSandbox ? ["--unsafe-no-sandbox"] : []),
  ];
}

/** How the swarm submits runner jobs (launch --runners slurm, or serve for a goal's own), joining over the bus from their nodes. */
function slurmSubmitter(opts: SwarmOptions, workspace: string, bus: Bus, served: { nats?: NatsServer; natsUrl: string; secrets?: Secrets }, log: Logger) {
  const { nats, natsUrl, secrets } = served;
  const env = {
    NATS_URL: nats ? `nats://${hostname()}:${nats.port}` : natsUrl,
    ...(secrets && { RESEARCH_SECRETS: secrets.dir }),
    ...(opts.replicas !== undefined && { NATS_STREAM_REPLICAS: String(opts.replicas) }),
  };
  return ({ runId, ...jobs }: RunnerJobsRequest) =>
    SlurmRunners.startAndWait({
      ...jobs,
      dir: join(workspace, "slurm", ...(runId ? [runId] : [])),
      env,
      runnerArgs: [...runnerArgsOf(opts), ...(runId ? ["--for-run", runId] : [])],
      bus,
      replicas: opts.replicas,
      log: runId ? log.child({ run_id: runId }) : log,
    });
}

export async function startSwarm(opts: SwarmOptions): Promise<Swarm> {
  const workspace = resolve(opts.workspace);
  mkdirSync(workspace, { recursive: true });
  const log = opts.logger;
  const childSettings = childSettingsOf(opts);
  // Checked before anything starts: a bad setting would crash every child in a restart loop.
  parseResearcherConfig({ ...process.env, ...childSettings });
  const served = await swarmBus(opts, workspace, log);
  const { secrets, nats, natsUrl, killNats } = served;
  const supervisor = new Supervisor(join(workspace, "logs"), log, opts.onRestart);
  // Children inherit the launcher's environment (LOG_LEVEL, OPENAI_API_KEY, ...); these are
  // what this swarm sets for them. LLM flags override the environment only when given.
  const common = (runnerAddress: string): Record<string, string> => ({
    NATS_URL: natsUrl,
    RUNNER_ADDRESS: runnerAddress,
    WORKSPACE: workspace,
    ...(secrets && { RESEARCH_SECRETS: secrets.dir }),
    ...childSettings,
  });
  const bus = await connectBus({ servers: natsUrl.split(","), name: "launcher", logger: log, replicas: opts.replicas, secrets });
  const submitRunners = slurmSubmitter(opts, workspace, bus, served, log);
  let slurm: SlurmRunners | undefined;
  let runner: RunnerClient | undefined;
  const stop = async () => {
    await supervisor.stopAll();
    await slurm?.stop();
    runner?.close();
    await bus.close();
    await nats?.stop();
    process.off("exit", killNats);
  };
  let runnerAddress = opts.runnerAddress ?? `127.0.0.1:${await freePort()}`;
  let runnerHealth: HealthResponse;
  try {
    if (opts.slurm) {
      // The launcher's own calls (the dataset's description) go to the first runner up; the agents take every one that joins.
      ({ pool: slurm, first: runnerAddress } = await submitRunners(opts.slurm));
    } else if (!opts.runnerAddress) {
      supervisor.start({
        name: "gpu-runner",
        entry: "gpu-runner/main.ts",
        // The supervisor restarts a runner that dies: the one after it answers what it had ended, and keeps its weights.
        args: ["--address", runnerAddress, ...runnerArgsOf(opts), "--state-dir", join(workspace, "runner-state")],
        env: common(runnerAddress),
      });
    }
    // The agents start beside the runner, whose workers spend seconds importing torch: no agent
    // calls a runner before a run starts, and none starts before the launcher has the first
    // runner's answer. The agents pick among all of them (swarm/runners.ts).
    startAgents(supervisor, common(runnerAddress), opts.instances);
    const first = runnerAddress.split(",")[0]!;
    runnerHealth = await waitForRunner(() => connectRunner(first, secrets), 180_000, opts.runnerAddress || opts.slurm ? undefined : join(workspace, "logs", "gpu-runner.log"), opts.signal);
    runner = connectRunner(first, secrets);
  } catch (err) {
    await stop();
    throw err;
  }
  writeFileSync(
    join(workspace, "swarm.json"),
    JSON.stringify({ nats_url: natsUrl, runner_address: runnerAddress, pid: process.pid, host: hostname(), nats_pid: nats?.pid ?? 0 }, null, 2),
  );
  return { natsUrl, runnerAddress, bus, runner, runnerHealth, supervisor, slurm, submitRunners, stop };
}

/** What a client of the swarm in `workspace` logs in with: the launch's own secrets, else `secretsDir`'s, else none. */
export function workspaceSecrets(workspace: string, secretsDir?: string): Secrets | undefined {
  const own = join(resolve(workspace), "secrets");
  if (existsSync(own)) return loadSecrets(own);
  return secretsDir ? loadSecrets(secretsDir) : undefined;
}

export function newRunId(): string {
  const d = new Date().toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
  return `r${d}-${randomBytes(2).toString("hex")}`;
}

export interface RunOutcome {
  runId: string;
  state: RunState;
  finished: RunFinished;
  /** The caller's signal ended the follow before the run did: `finished` is the launcher's account (status INTERRUPTED), never stored. */
  interrupted?: boolean;
}

/**
 * The run's dataset as the runner describes it, recorded in RunStarted for later runs' warm starts
 * (they compare their data with it). The runner has just described it for the launch's checks, so
 * this is answered from its cache; a failure leaves it unrecorded, which costs only that.
 */
async function describedAtStart(swarm: Swarm, goal: Goal, log: Logger): Promise<DatasetInfo | undefined> {
  const info = await swarm.runner.describe({ dataset: datasetSpec(goal) }).catch((err: unknown) => {
    log.warn({ err: (err as Error).message }, "dataset not described; the run records no description of it");
    return undefined;
  });
  return info && !info.failure ? info : undefined;
}

/**
 * The runner jobs as the run's events (the planner sizes its proposals by them, the report and
 * the console tell them), and a job that ended submitted again only while the run has time for
 * what a new runner could take. Returns the end of the listening.
 */
function followJobs(slurm: SlurmRunners, bus: Bus, state: RunState, log: Logger): () => void {
  slurm.resubmitWhile = () => !state.finished && budgetPlan(state, Date.now()).availableS > 0;
  let n = 0;
  return slurm.listen((jobs) => {
    void bus
      .publish({ runId: state.runId, eventId: `${state.runId}/runner-jobs-${Date.now()}-${n++}`, body: { case: "runnerJobs", value: jobs } })
      .catch((err: unknown) => log.warn({ err }, "could not record the runner jobs"));
  });
}

/**
 * What the launcher watches a run for every 2 s while it follows it, each said once: a run whose
 * budget is spent with no judgement ending it, a run nothing moves for `graceS` (no trial in flight
 * or proposed, no event of its own; not while runner jobs are coming), and a paused run out of
 * time. Returns the end of the watching.
 */
function watchdog(swarm: Swarm, state: RunState, graceS: number, log: Logger): () => void {
  const runId = state.runId;
  // A paused run with nothing in flight gets no judgement that could end it: at the reserve
  // for its confirmation and report, the launcher stops it, so the budget still holds.
  let pausedStopSent = false;
  // The watchdog: a run nothing moves (no trial in flight or proposed, no event of its own for the
  // grace period) gets no judgement that could end it; it says so to the judge, which ends it. Not
  // once a judgement has ended the run: the judge's test confirmation can be quiet for minutes.
  let idleSent = false;
  const ending = () => [...state.trials.values()].some((t) => isTerminal(t.judged?.decision));
  let spentSent = false;
  const check = setInterval(() => {
    // Only the report's time left and no judgement ending the run: trials in flight wait on a
    // runner that does not answer (or agents that are gone); the judge ends the run now.
    if (!spentSent && state.startedAtMs && !state.finished && !ending() && budgetSpent(state, Date.now())) {
      spentSent = true;
      const reason = `the watchdog: the time budget is spent with ${inFlightCount(state)} trial(s) in flight and no judgement ending the run`;
      void swarm.bus
        .publish({ runId, eventId: `${runId}/watchdog-budget`, body: { case: "plannerIdle", value: { reason, runEnd: RunEnd.TIME_BUDGET } } })
        .catch((err: unknown) => log.warn({ err }, "could not end the run at its budget"));
    }
    const quietS = (Date.now() - state.lastEventMs) / 1000;
    // Runner jobs queued or starting will take what the planner holds back for them (capacityOf).
    const jobsComing = !!state.runnerJobs && state.runnerJobs.pending + state.runnerJobs.starting > 0;
    if (!idleSent && state.startedAtMs && !state.finished && !state.paused && !state.stopRequested && !inFlight(state) && !ending() && !jobsComing && quietS > graceS) {
      idleSent = true;
      const reason = `the watchdog: nothing in flight and nothing proposed for ${graceS} s`;
      void swarm.bus
        .publish({ runId, eventId: `${runId}/watchdog-idle`, body: { case: "plannerIdle", value: { reason, runEnd: RunEnd.IDLE } } })
        .catch((err: unknown) => log.warn({ err }, "could not end the idle run"));
    }
    if (pausedStopSent || state.finished || !state.paused || state.stopRequested || inFlight(state) || budgetPlan(state, Date.now()).availableS > 0) return;
    pausedStopSent = true;
    const stop = interventionEvent(state, { kind: "stop", reason: "the time budget ran out while the run was paused" }, "launcher");
    if (stop.ok) void swarm.bus.publish(stop.event).catch((err: unknown) => log.warn({ err }, "could not stop the paused run"));
  }, 2000);
  return () => clearInterval(check);
}

/**
 * Starts (or resumes) a run and follows it to RunFinished, passing every
 * event to `onEvent`. A run past its time budget plus a grace period is
 * closed by the launcher itself, so `launch` always ends.
 */
export async function runGoal(
  swarm: Swarm,
  opts: {
    /** A new run: its goal, settings and starting point. A resumed run (`resume`) reads them from its stored events. */
    start?: { goal: Goal; settings: RunSettings; start?: StartingPoint };
    runId?: string;
    resume?: boolean;
    /** On a resume: the run's new total time budget (seconds of live time; undefined keeps it). */
    timeBudgetS?: number;
    onEvent?: (e: Event, s: RunState) => void;
    /** Stop following (the launcher was told to stop): the outcome is the run so far, marked interrupted. */
    signal?: AbortSignal;
    /** The watchdog's grace period, seconds (default IDLE_GRACE_S). */
    idleGraceS?: number;
    /** The run's own runner jobs (serve's goals); default: the swarm's. */
    slurm?: SlurmRunners;
    log: Logger;
  },
): Promise<RunOutcome> {
  const runId = opts.runId ?? newRunId();
  const state = emptyRunState(runId);
  let resolveFinished!: (f: RunFinished) => void;
  const finished = new Promise<RunFinished>((r) => (resolveFinished = r));
  let finishedAtMs = 0;
  const watch = await swarm.bus.watch(runId, (e) => {
    applyToRunState(state, e);
    opts.onEvent?.(e, state);
    if (e.body.case === "runFinished") {
      finishedAtMs = Number(e.emittedAtMs) || Date.now();
      resolveFinished(e.body.value);
    }
  });
  const progress = swarm.bus.subscribe(progressSubject(runId), (e) => opts.onEvent?.(e, state));
  await watch.caughtUp;
  if (!state.goal && opts.start && !opts.resume) {
    await swarm.bus.publish({
      runId,
      eventId: `${runId}/started`,
      body: { case: "runStarted", value: { ...opts.start, dataset: await describedAtStart(swarm, opts.start.goal, opts.log) } },
    });
  } else if (!state.goal) {
    await Promise.all([watch.stop(), progress.stop()]);
    throw new ResearchError("invalid_config", `run ${runId} has no stored events in this workspace; nothing to resume`);
  }
  const jobs = opts.slurm ?? swarm.slurm;
  const unlistenJobs = jobs && followJobs(jobs, swarm.bus, state, opts.log);
  let downtimeS = downtimeSeconds(state);
  if (opts.resume && state.goal) {
    // The run's clock stops while nothing of it runs: from its last stored event to now.
    const down = Math.max(0, (Date.now() - state.lastEventMs) / 1000);
    downtimeS += down;
    await swarm.bus.publish({
      runId,
      eventId: `${runId}/resumed-${state.resumes.length + 1}`,
      body: { case: "runResumed", value: { downtimeS: down, timeBudgetS: opts.timeBudgetS ?? 0 } },
    });
  }
  const budgetS = (opts.resume && opts.timeBudgetS) || (state.goal ?? opts.start?.goal)?.timeBudgetS || DEFAULT_TIME_BUDGET_S;
  const stopBackstop = backstop(swarm, state, budgetS, downtimeS);
  const stopWatchdog = watchdog(swarm, state, opts.idleGraceS ?? IDLE_GRACE_S, opts.log);
  const result = await Promise.race([finished, interruptedBy(opts.signal, state)]).finally(() => {
    stopBackstop();
    stopWatchdog();
    unlistenJobs?.();
  });
  await Promise.all([watch.stop(), progress.stop()]);
  return settled(swarm, state, result, finishedAtMs);
}

/**
 * The launcher's own end of a run the judge never closed: its budget plus a grace period (a
 * quarter of the budget, at least 5 minutes) after it started, its downtime not counted, so that
 * `launch` always ends. Returns its cancel.
 */
function backstop(swarm: Swarm, state: RunState, budgetS: number, downtimeS: number): () => void {
  const runId = state.runId;
  const startedAt = (state.startedAtMs || Date.now()) + downtimeS * 1000;
  const graceMs = Math.max(300_000, budgetS * 250);
  const deadline = setTimeout(
    () => {
      void swarm.bus.publish({
        runId,
        eventId: `${runId}/finished`,
        body: { case: "runFinished", value: { status: RunStatus.STOPPED, reason: `time budget of ${budgetS} s exceeded and the judge did not close the run`, trials: state.judgedCount, seconds: liveSeconds(state, Date.now()) } },
      });
    },
    Math.max(0, startedAt + budgetS * 1000 + graceMs - Date.now()),
  );
  return () => clearTimeout(deadline);
}

/** The run so far, marked interrupted, once `signal` aborts (the launcher told to stop following it). */
function interruptedBy(signal: AbortSignal | undefined, state: RunState): Promise<RunFinished> {
  return new Promise<RunFinished>((resolve) => {
    const stop = () =>
      resolve(
        runSoFar(state, RunStatus.INTERRUPTED, `interrupted by ${String(signal?.reason ?? "the launcher")} after ${state.judgedCount} judged trials; launch --resume ${state.runId} continues it`),
      );
    if (signal?.aborted) stop();
    else signal?.addEventListener("abort", stop, { once: true });
  });
}

/**
 * The run's outcome once the lineage store has what it needs: an interrupted run's events stored
 * (up to a minute), a finished run's report written (up to two minutes).
 */
async function settled(swarm: Swarm, state: RunState, result: RunFinished, finishedAtMs: number): Promise<RunOutcome> {
  const runId = state.runId;
  if (result.status === RunStatus.INTERRUPTED) {
    // The store may lag the run (on a loaded machine it had stored nothing of a run interrupted a
    // minute in, so `runs` listed no run): it gets up to a minute to catch up before it is stopped.
    for (let i = 0; i < 120 && (await swarm.bus.backlog("lineage-store", EVENT_KINDS).catch(() => 0)) > 0; i++) await new Promise((r) => setTimeout(r, 500));
    return { runId, state, finished: result, interrupted: true };
  }
  // The store writes the report once it has stored RunFinished: seconds when idle, more than 30 s
  // at a load of 20 on 2 cores, where a shorter wait returned a report path with no file yet. A
  // resumed run's folder still holds the report of its interruption, which does not count: stopped
  // before it caught up, the store had not stored the run's end (mtimes are a clock tick coarse).
  const report = result.reportPath;
  const written = () => existsSync(report) && statSync(report).mtimeMs >= finishedAtMs - 1000;
  for (let i = 0; i < 480 && report && !written(); i++) await new Promise((r) => setTimeout(r, 250));
  return { runId, state, finished: result };
}
