/**
 * What a run decides on: one validation metric and which way is better. The parts that rank,
 * compare or test a goal read their numbers through an Objective, so "better" has one
 * definition per metric: higher accuracy and R^2, lower RMSE, MAE and bits per byte. Decisions take the
 * pessimistic end of a 95% interval: the lower bound of a metric to maximise, the upper bound
 * of one to minimise; `utility` turns either into a number where higher is better, so a
 * ranking written once serves both directions.
 */
import { Metric, type MetricStats } from "../proto/gen/research/v1/runner_pb.js";
import { CostSchema, type Cost } from "../proto/gen/research/v1/common_pb.js";
import { closedSet, METRIC, type MetricName, type TaskName } from "./enums.js";
import { gainPp, pct } from "./format.js";
import { LEARNINGS } from "./learning/index.js";
import type { MetricFacts, MetricRange } from "./learning/learning.js";


/** A metric's facts (core/learning/: each task's module declares the metrics its goals decide on), and the task it scores. */
const FACTS = Object.fromEntries(
  Object.values(LEARNINGS).flatMap((l) => Object.entries(l.metrics).map(([metric, facts]) => [metric, { ...facts, task: l.name }])),
) as Record<MetricName, MetricFacts & { task: TaskName }>;

export interface Objective extends MetricFacts {
  /** The datasets it scores. */
  task: TaskName;
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

export const COST = closedSet<typeof Cost>(CostSchema);
export type CostName = (typeof COST.names)[number];

/**
 * What a goal may trade off against its metric or limit (Goal.trade_offs, Goal.max_latency_ms),
 * each minimised: how people name it in a goal, and how it reads. Parameters are counted;
 * latency is measured by the runner for every trial (milliseconds per example at batch 1).
 */
export const COSTS: Record<CostName, { label: string; unit: string; words: RegExp }> = {
  params: { label: "parameters", unit: "", words: /^(?:params?|parameters?|param(?:eter)?[-_ ]count|(?:model[-_ ])?size|weights)$/i },
  latency: { label: "latency per example", unit: "ms", words: /^(?:latency|inference[-_ ](?:time|latency)|speed|ms)$/i },
};

/**
 * Every number a trial's results report (the referee's scores and the trainer's running ones),
 * by its name without the split, from each task's table (core/learning/): an interval past the
 * range says nothing more, and gpu-runner/stats.ts clips it there. A metric missing there is not
 * clipped; the test beside stats.ts scores with the worker's own code and fails on any name the
 * tables lack.
 */
const RANGES: Readonly<Record<string, MetricRange>> = Object.assign({}, ...Object.values(LEARNINGS).map((l) => l.ranges));

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

/** An interval's half-width in the same units, after a "±": "1.41 pp", "0.031". */
export function formatHalfWidth(o: Objective, half: number): string {
  return formatChange(o, Math.abs(half)).slice(1);
}
