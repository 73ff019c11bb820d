/**
 * Every run ends within its budget, whatever its agents do: with no planner at all, nothing is
 * ever proposed, and the launcher's watchdog ends the run after its grace period (RUN_END_IDLE),
 * through the judge, with a report, long before the launcher's last-resort deadline.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseGoal } from "../../core/goal.js";
import { createLogger } from "../../core/logger.js";
import { runGoal, startSwarm, type RunOutcome, type Swarm } from "../../deploy/swarm.js";
import { runSettings } from "../../deploy/settings.js";
import { RunEnd, RunStatus } from "../../proto/gen/research/v1/events_pb.js";

let workspace: string;
let swarm: Swarm;
let outcome: RunOutcome;
let wallS: number;

beforeAll(async () => {
  workspace = mkdtempSync(join(tmpdir(), "watchdog-"));
  const logger = createLogger("watchdog-test");
  logger.level = "warn";
  swarm = await startSwarm({ workspace, slots: 1, logger, instances: { planner: 0 } });
  const parsed = parseGoal("digits: reach 95% validation accuracy in 10 minutes");
  if (!parsed.ok) throw new Error(parsed.error);
  const t0 = Date.now();
  outcome = await runGoal(swarm, { start: { goal: parsed.goal, settings: runSettings(parsed.goal, { research: false }, workspace) }, log: logger, idleGraceS: 8 });
  wallS = (Date.now() - t0) / 1000;
}, 300_000);

afterAll(async () => {
  await swarm?.stop();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
});

describe("a run whose planner proposes nothing", () => {
  it("is ended by the watchdog through the judge, with its own run end and a report", () => {
    const f = outcome.finished;
    expect(f.status).toBe(RunStatus.STOPPED);
    expect(f.runEnd).toBe(RunEnd.IDLE);
    expect(f.reason).toBe("the watchdog: nothing in flight and nothing proposed for 8 s");
    expect(f.trials).toBe(0);
    // The grace period and the judge's report, not the 10-minute budget and its deadline.
    expect(wallS).toBeLessThan(120);
    expect(existsSync(f.reportPath)).toBe(true);
    expect(readFileSync(f.reportPath, "utf8")).toContain("**Status:** stopped: the watchdog: nothing in flight and nothing proposed for 8 s");
  });
});
