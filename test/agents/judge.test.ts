import { describe, expect, it } from "vitest";
import { judge, runStatus } from "../../agents/judge/rules.js";
import { bestTrial } from "../../swarm/run-state.js";
import { labelName } from "../../core/failure.js";
import { Mutation, Surface } from "../../proto/gen/research/v1/common_pb.js";
import { Decision, InterventionKind, RunEnd, RunStatus, Verdict } from "../../proto/gen/research/v1/events_pb.js";
import { failure } from "../../core/failure.js";
import { evaluated, proposed, RUN, started, state } from "./helpers.js";
import type { EventInit } from "../../bus/index.js";
import { modelSpec, trainSpec } from "../../core/config-wire.js";

type Events = Parameters<typeof state>[0];

const judgeLast = (events: Events, id: string, now = 2000) => {
  const s = state(events);
  return judge(s, s.trials.get(id)!, now);
};

const judgedEvent = (id: string, verdict = Verdict.ACCEPT): Events[number] => ({
  runId: RUN,
  trialId: id,
  body: { case: "trialJudged", value: { verdict, decision: Decision.ITERATE } },
});

/** Trials t0..t(n-1) with these means (CI half-width 0.01), all judged and accepted. */
const judgedRun = (start: Events[number], means: number[]): Events => [
  start,
  ...means.flatMap((m, i) => [proposed(`t${i}`, Surface.DATA, i ? ["t0"] : []), evaluated(`t${i}`, m), judgedEvent(`t${i}`)]),
];

/** Judges trial `id` and returns the judgement with the run's status as the judge would finish it. */
const finish = (events: Events, id: string, now = 2000) => {
  const last = judgeLast(events, id, now);
  const after = state([...events, { runId: RUN, trialId: id, body: { case: "trialJudged", value: last } }]);
  return { last, status: runStatus(after, last) };
};

const OPEN = { target: 0, openEnded: true };

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
    expect(failed.reason).toBe("failed: oom: out of memory");
    // A cancelled trial did not fail, and its reason says why once (not "failed: cancelled: cancelled: ...").
    const ended = "the run ended while this trial was training (goal met)";
    const cancelled = judgeLast([started(), proposed("t0"), { runId: RUN, trialId: "t0", body: { case: "trialEvaluated", value: { failure: failure("cancelled", ended) } } }], "t0");
    expect(cancelled.reason).toBe(`cancelled: ${ended}`);
    const below = "after epoch 1/3: seed 1000 validation accuracy 9.74% is below the median 57.54% of 4 finished trials";
    const pruned = judgeLast([started(), proposed("t0"), { runId: RUN, trialId: "t0", body: { case: "trialEvaluated", value: { failure: failure("pruned", below) } } }], "t0");
    expect(pruned.reason).toBe(`pruned: ${below}`);
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
    // Except trial 0 of a run from a person's model (launch --from): scored on test for the report alone.
    const baseline = (mutation: Mutation, parentIds: string[]): EventInit[] => [
      { runId: RUN, trialId: "t0", body: { case: "trialProposed", value: { mutation, parentIds, rung: 3, model: modelSpec({ name: "m", layers: [{ type: "flatten" }] }), train: trainSpec({}) } } },
      { runId: RUN, trialId: "t0", body: { case: "trialAssembled", value: { request: { evaluateTest: true } } } },
      evaluated("t0", 0.9),
    ];
    expect(judgeLast([started(), ...baseline(Mutation.BASELINE, [])], "t0").verdict).toBe(Verdict.ACCEPT);
    expect(judgeLast([started(), ...baseline(Mutation.BASELINE, ["t9"])], "t0").verdict).toBe(Verdict.ILLEGAL);
  });

  it("stops on the trial budget, the time budget and patience", () => {
    const budget = judgeLast([started({ maxTrials: 1 }), proposed("t0"), evaluated("t0", 0.9)], "t0");
    expect(budget.decision).toBe(Decision.STOP);
    expect(budget.runReason).toMatch(/trial budget of 1 spent/);
    const late = judgeLast([started({}, { timeBudgetS: 60 }), proposed("t0"), evaluated("t0", 0.9)], "t0", 1000 + 61_000);
    expect(late.decision).toBe(Decision.STOP);
    // The random baseline (no promotions) gives up on a plateau of judged trials.
    const events = [started({ patience: 2, planner: "random" }), proposed("t0"), evaluated("t0", 0.9)];
    events.push({ runId: RUN, trialId: "t0", body: { case: "trialJudged", value: { verdict: Verdict.ACCEPT, decision: Decision.ITERATE } } });
    events.push(proposed("t1", Surface.DATA, ["t0"]), evaluated("t1", 0.85));
    events.push({ runId: RUN, trialId: "t1", body: { case: "trialJudged", value: { verdict: Verdict.ACCEPT, decision: Decision.ITERATE } } });
    events.push(proposed("t2", Surface.DATA, ["t0"]), evaluated("t2", 0.86));
    const stale = judgeLast(events, "t2");
    expect(stale.decision).toBe(Decision.STOP);
    expect(stale).toMatchObject({ reason: "accepted", runEnd: RunEnd.PLATEAU, runReason: "plateau: the best 95% CI lower bound (89.00%) has not risen by more than 0.1 pp in the last 2 judged trials" });
    // Not while the best trains again at a higher fidelity (the exploit phase's answer to a plateau).
    const promotion = proposed("p0", Surface.DATA, ["t0"]);
    (promotion.body as { value: { rung?: number } }).value.rung = 3;
    expect(judgeLast([...events, promotion], "t2").decision).toBe(Decision.ITERATE);
    // The scheduler's runs count promotions only, with a target or without: probes that miss the best make no plateau.
    const withStart = (start: Events[number]) => events.map((e) => (e.body?.case === "runStarted" ? start : e));
    expect(judgeLast(withStart(started({ patience: 2 })), "t2").decision).toBe(Decision.ITERATE);
    expect(judgeLast(withStart(started({ patience: 2 }, { openEnded: true, target: 0 })), "t2").decision).toBe(Decision.ITERATE);
  });

  it("counts a rise of the best CI lower bound of 0.1 pp or less as a plateau", () => {
    const start = started({ patience: 2, planner: "random" });
    // CI lower bounds 0.89, 0.8905, then 0.8908: never 0.1 pp above 0.89.
    const flat = judgeLast([...judgedRun(start, [0.9, 0.9005]), proposed("t2"), evaluated("t2", 0.9008)], "t2");
    expect(flat.decision).toBe(Decision.STOP);
    expect(flat.runReason).toMatch(/plateau: the best 95% CI lower bound \(89\.00%\)/);
    // 0.89 -> 0.8905 -> 0.892: the last one is progress.
    const rising = judgeLast([...judgedRun(start, [0.9, 0.9005]), proposed("t2"), evaluated("t2", 0.902)], "t2");
    expect(rising.decision).toBe(Decision.ITERATE);
  });

  it("says when the plateau is one of failures only", () => {
    const events: Events = [started({ patience: 2, planner: "random" }), proposed("t0"), { runId: RUN, trialId: "t0", body: { case: "trialEvaluated", value: { failure: failure("oom", "out of memory") } } }];
    events.push(judgedEvent("t0", Verdict.REJECT), proposed("t1"), evaluated("t1", 0.12));
    const j = judgeLast(events, "t1");
    expect(j.decision).toBe(Decision.STOP);
    expect(j.runReason).toMatch(/plateau: no trial was accepted in the last 2 judged trials$/);
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

describe("judge, open-ended goals", () => {
  it("never declares a goal achieved, however good the CI lower bound", () => {
    const best = judgeLast([started({}, OPEN), proposed("t0"), evaluated("t0", 0.99, 0.001)], "t0");
    expect(best.verdict).toBe(Verdict.ACCEPT);
    expect(best.decision).toBe(Decision.ITERATE);
    // open_ended wins over a stray target: there is none to reach.
    const stray = judgeLast([started({}, { target: 0.5, openEnded: true }), proposed("t0"), evaluated("t0", 0.99, 0.001)], "t0");
    expect(stray.decision).toBe(Decision.ITERATE);
  });

  it("keeps the accuracy gate, legality and the test-split ban", () => {
    const chance = judgeLast([started({}, OPEN), proposed("t0"), evaluated("t0", 0.15)], "t0");
    expect(labelName(chance.failure!.label)).toBe("gate_miss");
    const big = judgeLast([started({}, { ...OPEN, maxParams: 500n }), proposed("t0"), evaluated("t0", 0.9, 0.01, { params: 900n })], "t0");
    expect(big.verdict).toBe(Verdict.ILLEGAL);
  });

  it("completes on the trial budget, the time budget or a plateau", () => {
    const budget = finish([started({ maxTrials: 1 }, OPEN), proposed("t0"), evaluated("t0", 0.9)], "t0");
    expect(budget.last.decision).toBe(Decision.STOP);
    expect(budget.last).toMatchObject({ reason: "accepted", runEnd: RunEnd.TRIAL_BUDGET, runReason: "trial budget of 1 spent" });
    expect(budget.status).toBe(RunStatus.COMPLETED);

    const late = finish([started({}, { ...OPEN, timeBudgetS: 60 }), proposed("t0"), evaluated("t0", 0.9)], "t0", 1000 + 61_000);
    expect(late.last).toMatchObject({ reason: "accepted", runEnd: RunEnd.TIME_BUDGET, runReason: "time budget of 60 s spent" });
    expect(late.status).toBe(RunStatus.COMPLETED);

    // Open-ended: any number of probes below the best is no plateau (a one-seed
    // probe cannot raise a three-seed best's CI lower bound) ...
    const probes = [...judgedRun(started({ patience: 2, maxTrials: 100 }, OPEN), [0.9, 0.85, 0.85, 0.85, 0.85, 0.85]), proposed("t6"), evaluated("t6", 0.86)];
    expect(finish(probes, "t6").last.decision).toBe(Decision.ITERATE);
    // ... a patience (2) of promotions that did not raise it is.
    const promote = (id: string): Events[number] => {
      const p = proposed(id, Surface.DATA, ["t0"]);
      (p.body as { value: { rung?: number } }).value.rung = 1;
      return p;
    };
    // A one-seed promotion only ranks configs for the next rung: no more a plateau than a probe.
    const ranking = promote("q0");
    (ranking.body as { value: { seeds?: number } }).value.seeds = 1;
    const ranked = [...probes, judgedEvent("t6"), ranking, evaluated("q0", 0.86), judgedEvent("q0"), promote("p0"), evaluated("p0", 0.86)];
    expect(finish(ranked, "p0").last.decision).toBe(Decision.ITERATE);
    const flat = finish([...ranked, judgedEvent("p0"), promote("p1"), evaluated("p1", 0.87)], "p1");
    expect(flat.last.decision).toBe(Decision.STOP);
    expect(flat.last.runReason).toMatch(/plateau: the best 95% CI lower bound \(89\.00%\) has not risen by more than 0\.1 pp in the last 2 promotions with the run's seeds/);
    expect(flat.status).toBe(RunStatus.COMPLETED);
  });

  it("does not call a run that found no model completed", () => {
    const events: Events = [started({ maxTrials: 1 }, OPEN), proposed("t0"), { runId: RUN, trialId: "t0", body: { case: "trialEvaluated", value: { failure: failure("oom", "out of memory") } } }];
    expect(finish(events, "t0").status).toBe(RunStatus.BUDGET_EXHAUSTED);
  });
});

describe("runStatus, targeted goals", () => {
  it("is goal_achieved, budget_exhausted on a spent budget, else stopped", () => {
    expect(finish([started(), proposed("t0"), evaluated("t0", 0.97, 0.01)], "t0").status).toBe(RunStatus.GOAL_ACHIEVED);
    expect(finish([started({ maxTrials: 1 }), proposed("t0"), evaluated("t0", 0.9)], "t0").status).toBe(RunStatus.BUDGET_EXHAUSTED);
    expect(finish([started({}, { timeBudgetS: 60 }), proposed("t0"), evaluated("t0", 0.9)], "t0", 1000 + 61_000).status).toBe(RunStatus.BUDGET_EXHAUSTED);
    expect(finish([...judgedRun(started({ patience: 2, planner: "random" }), [0.9, 0.85]), proposed("t2"), evaluated("t2", 0.86)], "t2").status).toBe(RunStatus.STOPPED);
  });

  it("reads the budget from the run's end, not from a verdict that mentions one", () => {
    // An illegal trial's reason names the trial budget; the run still ended on a plateau.
    const events = [...judgedRun(started({ patience: 2, planner: "random" }), [0.9, 0.85]), proposed("t2"), evaluated("t2", 0.9, 0.01, { seconds: 600 })];
    const { last, status } = finish(events, "t2");
    expect(last.reason).toMatch(/^illegal: .*over the trial budget of 60 s$/);
    expect(last.runEnd).toBe(RunEnd.PLATEAU);
    expect(status).toBe(RunStatus.STOPPED);
  });
});

describe("the best trial", () => {
  it("is the best CI lower bound among trials with a seed spread, when the run has any", () => {
    const oneSeed = evaluated("probe", 0.95, 0.005, { n: 1 });
    const events = [started(), proposed("probe"), oneSeed, judgedEvent("probe"), proposed("t1"), evaluated("t1", 0.9), judgedEvent("t1")];
    expect(bestTrial(state(events))?.id).toBe("t1");
    // A run of probes only has its best probe.
    expect(bestTrial(state(events.slice(0, 4)))?.id).toBe("probe");
  });
});

describe("the budget plan", () => {
  it("stops early enough to confirm the best trial and write the report within the budget", () => {
    // t0's slowest seed took 20 s, its validation pass not timed (a runner before eval_seconds):
    // its kept weights' confirmation is reserved 10 + 0.05 x 20 s, the report 8 s: 19 s.
    const slow = (id: string) => evaluated(id, 0.9, 0.01, { seedSeconds: [20] });
    const events = [started({}, { timeBudgetS: 120 }), proposed("t0"), slow("t0")];
    // 100 s in: 20 s left, 19 s reserved, so not even a 20 s trial fits.
    const stop = judgeLast(events, "t0", 1000 + 100_000);
    expect(stop.decision).toBe(Decision.STOP);
    expect(stop.runReason).toBe("time budget of 120 s nearly spent: 20 s left, 19 s reserved for the test confirmation and the report");
    expect(runStatus(state(events), stop)).toBe(RunStatus.BUDGET_EXHAUSTED);
    // A trial still in flight was started because it fit: the judge waits for it (the
    // analyst cancels it if it reaches the reserve) rather than throw its work away.
    expect(judgeLast([...events, proposed("t1")], "t0", 1000 + 100_000).decision).toBe(Decision.ITERATE);
    // 70 s in: 50 s left, 31 s after the reserve, room for another 20 s trial (retraining
    // the best for its confirmation would have needed 2 x 20 s more).
    expect(judgeLast(events, "t0", 1000 + 70_000).decision).toBe(Decision.ITERATE);
  });

  it("a person's stop ends the run stopped once nothing is in flight", () => {
    const stop: Events[number] = { runId: RUN, eventId: "r1/iv-1", body: { case: "runIntervention", value: { interventionId: "iv-1", kind: InterventionKind.STOP, who: "cli:alice", reason: "enough" } } };
    // t1 still trains: t0's judgement waits for it.
    const waiting = judgeLast([started(), proposed("t0"), proposed("t1"), stop, evaluated("t0", 0.8)], "t0");
    expect(waiting.decision).toBe(Decision.ITERATE);
    const { last, status } = finish([started(), proposed("t0"), stop, evaluated("t0", 0.8)], "t0");
    expect(last.decision).toBe(Decision.STOP);
    expect(last.runReason).toMatch(/stopped by cli:alice: enough$/);
    expect(status).toBe(RunStatus.STOPPED);
    // Even an open-ended run that found a model: a person stopped it.
    expect(finish([started({}, OPEN), proposed("t0"), stop, evaluated("t0", 0.8)], "t0").status).toBe(RunStatus.STOPPED);
  });
});

describe("the judge and a goal's latency limit (issue 39)", () => {
  const LIMIT = { maxLatencyMs: 2 };

  it("accepts a trial whose fastest seed is within the limit and labels one over it over_limit", () => {
    // A slot training beside a timing only slows it: the fastest seed median is the model's.
    const within = judgeLast([started({}, LIMIT), proposed("t0"), evaluated("t0", 0.9, 0.01, { latencyMs: [2.2, 1.9, 2.4] })], "t0");
    expect(within.verdict).toBe(Verdict.ACCEPT);
    const over = judgeLast([started({}, LIMIT), proposed("t0"), evaluated("t0", 0.97, 0.01, { latencyMs: [2.1, 2.5, 2.3] })], "t0");
    expect([over.verdict, labelName(over.failure!.label)]).toEqual([Verdict.REJECT, "over_limit"]);
    expect(over.reason).toBe("over the limit: 2.10 ms per example, over the goal's limit of 2 ms");
    // Over the limit, a trial meets no goal however accurate it is.
    expect(over.decision).toBe(Decision.ITERATE);
  });

  it("holds a trial to the fastest timing of its model in the run, whatever its recipe", () => {
    // t1 trains t0's model longer; timed beside the other slot's training it reads 2.6 ms.
    const again = proposed("t1");
    (again.body!.value as { model: unknown }).model = (proposed("t0").body!.value as { model: unknown }).model;
    const events: Events = [started({}, LIMIT), proposed("t0"), evaluated("t0", 0.9, 0.01, { latencyMs: [1.5] }), again, evaluated("t1", 0.93, 0.01, { latencyMs: [2.6, 2.7, 2.9] })];
    expect(judgeLast(events, "t1").verdict).toBe(Verdict.ACCEPT);
    // Another model timed as fast counts for nothing.
    const other: Events = [started({}, LIMIT), proposed("t0"), evaluated("t0", 0.9, 0.01, { latencyMs: [1.5] }), proposed("t1"), evaluated("t1", 0.93, 0.01, { latencyMs: [2.6, 2.7, 2.9] })];
    expect(labelName(judgeLast(other, "t1").failure!.label)).toBe("over_limit");
  });

  it("cannot accept an untimed trial under a latency limit, and ignores latency without one", () => {
    const untimed = judgeLast([started({}, LIMIT), proposed("t0"), evaluated("t0", 0.9)], "t0");
    expect(untimed.failure?.message).toMatch(/its latency was not measured/);
    expect(judgeLast([started(), proposed("t0"), evaluated("t0", 0.9, 0.01, { latencyMs: [50] })], "t0").verdict).toBe(Verdict.ACCEPT);
  });

  it("leaves the best trial the best within the limit", () => {
    const events: Events = [started({}, { ...LIMIT, ...OPEN }), proposed("t0"), evaluated("t0", 0.95, 0.01, { latencyMs: [3] }), proposed("t1"), evaluated("t1", 0.9, 0.01, { latencyMs: [1] })];
    const s = state(events);
    const [j0, j1] = [judge(s, s.trials.get("t0")!, 2000), judge(s, s.trials.get("t1")!, 2000)];
    const after = state([...events, { runId: RUN, trialId: "t0", body: { case: "trialJudged", value: j0 } }, { runId: RUN, trialId: "t1", body: { case: "trialJudged", value: j1 } }]);
    expect(bestTrial(after)?.id).toBe("t1");
  });
});
