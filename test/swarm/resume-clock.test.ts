/** A resumed run's clock: the time between an interruption and its resume is not the run's. */
import { describe, expect, it } from "vitest";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { InferenceCostSchema, SeedResultSchema, Task } from "../../proto/gen/research/v1/runner_pb.js";
import { EventSchema, RunFinishedSchema, RunStatus, Verdict, type Event } from "../../proto/gen/research/v1/events_pb.js";
import { budgetPlan, budgetSpent, confirmTimeoutS, endSeconds } from "../../swarm/budget.js";
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

  it("is spent when only the report's 8 s are left, whatever is in flight", () => {
    expect(budgetSpent(state, T0 + 111_000)).toBe(false);
    expect(budgetSpent(state, T0 + 112_000)).toBe(true);
  });

  it("gives the confirmation the time to the report's reserve, and never less than 20 s", () => {
    // No trial measured: the reserve is the report's 8 s and the confirmation's 10 s.
    expect(budgetPlan(state, T0 + 60_000).reserveS).toBeCloseTo(18);
    expect(confirmTimeoutS(budgetPlan(state, T0 + 95_000))).toBeCloseTo(20);
    expect(confirmTimeoutS(budgetPlan(state, T0 + 60_000))).toBeCloseTo(52);
    expect(confirmTimeoutS(budgetPlan(state, T0 + 130_000))).toBe(20);
  });
});

describe("the reserve for the best trial's confirmation", () => {
  // The best trial's slowest seed: 60 s in all, 4 s to its first step, 2 s for its last pass over validation.
  const seed = (evalSeconds: number, valExamples = 0) => ({ seed: 0, seconds: 60, secondsToFirstStep: 4, evalSeconds, valExamples });
  const run = (evalSeconds: number, valExamples = 0) => {
    const state = emptyRunState("r");
    for (const e of [
      at(0, { case: "runStarted", value: { goal: { dataset: "d", timeBudgetS: 240 }, dataset: { nTrain: 6000, nVal: 1000, nTest: 3000 } } }),
      at(1, { case: "trialProposed", value: { hypothesis: "h" } }),
      at(70, { case: "trialEvaluated", value: { result: { aggregated: { val_accuracy: { mean: 0.9, ci95: [0.88, 0.92], n: 1 } }, seedResults: [seed(evalSeconds, valExamples)] } } }),
      at(70, { case: "trialJudged", value: { verdict: Verdict.ACCEPT, score: 0.88 } }),
    ]) applyToRunState(state, { ...e, trialId: e.body.case === "runStarted" ? "" : "t1" } as Event);
    return state;
  };

  it("is its measured start-up and its validation pass scaled to validation and test, for a busier machine, and the report's", () => {
    // 2 x (4 s + 2 s x (1 + 3000/1000)) + 5 s for its inference timing, then the report's 8 s.
    expect(budgetPlan(run(2), T0 + 100_000).reserveS).toBeCloseTo(2 * (4 + 2 * 4) + 5 + 8);
    expect(budgetPlan(run(2), T0 + 100_000).availableS).toBeCloseTo(140 - 37);
  });

  it("scales a probe's pass over its subset's validation examples to the whole validation and test splits", () => {
    // 2 s for 250 of the 1,000 validation examples: 32 s for the 4,000 the confirmation predicts.
    expect(budgetPlan(run(2, 250), T0 + 100_000).reserveS).toBeCloseTo(2 * (4 + 2 * 16) + 5 + 8);
    expect(budgetPlan(run(2, 1000), T0 + 100_000).reserveS).toBeCloseTo(2 * (4 + 2 * 4) + 5 + 8);
  });

  it("holds a timing that took longer than the loaded weights' 3 s, scaled to the full split's evaluation batch", () => {
    const state = run(2, 250);
    const best = [...state.trials.values()][0]!.evaluated!.result!.seedResults[0]!;
    // 5 s at a batch of its 250 examples, 5.12 at the full split's 256: 2.12 s more than the 3 s.
    best.inference = create(InferenceCostSchema, { measureSeconds: 5 });
    expect(budgetPlan(state, T0 + 100_000).reserveS).toBeCloseTo(2 * (4 + 2 * 16 + (5 * 256) / 250 - 3) + 5 + 8);
    best.inference = create(InferenceCostSchema, { measureSeconds: 2 });
    expect(budgetPlan(state, T0 + 100_000).reserveS).toBeCloseTo(2 * (4 + 2 * 16) + 5 + 8);
  });

  it("holds a language model's sample: a pass of one window for each of its 300 bytes", () => {
    const state = run(2, 250);
    state.dataset!.task = Task.LANGUAGE_MODELLING;
    const best = [...state.trials.values()][0]!.evaluated!.result!.seedResults[0]!;
    best.inference = create(InferenceCostSchema, { measureSeconds: 2, batch1: { medianMs: 15 } });
    expect(budgetPlan(state, T0 + 100_000).reserveS).toBeCloseTo(2 * (4 + 2 * 16 + 300 * 0.015) + 5 + 8);
  });

  it("is timed by its training where no pass was measured (a runner before eval_seconds)", () => {
    expect(budgetPlan(run(0), T0 + 100_000).reserveS).toBeCloseTo(10 + 0.05 * 60 + 8);
  });
});

describe("what a training on the full split spends after its clock stops", () => {
  // A language model's probe (a 1,000-row corpus, a tenth of it validation) on the recorded run's numbers:
  // its pass over 100 validation rows took 0.75 s, the timing of its inference 1.7 s.
  const probe = create(SeedResultSchema, { seed: 0, seconds: 20, secondsToFirstStep: 1.1, evalSeconds: 0.75, valExamples: 100, inference: { measureSeconds: 1.7 } });

  it("is its validation pass scaled to the full validation split, then the timing of its inference", () => {
    // Its timing passed a batch of its 100 examples; the full split's passes 256 (the smallest evaluation batch).
    expect(endSeconds(probe, 312)).toBeCloseTo(0.75 * 3.12 + 1.7 * 2.56);
    // A seed measured on the whole validation split already.
    expect(endSeconds(probe, 100)).toBeCloseTo(0.75 + 1.7);
  });

  it("is unknown for a seed measured without its pass's time", () => {
    expect(endSeconds(create(SeedResultSchema, { seed: 0, seconds: 20 }), 312)).toBeUndefined();
  });
});
