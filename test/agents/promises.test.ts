/**
 * The whole run's promises (agents/planner/promises.ts runPromiseBreaks) on a 3-minute open-ended
 * run with two starting templates, as a starved machine ran one (the suite's open-ended file beside
 * two other swarms on 2 slow cores, 2026-12-03): one template accepted at 81 s, the other running
 * until the reserve at 153 s. The planner waits for every template before its last long training,
 * so none was due while one could fit.
 */
import { describe, expect, it } from "vitest";
import { Mutation } from "../../proto/gen/research/v1/common_pb.js";
import { RunEnd, Verdict } from "../../proto/gen/research/v1/events_pb.js";
import { runPromiseBreaks } from "../../agents/planner/promises.js";
import { failure } from "../../core/failure.js";
import type { EventInit } from "../../bus/index.js";
import { RUN, proposed, result, started, state } from "./helpers.js";

const BUDGET_S = 180;
const at = (s: number) => BigInt(1000 + s * 1000);

function template(id: string): EventInit {
  const e = proposed(id);
  const body = e.body as { value: { mutation?: Mutation } };
  body.value.mutation = Mutation.TEMPLATE;
  return { ...e, emittedAtMs: at(1) };
}

/** A run whose template t000 ends (cancelled at the budget's reserve) at `slowEndS`. */
function run(slowEndS: number) {
  const accepted = { runId: RUN, trialId: "t001", emittedAtMs: at(81) };
  const cancelled = { runId: RUN, trialId: "t000", emittedAtMs: at(slowEndS) };
  return state([
    { ...started({ seeds: 3 }, { target: 0, openEnded: true, timeBudgetS: BUDGET_S }), emittedAtMs: at(0) },
    template("t000"),
    template("t001"),
    { ...accepted, body: { case: "trialEvaluated", value: { result: result(0.8, 0.02, { n: 1, seedSeconds: [47.8] }) } } },
    { ...accepted, body: { case: "trialJudged", value: { verdict: Verdict.ACCEPT, bestTrialId: "t001" } } },
    { ...cancelled, body: { case: "trialEvaluated", value: { failure: failure("budget_overrun", "cancelled: the run's time budget reached its reserve") } } },
    { ...cancelled, body: { case: "trialJudged", value: { verdict: Verdict.REJECT, bestTrialId: "t001", runEnd: RunEnd.TIME_BUDGET } } },
    { runId: RUN, emittedAtMs: at(slowEndS + 4), body: { case: "runFinished", value: { reason: "time budget of 180 s nearly spent" } } },
  ]);
}

describe("the whole run's promise of a last long training", () => {
  it("is not owed when a template ran until too little was left to train one", () => {
    expect(runPromiseBreaks(run(153), 0.05 * BUDGET_S)).toEqual([]);
  });

  it("is owed when the templates were judged with time left for one, and its one-seed best is a break too", () => {
    // Judged at 90 s: 90 s were left before the reserve, and a last training's floor is 18 s.
    const breaks = runPromiseBreaks(run(90), 0.05 * BUDGET_S);
    expect(breaks).toEqual(["the run never proposed its last long training", "the run ended with a one-seed best (t001)"]);
  });
});
