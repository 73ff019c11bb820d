/** The runner's budget a trial's request carries (swarm/budget.ts trialBudget). */
import { describe, expect, it } from "vitest";
import { trialBudget } from "../../swarm/budget.js";
import { proposed, started, state } from "../agents/helpers.js";
import type { EventInit } from "../../bus/index.js";

const promoted = (id: string, extra: Record<string, unknown>): EventInit => {
  const p = proposed(id);
  return { ...p, body: { case: "trialProposed", value: { ...(p.body!.value as object), ...extra } } } as EventInit;
};

describe("a trial's runner budget", () => {
  const run = state([
    started({ trialTimeBudgetS: 90 }, { maxLatencyMs: 1, maxParams: 50_000n, timeBudgetS: 600 }),
    proposed("t0"),
    promoted("t1", { rung: 1, parentIds: ["t0"] }),
    promoted("t2", { lastTraining: true }),
  ]);
  const budget = (id: string) => trialBudget(run, run.trials.get(id)!, 1000);

  it("carries the goal's limits and the run's time per trial", () => {
    expect(budget("t0")).toEqual({ maxParams: 50_000n, maxLatencyMs: 1, timeBudgetS: 90, deadlineS: 0 });
  });

  it("asks no latency check of a promotion, whose config was timed within the limit at its lower rung", () => {
    expect(budget("t1").maxLatencyMs).toBe(0);
    expect(budget("t1").maxParams).toBe(50_000n);
  });

  it("gives the last long training a deadline before the run's reserve", () => {
    expect(budget("t2").maxLatencyMs).toBe(1);
    expect(budget("t2").deadlineS).toBeGreaterThan(0);
    expect(budget("t2").deadlineS).toBeLessThan(600);
  });
});
