/** Which slots the planner fills after a judgement (swarm/run-state.ts slotsToFill): none is skipped for good. */
import { describe, expect, it } from "vitest";
import { slotsToFill } from "../../swarm/run-state.js";
import { trialId } from "../../core/ids.js";
import { Decision, Verdict } from "../../proto/gen/research/v1/events_pb.js";
import type { EventInit } from "../../bus/index.js";
import { proposed, RUN, started, state } from "../agents/helpers.js";

const t = (i: number) => trialId(RUN, i);
const judged = (i: number, decision = Decision.ITERATE): EventInit => ({
  runId: RUN,
  trialId: t(i),
  body: { case: "trialJudged", value: { verdict: Verdict.ACCEPT, decision } },
});
const fill = (events: EventInit[]) => {
  const s = slotsToFill(state(events));
  return { openings: s.openings, after: s.after.map((x) => x.id) };
};

describe("the slots to fill", () => {
  const opening = [started({ parallel: 2, maxTrials: 6 }), proposed(t(0)), proposed(t(1))];

  it("fills the slot a judgement freed, while the other trains", () => {
    expect(fill([...opening, judged(0)])).toEqual({ openings: [], after: [t(0)] });
  });

  it("fills a slot an earlier judgement left unfilled (it waited, or nothing fitted), oldest first, with the next one's", () => {
    // t0's judgement proposed nothing for slot 2; t1's judgement frees slot 3: both are free.
    expect(fill([...opening, judged(0), judged(1)])).toEqual({ openings: [], after: [t(0), t(1)] });
    // Slot 2 filled later: only slot 3 is left.
    expect(fill([...opening, judged(0), proposed(t(2)), judged(1)])).toEqual({ openings: [], after: [t(1)] });
  });

  it("never fills beyond what the run keeps in flight, after a stop, or for a judgement that ended the run", () => {
    // Slot 2 trains: one slot free of two, for the oldest unfilled.
    expect(fill([...opening, judged(0), judged(1), proposed(t(3))])).toEqual({ openings: [], after: [t(0)] });
    expect(fill([...opening, judged(0), judged(1, Decision.STOP)])).toEqual({ openings: [], after: [t(0)] });
    const ended: EventInit = { runId: RUN, body: { case: "runFinished", value: {} } };
    expect(fill([...opening, judged(0), judged(1), ended])).toEqual({ openings: [], after: [] });
  });

  it("with runner jobs, fills first the openings left for runners that were queued, as they come up", () => {
    const jobs = (up: number): EventInit => ({ runId: RUN, body: { case: "runnerJobs", value: { requested: 2, up } } });
    const oneUp = [started({ parallel: 2, maxTrials: 6 }), jobs(1), proposed(t(0))];
    // One runner of two up: the run keeps one trial in flight, and t0 is it.
    expect(fill(oneUp)).toEqual({ openings: [], after: [] });
    // The second comes up: the opening slot 1, then t0's freed slot once t0 is judged.
    expect(fill([...oneUp, jobs(2)])).toEqual({ openings: [1], after: [] });
    expect(fill([...oneUp, jobs(2), judged(0)])).toEqual({ openings: [1], after: [t(0)] });
  });
});
