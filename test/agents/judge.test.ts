import { describe, expect, it } from "vitest";
import { judge } from "../../agents/judge/rules.js";
import { labelName } from "../../core/failure.js";
import { Surface } from "../../proto/gen/research/v1/common_pb.js";
import { Decision, Verdict } from "../../proto/gen/research/v1/events_pb.js";
import { failure } from "../../core/failure.js";
import { evaluated, proposed, RUN, started, state } from "./helpers.js";

const judgeLast = (events: Parameters<typeof state>[0], id: string, now = 2000) => {
  const s = state(events);
  return judge(s, s.trials.get(id)!, now);
};

describe("judge", () => {
  it("declares the goal on the CI lower bound, not the mean", () => {
    const hit = judgeLast([started(), proposed("t0"), evaluated("t0", 0.97, 0.01)], "t0");
    expect(hit.verdict).toBe(Verdict.ACCEPT);
    expect(hit.decision).toBe(Decision.GOAL_ACHIEVED);
    const meanOnly = judgeLast([started(), proposed("t0"), evaluated("t0", 0.96, 0.03)], "t0");
    expect(meanOnly.decision).toBe(Decision.ITERATE);
  });

  it("never calls a single seed's result a goal", () => {
    const one = judgeLast([started(), proposed("t0"), evaluated("t0", 0.99, 0, { n: 1 })], "t0");
    expect(one.decision).toBe(Decision.ITERATE);
  });

  it("rejects failures with their label and gates near-chance trials", () => {
    const failed = judgeLast(
      [started(), proposed("t0"), { runId: RUN, trialId: "t0", body: { case: "trialEvaluated", value: { failure: failure("oom", "out of memory") } } }],
      "t0",
    );
    expect(failed.verdict).toBe(Verdict.REJECT);
    expect(labelName(failed.failure!.label)).toBe("oom");
    const chance = judgeLast([started(), proposed("t0"), evaluated("t0", 0.15)], "t0");
    expect(chance.verdict).toBe(Verdict.REJECT);
    expect(labelName(chance.failure!.label)).toBe("gate_miss");
  });

  it("calls broken budgets and test-split use illegal", () => {
    const big = judgeLast([started({}, { maxParams: 500n }), proposed("t0"), evaluated("t0", 0.9, 0.01, { params: 900n })], "t0");
    expect(big.verdict).toBe(Verdict.ILLEGAL);
    expect(big.reason).toMatch(/900 parameters exceed/);
    const slow = judgeLast([started(), proposed("t0"), evaluated("t0", 0.9, 0.01, { seconds: 600 })], "t0");
    expect(slow.verdict).toBe(Verdict.ILLEGAL);
    const peeked = judgeLast(
      [started(), proposed("t0"), { runId: RUN, trialId: "t0", body: { case: "trialAssembled", value: { request: { evaluateTest: true } } } }, evaluated("t0", 0.9)],
      "t0",
    );
    expect(peeked.verdict).toBe(Verdict.ILLEGAL);
    expect(peeked.reason).toMatch(/test split/);
  });

  it("stops on the trial budget, the time budget and patience", () => {
    const budget = judgeLast([started({ maxTrials: 1 }), proposed("t0"), evaluated("t0", 0.9)], "t0");
    expect(budget.decision).toBe(Decision.STOP);
    expect(budget.reason).toMatch(/trial budget of 1 spent/);
    const late = judgeLast([started({}, { timeBudgetS: 60 }), proposed("t0"), evaluated("t0", 0.9)], "t0", 1000 + 61_000);
    expect(late.decision).toBe(Decision.STOP);
    const events = [started({ patience: 2 }), proposed("t0"), evaluated("t0", 0.9)];
    events.push({ runId: RUN, trialId: "t0", body: { case: "trialJudged", value: { verdict: Verdict.ACCEPT, decision: Decision.ITERATE } } });
    events.push(proposed("t1", Surface.DATA, ["t0"]), evaluated("t1", 0.85));
    events.push({ runId: RUN, trialId: "t1", body: { case: "trialJudged", value: { verdict: Verdict.ACCEPT, decision: Decision.ITERATE } } });
    events.push(proposed("t2", Surface.DATA, ["t0"]), evaluated("t2", 0.86));
    const stale = judgeLast(events, "t2");
    expect(stale.decision).toBe(Decision.STOP);
    expect(stale.reason).toMatch(/no improvement in the last 2/);
  });

  it("measures the gain over the parent on the CI lower bound", () => {
    const events = [started(), proposed("t0"), evaluated("t0", 0.9, 0.01)];
    events.push({ runId: RUN, trialId: "t0", body: { case: "trialJudged", value: { verdict: Verdict.ACCEPT, decision: Decision.ITERATE } } });
    events.push(proposed("t1", Surface.DATA, ["t0"]), evaluated("t1", 0.92, 0.01));
    const j = judgeLast(events, "t1");
    expect(j.gain).toBeCloseTo(0.02, 6);
    expect(j.bestTrialId).toBe("t1");
  });
});
