/**
 * Decisions over several objectives at once (accuracy against parameters, error against
 * time), where each measured value is a mean with a 95% interval. Dominance reads the
 * intervals, so a trial is only ruled out when the noise cannot explain the difference; the
 * rest (crowding, hypervolume, knee, scalarisation) reads the means. Inside, every value is
 * turned into a utility where higher is better, so each rule is written once for both
 * directions.
 */

export interface Axis {
  name: string;
  higherIsBetter: boolean;
}

/** One objective's estimate: mean and its 95% interval (low <= mean <= high); a deterministic cost (parameters) has low = mean = high. */
export interface Estimate {
  mean: number;
  low: number;
  high: number;
}

export interface Point {
  id: string;
  /** One per axis, in the axes' order. */
  values: readonly Estimate[];
}

/** A value of the axis as a number where higher is better. */
function utility(axis: Axis, x: number): number {
  return axis.higherIsBetter ? x : -x;
}

/** The point's means as utilities; throws on the likely mistakes (a value missing, an interval reversed or NaN). */
function utilities(p: Point, axes: readonly Axis[]): number[] {
  if (p.values.length !== axes.length) throw new Error(`point ${p.id} has ${p.values.length} values for ${axes.length} axes`);
  return p.values.map((v, i) => {
    if (!(v.low <= v.mean && v.mean <= v.high)) throw new Error(`point ${p.id}: ${axes[i]!.name} needs low <= mean <= high, got ${v.low}, ${v.mean}, ${v.high}`);
    return utility(axes[i]!, v.mean);
  });
}

/** a dominates b only when the intervals say so: on every axis a's pessimistic end is at least as good as b's optimistic end, and on at least one axis a's mean is strictly better. */
export function dominates(a: Point, b: Point, axes: readonly Axis[]): boolean {
  const ua = utilities(a, axes);
  const ub = utilities(b, axes);
  let strictly = false;
  for (const [i, axis] of axes.entries()) {
    const x = a.values[i]!;
    const y = b.values[i]!;
    const pessimistic = axis.higherIsBetter ? x.low : -x.high;
    const optimistic = axis.higherIsBetter ? y.high : -y.low;
    if (pessimistic < optimistic) return false;
    if (ua[i]! > ub[i]!) strictly = true;
  }
  return strictly;
}

/** Non-dominated sorting (NSGA-II's fast sort) under `dominates`: fronts[0] is the Pareto front. Every point appears in exactly one front; order within a front by input order. */
export function nondominatedFronts(points: readonly Point[], axes: readonly Axis[]): Point[][] {
  const n = points.length;
  const beats: number[][] = points.map(() => []);
  const beatenBy = new Array<number>(n).fill(0);
  for (let i = 0; i < n; i++) {
    for (let j = i + 1; j < n; j++) {
      if (dominates(points[i]!, points[j]!, axes)) {
        beats[i]!.push(j);
        beatenBy[j]!++;
      } else if (dominates(points[j]!, points[i]!, axes)) {
        beats[j]!.push(i);
        beatenBy[i]!++;
      }
    }
  }
  const fronts: Point[][] = [];
  let current = [...beatenBy.keys()].filter((i) => beatenBy[i] === 0);
  while (current.length > 0) {
    fronts.push(current.map((i) => points[i]!));
    const next: number[] = [];
    for (const i of current) for (const j of beats[i]!) if (--beatenBy[j]! === 0) next.push(j);
    current = next.sort((x, y) => x - y);
  }
  return fronts;
}

/**
 * NSGA-II crowding distance of each point of one front, on the means, each axis normalised by
 * its range in the front; extremes Infinity. Map by id. An axis on which the front does not
 * spread adds nothing: it neither separates the points nor marks an extreme.
 */
export function crowding(front: readonly Point[], axes: readonly Axis[]): Map<string, number> {
  const u = front.map((p) => utilities(p, axes));
  // Two points or fewer are all extremes, whatever their values.
  const distance = new Array<number>(front.length).fill(front.length <= 2 ? Infinity : 0);
  for (let a = 0; a < axes.length && front.length > 2; a++) {
    // A stable sort: among equal values the earlier input counts as the lower extreme.
    const order = [...front.keys()].sort((i, j) => u[i]![a]! - u[j]![a]!);
    const range = u[order.at(-1)!]![a]! - u[order[0]!]![a]!;
    if (!(range > 0)) continue;
    distance[order[0]!] = Infinity;
    distance[order.at(-1)!] = Infinity;
    for (let k = 1; k < order.length - 1; k++) distance[order[k]!]! += (u[order[k + 1]!]![a]! - u[order[k - 1]!]![a]!) / range;
  }
  const byId = new Map(front.map((p, i) => [p.id, distance[i]!]));
  if (byId.size !== front.length) throw new Error("crowding needs distinct point ids");
  return byId;
}

/** The best k points: by front, then by crowding (larger first), ties by input order. For a multi-objective ASHA rung: the top 1/eta promote. */
export function topK(points: readonly Point[], axes: readonly Axis[], k: number): Point[] {
  if (!Number.isInteger(k) || k < 0) throw new Error(`topK needs a non-negative integer k, got ${k}`);
  const best: Point[] = [];
  for (const front of nondominatedFronts(points, axes)) {
    if (best.length >= k) break;
    const distance = crowding(front, axes);
    // Array.prototype.sort is stable, so equal distances keep the input order.
    best.push(...[...front].sort((a, b) => distance.get(b.id)! - distance.get(a.id)!));
  }
  return best.slice(0, k);
}

/**
 * Dominated hypervolume of the points' means against a reference point (one value per axis, in
 * the axes' units, worse than every point that counts; points not strictly better than the
 * reference on every axis contribute nothing). Exact, by slicing along the last axis and
 * recursing on the rest (HSO); fine for a few hundred points on up to four axes.
 */
export function hypervolume(points: readonly Point[], axes: readonly Axis[], reference: readonly number[]): number {
  if (reference.length !== axes.length) throw new Error(`reference has ${reference.length} values for ${axes.length} axes`);
  const ref = reference.map((r, i) => utility(axes[i]!, r));
  const inside = points.map((p) => utilities(p, axes)).filter((u) => u.every((x, i) => x > ref[i]!));
  return volume(inside, ref);
}

/**
 * Up to `k` of `points`, after `first`, chosen one at a time: each the point that adds the most
 * hypervolume above `reference` to those chosen before it (greedy hypervolume subset selection,
 * as SMS-EMOA keeps its population). A point that adds nothing (dominated on the means by those
 * chosen) is never chosen, so fewer than `k` may come back. Ties keep the input order.
 */
export function greedyHypervolume(points: readonly Point[], axes: readonly Axis[], reference: readonly number[], k: number, first: readonly Point[] = []): Point[] {
  const chosen = first.slice(0, k);
  while (chosen.length < k) {
    const base = hypervolume(chosen, axes, reference);
    let best: Point | undefined;
    let gain = 0;
    for (const p of points) {
      if (chosen.some((c) => c.id === p.id)) continue;
      const g = hypervolume([...chosen, p], axes, reference) - base;
      if (g > gain) [best, gain] = [p, g];
    }
    if (!best) break;
    chosen.push(best);
  }
  return chosen;
}

/** The volume dominated by `points` (utilities, each strictly above `ref` on every axis) and bounded below by `ref`. */
function volume(points: readonly number[][], ref: readonly number[]): number {
  const d = ref.length;
  if (points.length === 0) return 0;
  if (d === 1) return Math.max(...points.map((p) => p[0]!)) - ref[0]!;
  const last = d - 1;
  const sorted = [...points].sort((a, b) => b[last]! - a[last]!);
  const below = ref.slice(0, last);
  // The points at or above the current height, projected onto the other axes; only the non-dominated ones matter.
  let slice: number[][] = [];
  let area = 0;
  let total = 0;
  for (const [k, p] of sorted.entries()) {
    const q = p.slice(0, last);
    if (!slice.some((s) => s.every((x, i) => x >= q[i]!))) {
      slice = [...slice.filter((s) => !s.every((x, i) => q[i]! >= x)), q];
      area = volume(slice, below);
    }
    const floor = sorted[k + 1]?.[last] ?? ref[last]!;
    total += area * (p[last]! - floor);
  }
  return total;
}

/**
 * The front's knee: the point whose normalised means (each axis scaled to [0,1] over the front,
 * 1 best) are closest (Euclidean) to the ideal (1,...,1). undefined for an empty front; the
 * single point for one. An axis on which the front does not spread counts as 1 for every
 * point, so it does not sway the choice; ties go to the earlier point.
 */
export function knee(front: readonly Point[], axes: readonly Axis[]): Point | undefined {
  const u = front.map((p) => utilities(p, axes));
  const lo = axes.map((_, a) => Math.min(...u.map((x) => x[a]!)));
  const hi = axes.map((_, a) => Math.max(...u.map((x) => x[a]!)));
  let best: Point | undefined;
  let bestDistance = Infinity;
  for (const [i, p] of front.entries()) {
    const distance = Math.hypot(...u[i]!.map((x, a) => (hi[a]! > lo[a]! ? 1 - (x - lo[a]!) / (hi[a]! - lo[a]!) : 0)));
    if (distance < bestDistance) [best, bestDistance] = [p, distance];
  }
  return best;
}

const RHO = 0.05;

/**
 * A scalarisation for proposing toward the front (ParEGO style): augmented Chebyshev of
 * normalised utilities with weights w (sum 1), rho = 0.05. Higher is better: the negated
 * weighted distance from the ideal, 0 at the ideal. `bounds` give each axis's [worst, best]
 * for normalisation; a pair in the wrong order for the axis's direction throws, as a [min, max]
 * passed for an axis to minimise would silently reward the worst points.
 */
export function chebyshev(values: readonly number[], axes: readonly Axis[], weights: readonly number[], bounds: readonly (readonly [number, number])[]): number {
  if (values.length !== axes.length || weights.length !== axes.length || bounds.length !== axes.length) {
    throw new Error(`chebyshev needs one value, weight and bound per axis (${axes.length}), got ${values.length}, ${weights.length}, ${bounds.length}`);
  }
  const regrets = axes.map((axis, i) => {
    const [worst, best] = bounds[i]!;
    if (!(utility(axis, best) > utility(axis, worst))) throw new Error(`bounds for ${axis.name} must be [worst, best], got [${worst}, ${best}]`);
    return weights[i]! * ((best - values[i]!) / (best - worst));
  });
  return -(Math.max(...regrets) + RHO * regrets.reduce((s, r) => s + r, 0));
}

/** Random weights on the simplex from a uniform rng in [0,1) (sorted-uniform spacings), for chebyshev: uniform over the simplex, so every trade-off gets its turn. */
export function simplexWeights(n: number, rng: () => number): number[] {
  if (!Number.isInteger(n) || n < 1) throw new Error(`simplexWeights needs a positive integer n, got ${n}`);
  const cuts = [0, ...Array.from({ length: n - 1 }, rng).sort((a, b) => a - b), 1];
  return cuts.slice(1).map((c, i) => c - cuts[i]!);
}
