/**
 * serve: one long-lived swarm a team shares, and its dashboard. Goals come in
 * over the dashboard's API (POST /api/runs: its form, the Python client, curl),
 * each checked as launch checks its flags and the runner the dataset and
 * starting point, before it is queued; they run in the order they came, up to
 * --max-runs side by side on the swarm's runner. SIGINT or SIGTERM interrupts the
 * runs going (each one's report so far is written; launch --resume continues
 * it), drops the runs still waiting, and stops the swarm.
 */
import { join, resolve } from "node:path";
import { existsSync, realpathSync } from "node:fs";
import { cliConfig } from "../../core/config.js";
import { DEFAULT_TIME_BUDGET_S } from "../../core/defaults.js";
import type { SlurmRequest, SlurmRunners } from "../../deploy/slurm.js";
import { newRunId, runGoal, type RunOutcome, type Swarm } from "../../deploy/swarm.js";
import { buildWeb } from "../../dashboard/build.js";
import type { QueuedRun, RunIntake, StartRunFields, StartRunReply } from "../../dashboard/intake.js";
import { startDashboard, type Dashboard } from "../../dashboard/server.js";
import { RUN_STATUS } from "../../core/enums.js";
import { args, CliFailure, dashboardPort, dashboardStartProblem, EXIT, fail, positiveInt } from "../args.js";
import { describeEvent } from "../event-line.js";
import { UI_PORT } from "../help.js";
import { datasetProblem, jobsNeverStarted, runnerJobsFor, sayer, SIGNAL_EXIT, startSwarmFor, writeInterruptedReport, writeUnstartedReport } from "../swarm-run.js";
import { confineTo, documentFlags, prepareGoal, prepareSwarm, RUN_FLAGS, SLURM_FLAGS, slurmFlags, type RunArgs } from "../run-flags.js";
import { connectOrFail, quietLogger } from "../workspace.js";
import type { Logger } from "../../core/logger.js";

const SERVE_FLAGS = {
  host: { type: "string", default: "127.0.0.1" },
  port: { type: "string", default: String(UI_PORT) },
  token: { type: "string" },
  "max-runs": { type: "string", default: "1" },
  "data-root": { type: "string", multiple: true },
  runners: RUN_FLAGS.runners,
  "slurm-jobs": RUN_FLAGS["slurm-jobs"],
  "slurm-partition": RUN_FLAGS["slurm-partition"],
  "slurm-account": RUN_FLAGS["slurm-account"],
  "slurm-gres": RUN_FLAGS["slurm-gres"],
  "slurm-cpus": RUN_FLAGS["slurm-cpus"],
  "slurm-mem": RUN_FLAGS["slurm-mem"],
  slots: RUN_FLAGS.slots,
  device: RUN_FLAGS.device,
  "unsafe-no-sandbox": RUN_FLAGS["unsafe-no-sandbox"],
  llm: RUN_FLAGS.llm,
  "llm-base-url": RUN_FLAGS["llm-base-url"],
  "llm-config": RUN_FLAGS["llm-config"],
} as const;

interface Taken extends QueuedRun {
  go: (signal: AbortSignal) => Promise<void>;
}

/** The serve's runs: checked, then started in the order they came while fewer than `maxRuns` go. */
class Intake implements RunIntake {
  private readonly waiting: Taken[] = [];
  private readonly going = new Map<string, { run: Taken; stop: AbortController; done: Promise<void> }>();

  constructor(
    private readonly swarm: Swarm,
    private readonly a: RunArgs,
    private readonly flags: ReturnType<typeof prepareSwarm>,
    private readonly dataRoots: string[],
    private readonly maxRuns: number,
    private readonly say: (line: string) => void,
    private readonly log: Logger,
  ) {}

  async submit(fields: StartRunFields, who: string): Promise<[number, StartRunReply]> {
    let prepared: ReturnType<typeof prepareGoal>;
    let jobs: SlurmRequest | undefined;
    try {
      prepared = prepareGoal({ ...this.a, ...documentFlags(fields) }, this.flags.workspace, confineTo(this.dataRoots));
      jobs = this.jobsOf(fields);
    } catch (err) {
      if (err instanceof CliFailure) return [400, { ok: false, error: err.message }];
      throw err;
    }
    const { goal } = prepared;
    const problem = await datasetProblem(this.swarm, prepared, goal!, () => {});
    if (problem) return [400, { ok: false, error: problem }];
    const runId = newRunId();
    const run: Taken = {
      run_id: runId,
      goal: fields.goal,
      who,
      submitted_at: Date.now(),
      go: (signal) => this.follow(runId, prepared, !fields.no_research, jobs, signal),
    };
    this.waiting.push(run);
    this.pump();
    // 0: started now; else how many runs start before it, itself included.
    const position = this.waiting.indexOf(run) + 1;
    this.say(`${runId} ${position === 0 ? "starts" : `is queued (${position} to start before it, itself included)`}: ${fields.goal} (from ${who})`);
    return [202, { ok: true, run_id: runId, position }];
  }

  /**
   * The goal's own runner jobs: serve's --runners and --slurm-* with the goal's fields over them.
   * Only a serve started with --runners slurm gives any: its bus alone is reachable from the nodes.
   */
  private jobsOf(fields: StartRunFields): SlurmRequest | undefined {
    const own = Object.fromEntries(Object.entries(documentFlags(fields)).filter(([k, v]) => (SLURM_FLAGS as readonly string[]).includes(k) && v !== undefined));
    if (Object.keys(own).length && !this.flags.slurm) fail(`${Object.keys(own)[0]!.replace("-", "_")}: this serve takes no goal with runner jobs of its own; start it with --runners slurm (docs/DEPLOY.md "On a Slurm cluster")`);
    const merged = { ...this.a, ...own };
    return merged.runners === "local" ? undefined : slurmFlags(merged);
  }

  queue() {
    const view = ({ go: _go, ...r }: Taken): QueuedRun => r;
    return { accepting: true, max_runs: this.maxRuns, running: [...this.going.values()].map((g) => view(g.run)), queued: this.waiting.map(view) };
  }

  private pump(): void {
    while (this.going.size < this.maxRuns && this.waiting.length > 0) {
      const run = this.waiting.shift()!;
      const stop = new AbortController();
      const done = run
        .go(stop.signal)
        .catch((err: unknown) => {
          this.log.error({ run_id: run.run_id, err }, "run failed");
          this.say(`${run.run_id} failed: ${(err as Error).message}`);
        })
        .finally(() => {
          this.going.delete(run.run_id);
          this.pump();
        });
      this.going.set(run.run_id, { run, stop, done });
    }
  }

  private async follow(runId: string, prepared: ReturnType<typeof prepareGoal>, research: boolean, jobs: SlurmRequest | undefined, signal: AbortSignal): Promise<void> {
    const goal = prepared.goal!;
    let pool: SlurmRunners | undefined;
    if (jobs) {
      // The run starts once one of its jobs is up; none before its budget is spent: a report that says why.
      const asked = runnerJobsFor(jobs, goal.timeBudgetS || DEFAULT_TIME_BUDGET_S, (line) => this.say(`${runId} ${line}`), { runId, signal });
      try {
        ({ pool } = await this.swarm.submitRunners(asked.jobs));
      } catch (err) {
        if (!jobsNeverStarted(err)) throw err;
        const report = await writeUnstartedReport(this.flags.workspace, runId, goal, asked.seen.last, err.message);
        return this.say(`${runId} ${err.message}; report: ${report}`);
      }
    }
    let outcome: RunOutcome;
    try {
      outcome = await runGoal(this.swarm, {
        start: { goal, settings: prepared.settings({ ...this.swarm, slurm: pool }, research, this.flags.llm), start: prepared.start?.point },
        runId,
        signal,
        slurm: pool,
        log: this.log.child({ run_id: runId }),
        onEvent: (e, s) => {
          if (e.body.case !== "runStarted" && e.body.case !== "runFinished") return;
          const line = describeEvent(e, s);
          if (line) this.say(`${runId} ${line}`);
        },
      });
    } finally {
      await pool?.stop();
    }
    if (outcome.interrupted) {
      await writeInterruptedReport(this.flags.workspace, outcome);
      this.say(`${runId} ${RUN_STATUS.name(outcome.finished.status)}: report so far in ${outcome.finished.reportPath}; launch --resume ${runId} continues it`);
    } else {
      this.say(`${runId} report: ${outcome.finished.reportPath}, registry: ${outcome.finished.registryPath}`);
    }
  }

  /** Interrupts every run going (each writes its report so far) and drops the ones waiting. */
  async close(reason: string): Promise<void> {
    const dropped = this.waiting.splice(0);
    if (dropped.length) this.say(`dropping ${dropped.length} queued run(s) that never started: ${dropped.map((r) => r.run_id).join(", ")}`);
    const going = [...this.going.values()];
    for (const g of going) g.stop.abort(reason);
    await Promise.all(going.map((g) => g.done));
  }
}

export default async function serve(argv: string[]): Promise<void> {
  const { values: a } = args(argv, SERVE_FLAGS, { noJson: "it serves runs until stopped; its dashboard's API is JSON (docs/DASHBOARD.md)" });
  const port = dashboardPort(a.port);
  const maxRuns = positiveInt("max-runs", a["max-runs"])!;
  for (const d of a["data-root"] ?? []) if (!existsSync(d)) fail(`--data-root: no folder ${resolve(d)}`);
  // As the runner's sandbox will see them: a root that is a symlink is where it leads.
  const dataRoots = (a["data-root"] ?? []).map((d) => realpathSync(d));
  const runArgs = a as unknown as RunArgs;
  // --runners slurm: the goals' runner jobs, each run's own (Intake.jobsOf); the swarm itself starts its local runner.
  const flags = prepareSwarm(runArgs);
  const say = sayer(false);
  const log = quietLogger(join(flags.workspace, "logs", "serve.log"));
  const swarm = await startSwarmFor(runArgs, { ...flags, slurm: undefined, clusterBus: !!flags.slurm }, dataRoots, say, log);
  const intake = new Intake(swarm, runArgs, flags, dataRoots, maxRuns, say, log);
  let dashboard: Dashboard | undefined;
  let stopping = false;
  const shutdown = async (code: number, why: string): Promise<never> => {
    if (!stopping) {
      stopping = true;
      say(`${why}: stopping ...`);
      await intake.close(why);
      await dashboard?.close();
      await swarm.stop();
    }
    process.exit(code);
  };
  for (const sig of Object.keys(SIGNAL_EXIT)) process.on(sig, () => void shutdown(stopping ? SIGNAL_EXIT[sig]! : 0, sig));
  try {
    dashboard = await startDashboard({
      workspace: flags.workspace,
      host: a.host,
      port,
      token: a.token ?? cliConfig().uiToken,
      logger: log,
      assets: await buildWeb(),
      connect: () => connectOrFail(flags.workspace, a.nats),
      intake,
    });
  } catch (err) {
    process.stderr.write(`research-agent: ${dashboardStartProblem(err, port)}\n`);
    return void (await shutdown(EXIT.cannotRun, "no dashboard"));
  }
  say(`dashboard: ${dashboard.url}`);
  say(`taking goals at POST /api/runs and the dashboard's form; ${maxRuns} run(s) at a time`);
  say(`who can start runs: ${dashboard.access}; their data, --from and --recipe only under ${dataRoots.length ? dataRoots.join(", ") : "no folder (built-in datasets only: serve --data-root DIR)"}`);
}
