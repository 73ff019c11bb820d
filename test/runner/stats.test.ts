import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { mulberry32 } from "../../agents/planner/proposals.js";
import { aggregate, convergence, describeProportion, goalStatus } from "../../gpu-runner/stats.js";
import { GoalStatus, Metric, SeedResultSchema } from "../../proto/gen/research/v1/runner_pb.js";
import { join } from "node:path";
import { DEFAULT_PYTHON } from "../../core/config.js";
import { metricRange, objective } from "../../core/objective.js";
import { run } from "../helpers/run.js";

const PYTHON = process.env.RUNNER_PYTHON ?? DEFAULT_PYTHON;

const seed = (correct: number, examples: number, f1 = correct / examples) =>
  create(SeedResultSchema, { metrics: { val_accuracy: correct / examples, val_f1_macro: f1, val_loss: 0.3 }, valExamples: examples });

describe("validation accuracy interval", () => {
  it("two seeds at 133/144 get a real interval, and no goal of 0.9 on it", () => {
    const acc = aggregate([seed(133, 144), seed(133, 144)]).val_accuracy!;
    expect(acc.mean).toBeCloseTo(133 / 144);
    expect(acc.std).toBe(0);
    // Agresti-Coull alone: 0.913 +- 0.045.
    expect(acc.ci95[0]).toBeCloseTo(0.867, 3);
    expect(acc.ci95[1]).toBeCloseTo(0.958, 3);
    expect(goalStatus(acc, 0.9)).toBe(GoalStatus.LIKELY);
  });

  it("one seed still gets the binomial interval, and 144/144 a lower bound below 1", () => {
    const one = aggregate([seed(133, 144)]).val_accuracy!;
    expect(one.ci95[1]! - one.ci95[0]!).toBeGreaterThan(0.05);
    const perfect = aggregate([seed(144, 144), seed(144, 144)]).val_accuracy!;
    expect(perfect.ci95[1]).toBe(1);
    expect(perfect.ci95[0]).toBeGreaterThan(0.96);
    expect(perfect.ci95[0]).toBeLessThan(0.98);
  });

  it("is at least as wide as either component alone", () => {
    const values = [0.9, 0.92, 0.95];
    const seedOnly = aggregate(values.map((v) => seed(v * 6000, 6000, v))).val_f1_macro!;
    const both = describeProportion(values, 6000);
    expect(both.ci95[0]).toBeLessThan(seedOnly.ci95[0]!);
    expect(both.ci95[1]).toBeGreaterThan(seedOnly.ci95[1]!);
    expect(both.ci95[1]! - both.ci95[0]!).toBeLessThan(1.05 * (seedOnly.ci95[1]! - seedOnly.ci95[0]!));
  });

  it("keeps the seed-spread interval where the examples are unknown", () => {
    const s = create(SeedResultSchema, { metrics: { val_accuracy: 0.9 } });
    expect(aggregate([s, s]).val_accuracy!.ci95).toEqual([0.9, 0.9]);
  });
});

/**
 * Simulated trials in the runner's situation: a validation set of N examples
 * (difficulty u ~ U(0,1), drawn once per trial and shared by the seeds), and
 * seeds whose true accuracy is p + N(0, 0.005); a seed gets an example right
 * when its difficulty is below the seed's accuracy. The estimand is p, the
 * accuracy expected over seeds and validation sets. Coverage over 2000 trials
 * (n = 2, 3, 5 seeds; the first n of five drawn per trial):
 *   p 0.92: N 144: 0.984 0.974 0.967 | N 1000: 0.982 0.976 0.963 | N 6000: 0.983 0.971 0.965
 *   p 0.98: N 144: 0.988 0.988 0.981 | N 1000: 0.982 0.978 0.977 | N 6000: 0.968 0.975 0.961
 * Where seeds err on independent examples (trained nets mostly agree on
 * which examples they get wrong) the seed spread already holds the binomial
 * error, and coverage rises towards 1.
 */
describe("coverage on simulated trials", () => {
  const TRIALS = 2000;
  const SEEDS = [2, 3, 5];

  function coverage(p: number, examples: number): number[] {
    const rng = mulberry32(examples * 100 + Math.round(p * 100));
    const gauss = () => Math.sqrt(-2 * Math.log(1 - rng())) * Math.cos(2 * Math.PI * rng());
    const covered = SEEDS.map(() => 0);
    const difficulty = new Float64Array(examples);
    for (let trial = 0; trial < TRIALS; trial++) {
      for (let j = 0; j < examples; j++) difficulty[j] = rng();
      const accuracies = Array.from({ length: Math.max(...SEEDS) }, () => {
        const accuracy = p + 0.005 * gauss();
        let correct = 0;
        for (let j = 0; j < examples; j++) if (difficulty[j]! < accuracy) correct++;
        return correct / examples;
      });
      SEEDS.forEach((n, k) => {
        const [lo, hi] = describeProportion(accuracies.slice(0, n), examples).ci95;
        if (lo! <= p && p <= hi!) covered[k]!++;
      });
    }
    return covered.map((c) => c / TRIALS);
  }

  for (const p of [0.92, 0.98]) {
    it(`stays within [0.93, 0.995] for the nominal 95% at p ${p}`, () => {
      for (const examples of [144, 1000, 6000]) {
        const c = coverage(p, examples);
        const where = `N ${examples}, seeds ${SEEDS.join("/")}: ${c.map((x) => x.toFixed(3)).join(" ")}`;
        for (const x of c) {
          expect(x, where).toBeGreaterThanOrEqual(0.93);
          expect(x, where).toBeLessThanOrEqual(0.995);
        }
      }
    });
  }
});

describe("a regression's interval and goal", () => {
  const regression = (rmse: number, se: number) => create(SeedResultSchema, { metrics: { val_rmse: rmse, val_rmse_se: se, val_r2: 0.5 }, valExamples: 90 });

  it("adds the validation set's sampling error to the seeds' spread, unclipped, and keeps the errors out of the result", () => {
    const agg = aggregate([regression(52, 3), regression(54, 3), regression(56, 3)]);
    const rmse = agg.val_rmse!;
    const seedHalf = (4.303 * 2) / Math.sqrt(3);
    expect(rmse.mean).toBe(54);
    expect(rmse.ci95[1]! - 54).toBeCloseTo(Math.sqrt(seedHalf ** 2 + (1.96 * 3) ** 2), 2);
    expect(agg.val_rmse_se).toBeUndefined();
    // One seed: the sampling error alone, not a point.
    const one = aggregate([regression(52, 3)]).val_rmse!;
    expect(one.ci95).toEqual([52 - 1.959964 * 3, 52 + 1.959964 * 3]);
  });

  it("keeps a never-negative metric's interval at or above 0, its upper end untouched", () => {
    const bits = (v: number) => create(SeedResultSchema, { metrics: { val_bits_per_byte: v, val_bits_per_byte_se: 0.01 } });
    // Two seeds far apart: t with one degree of freedom reaches below 0 bits.
    const agg = aggregate([bits(0.8), bits(1.1)]).val_bits_per_byte!;
    expect(agg.ci95[0]).toBe(0);
    expect(agg.ci95[1]).toBeGreaterThan(2);
  });

  it("reads an RMSE curve in its direction: falling is improving, rising is diverging", () => {
    const curve = (valMetric: number[]) => create(SeedResultSchema, { learningCurve: { valMetric } });
    const o = objective(Metric.RMSE);
    expect(convergence([curve([70, 62, 56, 52]), curve([71, 63, 57, 53])], o).state).toBe("improving");
    expect(convergence([curve([52, 53, 56, 60]), curve([52, 54, 57, 61])], o).state).toBe("diverging");
    expect(convergence([curve([55, 54.95, 54.92, 54.9])], o)).toMatchObject({ state: "converged", bestEpoch: 4 });
  });

  it("is met when the interval's upper end is at or below a target to minimise", () => {
    const rmse = aggregate([regression(50, 1), regression(51, 1)]).val_rmse!;
    const o = objective(Metric.RMSE);
    expect(goalStatus(rmse, 60, o)).toBe(GoalStatus.ACHIEVED);
    expect(goalStatus(rmse, 51, o)).toBe(GoalStatus.LIKELY);
    expect(goalStatus(rmse, 49, o)).toBe(GoalStatus.NOT_ACHIEVED);
    expect(goalStatus(rmse, 0, o)).toBe(GoalStatus.NO_TARGET);
  });
});

describe("metric ranges", () => {
  it("cover every metric the worker's own scorers report, for every task", async () => {
    // The referee's code scores small made-up predictions; a metric added there without a range in core/objective.ts fails here.
    const script = [
      "import json, sys",
      "import numpy as np",
      "sys.path.insert(0, 'gpu-runner/python')",
      "import metrics",
      "rng = np.random.default_rng(0)",
      "y = np.array([0, 1, 2, 0, 1, 2, 0, 1])",
      "lp = np.log(rng.dirichlet(np.ones(3), size=len(y)))",
      "keys = set(metrics.score(y, [lp, lp], 3, 'val', True)['metrics'])",
      "keys |= set(metrics.score(y, [lp], 3, 'test', False))",
      "t = rng.normal(size=8)",
      "keys |= set(metrics.score_regression(t, [t[:, None] + 0.1, t[:, None] - 0.2], 'val', True)['metrics'])",
      "keys |= set(metrics.score_text([np.log(np.full((4, 5), 0.3))], 'val', True)['metrics'])",
      "print(json.dumps(sorted(keys)))",
    ].join("\n");
    const r = await run(PYTHON, ["-c", script], { cwd: join(import.meta.dirname, "..", ".."), timeout: 60_000 });
    const keys = (JSON.parse(r.stdout || "[]") as string[]).filter((k) => !k.endsWith("_se"));
    expect(keys.length, r.stderr).toBeGreaterThan(10);
    expect(keys.filter((k) => metricRange(k) === undefined)).toEqual([]);
    expect(["val_accuracy", "test_roc_auc", "train_accuracy"].map(metricRange)).toEqual(["unit", "unit", "unit"]);
    expect(["val_rmse", "train_loss", "val_perplexity", "val_r2"].map(metricRange)).toEqual(["non_negative", "non_negative", "non_negative", "real"]);
  });
});
