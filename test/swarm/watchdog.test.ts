/**
 * Every run ends within its budget, whatever its agents do. Three swarms side by side (each mostly
 * waits):
 * - with no planner at all, nothing is ever proposed, and the launcher's watchdog ends the run
 *   after its grace period (RUN_END_IDLE), through the judge, with a report, long before the
 *   launcher's last-resort deadline;
 * - the runner stops answering (SIGSTOP) once a trial is judged, so a best with kept weights waits
 *   for a confirmation that never comes and the trials after it for results;
 * - the runner dies (SIGKILL) in the middle of a training that holds its every slot, and stays dead.
 * The last two must end by their 90-second budget (the confirmation may use its floor of 20 s
 * past the reserve, swarm/budget.ts), with a report, every trial judged or labelled, and no
 * process of the runner left behind.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../../bus/index.js";
import { parseGoal } from "../../core/goal.js";
import { createLogger } from "../../core/logger.js";
import { runGoal, startSwarm, type RunOutcome, type Swarm } from "../../deploy/swarm.js";
import { runSettings } from "../../deploy/settings.js";
import { RunEnd, RunStatus } from "../../proto/gen/research/v1/events_pb.js";
import { labelName } from "../../core/failure.js";
import { ensureSecrets } from "../../core/secrets.js";
import { trialFailure } from "../../swarm/trial-state.js";
import { alive, descendants, startRunnerProcess } from "../helpers/runner-process.js";
import { unwrapped } from "../helpers/markdown.js";

const roots: string[] = [];
const swarms: Swarm[] = [];
const runners: ChildProcess[] = [];

interface Ended {
  outcome: RunOutcome;
  wallS: number;
  /** The runner's processes when the fault came (its workers among them). */
  under: number[];
}
let idle: Ended;
let stopped: Ended;
let killed: Ended;

const logger = createLogger("watchdog-test");
logger.level = "warn";

/** A digits run that cannot reach its target, on a swarm of its own; `fault` may act on each event. */
async function faultedRun(opts: { goal: string; planner?: number; runner?: "SIGSTOP" | "SIGKILL"; idleGraceS?: number }): Promise<Ended> {
  const workspace = mkdtempSync(join(tmpdir(), "watchdog-"));
  roots.push(workspace);
  let runner: ChildProcess | undefined;
  let runnerAddress: string | undefined;
  if (opts.runner) {
    runnerAddress = `127.0.0.1:${await freePort()}`;
    // A local swarm talks to its runner with its workspace's credentials (TLS and a token): the runner serves with them.
    const secrets = ensureSecrets(join(workspace, "secrets"));
    runner = await startRunnerProcess(runnerAddress, { slots: 1, env: { RESEARCH_SECRETS: secrets.dir } });
    runners.push(runner);
  }
  const swarm = await startSwarm({ workspace, slots: 1, logger, runnerAddress, instances: { planner: opts.planner ?? 1 } });
  swarms.push(swarm);
  const parsed = parseGoal(opts.goal);
  if (!parsed.ok) throw new Error(parsed.error);
  let under: number[] = [];
  let faulted = false;
  const fault = () => {
    faulted = true;
    under = descendants(runner!.pid!);
    runner!.kill(opts.runner);
  };
  const t0 = Date.now();
  const outcome = await runGoal(swarm, {
    start: { goal: parsed.goal, settings: runSettings(parsed.goal, { research: false, seeds: 1, parallel: 1 }, workspace) },
    log: logger,
    idleGraceS: opts.idleGraceS,
    onEvent: (e) => {
      if (faulted || !opts.runner) return;
      // SIGSTOP once there is a best (its weights kept on the runner); SIGKILL mid-training.
      if (opts.runner === "SIGSTOP" ? e.body.case === "trialJudged" : e.body.case === "trialProgress") fault();
    },
  });
  return { outcome, wallS: (Date.now() - t0) / 1000, under };
}

beforeAll(async () => {
  [idle, stopped, killed] = await Promise.all([
    faultedRun({ goal: "digits: reach 95% validation accuracy in 10 minutes", planner: 0, idleGraceS: 8 }),
    faultedRun({ goal: "digits: reach 99.9% validation accuracy in 90 seconds", runner: "SIGSTOP" }),
    faultedRun({ goal: "digits: reach 99.9% validation accuracy in 90 seconds", runner: "SIGKILL" }),
  ]);
}, 400_000);

afterAll(async () => {
  for (const r of runners) r.kill("SIGCONT"), r.kill("SIGKILL");
  await Promise.all(swarms.map((s) => s.stop()));
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

describe("a run whose planner proposes nothing", () => {
  it("is ended by the watchdog through the judge, with its own run end and a report", () => {
    const f = idle.outcome.finished;
    expect(f.status).toBe(RunStatus.STOPPED);
    expect(f.runEnd).toBe(RunEnd.IDLE);
    expect(f.reason).toBe("the watchdog: nothing in flight and nothing proposed for 8 s");
    expect(f.trials).toBe(0);
    // The grace period and the judge's report, not the 10-minute budget and its deadline.
    expect(idle.wallS).toBeLessThan(120);
    expect(existsSync(f.reportPath)).toBe(true);
    expect(unwrapped(readFileSync(f.reportPath, "utf8"))).toContain("**Status:** stopped: the watchdog: nothing in flight and nothing proposed for 8 s");
  });
});

/** What both runner faults must leave: a run ended by a rule of its own within its budget, with a report, every trial judged or labelled. */
function endedByBudget(e: Ended, statuses: RunStatus[]) {
  const f = e.outcome.finished;
  expect(statuses, f.reason).toContain(f.status);
  // The budget, and at most the confirmation's floor past the reserve: not the launcher's deadline (budget + 300 s).
  expect(f.seconds).toBeLessThanOrEqual(90 + 20);
  expect(existsSync(f.reportPath)).toBe(true);
  for (const t of e.outcome.state.trials.values()) {
    if (t.judged || !t.evaluated) continue;
    expect.fail(`${t.id} was evaluated but never judged`);
  }
}

describe("a runner that stops answering once a trial has a verdict", () => {
  it("costs the run its confirmation, not its end", () => {
    endedByBudget(stopped, [RunStatus.BUDGET_EXHAUSTED]);
    const f = stopped.outcome.finished;
    expect(f.bestTrialId).not.toBe("");
    expect(f.testSkipped).toMatch(/^no runner answered within the \d+ s the run's budget left for it$/);
    expect(unwrapped(readFileSync(f.reportPath, "utf8"))).toContain("no runner answered within");
  });
});

describe("a runner killed while its every slot trains", () => {
  it("fails the trial it held with a label, ends the run by its budget, and leaves no worker behind", async () => {
    // Failing trials may end it by a rule of the judge's before the budget does.
    endedByBudget(killed, [RunStatus.BUDGET_EXHAUSTED, RunStatus.STOPPED]);
    const trials = [...killed.outcome.state.trials.values()];
    const labels = trials.map((t) => trialFailure(t)).filter((f) => f !== undefined);
    const story = `${killed.outcome.finished.reason}; ${trials.map((t) => `${t.id}: ${t.judged ? "judged" : t.evaluated ? "evaluated" : t.assembled ? "assembled" : "proposed"} ${trialFailure(t)?.message ?? ""}`).join("; ")}`;
    expect(labels.map((f) => labelName(f.label)), story).toContain("runner_unavailable");
    // Its workers (a zygote and the job's process at least) saw the runner go and ended with it.
    expect(killed.under.length).toBeGreaterThanOrEqual(2);
    expect(alive(killed.under), "the killed runner's processes still alive").toEqual([]);
  });
});
