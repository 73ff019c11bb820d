import { describe, expect, it } from "vitest";
import {
  type Axis,
  type Estimate,
  type Point,
  chebyshev,
  crowding,
  dominates,
  greedyHypervolume,
  hypervolume,
  knee,
  nondominatedFronts,
  simplexWeights,
  topK,
} from "../../core/pareto.js";

const ACC: Axis = { name: "accuracy", higherIsBetter: true };
const PARAMS: Axis = { name: "params", higherIsBetter: false };
const MIN: Axis = { name: "error", higherIsBetter: false };

/** A mean and the half-width of its interval; 0 for a deterministic value. */
const est = (mean: number, half = 0): Estimate => ({ mean, low: mean - half, high: mean + half });
const point = (id: string, ...values: Array<number | Estimate>): Point => ({ id, values: values.map((v) => (typeof v === "number" ? est(v) : v)) });
const ids = (points: readonly Point[]) => points.map((p) => p.id);

/** A seeded uniform generator in [0,1) (Numerical Recipes' LCG), so the random checks are the same every run. */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

describe("dominates", () => {
  it("needs separated intervals, not just better means", () => {
    const overlapping = [point("a", est(0.8, 0.02)), point("b", est(0.79, 0.02))];
    expect(dominates(overlapping[0]!, overlapping[1]!, [ACC])).toBe(false);
    expect(dominates(overlapping[1]!, overlapping[0]!, [ACC])).toBe(false);
    const separated = [point("a", est(0.85, 0.01)), point("b", est(0.8, 0.01))];
    expect(dominates(separated[0]!, separated[1]!, [ACC])).toBe(true);
    expect(dominates(separated[1]!, separated[0]!, [ACC])).toBe(false);
    // Touching ends: a's pessimistic end equals b's optimistic one, which is enough.
    expect(dominates(point("a", est(0.75, 0.125)), point("b", est(0.5, 0.125)), [ACC])).toBe(true);
  });

  it("reads each axis in its direction", () => {
    const small = point("small", est(0.9, 0.01), 1e6);
    const large = point("large", est(0.8, 0.01), 2e6);
    expect(dominates(small, large, [ACC, PARAMS])).toBe(true);
    expect(dominates(large, small, [ACC, PARAMS])).toBe(false);
    // Flip both directions and the order flips with them.
    const flipped = [PARAMS, ACC].map((a) => ({ ...a, higherIsBetter: !a.higherIsBetter }));
    expect(dominates(large, small, [flipped[1]!, flipped[0]!])).toBe(true);
    // Better accuracy but more parameters: a trade-off, neither dominates.
    const bigger = point("bigger", est(0.9, 0.01), 3e6);
    expect(dominates(bigger, large, [ACC, PARAMS])).toBe(false);
    expect(dominates(large, bigger, [ACC, PARAMS])).toBe(false);
  });

  it("never holds between equal means", () => {
    const a = point("a", 0.9, 1e6);
    expect(dominates(a, point("b", 0.9, 1e6), [ACC, PARAMS])).toBe(false);
    // A narrower interval around the same mean is no better.
    expect(dominates(point("sure", est(0.9, 0), 1e6), point("noisy", est(0.9, 0.05), 1e6), [ACC, PARAMS])).toBe(false);
    expect(dominates(a, a, [ACC, PARAMS])).toBe(false);
  });

  it("throws on a value per axis missing or a reversed interval", () => {
    expect(() => dominates(point("a", 0.9), point("b", 0.8, 1), [ACC, PARAMS])).toThrow(/point a has 1 values for 2 axes/);
    expect(() => dominates(point("a", { mean: 0.9, low: 0.95, high: 0.85 }), point("b", 0.8), [ACC])).toThrow(/low <= mean <= high/);
  });
});

describe("nondominatedFronts", () => {
  it("sorts a hand-made 2-D set into its known fronts, each in input order", () => {
    // Both minimised. Front 0: A, B, C (and B's twin G); D and F behind it; E behind D.
    const [A, B, C, D, E, F, G] = [
      point("A", 1, 5),
      point("B", 2, 3),
      point("C", 4, 1),
      point("D", 3, 4),
      point("E", 5, 5),
      point("F", 2, 6),
      point("G", 2, 3),
    ];
    const fronts = nondominatedFronts([D, C, A, E, B, F, G], [MIN, MIN]);
    expect(fronts.map(ids)).toEqual([["C", "A", "B", "G"], ["D", "F"], ["E"]]);
    expect(nondominatedFronts([], [MIN, MIN])).toEqual([]);
  });

  it("on random noisy points: no point dominates another in its front, and each later point is dominated by the front before", () => {
    const rng = lcg(7);
    const axes = [ACC, PARAMS, MIN];
    const points = Array.from({ length: 80 }, (_, i) => point(`p${i}`, ...axes.map(() => est(rng(), 0.05 * rng()))));
    const fronts = nondominatedFronts(points, axes);
    expect(fronts.length).toBeGreaterThan(2);
    expect(fronts.flatMap(ids).sort()).toEqual(ids(points).sort());
    for (const [i, front] of fronts.entries()) {
      for (const a of front) for (const b of front) expect(dominates(a, b, axes)).toBe(false);
      const earlier = fronts.slice(0, i).flat();
      for (const p of i > 0 ? front : []) expect(earlier.some((q) => dominates(q, p, axes))).toBe(true);
      // Within a front, points keep their input order.
      expect(front.map((p) => points.indexOf(p))).toEqual(front.map((p) => points.indexOf(p)).sort((x, y) => x - y));
    }
  });
});

describe("crowding", () => {
  // A front on two minimised axes: error falls as parameters rise.
  const P = [point("p0", 0, 10), point("p1", 1, 6), point("p2", 3, 3), point("p3", 4, 0)];

  it("gives the extremes Infinity and the interior the normalised sum of its neighbours' gaps", () => {
    const d = crowding([P[2]!, P[0]!, P[3]!, P[1]!], [MIN, MIN]);
    expect(d.get("p0")).toBe(Infinity);
    expect(d.get("p3")).toBe(Infinity);
    expect(d.get("p1")).toBeCloseTo(3 / 4 + 7 / 10, 12);
    expect(d.get("p2")).toBeCloseTo(3 / 4 + 6 / 10, 12);
  });

  it("counts two points or fewer as extremes, and skips an axis without spread", () => {
    expect([...crowding(P.slice(0, 2), [MIN, MIN]).values()]).toEqual([Infinity, Infinity]);
    expect(crowding([], [MIN, MIN]).size).toBe(0);
    const flat = crowding([point("a", 0, 5), point("b", 1, 5), point("c", 3, 5)], [MIN, MIN]);
    expect([...flat.values()]).toEqual([Infinity, 1, Infinity]);
  });
});

describe("topK", () => {
  it("takes whole fronts first, then the least crowded of the front it cuts", () => {
    const front = [point("p2", 0.3, 3), point("p3", 0.4, 0), point("p1", 0.1, 6), point("p0", 0, 10)];
    const behind = [point("x", 0.5, 10), point("y", 0.6, 11)];
    const all = [...front, ...behind];
    expect(ids(topK(all, [MIN, MIN], 3))).toEqual(["p3", "p0", "p1"]);
    expect(ids(topK(all, [MIN, MIN], 5))).toEqual(["p3", "p0", "p1", "p2", "x"]);
    expect(ids(topK(all, [MIN, MIN], 10))).toEqual(["p3", "p0", "p1", "p2", "x", "y"]);
    expect(topK(all, [MIN, MIN], 0)).toEqual([]);
    expect(() => topK(all, [MIN, MIN], 1.5)).toThrow(/non-negative integer/);
  });
});

/** The share of `samples` uniform points in the box [ref, top] that some point dominates, times the box's volume (all axes maximised). */
function monteCarlo(points: number[][], ref: number[], top: number[], samples: number, rng: () => number): number {
  let hits = 0;
  for (let s = 0; s < samples; s++) {
    const x = ref.map((r, i) => r + rng() * (top[i]! - r));
    if (points.some((p) => p.every((v, i) => v >= x[i]!))) hits++;
  }
  return (hits / samples) * ref.reduce((v, r, i) => v * (top[i]! - r), 1);
}

describe("hypervolume", () => {
  const UP: Axis = { name: "up", higherIsBetter: true };

  it("measures a 2-D staircase exactly", () => {
    const stairs = [point("a", 1, 3), point("b", 2, 2), point("c", 3, 1)];
    // Slabs of width 1 under heights 3, 2 and 1.
    expect(hypervolume(stairs, [UP, UP], [0, 0])).toBeCloseTo(6, 12);
    expect(hypervolume(stairs, [UP, UP], [1, 0])).toBeCloseTo(3, 12);
    expect(hypervolume([], [UP, UP], [0, 0])).toBe(0);
  });

  it("ignores dominated points, duplicates and points not beyond the reference", () => {
    const stairs = [point("a", 1, 3), point("b", 2, 2), point("c", 3, 1)];
    const extra = [point("d", 1, 1), point("e", 0.5, 2.5), point("b2", 2, 2), point("out", 5, -1), point("edge", 9, 0)];
    expect(hypervolume([...extra, ...stairs], [UP, UP], [0, 0])).toBeCloseTo(6, 12);
  });

  it("handles an axis to minimise with its reference above the largest value", () => {
    const points = [point("big", 0.9, 4), point("small", 0.5, 2)];
    // Boxes 0.9 x (10 - 4) and 0.5 x (10 - 2), overlapping in 0.5 x 6.
    expect(hypervolume(points, [ACC, PARAMS], [0, 10])).toBeCloseTo(0.9 * 6 + 0.5 * 8 - 0.5 * 6, 12);
    // A reference below every parameter count is better than all of them: nothing counts.
    expect(hypervolume(points, [ACC, PARAMS], [0, 1])).toBe(0);
    expect(() => hypervolume(points, [ACC, PARAMS], [0])).toThrow(/reference has 1 values for 2 axes/);
  });

  it.each([3, 4])("agrees with a Monte-Carlo estimate on random points in %i-D within 2%", (d) => {
    const rng = lcg(11 * d);
    const axes = Array.from({ length: d }, (_, i) => ({ name: `a${i}`, higherIsBetter: i % 2 === 0 }));
    // Utilities in (0, 1]; an axis to minimise stores their negation.
    const utilities = Array.from({ length: 30 }, () => axes.map(() => 0.05 + 0.95 * rng()));
    const points = utilities.map((u, i) => point(`p${i}`, ...u.map((x, a) => (axes[a]!.higherIsBetter ? x : -x))));
    const exact = hypervolume(points, axes, axes.map(() => 0));
    const estimate = monteCarlo(utilities, axes.map(() => 0), axes.map(() => 1), 100_000, rng);
    expect(exact).toBeGreaterThan(0.1);
    expect(Math.abs(exact - estimate) / exact).toBeLessThan(0.02);
  });
});

describe("greedyHypervolume", () => {
  const UP: Axis = { name: "up", higherIsBetter: true };
  // Boxes above (0, 0): a 1x3 and c 3x1 (3 each), b 2x2 (4, the largest), d inside b's box.
  const stairs = [point("a", 1, 3), point("b", 2, 2), point("c", 3, 1), point("d", 1.5, 1.5)];

  it("takes the largest box first, then what adds most to those taken, never a point that adds nothing", () => {
    expect(ids(greedyHypervolume(stairs, [UP, UP], [0, 0], 2))).toEqual(["b", "a"]);
    // After b, a and c add 1 each (a first: input order); d adds nothing, so only three come back.
    expect(ids(greedyHypervolume(stairs, [UP, UP], [0, 0], 4))).toEqual(["b", "a", "c"]);
  });

  it("starts from the points it is given", () => {
    // After c, a and b add 2 each: a, first in the input.
    expect(ids(greedyHypervolume(stairs, [UP, UP], [0, 0], 2, [stairs[2]!]))).toEqual(["c", "a"]);
    expect(ids(greedyHypervolume(stairs, [UP, UP], [0, 0], 1, [stairs[2]!, stairs[0]!]))).toEqual(["c"]);
  });
});

describe("knee", () => {
  it("picks the middle of a convex 2-D front", () => {
    const front = [point("a", 0, 10), point("b", 1, 4), point("mid", 2, 2), point("d", 4, 1), point("e", 10, 0)];
    expect(knee(front, [MIN, MIN])?.id).toBe("mid");
    expect(knee([], [MIN, MIN])).toBeUndefined();
    expect(knee([front[0]!], [MIN, MIN])?.id).toBe("a");
  });
});

describe("chebyshev", () => {
  const axes = [ACC, PARAMS];
  const bounds: Array<[number, number]> = [
    [0, 1],
    [10, 0],
  ];

  it("prefers the point closer to the weighted ideal", () => {
    expect(chebyshev([1, 0], axes, [0.5, 0.5], bounds)).toBeCloseTo(0, 12);
    expect(chebyshev([0.9, 1], axes, [0.5, 0.5], bounds)).toBeGreaterThan(chebyshev([0.5, 5], axes, [0.5, 0.5], bounds));
    // The weights pick the trade-off: accurate but large against small but inaccurate.
    const accurate = [0.95, 8];
    const small = [0.3, 1];
    expect(chebyshev(accurate, axes, [0.9, 0.1], bounds)).toBeGreaterThan(chebyshev(small, axes, [0.9, 0.1], bounds));
    expect(chebyshev(small, axes, [0.1, 0.9], bounds)).toBeGreaterThan(chebyshev(accurate, axes, [0.1, 0.9], bounds));
  });

  it("throws on bounds given the wrong way round for the axis", () => {
    expect(() => chebyshev([0.9, 1], axes, [0.5, 0.5], [[0, 1], [0, 10]])).toThrow(/bounds for params must be \[worst, best\]/);
    expect(() => chebyshev([0.9], axes, [0.5, 0.5], bounds)).toThrow(/one value, weight and bound per axis/);
  });
});

describe("simplexWeights", () => {
  it("draws non-negative weights that sum to 1, uniformly over the simplex", () => {
    const rng = lcg(3);
    expect(simplexWeights(1, rng)).toEqual([1]);
    for (let n = 2; n <= 5; n++) {
      for (let t = 0; t < 100; t++) {
        const w = simplexWeights(n, rng);
        expect(w).toHaveLength(n);
        expect(w.every((x) => x >= 0)).toBe(true);
        expect(w.reduce((s, x) => s + x, 0)).toBeCloseTo(1, 12);
      }
    }
    // Uniform on the 2-simplex: P(w0 > 1/2) = (1 - 1/2)^2 = 1/4; three uniforms divided by their sum would give 1/6.
    const draws = 20_000;
    let above = 0;
    for (let t = 0; t < draws; t++) if (simplexWeights(3, rng)[0]! > 0.5) above++;
    expect(Math.abs(above / draws - 0.25)).toBeLessThan(0.015);
    expect(() => simplexWeights(0, rng)).toThrow(/positive integer/);
  });
});
