/** A resumed run's clock: the time between an interruption and its resume is not the run's. */
import { describe, expect, it } from "vitest";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { EventSchema, RunFinishedSchema, RunStatus, type Event } from "../../proto/gen/research/v1/events_pb.js";
import { budgetPlan, budgetSpent, confirmTimeoutS } from "../../swarm/budget.js";
import { applyToRunState, emptyRunState, liveSeconds } from "../../swarm/run-state.js";
import { buildReport } from "../../lineage-store/report.js";
import { unwrapped } from "../helpers/markdown.js";

const T0 = 1_700_000_000_000;
const at = (s: number, body: MessageInitShape<typeof EventSchema>["body"]): Event => create(EventSchema, { runId: "r", eventId: `r/${s}`, emittedAtMs: BigInt(T0 + s * 1000), body });

describe("a resumed run's clock", () => {
  const state = emptyRunState("r");
  for (const e of [
    at(0, { case: "runStarted", value: { goal: { dataset: "digits", timeBudgetS: 120 } } }),
    at(37, { case: "trialProposed", value: { hypothesis: "h" } }),
    // Ctrl-C at about 37 s; `launch --resume --time-budget 4m` ten minutes after the start.
    at(600, { case: "runResumed", value: { downtimeS: 563, timeBudgetS: 240 } }),
  ]) applyToRunState(state, e);

  it("counts only live time, against the budget the resume set", () => {
    expect(liveSeconds(state, T0 + 610_000)).toBeCloseTo(47);
    expect(state.goal?.timeBudgetS).toBe(240);
    expect(budgetPlan(state, T0 + 610_000).remainingS).toBeCloseTo(193);
  });

  it("lists the interruption in the report", () => {
    const { markdown, json } = buildReport(state, create(RunFinishedSchema, { status: RunStatus.STOPPED, seconds: 200 }));
    expect(json.outcome.resumes).toEqual([{ at_s: 37, downtime_s: 563, time_budget_s: 240 }]);
    expect(unwrapped(markdown)).toContain("run time: 3.3 min live (the time between an interruption and its resume is not counted)");
    expect(unwrapped(markdown)).toContain("- Interrupted, then resumed at 37.0 s of live time after 9.4 min down; the time budget became 4.0 min.");
  });
});

describe("the end of a run's budget", () => {
  const state = emptyRunState("r");
  applyToRunState(state, at(0, { case: "runStarted", value: { goal: { dataset: "digits", timeBudgetS: 120 } } }));

  it("is spent when only the report's 15 s are left, whatever is in flight", () => {
    expect(budgetSpent(state, T0 + 104_000)).toBe(false);
    expect(budgetSpent(state, T0 + 105_000)).toBe(true);
  });

  it("gives the confirmation the time to the report's reserve, and never less than 20 s", () => {
    // No trial measured: the reserve is the report's 15 s and the confirmation's 10 s.
    expect(confirmTimeoutS(budgetPlan(state, T0 + 95_000))).toBeCloseTo(20);
    expect(confirmTimeoutS(budgetPlan(state, T0 + 60_000))).toBeCloseTo(45);
    expect(confirmTimeoutS(budgetPlan(state, T0 + 130_000))).toBe(20);
  });
});
