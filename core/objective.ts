/**
 * What a run decides on: one validation metric and which way is better. The parts that rank,
 * compare or test a goal read their numbers through an Objective, so "better" has one
 * definition per metric: higher accuracy and R^2, lower RMSE, MAE and bits per byte. Decisions take the
 * pessimistic end of a 95% interval: the lower bound of a metric to maximise, the upper bound
 * of one to minimise; `utility` turns either into a number where higher is better, so a
 * ranking written once serves both directions.
 */
import { Metric, MetricSchema, type MetricStats } from "../proto/gen/research/v1/runner_pb.js";
import { closedSet, type TaskName } from "./enums.js";
import { gainPp, pct } from "./format.js";

export const METRIC = closedSet<typeof Metric>(MetricSchema);
export type MetricName = (typeof METRIC.names)[number];

interface MetricFacts {
  /** The datasets it scores. */
  task: TaskName;
  higherIsBetter: boolean;
  /** A share of examples, shown as a percentage (its interval counts the finite validation set). */
  proportion: boolean;
  /** For people: "RMSE", "accuracy". */
  label: string;
}

const FACTS: Record<MetricName, MetricFacts> = {
  accuracy: { task: "classification", higherIsBetter: true, proportion: true, label: "accuracy" },
  rmse: { task: "regression", higherIsBetter: false, proportion: false, label: "RMSE" },
  mae: { task: "regression", higherIsBetter: false, proportion: false, label: "MAE" },
  r2: { task: "regression", higherIsBetter: true, proportion: false, label: "R²" },
  bits_per_byte: { task: "language_modelling", higherIsBetter: false, proportion: false, label: "bits per byte" },
};

export interface Objective extends MetricFacts {
  metric: MetricName;
  /** The validation metric's key among a result's metrics: val_accuracy, val_rmse, ... */
  key: `val_${MetricName}`;
}

/** The objective of a metric; unspecified (every run before regression): accuracy. */
export function objective(metric: Metric = Metric.UNSPECIFIED): Objective {
  return objectiveNamed(METRIC.name(metric) ?? "accuracy");
}

export function objectiveNamed(name: MetricName): Objective {
  return { metric: name, key: `val_${name}`, ...FACTS[name] };
}

export const ACCURACY = objective(Metric.ACCURACY);

/** Where a reported number can lie: a share in [0, 1], an error or loss that is never negative, or any real (R² of a bad model is below 0). */
export type MetricRange = "unit" | "non_negative" | "real";

/**
 * Every number a trial's results report (the referee's scores and the trainer's running ones),
 * by its name without the split: an interval past the range says nothing more, and
 * gpu-runner/stats.ts clips it there. A metric missing here is not clipped; the test beside
 * stats.ts scores with the worker's own code and fails on any name this table lacks.
 */
const RANGES = {
  accuracy: "unit",
  f1_macro: "unit",
  f1_weighted: "unit",
  precision_macro: "unit",
  recall_macro: "unit",
  roc_auc: "unit",
  pr_auc: "unit",
  loss: "non_negative",
  rmse: "non_negative",
  mae: "non_negative",
  r2: "real",
  bits_per_byte: "non_negative",
  perplexity: "non_negative",
} as const satisfies Record<string, MetricRange> & Record<MetricName, MetricRange>;

/** The range of a reported metric by its key (`val_accuracy`, `test_rmse`, `train_loss`); undefined for a name the table lacks. */
export function metricRange(key: string): MetricRange | undefined {
  const name = key.replace(/^(?:val|test|train)_/, "");
  return Object.hasOwn(RANGES, name) ? RANGES[name as keyof typeof RANGES] : undefined;
}

/** A value of the metric as a number where higher is better. */
export function utility(o: Objective, value: number): number {
  return o.higherIsBetter ? value : -value;
}

/** The pessimistic end of a 95% interval: the lower bound to maximise, the upper bound to minimise. */
export function pessimisticBound(o: Objective, stats: MetricStats): number {
  return (o.higherIsBetter ? stats.ci95[0] : stats.ci95[1]) ?? stats.mean;
}

/**
 * A tolerance in the metric's units: `size` itself for a proportion (accuracy points), that
 * share of `around` for a metric in the target's units, whose scale is the data's.
 */
export function tolerance(o: Objective, size: number, around: number): number {
  return o.proportion || !Number.isFinite(around) ? size : size * Math.abs(around);
}

/** Whether a value of the metric reaches a target, in the metric's direction. */
export function reaches(o: Objective, value: number, target: number): boolean {
  return o.higherIsBetter ? value >= target : value <= target;
}

/** A value for people: a percentage for a proportion, four significant digits otherwise. */
export function formatMetric(o: Objective, value: number): string {
  return o.proportion ? pct(value) : Number(value.toPrecision(4)).toString();
}

/** A signed change of the metric: percentage points for a proportion, else in its units: "+1.17 pp", "-2.31". */
export function formatChange(o: Objective, delta: number): string {
  return o.proportion ? gainPp(delta) : `${delta >= 0 ? "+" : "-"}${formatMetric(o, Math.abs(delta))}`;
}
