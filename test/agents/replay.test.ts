/**
 * The planner's promises (agents/planner/promises.ts) on recorded real runs: at every judgement
 * a run's planner answered, the decision core is asked what it would do with the run's state as
 * it stood, on the run's clock and on clocks as if the machine were twice as fast or twice as
 * slow. Only measured outcomes are replayed (the recordings' durations, scores and verdicts);
 * nothing here models accuracy.
 */
import { describe, expect, it } from "vitest";
import { MUTATION } from "../../core/enums.js";
import { liveSeconds } from "../../swarm/run-state.js";
import { decide, type Move } from "../../agents/planner/decide.js";
import { brokenPromises, runPromiseBreaks } from "../../agents/planner/promises.js";
import { EXPLORE_SHARE } from "../../agents/planner/time-model.js";
import type { Proposal } from "../../agents/planner/policy.js";
import { decisionPoints, events, finalState, RECORDINGS, scaled, type DecisionPoint } from "./recordings.js";
import { modelSent, trainSent } from "../../core/config-wire.js";
import type { TrainConfigInput, TrialModelInput } from "../../core/model-config.js";

/** The move a recorded proposal was, as the decision core would have returned it. */
function recordedMove(p: DecisionPoint): Move | undefined {
  const e = p.recorded;
  if (e?.body.case !== "trialProposed") return undefined;
  const v = e.body.value;
  const mutation = MUTATION.name(v.mutation) ?? "template";
  const proposal: Proposal = {
    rung: v.rung,
    ...(v.seeds && { seeds: v.seeds }),
    hypothesis: v.hypothesis,
    rationale: v.rationale,
    parentIds: v.parentIds,
    mutation,
    model: modelSent(v) as TrialModelInput,
    train: trainSent(v) as TrainConfigInput,
    lastTraining: v.lastTraining,
  };
  return v.rung > 0 ? { kind: "promote", proposal } : { kind: "propose", proposal, by: "policy" };
}

const isLast = (m: Move) => (m.kind === "promote" || m.kind === "propose") && m.proposal.lastTraining === true;

describe.each(RECORDINGS)("replaying $file", (r) => {
  const recorded = events(r);
  const budget = finalState(recorded).goal!.timeBudgetS;

  it.each([1, 0.5, 2])("keeps every promise at every recorded decision, on the clock x %s", (factor) => {
    const points = decisionPoints(r, scaled(recorded, factor));
    expect(points.length).toBeGreaterThan(5);
    const moves = points.map((p) => ({ p, move: decide(p.input, p.index) }));
    for (const { p, move } of moves) {
      expect(move.kind === "nothing" ? (move.broken ?? []) : [], `trial ${p.index}`).toEqual([]);
    }
    // Past exploration's share of the budget, the first decision of a state without a last
    // training trains one (the run accepted a trial by then in every recording).
    const due = moves.find(({ p }) => liveSeconds(p.input.state, p.input.nowMs!) >= EXPLORE_SHARE * budget && ![...p.input.state.trials.values()].some((t) => t.proposed?.lastTraining));
    if (due) expect(isLast(due.move), `trial ${due.p.index}: ${JSON.stringify(due.move).slice(0, 300)}`).toBe(true);
  });

  it(`finds the moves the run made ${r.recordedMovesKeepPromises ? "keep" : "break"} the promises`, () => {
    const broken = decisionPoints(r, recorded).flatMap((p) => {
      const move = recordedMove(p);
      return move ? brokenPromises(p.input, p.index, move).map((b) => `${p.recorded!.trialId}: ${b}`) : [];
    });
    if (r.recordedMovesKeepPromises) expect(broken).toEqual([]);
    else expect(broken.length).toBeGreaterThan(0);
  });

  it("checks the whole run's promises on its stored events", () => {
    const breaks = runPromiseBreaks(finalState(recorded), 0.05 * budget);
    expect(breaks.length).toBe(r.runBreaks.length === 0 ? 0 : breaks.length);
    for (const prefix of r.runBreaks) expect(breaks.some((b) => b.includes(prefix)), `${prefix} in ${JSON.stringify(breaks)}`).toBe(true);
  });
});
