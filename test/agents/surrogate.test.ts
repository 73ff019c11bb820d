import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { mulberry32 } from "../../agents/planner/proposals.js";
import { fitTpe, genomeFeatures, GENOME_SPACE, MIN_HISTORY, type Dimension, type Observation } from "../../agents/planner/surrogate.js";
import { templatesFor } from "../../core/tasks/index.js";
import { ACTIVATIONS, type ModelConfigInput, type TrainConfigInput } from "../../core/model-config.js";
import { DatasetInfoSchema } from "../../proto/gen/research/v1/runner_pb.js";

/*
 * A stand-in for the planner's space: the optimum of x0 moves with the
 * category (as the right lr moves with the optimizer), the other continuous
 * dimensions have fixed optima, one category is best, and evaluations are noisy.
 */
const SPACE: Dimension[] = [
  { name: "x0", kind: "continuous", low: 0, high: 1 },
  { name: "x1", kind: "continuous", low: 0, high: 1 },
  { name: "x2", kind: "continuous", low: 0, high: 1 },
  { name: "x3", kind: "continuous", low: 0, high: 1 },
  { name: "c", kind: "categorical", categories: 3 },
];
const X0_BEST = [0.15, 0.5, 0.85];
const OFFSET = [0, 0.2, 0.1];
const BEST = 0.2;

function truth(x: number[]): number {
  const [x0, x1, x2, x3, c] = x as [number, number, number, number, number];
  return OFFSET[c]! - (4 * (x0 - X0_BEST[c]!) ** 2 + 2 * (x1 - 0.3) ** 2 + 2 * (x2 - 0.7) ** 2 + (x3 - 0.2) ** 2);
}

function gaussian(rng: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - rng())) * Math.cos(2 * Math.PI * rng());
}

const draw = (rng: () => number): number[] => [rng(), rng(), rng(), rng(), Math.floor(rng() * 3)];

const BUDGET = 40;
const INITIAL = 6;
const CANDIDATES = 24;
const NOISE = 0.05;

/** Regret of the best evaluated point (by its true value) after BUDGET noisy evaluations. */
function search(seed: number, guided: boolean): number {
  const rng = mulberry32(seed);
  const history: Observation[] = [];
  for (let t = 0; t < BUDGET; t++) {
    const model = guided && t >= INITIAL ? fitTpe(SPACE, history) : undefined;
    let x = draw(rng);
    if (model) {
      let best = model.score(x);
      for (let k = 1; k < CANDIDATES; k++) {
        const c = draw(rng);
        const s = model.score(c);
        if (s > best) [x, best] = [c, s];
      }
    }
    history.push({ x, y: truth(x) + NOISE * gaussian(rng) });
  }
  return BEST - Math.max(...history.map((o) => truth(o.x)));
}

const SEEDS = Array.from({ length: 20 }, (_, i) => 1000 + i);
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

function expectFeatures(actual: number[], expected: number[]) {
  expect(actual).toHaveLength(GENOME_SPACE.length);
  actual.forEach((v, i) => expect(v, GENOME_SPACE[i]!.name).toBeCloseTo(expected[i]!, 9));
}

function genome(optimizer: "sgd" | "adam", lr: number, log10Params: number, extra: TrainConfigInput = {}): number[] {
  const train: TrainConfigInput = { optimizer, lr, weight_decay: 5e-4, batch_size: 128, ...extra };
  return genomeFeatures({ name: "g", layers: [{ type: "conv2d", out_channels: 16 }, { type: "flatten" }] }, train, 10 ** log10Params);
}

/** Good: sgd at lr 0.05. Bad: adam at the same lr, and sgd at lr 1e-3. */
function clusters(rng: () => number): Observation[] {
  const jitter = () => 2 ** (rng() - 0.5);
  const out: Observation[] = [];
  for (let i = 0; i < 6; i++) out.push({ x: genome("sgd", 0.05 * jitter(), 4.5 + 0.3 * rng()), y: 0.9 + 0.02 * rng() });
  for (let i = 0; i < 6; i++) out.push({ x: genome("adam", 0.05 * jitter(), 4.5 + 0.3 * rng()), y: 0.5 + 0.2 * rng() });
  for (let i = 0; i < 6; i++) out.push({ x: genome("sgd", 1e-3 * jitter(), 4.5 + 0.3 * rng()), y: 0.5 + 0.2 * rng() });
  return out;
}

describe("TPE surrogate", () => {
  it("beats random search with the same evaluations (mean regret after 40 over 20 seeds: TPE 0.114, random 0.211)", () => {
    const tpe = mean(SEEDS.map((s) => search(s, true)));
    const random = mean(SEEDS.map((s) => search(s, false)));
    console.log(`mean regret after ${BUDGET} evaluations: tpe ${tpe.toFixed(4)}, random ${random.toFixed(4)}`);
    expect(tpe).toBeLessThan(0.7 * random);
  });

  it("reads genome features from a hand-written config, with the schemas' defaults for absent fields", () => {
    const model: ModelConfigInput = {
      name: "small-resnet",
      layers: [
        { type: "conv2d", out_channels: 16 },
        { type: "batchnorm" },
        { type: "activation", fn: "gelu" },
        { type: "se" },
        { type: "residual", layers: [{ type: "conv2d", out_channels: 16 }, { type: "batchnorm" }, { type: "activation" }, { type: "conv2d", out_channels: 16 }, { type: "activation" }] },
        { type: "maxpool" },
        { type: "flatten" },
        { type: "dropout" },
        { type: "dropout", p: 0.3 },
        { type: "linear", out_features: 10 },
      ],
    };
    const train: TrainConfigInput = {
      optimizer: "sgd",
      lr: 0.05,
      weight_decay: 5e-4,
      label_smoothing: 0.1,
      schedule: "cosine",
      batch_size: 64,
      epochs: 9,
      augment: { crop_padding: 2 },
    };
    // Categories are indices: optimizers adam, adamw, sgd and schedules none, step, cosine, onecycle in proto order;
    // activations as in ACTIVATIONS (relu 0), the two default relus outnumbering the gelu.
    expectFeatures(genomeFeatures(model, train, 20_000), [Math.log10(20_000), 4, Math.log10(0.05), Math.log10(5.01e-4), 0.1, 0.3, 2, 2, 6, 1, 1, 0]);
    const mlp: ModelConfigInput = { name: "mlp", layers: [{ type: "flatten" }, { type: "linear", out_features: 10 }] };
    expectFeatures(genomeFeatures(mlp, {}, 1000), [3, 1, -3, -6, 0, 0, 0, 0, 7, 0, 0, ACTIVATIONS.length]);

    const info = create(DatasetInfoSchema, { name: "fashion-mnist", inputShape: [1, 28, 28], numClasses: 10, inputDtype: "float32", nTrain: 54000, nVal: 6000 });
    const mbconv = templatesFor(info).find((t) => t.name === "mbconv-net")!.build(info);
    const feature = (name: string) => genomeFeatures(mbconv, {}, 50_000)[GENOME_SPACE.findIndex((d) => d.name === name)];
    // MBConv blocks carry SE gates (se_ratio 0.25) and SiLU by default.
    expect(feature("se")).toBe(1);
    expect(feature("activation")).toBe(ACTIVATIONS.indexOf("silu"));
  });

  it("declines below the minimum history and prefers the good cluster", () => {
    const history = clusters(mulberry32(3));
    expect(fitTpe(GENOME_SPACE, history.slice(0, MIN_HISTORY - 1))).toBeUndefined();
    const model = fitTpe(GENOME_SPACE, history)!;
    expect(model).toBeDefined();
    const good = genome("sgd", 0.06, 4.6);
    expect(model.score(good)).toBeGreaterThan(model.score(genome("adam", 0.06, 4.6)) + 1);
    expect(model.score(good)).toBeGreaterThan(model.score(genome("sgd", 1.2e-3, 4.6)) + 1);
    // An edit in a dimension no config has varied yet stays ranked by where its parent stands.
    const smoothed = { label_smoothing: 0.1 };
    expect(model.score(genome("sgd", 0.06, 4.6, smoothed))).toBeGreaterThan(model.score(genome("adam", 0.06, 4.6, smoothed)) + 1);
  });

  it("ignores a warm-start observation of weight 0 and counts one of weight 1/2", () => {
    const history = clusters(mulberry32(11));
    const outlier: Observation = { x: genome("adam", 1e-4, 6), y: 2 };
    const probes = [genome("adam", 1e-4, 6), genome("sgd", 0.05, 4.6), genome("adam", 0.01, 5)];
    const base = fitTpe(GENOME_SPACE, history)!;
    const zero = fitTpe(GENOME_SPACE, [{ ...outlier, weight: 0 }, ...history])!;
    for (const p of probes) expect(zero.score(p)).toBe(base.score(p));
    expect(fitTpe(GENOME_SPACE, [...history.slice(0, MIN_HISTORY - 1), { ...outlier, weight: 0 }])).toBeUndefined();

    const half = fitTpe(GENOME_SPACE, [...history, { ...outlier, weight: 0.5 }])!;
    expect(half.score(outlier.x)).toBeGreaterThan(base.score(outlier.x) + 1);
  });
});
