/**
 * Statistics across seeds: mean, sample std and a 95% interval of the mean,
 * plus the goal, overfitting and convergence verdicts derived from them.
 *
 * Accuracy is a proportion of N examples, and every seed scores the same N
 * validation examples, so the spread between seeds holds none of the error of
 * having drawn those N: an interval from seed spread alone is zero-width when
 * two seeds agree (two digits seeds at 133/144 once met a goal that way). Its
 * interval therefore adds two variance components, each with its own
 * quantile, in quadrature:
 *   half^2 = (t(0.975, n-1) * s / sqrt(n))^2 + z(0.975)^2 * pa (1 - pa) / (N + z^2)
 * the seed part as Student's t (absent with one seed) and the binomial part as
 * Agresti-Coull (pa = (N p + z^2/2) / (N + z^2), which is also the centre), so
 * that 144/144 still gets a lower bound below 1. p(1-p)/N is the binomial
 * variance when a model's right and wrong examples are the same across seeds,
 * as they mostly are; where seeds err on different examples, that part is
 * already in s and the interval is conservative. Quadrature rather than one
 * Welch-Satterthwaite t: with two or three seeds the estimated degrees of
 * freedom are too optimistic and coverage fell to 89% in simulation.
 * test/runner/stats.test.ts checks coverage on simulated trials.
 *
 * A regression's RMSE and MAE carry the same second component: the referee
 * reports each seed's standard error over the evaluation set (`<metric>_se`),
 * added in quadrature with its own z quantile (describeWithSampling).
 */
import { create } from "@bufbuild/protobuf";
import { ACCURACY, metricRange, pessimisticBound, reaches, tolerance, utility, type Objective } from "../core/objective.js";
import { tInterval, Z975 } from "../core/stats.js";
import {
  ConvergenceSchema,
  GoalStatus,
  MetricStatsSchema,
  OverfittingSchema,
  type Convergence,
  type MetricStats,
  type Overfitting,
  type SeedResult,
} from "../proto/gen/research/v1/runner_pb.js";


/** Mean, sample std and the Student's t interval of the mean over seeds. */
export function describe(values: number[]): MetricStats {
  const n = values.length;
  if (n === 0) return create(MetricStatsSchema, { n: 0, ci95: [0, 0] });
  // One seed says nothing about spread: the interval collapses to the point and
  // goalStatus() refuses to call that "achieved".
  const { mean, sd: std, half } = tInterval(values);
  return create(MetricStatsSchema, {
    mean,
    std,
    ci95: [mean - half, mean + half],
    min: Math.min(...values),
    max: Math.max(...values),
    n,
  });
}

/**
 * describe() for a proportion of `examples` examples that every seed shares
 * (see the file comment); the interval may pass 0 or 1, aggregate() clips it.
 */
export function describeProportion(values: number[], examples: number): MetricStats {
  const stats = describe(values);
  if (stats.n === 0 || !(examples > 0)) return stats;
  const seedHalf = (stats.ci95[1]! - stats.ci95[0]!) / 2;
  const adjusted = examples + Z975 ** 2;
  const centre = (examples * stats.mean + Z975 ** 2 / 2) / adjusted;
  const half = Math.sqrt(seedHalf ** 2 + (Z975 ** 2 * centre * (1 - centre)) / adjusted);
  stats.ci95 = [centre - half, centre + half];
  return stats;
}

/**
 * describe() for a metric every seed measures on the same examples, given each seed's standard
 * error over those examples (the mean of them is that component's size).
 */
export function describeWithSampling(values: number[], standardErrors: number[]): MetricStats {
  const stats = describe(values);
  if (stats.n === 0 || standardErrors.length === 0) return stats;
  const seedHalf = (stats.ci95[1]! - stats.ci95[0]!) / 2;
  const se = standardErrors.reduce((a, b) => a + b, 0) / standardErrors.length;
  const half = Math.sqrt(seedHalf ** 2 + (Z975 * se) ** 2);
  stats.ci95 = [stats.mean - half, stats.mean + half];
  return stats;
}

/** Suffix of a metric's standard error over the evaluation set, as the referee reports it. */
const SE = "_se";

/**
 * The proportions among the metrics, with the examples they were counted on.
 * F1, precision, recall and the AUCs are not a mean of N independent 0/1
 * outcomes, so p(1-p)/N is not their sampling variance (that needs per-example
 * outputs); they keep the seed-spread interval, and no decision reads them.
 * train_accuracy is a running mean over an epoch of changing weights.
 */
const PROPORTIONS: Record<string, (s: SeedResult) => number> = {
  val_accuracy: (s) => s.valExamples,
  test_accuracy: (s) => s.testExamples,
};

/** Accuracy, F1, AUC and the like live in [0, 1]; an interval past either end says nothing more. */
export function clipToUnit(stats: MetricStats): MetricStats {
  stats.ci95 = stats.ci95.map((v) => Math.min(1, Math.max(0, v)));
  return stats;
}

/** Aggregates every metric that all seeds report, plus wall-clock seconds. */
export function aggregate(seeds: SeedResult[]): Record<string, MetricStats> {
  const out: Record<string, MetricStats> = {};
  if (seeds.length === 0) return out;
  const reported = (k: string) => seeds.every((s) => Number.isFinite(s.metrics[k]));
  const keys = Object.keys(seeds[0]!.metrics).filter((k) => !k.endsWith(SE) && reported(k));
  for (const key of keys.sort()) {
    const values = seeds.map((s) => s.metrics[key]!);
    const examples = PROPORTIONS[key];
    const stats = examples
      ? describeProportion(values, examples(seeds[0]!))
      : reported(key + SE)
        ? describeWithSampling(values, seeds.map((s) => s.metrics[key + SE]!))
        : describe(values);
    // Two seeds' wide t interval can reach past a metric's range (below 0 for an error), which says nothing more.
    const range = metricRange(key);
    if (range === "unit") clipToUnit(stats);
    else if (range === "non_negative") stats.ci95 = stats.ci95.map((v) => Math.max(0, v));
    out[key] = stats;
  }
  out.seconds = describe(seeds.map((s) => s.seconds));
  return out;
}

/** Achieved: the pessimistic end of the interval (over 2 seeds or more) reaches the target; likely: the mean does. */
export function goalStatus(stats: MetricStats | undefined, target: number, o: Objective = ACCURACY): GoalStatus {
  if (!(target > 0)) return GoalStatus.NO_TARGET;
  if (!stats || stats.n === 0) return GoalStatus.NOT_ACHIEVED;
  if (stats.n >= 2 && reaches(o, pessimisticBound(o, stats), target)) return GoalStatus.ACHIEVED;
  return reaches(o, stats.mean, target) ? GoalStatus.LIKELY : GoalStatus.NOT_ACHIEVED;
}

export function overfitting(seeds: SeedResult[]): Overfitting {
  const gaps = seeds.map((s) => (s.metrics.train_accuracy ?? 0) - (s.metrics.val_accuracy ?? 0));
  const gap = gaps.length ? gaps.reduce((a, b) => a + b, 0) / gaps.length : 0;
  const severity = gap < 0.02 ? "none" : gap < 0.05 ? "mild" : gap < 0.1 ? "moderate" : "severe";
  return create(OverfittingSchema, { gap, severity });
}

/**
 * Reads the mean validation curve across seeds: accuracy's, or the request's metric as a utility
 * (higher is better), its thresholds in accuracy points or, for a metric in the target's units, as
 * shares of the curve's last value (a slope of -1% an epoch is diverging, as -1 point is for accuracy).
 */
export function convergence(seeds: SeedResult[], o: Objective = ACCURACY): Convergence {
  const curves = seeds
    .map((s) => (o.proportion ? s.learningCurve?.valAccuracy : s.learningCurve?.valMetric.map((v) => utility(o, v))) ?? [])
    .filter((c) => c.length > 0);
  const epochs = Math.min(...curves.map((c) => c.length));
  if (curves.length === 0 || !Number.isFinite(epochs)) return create(ConvergenceSchema, { state: "unknown" });
  const mean = Array.from({ length: epochs }, (_, e) => curves.reduce((a, c) => a + c[e]!, 0) / curves.length);
  const bestEpoch = mean.indexOf(Math.max(...mean)) + 1;
  const window = Math.min(3, epochs - 1);
  const recentSlope = window > 0 ? (mean[epochs - 1]! - mean[epochs - 1 - window]!) / window : 0;
  const finals = curves.map((c) => c[epochs - 1]!);
  const spread = Math.max(...finals) - Math.min(...finals);
  const unit = tolerance(o, 1, mean[epochs - 1]!) || 1;
  let state: string;
  if (epochs < 2) state = "undetermined";
  else if (spread > 0.15 * unit) state = "unstable";
  else if (recentSlope < -0.01 * unit) state = "diverging";
  else if (recentSlope > 0.005 * unit) state = "improving";
  else state = bestEpoch === epochs ? "converged" : "plateaued";
  return create(ConvergenceSchema, { state, recentSlope, bestEpoch });
}

/** Classes whose mean recall trails the mean accuracy by more than 10 points. */
export function weakClasses(seeds: SeedResult[]): number[] {
  if (seeds.length === 0) return [];
  const accuracy = seeds.reduce((a, s) => a + (s.metrics.val_accuracy ?? 0), 0) / seeds.length;
  const recall = new Map<number, number[]>();
  for (const s of seeds) for (const c of s.perClass) recall.set(c.classIndex, [...(recall.get(c.classIndex) ?? []), c.recall]);
  return [...recall.entries()]
    .filter(([, r]) => r.reduce((a, b) => a + b, 0) / r.length < accuracy - 0.1)
    .map(([c]) => c)
    .sort((a, b) => a - b);
}

