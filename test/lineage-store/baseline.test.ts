/** The report's comparison of the best model with the run's starting point, from stored events by BASELINE_RULE. */
import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { baselineComparison } from "../../lineage-store/baseline.js";
import { bestTrial } from "../../swarm/run-state.js";
import { pairedTTest } from "../../core/stats.js";
import { Mutation, Surface } from "../../proto/gen/research/v1/common_pb.js";
import { Metric } from "../../proto/gen/research/v1/runner_pb.js";
import { Decision, Verdict } from "../../proto/gen/research/v1/events_pb.js";
import { EvalResultSchema, SeedResultSchema } from "../../proto/gen/research/v1/runner_pb.js";
import type { EventInit } from "../../bus/index.js";
import { RUN, started, state } from "../agents/helpers.js";
import { modelSpec, trainSpec } from "../../core/config-wire.js";
import type { ModelConfigInput, TrainConfigInput } from "../../core/model-config.js";

const model: ModelConfigInput = { name: "mine", layers: [{ type: "flatten" }] };
const id = (k: number) => `${RUN}-t00${k}`;

/** A trial through to its judgement, with per-seed validation (and test) accuracies. */
function trial(k: number, p: { rung: number; parent?: number; mutation: Mutation; train: TrainConfigInput; val: number[]; test?: number[]; metric?: string }): EventInit[] {
  const m = p.metric ?? "accuracy";
  const seeds = p.val.map((v, seed) => create(SeedResultSchema, { seed, metrics: { [`val_${m}`]: v, ...(p.test && { [`test_${m}`]: p.test[seed]! }) }, valExamples: 300 }));
  const mean = p.val.reduce((a, b) => a + b) / p.val.length;
  const result = create(EvalResultSchema, { aggregated: { [`val_${m}`]: { mean, std: 0.01, ci95: [mean - 0.01, mean + 0.01], n: p.val.length, min: mean, max: mean } }, seedResults: seeds, seconds: 5, numClasses: 10 });
  return [
    { runId: RUN, trialId: id(k), body: { case: "trialProposed", value: { rung: p.rung, seeds: p.val.length === 1 ? 1 : 0, parentIds: p.parent === undefined ? [] : [id(p.parent)], mutation: p.mutation, surface: Surface.OPTIMISATION, hypothesis: `h${k}`, model: modelSpec(model), train: trainSpec(p.train) } } },
    { runId: RUN, trialId: id(k), body: { case: "trialAssembled", value: { code: `# trial ${k}\n`, className: "Net" } } },
    { runId: RUN, trialId: id(k), body: { case: "trialEvaluated", value: { result } } },
    { runId: RUN, trialId: id(k), body: { case: "trialJudged", value: { verdict: Verdict.ACCEPT, decision: Decision.ITERATE } } },
  ];
}

describe("the best model against the starting point", () => {
  const first = started({ parallel: 2 });
  (first.body!.value as { start?: unknown }).start = { origin: "mine.yaml", model: modelSpec(model), train: trainSpec({ lr: 0.01 }) };
  const events = [
    first,
    ...trial(0, { rung: 3, mutation: Mutation.BASELINE, train: { lr: 0.01, epochs: 3 }, val: [0.8, 0.82, 0.81], test: [0.79, 0.8, 0.8] }),
    ...trial(1, { rung: 0, parent: 0, mutation: Mutation.BASELINE, train: { lr: 0.01, epochs: 1, subset: 500 }, val: [0.7] }),
    ...trial(2, { rung: 0, parent: 1, mutation: Mutation.LR_UP, train: { lr: 0.02, epochs: 1, subset: 500 }, val: [0.74] }),
    ...trial(3, { rung: 3, parent: 2, mutation: Mutation.LAST_TRAINING, train: { lr: 0.02, epochs: 6, schedule: "cosine" }, val: [0.86, 0.85, 0.88] }),
  ];
  const s = state(events);
  const best = bestTrial(s)!;
  const test = create(EvalResultSchema, { seedResults: [0.84, 0.86, 0.85].map((v, seed) => create(SeedResultSchema, { seed, metrics: { test_accuracy: v } })) });
  const c = baselineComparison(s, best, test)!;

  it("pairs the best trial's seeds with trial 0's, on validation and on test", () => {
    expect(best.id).toBe(id(3));
    expect(c).toMatchObject({ origin: "mine.yaml", baseline_trial_id: id(0), best_trial_id: id(3) });
    const val = pairedTTest([0.8, 0.82, 0.81], [0.86, 0.85, 0.88]);
    expect(c.val).toMatchObject({ seeds: [0, 1, 2], gain: val.meanDiff, ci_95: val.ci95, p: val.p });
    expect(c.test!.gain).toBeCloseTo(pairedTTest([0.79, 0.8, 0.8], [0.84, 0.86, 0.85]).meanDiff, 12);
    expect(c.baseline_test_mean).toBeNull(); // the fixture's trial 0 has no aggregated test accuracy
  });

  it("lists the recipe fields that changed and the path from trial 0, each step's change with its fidelity", () => {
    expect(c.recipe_changes.map((r) => r.field)).toEqual(["epochs", "lr", "schedule"]);
    expect(c.recipe_changes.find((r) => r.field === "lr")).toEqual({ field: "lr", from: 0.01, to: 0.02 });
    expect(c.path!.map((p) => [p.trial_id, p.mutation, p.same_fidelity])).toEqual([
      [id(0), "baseline", false],
      [id(1), "baseline", false],
      [id(2), "lr_up", true],
      [id(3), "last_training", false],
    ]);
    expect(c.path![2]!.change).toBeCloseTo(0.04, 12);
    expect(c.model_diff).toContain("-# trial 0\n+# trial 3");
  });

  it("says where the best trial's line starts when it does not descend from trial 0", () => {
    const fromTemplate = state([...events, ...trial(4, { rung: 3, mutation: Mutation.TEMPLATE, train: {}, val: [0.95, 0.96, 0.97] })]);
    const other = baselineComparison(fromTemplate, bestTrial(fromTemplate), undefined)!;
    expect(other.best_trial_id).toBe(id(4));
    expect(other.path).toBeNull();
    expect(other.best_root).toEqual({ trial_id: id(4), mutation: "template" });
    expect(c.best_root).toBeNull();
  });

  it("compares in the run's metric: for a loss, a gain below zero is the better model", () => {
    const bpb = started({ parallel: 2 }, { dataset: "text", objective: Metric.BITS_PER_BYTE, target: 0, openEnded: true });
    (bpb.body!.value as { start?: unknown }).start = { origin: "mine.yaml", model: modelSpec(model), train: trainSpec({}) };
    const lm = state([
      bpb,
      ...trial(0, { rung: 3, mutation: Mutation.BASELINE, train: {}, val: [2.4, 2.5, 2.45], test: [2.5, 2.6, 2.55], metric: "bits_per_byte" }),
      ...trial(1, { rung: 3, parent: 0, mutation: Mutation.CONTEXT, train: { context: 64 }, val: [2.1, 2.2, 2.2], metric: "bits_per_byte" }),
    ]);
    const best = bestTrial(lm)!;
    expect(best.id).toBe(id(1));
    const cmp = baselineComparison(lm, best, create(EvalResultSchema, { seedResults: [2.2, 2.3, 2.25].map((v, seed) => create(SeedResultSchema, { seed, metrics: { test_bits_per_byte: v } })) }))!;
    expect(cmp.val).toMatchObject({ baseline_mean: 2.45, gain: pairedTTest([2.4, 2.5, 2.45], [2.1, 2.2, 2.2]).meanDiff });
    expect(cmp.val!.gain).toBeLessThan(0);
    expect(cmp.test!.gain).toBeCloseTo(-0.3, 12);
    expect(cmp.path!.map((p) => p.mutation)).toEqual(["baseline", "context"]);
  });

  it("says nothing of a run started from templates", () => {
    expect(baselineComparison(state([started(), ...trial(0, { rung: 0, mutation: Mutation.TEMPLATE, train: {}, val: [0.8] })]), undefined, undefined)).toBeNull();
  });
});
