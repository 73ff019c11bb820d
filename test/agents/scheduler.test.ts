import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { partialResult, pruneReason } from "../../agents/analyst/pruning.js";
import { atRung, ETA, ladder, nextPromotion } from "../../agents/planner/scheduler.js";
import { Cost, Surface } from "../../proto/gen/research/v1/common_pb.js";
import { Verdict, type TrialJudged } from "../../proto/gen/research/v1/events_pb.js";
import { EpochProgressSchema, EvalResultSchema } from "../../proto/gen/research/v1/runner_pb.js";
import type { EventInit } from "../../bus/index.js";
import { proposed, RUN, started, state } from "./helpers.js";
import { trainSpec } from "../../core/config-wire.js";

const judged = (id: string, verdict = Verdict.ACCEPT): EventInit => ({
  runId: RUN,
  trialId: id,
  body: { case: "trialJudged", value: { verdict } as TrialJudged },
});

/** A finished trial at `rung` whose seed 0 reached `curve` (one value per epoch). */
function finished(id: string, score: number, curve: number[], rung = 0, parent?: string): EventInit[] {
  const p = proposed(id, parent ? Surface.DATA : Surface.ARCHITECTURE, parent ? [parent] : []);
  (p.body as { value: { rung?: number } }).value.rung = rung;
  const result = create(EvalResultSchema, {
    aggregated: { val_accuracy: { mean: score, ci95: [score - 0.005, score + 0.005], n: 3 } },
    seedResults: [{ seed: 0, learningCurve: { valAccuracy: curve } }],
  });
  return [p, { runId: RUN, trialId: id, body: { case: "trialEvaluated", value: { result } } }, judged(id)];
}

describe("fidelity ladder", () => {
  it("grows the data first, then the epochs, ETA times the cost per rung", () => {
    const rungs = ladder({ nTrain: 54_000 }, { subset: 10_000, epochs: 3 });
    expect(rungs).toEqual([
      { subset: 10_000, epochs: 3 },
      { subset: 30_000, epochs: 3 },
      { subset: 0, epochs: 5 },
      { subset: 0, epochs: 15 },
    ]);
    const cost = (f: { subset: number; epochs: number }) => (f.subset || 54_000) * f.epochs;
    for (let r = 1; r < rungs.length; r++) expect(cost(rungs[r]!) / cost(rungs[r - 1]!)).toBeCloseTo(ETA, 0);
  });

  it("only adds epochs on a split small enough to use whole", () => {
    expect(ladder({ nTrain: 1_600 }, { subset: 0, epochs: 3 })).toEqual([
      { subset: 0, epochs: 3 },
      { subset: 0, epochs: 9 },
      { subset: 0, epochs: 27 },
      { subset: 0, epochs: 60 },
    ]);
  });

  it("gives long rungs an annealed rate and random crops by the image's side, no cutout of their own, and leaves short ones as they are", () => {
    expect(atRung({ optimizer: "adam", lr: 0.002 }, { subset: 30_000, epochs: 3 }, 28)).toEqual({ optimizer: "adam", lr: 0.002, subset: 30_000, epochs: 3 });
    const long = atRung({ optimizer: "adam", schedule: "onecycle", augment: { hflip: true } }, { subset: 0, epochs: 15 }, 28);
    expect(long).toEqual({ optimizer: "adam", schedule: "onecycle", subset: 0, epochs: 15, augment: { hflip: true, crop_padding: 2 } });
    expect(atRung({}, { subset: 0, epochs: 15 }, 0)).toEqual({ schedule: "cosine", subset: 0, epochs: 15 });
    expect(atRung({}, { subset: 0, epochs: 27 }, 28).augment).toEqual({ crop_padding: 2 });
    expect(atRung({ augment: { cutout: 4 } }, { subset: 0, epochs: 27 }, 32).augment).toEqual({ cutout: 4, crop_padding: 2 });
    expect(atRung({}, { subset: 0, epochs: 27 }, 0).augment).toBeUndefined();
    // The digits' 8 x 8: a shift of 2 px is a quarter of the image (bench/results/crop-digits-val.json).
    expect(atRung({}, { subset: 0, epochs: 27 }, 8).augment).toEqual({ crop_padding: 1 });
  });
});

describe("ASHA promotions", () => {
  const rung0 = (n: number) => Array.from({ length: n }, (_, i) => finished(`t${i}`, 0.8 + i / 100, [0.7, 0.8])).flat();

  it("waits for ETA finished trials, then promotes the best not yet promoted", () => {
    expect(nextPromotion(state([started(), ...rung0(2)]), 3)).toBeUndefined();
    const three = nextPromotion(state([started(), ...rung0(3)]), 3);
    expect(three).toMatchObject({ rung: 1, trial: { id: "t2" } });
    // t2 went up; with six finished, the top two may go, so t4 follows t5.
    const six = state([started(), ...rung0(6), proposed("p5", Surface.DATA, ["t5"])].map((e) => {
      if (e.trialId === "p5") (e.body as { value: { rung?: number } }).value.rung = 1;
      return e;
    }));
    expect(nextPromotion(six, 3)).toMatchObject({ rung: 1, trial: { id: "t4" } });
  });

  it("looks at the highest rung first and never past the top", () => {
    const events = [started(), ...rung0(3), ...finished("u0", 0.9, [0.9], 1, "t2"), ...finished("u1", 0.91, [0.9], 1, "t1"), ...finished("u2", 0.92, [0.9], 1, "t0")];
    expect(nextPromotion(state(events), 3)).toMatchObject({ rung: 2, trial: { id: "u2" } });
    expect(nextPromotion(state(events), 1)).toBeUndefined();
  });

  it("counts failed trials as finished but never promotes them", () => {
    const failedTrials = ["f0", "f1"].flatMap((id) => [proposed(id), judged(id, Verdict.REJECT)]);
    const s = state([started(), ...failedTrials, ...finished("ok", 0.8, [0.8])]);
    expect(nextPromotion(s, 3)).toMatchObject({ trial: { id: "ok" } });
  });
});

describe("median stopping within a rung", () => {
  // Every trial here trains the recipe's default 2 epochs, but for the ones given their own train config.
  const progress = (epoch: number, valAccuracy: number, seed = 0, epochs = 2) => create(EpochProgressSchema, { seed, epoch, epochs, valAccuracy });
  const withTrain = (e: EventInit, train: Parameters<typeof trainSpec>[0]) => {
    (e.body!.value as { train: unknown }).train = trainSpec(train);
    return e;
  };
  const peers = (n: number) => Array.from({ length: n }, (_, i) => finished(`t${i}`, 0.85, [0.8 + i / 100, 0.85, 0.87])).flat();

  it("stops a trial clearly below the median of its finished peers, not before four exist", () => {
    const s = state([started(), ...peers(5), proposed("new")]);
    const trial = s.trials.get("new")!;
    // Peers after epoch 1: 0.80 .. 0.84, median 0.82.
    expect(pruneReason(s, trial, progress(1, 0.75))).toMatch(/below the median 82\.00% of 5 finished trials at rung 0 with a none schedule of 2 epochs/);
    expect(pruneReason(s, trial, progress(1, 0.815))).toBeUndefined();
    expect(pruneReason(s, trial, progress(1, 0.5, 1))).toBeUndefined();
    expect(pruneReason(s, trial, progress(2, 0.5))).toBeUndefined();
    const few = state([started(), ...peers(3), proposed("new")]);
    expect(pruneReason(few, few.trials.get("new")!, progress(1, 0.5))).toBeUndefined();
  });

  it("compares a trial only with peers of its learning-rate schedule, whose warm-up shapes the early epochs", () => {
    const s = state([started(), ...peers(5), withTrain(proposed("warm"), { schedule: "onecycle" })]);
    expect(pruneReason(s, s.trials.get("warm")!, progress(1, 0.75))).toBeUndefined();
  });

  it("and of its schedule's length, which sets the rate at each epoch: a long training is never held to shorter trainings' medians", () => {
    const long = (id: string, train: Parameters<typeof trainSpec>[0]) => {
      const s = state([started(), ...peers(5), withTrain(proposed(id), train)]);
      return pruneReason(s, s.trials.get(id)!, progress(1, 0.5, 0, train.epochs ?? 2));
    };
    expect(long("longer", { epochs: 200 })).toBeUndefined();
    expect(long("boxed", { epochs: 2, train_seconds: 15 })).toBeUndefined();
    // Four finished peers of its own length: held to their median.
    const twins = Array.from({ length: 4 }, (_, i) => finished(`l${i}`, 0.85, [0.8, 0.85]).map((e) => (e.body?.case === "trialProposed" ? withTrain(e, { epochs: 200 }) : e))).flat();
    const s = state([started(), ...twins, withTrain(proposed("longer"), { epochs: 200 })]);
    expect(pruneReason(s, s.trials.get("longer")!, progress(1, 0.5, 0, 200))).toMatch(/below the median 80\.00% of 4 finished trials at rung 0 with a none schedule of 200 epochs/);
  });

  it("compares a Pareto goal's trial only with peers no larger than it", () => {
    const sized = (id: string, params: bigint): EventInit => ({ runId: RUN, trialId: id, body: { case: "trialAssembled", value: { summary: { totalParams: params } } } });
    // Peers of 20k, 40k, ..., 100k parameters; the median of all five after epoch 1 is 0.82.
    const sizedPeers = Array.from({ length: 5 }, (_, i) => [...finished(`t${i}`, 0.85, [0.8 + i / 100, 0.85, 0.87]), sized(`t${i}`, BigInt(20_000 * (i + 1)))]).flat();
    const pareto = (params: bigint) => {
      const s = state([started({}, { openEnded: true, target: 0, tradeOffs: [Cost.PARAMS, Cost.LATENCY] }), ...sizedPeers, proposed("new"), sized("new", params)]);
      return pruneReason(s, s.trials.get("new")!, progress(1, 0.75));
    };
    // 3k parameters: no peer is as small, so it runs to the end (a single-objective goal would stop it).
    expect(pareto(3_000n)).toBeUndefined();
    // 80k: four peers as small or smaller (median 0.815).
    expect(pareto(80_000n)).toMatch(/below the median 81\.50% of 4 finished trials at rung 0 with a none schedule of 2 epochs and at most its 80000 parameters/);
  });

  it("keeps the curves a stopped trial reached", () => {
    const r = partialResult([progress(2, 0.7), progress(1, 0.6), progress(1, 0.65, 1)]);
    expect(r.seedResults.map((s) => [s.seed, s.learningCurve?.valAccuracy])).toEqual([[0, [0.6, 0.7]], [1, [0.65]]]);
  });
});
