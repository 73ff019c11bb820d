/**
 * A surrogate that ranks candidate configs before any of them trains: a
 * tree-structured Parzen estimator (Bergstra et al. 2011, Optuna's default
 * sampler) in its multivariate form. The history splits into the top gamma
 * (good) and the rest (bad); each half becomes a kernel density, and a
 * candidate scores log l(x) - log g(x), which orders candidates as expected
 * improvement does (Bergstra et al., section 4.1).
 *
 * Why TPE rather than a GP or a random forest: a run has tens of evaluations
 * over a mixed space (optimizer and schedule are categories, lr and width are
 * not), where a GP needs a categorical kernel and a hyperparameter fit that is
 * fragile at that size, and a forest's variance estimate is too crude to rank by.
 * Two Parzen estimators take categories natively, have no fit that can diverge,
 * cost O(history) per score and need no dependency; the product kernel keeps
 * interactions such as "the right lr depends on the optimizer".
 */
import { RECIPE_FEATURES, recipeFeatures } from "../../core/space.js";
import { ACTIVATIONS, isCodeModel, type Activation, type TrainConfigInput, type TrialModelInput } from "../../core/model-config.js";
import type { LayerInput } from "../../core/model-config.js";

export interface Observation {
  x: number[];
  /** Higher is better. */
  y: number;
  /**
   * 1 when absent. Below 1 for warm-start points (past runs on comparable data, agents/planner/past-runs.ts):
   * they count towards the densities and the good/bad split, but less than this run's.
   */
  weight?: number;
}

/**
 * A continuous dimension's bounds scale its bandwidths and its prior; values
 * outside them are still scored. A categorical value is an index in [0, categories).
 */
export type Dimension =
  | { name: string; kind: "continuous"; low: number; high: number }
  | { name: string; kind: "categorical"; categories: number };

export interface TpeOptions {
  /** Share of the history's weight that counts as good; 0.25 by default. */
  gamma?: number;
  /**
   * Weight of the prior component (a broad Gaussian per continuous dimension,
   * uniform per category) in each density, as in Optuna; 1 by default, > 0.
   */
  prior?: number;
}

export interface Surrogate {
  /** log l(x) - log g(x): higher is a more promising candidate. Only the order means something. */
  score(x: number[]): number;
}

/** Below this many observations (of positive weight) the densities are mostly prior: fitTpe declines. */
export const MIN_HISTORY = 4;

const LOG_SQRT_2PI = 0.5 * Math.log(2 * Math.PI);

/** undefined below MIN_HISTORY: the caller keeps its own order until there is something to learn from. */
export function fitTpe(space: Dimension[], history: Observation[], opts: TpeOptions = {}): Surrogate | undefined {
  const gamma = opts.gamma ?? 0.25;
  const prior = opts.prior ?? 1;
  if (!(prior > 0)) throw new RangeError(`fitTpe: prior must be > 0, got ${prior}`);
  if (!(gamma > 0 && gamma < 1)) throw new RangeError(`fitTpe: gamma must be in (0, 1), got ${gamma}`);
  const checkLength = (x: number[]) => {
    if (x.length !== space.length) throw new RangeError(`fitTpe: ${x.length} features for a space of ${space.length}`);
  };
  // Dropping weightless points up front keeps them out of the split's ranks and counts too.
  const obs = history.filter((o) => weightOf(o) > 0);
  if (obs.length < MIN_HISTORY) return undefined;
  obs.forEach((o) => checkLength(o.x));
  const sorted = [...obs].sort((a, b) => b.y - a.y);
  const total = sorted.reduce((s, o) => s + weightOf(o), 0);
  // At least one good and one bad point, whatever the weights.
  let nGood = 1;
  for (let acc = weightOf(sorted[0]!); nGood < sorted.length - 1 && acc < gamma * total; nGood++) acc += weightOf(sorted[nGood]!);
  const good = sorted.slice(0, nGood);
  const bad = sorted.slice(nGood);
  const spread = kernelSpread(space, obs, prior);
  return {
    score: (x) => {
      checkLength(x);
      const priorTerm = Math.log(prior) + priorLogDensity(space, x);
      return mixtureLogDensity(space, spread, good, prior, priorTerm, x) - mixtureLogDensity(space, spread, bad, prior, priorTerm, x);
    },
  };
}

const weightOf = (o: Observation) => o.weight ?? 1;

/**
 * Per dimension: the Gaussian bandwidth (continuous) or the mass added to every
 * category (categorical). Both densities share them, from the whole history:
 * with per-half bandwidths the smaller half gets the wider kernels, and over
 * the many dimensions where every config agrees (an edit changes one) that
 * width difference alone would outweigh what the history says.
 */
function kernelSpread(space: Dimension[], obs: Observation[], prior: number): number[] {
  const w = obs.map(weightOf);
  const sw = w.reduce((a, b) => a + b, 0);
  // Kish's effective sample size, so down-weighted warm-start points narrow the kernels less.
  const nEff = (sw * sw) / w.reduce((a, b) => a + b * b, 0);
  return space.map((d, j) => {
    if (d.kind === "categorical") return prior / (nEff + 1); // Optuna's smoothing: the prior's mass shared among the kernels
    const range = d.high - d.low;
    const mean = obs.reduce((s, o, i) => s + w[i]! * o.x[j]!, 0) / sw;
    const sd = Math.sqrt(obs.reduce((s, o, i) => s + w[i]! * (o.x[j]! - mean) ** 2, 0) / sw);
    // Scott's rule for a product kernel; Optuna's magic clip keeps a tight cluster from a zero-width kernel.
    const scott = sd * nEff ** (-1 / (space.length + 4));
    return Math.min(range, Math.max(range / Math.min(100, 1 + nEff), scott));
  });
}

/** log of (sum_i w_i K(x; x_i) + prior P(x)) / (sum_i w_i + prior), with priorTerm = log(prior P(x)). */
function mixtureLogDensity(
  space: Dimension[],
  spread: number[],
  obs: Observation[],
  prior: number,
  priorTerm: number,
  x: number[],
): number {
  const terms = obs.map((o) => {
    let s = Math.log(weightOf(o));
    space.forEach((d, j) => {
      const h = spread[j]!;
      s += d.kind === "continuous" ? logNormal(x[j]!, o.x[j]!, h) : Math.log(((x[j] === o.x[j] ? 1 : 0) + h) / (1 + d.categories * h));
    });
    return s;
  });
  terms.push(priorTerm);
  const m = Math.max(...terms);
  const total = obs.reduce((s, o) => s + weightOf(o), 0) + prior;
  return m + Math.log(terms.reduce((s, t) => s + Math.exp(t - m), 0)) - Math.log(total);
}

/** Optuna's prior: a Gaussian over the bounds' midpoint as wide as the range, uniform over categories. */
function priorLogDensity(space: Dimension[], x: number[]): number {
  return space.reduce(
    (s, d, j) => s + (d.kind === "continuous" ? logNormal(x[j]!, (d.low + d.high) / 2, d.high - d.low) : -Math.log(d.categories)),
    0,
  );
}

function logNormal(x: number, mu: number, sigma: number): number {
  const z = (x - mu) / sigma;
  return -0.5 * z * z - Math.log(sigma) - LOG_SQRT_2PI;
}

/** The model's own features, read off its layers (a model in Python has none to read: its size only). */
const MODEL_FEATURES: Array<{ dim: Dimension; read: (layers: LayerInput[], params: number) => number }> = [
  { dim: { name: "log10_params", kind: "continuous", low: 3, high: 8 }, read: (_, params) => Math.log10(Math.max(1, params)) },
  { dim: { name: "depth", kind: "continuous", low: 1, high: 40 }, read: (layers) => layers.reduce((s, l) => s + weightedDepth(l), 0) },
  { dim: { name: "dropout", kind: "continuous", low: 0, high: 0.6 }, read: (layers) => Math.max(0, ...layers.map(dropoutOf)) },
  { dim: { name: "se", kind: "categorical", categories: 2 }, read: (layers) => (layers.some((l) => l.type === "se" || (l.type === "mbconv" && (l.se_ratio ?? 0.25) > 0)) ? 1 : 0) },
  // The last category: no explicit activation (a transformer's or mixer's is built in).
  { dim: { name: "activation", kind: "categorical", categories: ACTIVATIONS.length + 1 }, read: dominantActivation },
];

const RECIPE_DIMS: Dimension[] = RECIPE_FEATURES.map(({ row, feature }) =>
  "categorical" in feature ? { name: feature.name, kind: "categorical", categories: row.choices!.length } : { name: feature.name, kind: "continuous", low: feature.low, high: feature.high },
);

/**
 * The surrogate's order of the model's features and the recipe's (the rows of core/space.ts
 * with a feature), as it was before the table, so a run's scores stay what they were; a new
 * row's feature comes last.
 */
const ORDER = ["log10_params", "depth", "log10_lr", "log10_weight_decay", "label_smoothing", "dropout", "optimizer", "schedule", "log2_batch_size", "augment", "se", "activation"];
const rank = (name: string) => (ORDER.includes(name) ? ORDER.indexOf(name) : ORDER.length);
const ALL: Dimension[] = [...MODEL_FEATURES.map((f) => f.dim), ...RECIPE_DIMS];
/** Where each of ALL's values goes in GENOME_SPACE. */
const POSITION = ALL.map((_, i) => i).sort((a, b) => rank(ALL[a]!.name) - rank(ALL[b]!.name) || a - b);

/** The order of genomeFeatures' values. Subset and epochs are absent: they are the fidelity, which the scheduler decides. */
export const GENOME_SPACE: Dimension[] = POSITION.map((i) => ALL[i]!);

/** What a trial trained with, in GENOME_SPACE's order; absent fields read as the schemas' defaults. */
export function genomeFeatures(model: TrialModelInput, train: TrainConfigInput, params: number): number[] {
  const layers = isCodeModel(model) ? [] : flatLayers(model.layers);
  const all = [...MODEL_FEATURES.map((f) => f.read(layers, params)), ...recipeFeatures(train)];
  return POSITION.map((i) => all[i]!);
}

/** The index in ACTIVATIONS of the most used activation (the first on a tie), ACTIVATIONS.length when there is none. */
function dominantActivation(layers: LayerInput[]): number {
  const counts = new Map<Activation, number>();
  for (const l of layers) {
    const fn = l.type === "activation" ? (l.fn ?? "relu") : l.type === "mbconv" ? (l.activation ?? "silu") : undefined;
    if (fn) counts.set(fn, (counts.get(fn) ?? 0) + 1);
  }
  let best: Activation | undefined;
  for (const [fn, n] of counts) if (best === undefined || n > counts.get(best)!) best = fn;
  return best === undefined ? ACTIVATIONS.length : ACTIVATIONS.indexOf(best);
}

function flatLayers(layers: LayerInput[]): LayerInput[] {
  return layers.flatMap((l) => (l.type === "residual" ? [l, ...flatLayers(l.layers)] : [l]));
}

/** Layers with weights that transform features; norms and SE gates do not add depth. */
function weightedDepth(l: LayerInput): number {
  switch (l.type) {
    case "conv2d":
    case "depthwise_conv2d":
    case "pointwise_conv2d":
    case "conv1d":
    case "linear":
    case "ghost":
    case "mbconv":
    case "patch_embed":
    case "embedding":
    case "ngram_embedding":
      return 1;
    case "transformer_encoder":
    case "mixer_block":
      return l.depth ?? 1;
    default:
      return 0;
  }
}

/** Defaults as in core/model-config.ts: 0.1 for dropout layers, 0 inside transformer and mixer blocks. */
function dropoutOf(l: LayerInput): number {
  switch (l.type) {
    case "dropout":
    case "dropout2d":
      return l.p ?? 0.1;
    case "transformer_encoder":
    case "mixer_block":
      return l.dropout ?? 0;
    default:
      return 0;
  }
}
