/**
 * The costs a goal limits or trades off (core/objective.ts COSTS), read from a trial one way,
 * and a Pareto goal's front by one rule: the judge holds a trial to the latency limit here, the
 * planner promotes by the front's rank, and the report and `launch --json` state the front from
 * the same functions, so what is said and what was decided cannot drift apart.
 */
import { Verdict } from "../proto/gen/research/v1/events_pb.js";
import type { EvalResult } from "../proto/gen/research/v1/runner_pb.js";
import { COST, COSTS, type CostName } from "../core/objective.js";
import { crowding, greedyHypervolume, knee, nondominatedFronts, type Axis, type Estimate, type Point } from "../core/pareto.js";
import type { RunState } from "./run-state.js";
import { paramsOf, rungOf, valMetricOf, type TrialState } from "./trial-state.js";

/**
 * A trial's latency per example (ms, batch 1, warm, on the device it ran on) over its seeds:
 * the median of the seeds' medians, from the lowest median to the highest 90th percentile (the
 * spread of repeats and seeds: the timings are of one device, not samples of a population).
 * Undefined when the runner did not time it.
 */
export function latencyOf(t: TrialState): Estimate | undefined {
  return latencyOfResult(t.evaluated?.result);
}

/** latencyOf a stored result: what the lineage's query answers carry. */
export function latencyOfResult(result: EvalResult | undefined): Estimate | undefined {
  const timings = (result?.seedResults ?? []).flatMap((s) => (s.inference?.batch1 ? [s.inference.batch1] : []));
  if (!timings.length) return undefined;
  const medians = timings.map((x) => x.medianMs).sort((a, b) => a - b);
  const mid = medians.length / 2;
  const mean = medians.length % 2 ? medians[Math.floor(mid)]! : (medians[mid - 1]! + medians[mid]!) / 2;
  return { mean, low: medians[0]!, high: Math.max(mean, ...timings.map((x) => x.p90Ms)) };
}

/** A cost of a trial as an estimate: parameters are counted (no interval), latency measured. */
export function costOf(t: TrialState, cost: CostName): Estimate | undefined {
  if (cost === "latency") return latencyOf(t);
  const p = paramsOf(t);
  return p === undefined ? undefined : { mean: p, low: p, high: p };
}

/**
 * The latency a goal's limit holds a trial to: the fastest seed median of any trial of the run
 * with its model, in its memory format and precision (the recipe changes what the weights are,
 * not what a pass costs). A slot training beside a timing only slows it: cb45d34's run "under 1
 * ms" timed one 77.8k-parameter ResNet at 0.89, 1.30, 1.56 and 1.65 ms in four trials, and
 * rejected the last long training of the run's best config at 1.65. Undefined when no trial of
 * the model was timed.
 */
export function limitLatencyMs(state: RunState, t: TrialState): number | undefined {
  const key = (u: TrialState) => JSON.stringify([u.model, u.train?.channels_last ?? false, u.train?.amp ?? false]);
  const mine = key(t);
  const lows = [t, ...state.trials.values()].flatMap((u) => (u === t || key(u) === mine ? (latencyOf(u)?.low ?? []) : []));
  return lows.length ? Math.min(...lows) : undefined;
}

/** Why a trial is over a limit of the goal that is known only once it ran (its latency, limitLatencyMs), or undefined. */
export function overLimit(state: RunState, t: TrialState): string | undefined {
  const limit = state.goal?.maxLatencyMs ?? 0;
  if (!(limit > 0)) return undefined;
  const latency = limitLatencyMs(state, t);
  if (latency === undefined) return `its latency was not measured, so the goal's limit of ${limit} ms per example cannot be checked`;
  return latency > limit ? `${latency.toPrecision(3)} ms per example, over the goal's limit of ${limit} ms` : undefined;
}

/** The costs a Pareto goal trades off, in the order written; empty for any other goal. */
export function tradeOffsOf(state: RunState): CostName[] {
  return (state.goal?.tradeOffs ?? []).flatMap((c) => COST.name(c) ?? []);
}

/** The axes of a Pareto goal: the run's metric, then each cost (minimised). */
export function axesOf(state: RunState): Axis[] {
  const o = state.objective;
  return [{ name: o.metric, higherIsBetter: o.higherIsBetter }, ...tradeOffsOf(state).map((c) => ({ name: COSTS[c].label, higherIsBetter: false }))];
}

/** A trial as a point on the goal's axes: its validation metric with its 95% interval, then its costs; undefined when one is missing. */
export function pointOf(state: RunState, t: TrialState): Point | undefined {
  const stats = valMetricOf(t);
  if (!stats) return undefined;
  const metric: Estimate = { mean: stats.mean, low: Math.min(stats.mean, stats.ci95[0] ?? stats.mean), high: Math.max(stats.mean, stats.ci95[1] ?? stats.mean) };
  const costs = tradeOffsOf(state).map((c) => costOf(t, c));
  return costs.every((c) => c !== undefined) ? { id: t.id, values: [metric, ...costs] } : undefined;
}

/** The rule in words, for the report: which trials the front is made of, and what dominance is. */
export const FRONT_RULE =
  "the accepted trials of one fidelity rung (the rung-0 probes: every config trained on the same data slice for the same epochs) " +
  "that no other trial there dominates: at least as good on every objective beyond its 95% interval and better on one by its mean";

/** The accepted trials at `rung` as points on the goal's axes. */
function rungPoints(state: RunState, rung: number): { t: TrialState; p: Point }[] {
  const out: { t: TrialState; p: Point }[] = [];
  for (const t of state.trials.values()) {
    if (t.judged?.verdict !== Verdict.ACCEPT || rungOf(t) !== rung) continue;
    const p = pointOf(state, t);
    if (p) out.push({ t, p });
  }
  return out;
}

export interface Front {
  axes: Axis[];
  /** Every accepted rung-0 trial as a point, the front's and the rest. */
  points: { t: TrialState; p: Point }[];
  /** The front's trials, best metric first. */
  trials: { t: TrialState; p: Point; crowding: number }[];
  /** The front's knee (core/pareto.ts knee): the balanced trade-off. */
  knee?: TrialState;
}

/** A Pareto goal's front by FRONT_RULE; undefined for a goal that trades nothing off. */
export function frontOf(state: RunState): Front | undefined {
  const axes = axesOf(state);
  if (axes.length < 2) return undefined;
  const points = rungPoints(state, 0);
  const first = nondominatedFronts(
    points.map((x) => x.p),
    axes,
  )[0] ?? [];
  const crowd = crowding(first, axes);
  const byId = new Map(points.map((x) => [x.t.id, x.t]));
  const sign = axes[0]!.higherIsBetter ? -1 : 1;
  const trials = first.map((p) => ({ t: byId.get(p.id)!, p, crowding: crowd.get(p.id) ?? 0 })).sort((a, b) => sign * (a.p.values[0]!.mean - b.p.values[0]!.mean));
  const k = knee(first, axes);
  return { axes, points, trials, knee: k && byId.get(k.id) };
}

/**
 * Front trials a Pareto goal trains long, each on the full training split with the run's seeds,
 * one after another in the time exploration leaves: the knee first, then the front trial that
 * adds the most hypervolume to those picked before it (core/pareto.ts greedyHypervolume), and so
 * on, so the claims span the trade-off and meet in its balance. Hypervolume on the means, costs
 * by their logarithm (a model half the size is the same step at 20k parameters as at 200k),
 * above a reference a tenth of each axis's range beyond the front's worst. A trial that adds
 * nothing to those picked (within the intervals of the front, beaten on every mean) is not
 * trained: dc836a7's first Pareto run would have trained long a se-cnn that its bn-cnn beat on
 * accuracy, size and latency, the crowding-distance rule taking the front's extremes.
 */
export const FRONT_TRAININGS = 3;

/** The front trials a Pareto goal's last long trainings train, in their order. */
export function frontPicks(f: Front): TrialState[] {
  const points = f.trials.map((x) => onLogCosts(x.p));
  const reference = f.axes.map((a, i) => {
    const means = points.map((p) => p.values[i]!.mean);
    const [lo, hi] = [Math.min(...means), Math.max(...means)];
    const pad = (hi - lo) / 10 || Math.abs(hi) / 100 || 1e-9;
    return a.higherIsBetter ? lo - pad : hi + pad;
  });
  const knee = points.filter((p) => p.id === f.knee?.id);
  const byId = new Map(f.trials.map((x) => [x.t.id, x.t]));
  return greedyHypervolume(points, f.axes, reference, FRONT_TRAININGS, knee).map((p) => byId.get(p.id)!);
}

/** A point with its costs (every axis after the metric) as their base-10 logarithms. */
function onLogCosts(p: Point): Point {
  const log = (x: number) => Math.log10(Math.max(x, 1e-12));
  return { id: p.id, values: p.values.map((v, i) => (i === 0 ? v : { mean: log(v.mean), low: log(v.low), high: log(v.high) })) };
}

/** The front trials trained long so far (the parents of the run's last long trainings). */
export function trainedLong(state: RunState): Set<string> {
  const out = new Set<string>();
  for (const t of state.trials.values()) if (t.proposed?.lastTraining && t.proposed.parentIds[0]) out.add(t.proposed.parentIds[0]);
  return out;
}

/** How many of a Pareto goal's front picks are still to train long (0 for another goal). */
export function longTrainingsLeft(state: RunState): number {
  const done = trainedLong(state);
  const f = frontOf(state);
  return f ? frontPicks(f).filter((t) => !done.has(t.id)).length : 0;
}
