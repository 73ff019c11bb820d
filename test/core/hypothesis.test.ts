/**
 * The rule for an edit's hypothesis (core/ranking.ts hypothesisOutcome): two classifiers scored on
 * the same validation examples are compared example by example, which keeps its 5% error rate when
 * nothing changed and resolves changes their intervals alone cannot; anything else is compared by
 * the two intervals.
 */
import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { hypothesisOutcome, type Evaluation } from "../../core/ranking.js";
import { objectiveNamed } from "../../core/objective.js";
import { describeProportion } from "../../gpu-runner/stats.js";
import { SeedResultSchema } from "../../proto/gen/research/v1/runner_pb.js";
import { mulberry32 } from "../../agents/planner/proposals.js";

/** A trial whose seeds got right the examples `right` says (one array of 0/1 per seed), summarised as the runner does. */
function trial(...seeds: number[][]): Evaluation {
  const n = seeds[0]!.length;
  const seedResults = seeds.map((right) => {
    const bits = new Uint8Array(Math.ceil(n / 8));
    right.forEach((r, j) => (bits[j >> 3]! |= r << (j & 7)));
    return create(SeedResultSchema, { metrics: { val_accuracy: right.reduce((a, b) => a + b, 0) / n }, valExamples: n, valCorrect: bits });
  });
  const stats = describeProportion(seedResults.map((r) => r.metrics.val_accuracy!), n);
  return { mean: stats.mean, ci95: stats.ci95, seedResults };
}

/** `n` examples: the first `both` right for both, then `gained` right for the child only, `lost` right for the parent only, the rest wrong for both. */
function pair(n: number, both: number, gained: number, lost: number): [number[], number[]] {
  const child = Array.from({ length: n }, (_, j) => (j < both + gained ? 1 : 0));
  const parent = Array.from({ length: n }, (_, j) => (j < both || (j >= both + gained && j < both + gained + lost) ? 1 : 0));
  return [child, parent];
}

describe("an edit's hypothesis, example by example", () => {
  it("calls a change supported as McNemar's corrected test does, with one seed each", () => {
    // 1,000 examples, 850 right for both: 6 gained and none lost rejects (p = 0.031 exact), 5 does not (p = 0.0625).
    const six = pair(1000, 850, 6, 0);
    const five = pair(1000, 850, 5, 0);
    const h6 = hypothesisOutcome(trial(six[0]), trial(six[1]));
    const h5 = hypothesisOutcome(trial(five[0]), trial(five[1]));
    expect([h6.outcome, h6.pairedExamples, h6.change]).toEqual(["supported", 1000, expect.closeTo(0.006, 12)]);
    expect(h5.outcome).toBe("inconclusive");
    // The other way round, a loss.
    expect(hypothesisOutcome(trial(six[1]), trial(six[0])).outcome).toBe("refuted");
    // The same change by intervals alone: each trial's binomial error, counted twice, hides it.
    const apart = (e: Evaluation): Evaluation => ({ mean: e.mean, ci95: e.ci95 });
    const unpaired = hypothesisOutcome(apart(trial(six[0])), apart(trial(six[1])));
    expect([unpaired.outcome, unpaired.pairedExamples]).toEqual(["inconclusive", 0]);
    expect(unpaired.detectable).toBeGreaterThan(5 * h6.detectable);
  });

  it("adds each trial's seed spread, and resolves nothing from two identical trials", () => {
    const [child, parent] = pair(1000, 850, 20, 5);
    const one = hypothesisOutcome(trial(child), trial(parent));
    // Three child seeds 10 examples apart (one gets 10 more right, one 10 fewer): the same mean change, a wider interval.
    const shifted = (by: number) => child.map((r, j) => (by > 0 && j >= 900 && j < 900 + by ? 1 : by < 0 && j >= 800 && j < 800 - by ? 0 : r));
    const spread = hypothesisOutcome(trial(shifted(10), shifted(0), shifted(-10)), trial(parent));
    expect(spread.change).toBeCloseTo(one.change, 12);
    expect(spread.detectable).toBeGreaterThan(one.detectable);
    const same = hypothesisOutcome(trial(parent), trial(parent));
    expect([same.outcome, same.change]).toEqual(["inconclusive", 0]);
  });

  it("compares by intervals where the examples are not the same or say nothing of which were right", () => {
    const [child, parent] = pair(1000, 850, 30, 0);
    const shorter = trial(child.slice(0, 800));
    expect(hypothesisOutcome(shorter, trial(parent)).pairedExamples).toBe(0);
    const silent = trial(child);
    silent.seedResults = silent.seedResults!.map((r) => ({ ...r, valCorrect: new Uint8Array() }));
    expect(hypothesisOutcome(silent, trial(parent)).pairedExamples).toBe(0);
    // A metric other than accuracy: bits of right and wrong are no decomposition of it.
    const rmse = objectiveNamed("rmse");
    const asRmse = (e: Evaluation): Evaluation => ({ ...e, seedResults: e.seedResults!.map((r) => ({ ...r, metrics: { val_rmse: 1 - r.metrics.val_accuracy! } })) });
    expect(hypothesisOutcome(asRmse(trial(child)), asRmse(trial(parent)), rmse).pairedExamples).toBe(0);
  });

  it("keeps its error rate when nothing changed and resolves more than intervals alone when something did", () => {
    // Simulated pairs of one-seed trials on 1,000 examples: 85% easy (both right), 8% hard (both
    // wrong) and 7% that each model gets right by its own coin; the child's coin is `q` against the
    // parent's 0.5. Seeded, so the counts are the same at every run.
    const simulate = (q: number, trials: number, rnd: () => number) => {
      let paired = 0;
      let apart = 0;
      for (let i = 0; i < trials; i++) {
        const child: number[] = [];
        const parent: number[] = [];
        for (let j = 0; j < 1000; j++) {
          const u = rnd();
          child.push(u < 0.85 ? 1 : u < 0.93 ? 0 : rnd() < q ? 1 : 0);
          parent.push(u < 0.85 ? 1 : u < 0.93 ? 0 : rnd() < 0.5 ? 1 : 0);
        }
        const [c, p] = [trial(child), trial(parent)];
        if (hypothesisOutcome(c, p).outcome !== "inconclusive") paired++;
        if (hypothesisOutcome({ mean: c.mean, ci95: c.ci95 }, { mean: p.mean, ci95: p.ci95 }).outcome !== "inconclusive") apart++;
      }
      return { paired: paired / trials, apart: apart / trials };
    };
    const rnd = mulberry32(7);
    const none = simulate(0.5, 1000, rnd);
    expect(none.paired).toBeLessThanOrEqual(0.05);
    // A change of 2.1 pp (the child's coin 0.8): found most of the time example by example, rarely by intervals.
    const some = simulate(0.8, 300, rnd);
    expect(some.paired).toBeGreaterThan(0.6);
    expect(some.apart).toBeLessThan(0.2);
  });
});
