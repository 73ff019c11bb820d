import { create, fromJsonString, type MessageInitShape } from "@bufbuild/protobuf";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { buildReport } from "../../lineage-store/report.js";
import { describe, expect, it } from "vitest";
import { INTERVENTION_KIND } from "../../core/enums.js";
import { EventSchema, type Event } from "../../proto/gen/research/v1/events_pb.js";
import { EpochProgressSchema, Metric } from "../../proto/gen/research/v1/runner_pb.js";
import { emptyRunState } from "../../swarm/run-state.js";
import { applyToView, emptyView, runDetail, runSummary, trialDetail, type RunView } from "../../dashboard/views.js";
import { cnn, runEvents } from "../lineage-store/fixtures.js";
import { briefMessage, modelSpec, trainSpec } from "../../core/config-wire.js";
import { failure } from "../../core/failure.js";
import { Cost } from "../../proto/gen/research/v1/common_pb.js";
import { Decision, Verdict } from "../../proto/gen/research/v1/events_pb.js";
import { evaluated, proposed, started } from "../agents/helpers.js";
import type { EventInit } from "../../bus/index.js";

const RUN = "r-views";
const T0 = 1_700_000_000_000;

function viewOf(events: Event[], live = false): RunView {
  const v = emptyView(emptyRunState(RUN));
  v.live = live;
  for (const e of events) applyToView(v, e);
  return v;
}

const ev = (trialId: string, body: MessageInitShape<typeof EventSchema>["body"], at: number, eventId = `${RUN}/${trialId}/${body?.case}/${at}`): Event =>
  create(EventSchema, { runId: RUN, trialId, eventId, emittedAtMs: BigInt(at), body });

/** A brief the researcher's schema accepts (the fixtures' own is not one), answering a planner's request. */
const brief = ev("", {
  case: "briefReady",
  value: {
    requestId: "rq-1",
    brief: briefMessage({
      summary_title: "Compact CNNs",
      insights: ["batchnorm helps"],
      architectural_suggestions: [{ name: "se_block", description: "squeeze excitation", implementation_note: "after each stage" }],
      sources: [{ title: "SE nets", url: "https://arxiv.org/abs/1709.01507" }],
    }),
  },
}, T0 + 8);

/** A run of the lineage fixtures (12 trials, 3 failed) without its RunFinished. */
const unfinished = () => {
  const [start, ...rest] = runEvents(RUN, undefined, T0).filter((e) => e.body.case !== "runFinished");
  return [start!, brief, ...rest];
};

describe("dashboard views", () => {
  it("summarises a finished run: status, best by CI lower bound, counts, time", () => {
    const s = runSummary(viewOf(runEvents(RUN, undefined, T0)));
    expect(s).toMatchObject({
      run_id: RUN,
      dataset: "fashion-mnist",
      target: 0.92,
      open_ended: false,
      status: "budget_exhausted",
      live: false,
      trials: 12,
      judged: 12,
      in_flight: 0,
      started_at: T0 + 7,
      seconds: 600,
      time_budget_s: 1200,
    });
    expect(s.best?.trial_id).toBe(`${RUN}-t009`);
    expect(s.best?.val.ci95[0]).toBeCloseTo(0.907);
    expect(s.best?.test_accuracy).toBeNull();
  });

  it("says how a run without RunFinished stands: interrupted off the bus, else running, paused, stopping", () => {
    const events = unfinished();
    const last = Number(events.at(-1)!.emittedAtMs);
    const off = runSummary(viewOf(events, false));
    expect(off.status).toBe("interrupted");
    expect(off.seconds).toBeCloseTo((last - (T0 + 7)) / 1000);
    expect(runSummary(viewOf(events, true), last + 5000).status).toBe("running");
    expect(runSummary(viewOf(events, true), last + 5000).seconds).toBeCloseTo((last + 5000 - (T0 + 7)) / 1000);
    const pause = ev("", { case: "runIntervention", value: { interventionId: "iv-1", kind: INTERVENTION_KIND.value("pause"), who: "ui:ann" } }, last + 1);
    expect(runDetail(viewOf([...events, pause], true))).toMatchObject({ status: "paused", paused: true });
    const stop = ev("", { case: "runIntervention", value: { interventionId: "iv-2", kind: INTERVENTION_KIND.value("stop"), who: "ui:ann" } }, last + 2);
    expect(runSummary(viewOf([...events, pause, stop], true)).status).toBe("stopping");
  });

  it("details a run: trial table with fidelity and features, best so far in judged order, failures, briefs, interventions", () => {
    const events = unfinished();
    const last = Number(events.at(-1)!.emittedAtMs);
    const t = (i: number) => `${RUN}-t${String(i).padStart(3, "0")}`;
    const propose = ev("", { case: "runIntervention", value: { interventionId: "iv-p", kind: INTERVENTION_KIND.value("propose"), who: "ui:ann", hypothesis: "mine" } }, last + 1);
    const cancel = ev(t(12), { case: "runIntervention", value: { interventionId: "iv-c", kind: INTERVENTION_KIND.value("cancel_trial"), who: "cli:bob", reason: "slow" } }, last + 3);
    const taken = ev(t(12), { case: "trialProposed", value: { hypothesis: "mine", interventionId: "iv-p", model: modelSpec({ name: "m", layers: [{ type: "linear", out_features: 64 }, { type: "activation", fn: "relu" }] }), train: trainSpec({}), seeds: 1, rung: 0 } }, last + 2);
    const d = runDetail(viewOf([...events, propose, taken, cancel], true));

    expect(d.trials_table.map((r) => r.index)).toEqual([...Array(13).keys()].map((i) => i + 1));
    const r1 = d.trials_table[1]!;
    expect(r1).toMatchObject({ trial_id: t(1), parent_ids: [t(0)], surface: "architecture", status: "judged", verdict: "accept", decision: "iterate", failure_label: null, params: 49_000 });
    expect(r1.val?.mean).toBeCloseTo(0.903);
    expect(r1.fidelity).toMatchObject({ rung: 0, seeds: 3 });
    expect(r1.features).toMatchObject({ lr: 0.001, rung: 0, params: 49_000 });
    expect(r1.judged_at).toBeGreaterThan(r1.proposed_at);
    expect(d.trials_table[7]).toMatchObject({ status: "failed", failure_label: "oom", failure_message: "CUDA out of memory" });
    const mine = d.trials_table[12]!;
    expect(mine).toMatchObject({ status: "proposed", val: null, judged_at: null, fidelity: { seeds: 1 } });
    expect(mine.features).toMatchObject({ layers: 2, width: 64 });

    expect(d.failures).toEqual({ oom: 1, shape_error: 2 });
    // Accepted trials raise the bound at t000, t001, t002, t003 and t009; failures carry it on.
    expect(d.best_so_far).toHaveLength(12);
    expect(d.best_so_far.map((p) => p.best_trial_id)).toEqual([0, 1, 2, 3, 3, 3, 3, 3, 3, 9, 9, 9].map(t));
    expect(d.best_so_far[9]!.best_ci_low).toBeCloseTo(0.907);
    expect(d.best_so_far[0]).toMatchObject({ trial_id: t(0), judged: 1 });
    expect(d.best_so_far[0]!.t_s).toBeGreaterThan(0);

    expect(d.briefs).toEqual([{ title: "Compact CNNs", insights: ["batchnorm helps"], suggestions: [{ name: "se_block", description: "squeeze excitation", adopted_by: [t(2)] }], request_id: "rq-1" }]);
    expect(d.interventions).toEqual([
      { intervention_id: "iv-p", kind: "propose", who: "ui:ann", reason: "", trial_id: "", at: last + 1, hypothesis: "mine", taken_by: t(12) },
      { intervention_id: "iv-c", kind: "cancel_trial", who: "cli:bob", reason: "slow", trial_id: t(12), at: last + 3, hypothesis: "", taken_by: null },
    ]);
    expect(d.settings).toMatchObject({ max_trials: 12, seeds: 3, planner: "builtin" });
    expect(d.reason).toBe("");
    expect(d.report_path).toBeNull();
  });

  it("shows live progress of a trial still training (its lowest seed) and drops it once the trial is evaluated", () => {
    const events = unfinished();
    const last = Number(events.at(-1)!.emittedAtMs);
    const id = `${RUN}-t012`;
    const v = viewOf([...events, ev(id, { case: "trialProposed", value: { hypothesis: "h", modelConfigJson: "{}", trainConfigJson: "{}" } }, last + 1)], true);
    const p = (seed: number, epoch: number) => create(EpochProgressSchema, { seed, epoch, epochs: 5, valAccuracy: 0.5 + epoch / 100, seconds: epoch * 2 });
    v.progress.set(id, new Map([[1, p(1, 3)], [0, p(0, 2)]]));
    expect(runDetail(v).trials_table[12]!.progress).toEqual({ epoch: 2, epochs: 5, val_accuracy: 0.52, seconds: 4 });
    applyToView(v, ev(id, { case: "trialEvaluated", value: { evalSeconds: 3 } }, last + 2));
    expect(v.progress.has(id)).toBe(false);
    expect(runDetail(v).trials_table[12]!.progress).toBeNull();
  });

  it("names a regression's numbers by its metric: live progress, curves and the test confirmation in RMSE", () => {
    const id = `${RUN}-t000`;
    const rmse = (mean: number) => ({ mean, std: 1, ci95: [mean - 2, mean + 2], n: 2 });
    const v = viewOf([
      ev("", { case: "runStarted", value: { goal: { rawText: "diabetes: rmse below 50", dataset: "diabetes", target: 50, objective: Metric.RMSE } } }, T0),
      ev(id, { case: "trialProposed", value: { hypothesis: "mlp", modelConfigJson: "{}", trainConfigJson: "{}" } }, T0 + 1),
    ], true);
    v.progress.set(id, new Map([[0, create(EpochProgressSchema, { seed: 0, epoch: 2, epochs: 5, valMetric: 61.5, seconds: 3 })]]));
    expect(runDetail(v).trials_table[0]!.progress).toEqual({ epoch: 2, epochs: 5, val_rmse: 61.5, seconds: 3 });
    applyToView(v, ev(id, { case: "trialEvaluated", value: { result: { aggregated: { val_rmse: rmse(55) }, numSeeds: 2, seedResults: [0, 1].map((seed) => ({ seed, metrics: { val_rmse: 55 }, learningCurve: { valLoss: [0.9, 0.7], valMetric: [60, 55] } })) } } }, T0 + 2));
    applyToView(v, ev("", { case: "runFinished", value: { bestTrialId: id, testResult: { aggregated: { test_rmse: rmse(56) }, seedResults: [0, 1].map((seed) => ({ seed, metrics: { test_rmse: 56 + seed } })) } } }, T0 + 3));
    const s = runSummary(v);
    expect(s.objective).toEqual({ metric: "rmse", label: "RMSE", higher_is_better: false, proportion: false });
    expect(s.best).toMatchObject({ trial_id: id, test_rmse: 56 });
    expect(s.best).not.toHaveProperty("test_accuracy");
    const d = trialDetail(v, id)!;
    expect(d.seeds.map((c) => [c.val_metric, c.train_metric])).toEqual([[[60, 55], []], [[60, 55], []]]);
    expect(d.test?.seeds).toEqual([{ seed: 0, rmse: 56 }, { seed: 1, rmse: 57 }]);
  });

  it("details a trial: config diff against its first parent, code diff, confusion summed over seeds, per-class means, children", () => {
    const events = unfinished();
    const last = Number(events.at(-1)!.emittedAtMs);
    const parent = `${RUN}-t001`;
    const id = `${RUN}-t012`;
    const seed = (s: number, counts: number[][]) => ({
      seed: s,
      metrics: { val_accuracy: 0.9 },
      perClass: [{ classIndex: 0, precision: 0.8 + s / 10, recall: 0.9, f1: 0.85, support: 10 }],
      confusionMatrix: counts.map((c) => ({ counts: c })),
      learningCurve: { trainLoss: [1, 0.5], valAccuracy: [0.8, 0.9] },
      seconds: 10 + s,
    });
    const more = [
      ev(id, { case: "trialProposed", value: { hypothesis: "wider", rationale: "why not", parentIds: [parent], adoptedConcepts: ["se_block"], model: modelSpec(cnn([64, 128, 128], { batchnorm: true })), train: trainSpec({ optimizer: "adam", lr: 0.001 }) } }, last + 1),
      ev(id, { case: "trialAssembled", value: { code: "class M: ...\n", diff: "--- a\n+++ b\n", summary: { totalParams: 1234n, flops: 99n, sizeMb: 0.5, layers: [{ name: "fc", type: "Linear", outputShape: [10n], params: 1234n }] }, summaryNarrative: "a small net" } }, last + 2),
      ev(id, {
        case: "trialEvaluated",
        value: {
          result: { aggregated: { val_accuracy: { mean: 0.9, ci95: [0.89, 0.91], n: 2 } }, seedResults: [seed(0, [[5, 1], [2, 7]]), seed(1, [[6, 0], [1, 8]])], classNames: ["a", "b"], numSeeds: 2 },
          analysis: { overfitting: "none", convergence: "converged", weakClasses: [1], notes: ["fine"], narrative: "it learned" },
        },
      }, last + 3),
    ];
    const v = viewOf([...events, ...more], true);
    const d = trialDetail(v, id)!;
    expect(d.row).toMatchObject({ trial_id: id, index: 13, status: "evaluated" });
    expect(d.config_diff).toContain(`--- ${parent}/config.json`);
    expect(d.config_diff).toMatch(/^- +"out_channels": 32,$/m);
    expect(d.config_diff).toMatch(/^\+ +"out_channels": 128,$/m);
    expect(d.code_diff).toBe("--- a\n+++ b\n");
    expect(d.summary).toEqual({ total_params: 1234, flops: 99, size_mb: 0.5, layers: [{ name: "fc", type: "Linear", output_shape: [10], params: 1234 }] });
    expect(d.narrative).toBe("it learned");
    expect(d.confusion_matrix).toEqual([[11, 1], [3, 15]]);
    expect(d.per_class).toHaveLength(1);
    expect(d.per_class[0]!.precision).toBeCloseTo(0.85);
    expect(d.seeds.map((s) => [s.seed, s.seconds, s.val_accuracy])).toEqual([[0, 10, [0.8, 0.9]], [1, 11, [0.8, 0.9]]]);
    expect(d.class_names).toEqual(["a", "b"]);
    expect(d.analysis).toEqual({ overfitting: "none", convergence: "converged", weak_classes: [1], notes: ["fine"] });
    expect(d.adopted_concepts).toEqual(["se_block"]);
    expect(d.failure).toBeNull();
    expect(trialDetail(v, parent)!.children).toContain(id);
    expect(trialDetail(v, `${RUN}-t000`)!.config_diff).toBe("");
    expect(trialDetail(v, `${RUN}-t008`)!.failure).toMatchObject({ label: "shape_error" });
    expect(trialDetail(v, "nope")).toBeUndefined();
  });
});

describe("a Pareto goal with a latency limit in the dashboard's views (issue 39)", () => {
  // As the report's test: a (small, fast), b (accurate, large), c (dominated by a), d (over the limit, rejected).
  const judged = (id: string, verdict: Verdict): EventInit => ({
    runId: "r1",
    trialId: id,
    body: { case: "trialJudged", value: { verdict, decision: Decision.ITERATE, failure: verdict === Verdict.ACCEPT ? undefined : failure("over_limit", "2.50 ms per example, over the goal's limit of 2 ms") } },
  });
  const probe = (id: string, mean: number, params: number, ms: number, verdict = Verdict.ACCEPT): EventInit[] => [proposed(id), evaluated(id, mean, 0.01, { n: 1, params: BigInt(params), latencyMs: [ms] }), judged(id, verdict)];
  const events = (goal: Record<string, unknown>) =>
    [started({}, { dataset: "fashion-mnist", openEnded: true, target: 0, ...goal }), ...probe("a", 0.85, 20_000, 0.5), ...probe("b", 0.9, 400_000, 1.8), ...probe("c", 0.8, 60_000, 0.9), ...probe("d", 0.93, 900_000, 2.5, Verdict.REJECT)].map(
      (e, k) => create(EventSchema, { ...e, eventId: `e${k}`, emittedAtMs: BigInt(T0 + k) }) as Event,
    );
  const view = (goal: Record<string, unknown>) => {
    const v = emptyView(emptyRunState("r1"));
    for (const e of events(goal)) applyToView(v, e);
    return v;
  };

  it("sends the front with each objective's interval and the knee, the limit's outcome, the goal's trade-offs and each trial's latency", () => {
    const d = runDetail(view({ tradeOffs: [Cost.PARAMS, Cost.LATENCY], maxLatencyMs: 2 }));
    expect(d).toMatchObject({ trade_offs: ["params", "latency"], max_latency_ms: 2 });
    expect(d.trials_table.map((r) => [r.trial_id, r.latency_ms, r.failure_label])).toEqual([["a", 0.5, null], ["b", 1.8, null], ["c", 0.9, null], ["d", 2.5, "over_limit"]]);
    expect(d.front).toMatchObject({ axes: [{ name: "accuracy", higher_is_better: true }, { name: "parameters", higher_is_better: false }, { name: "latency per example", higher_is_better: false }], knee: "a", trained_long: [] });
    expect(d.front!.trials.map((t) => t.trial_id)).toEqual(["b", "a"]);
    expect(d.front!.trials[1]!.values).toEqual([{ mean: 0.85, low: 0.84, high: 0.86 }, { mean: 20_000, low: 20_000, high: 20_000 }, { mean: 0.5, low: 0.5, high: 0.55 }]);
    expect(d.front!.rule).toMatch(/rung-0 probes/);
    // The best by the run's rule among the accepted: d, over the limit, was not accepted.
    expect(d.limits).toEqual({ max_latency_ms: 2, max_params: null, within: ["a", "b", "c"], over: ["d"], best_within: "b", best_latency_ms: 1.8 });
    expect(runSummary(view({ tradeOffs: [Cost.PARAMS, Cost.LATENCY], maxLatencyMs: 2 }))).toMatchObject({ trade_offs: ["params", "latency"], max_latency_ms: 2 });
  });

  it("sends neither for a goal of one metric, and a latency limit alone without a front", () => {
    const plain = runDetail(view({}));
    expect([plain.front, plain.limits, plain.trade_offs, plain.max_latency_ms]).toEqual([null, null, [], null]);
    // Still timed: each trial's latency comes through whatever the goal.
    expect(plain.trials_table.map((r) => r.latency_ms)).toEqual([0.5, 1.8, 0.9, 2.5]);
    const limited = runDetail(view({ maxLatencyMs: 2 }));
    expect(limited.front).toBeNull();
    expect(limited.limits).toMatchObject({ within: ["a", "b", "c"], over: ["d"] });
  });

  it("has no latency for a trial the runner did not time", () => {
    const d = runDetail(viewOf(runEvents(RUN, undefined, T0)));
    expect(d.trials_table.every((r) => r.latency_ms === null)).toBe(true);
    expect([d.front, d.limits]).toEqual([null, null]);
  });
});

describe("a run's findings", () => {
  it("are the report's, from the same events: what the run found and the experiment each suggests", () => {
    const events = readFileSync(join(import.meta.dirname, "..", "fixtures", "runs", "fmnist-reach90-4f3f5b9-seed1.jsonl"), "utf8").split("\n").filter(Boolean).map((l) => fromJsonString(EventSchema, l));
    const v = emptyView(emptyRunState(events[0]!.runId));
    for (const e of events) applyToView(v, e);
    const finished = events.find((e) => e.body.case === "runFinished")!.body.value as Parameters<typeof buildReport>[1];
    const report = buildReport(v.state, finished).json.next_steps.findings;
    expect(report.map((f) => f.kind)).toEqual(["still_improving", "weak_class", "hurt", "unresolved"]);
    expect(runDetail(v).findings).toEqual(report);
  });
});
