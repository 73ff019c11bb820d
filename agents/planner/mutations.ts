/**
 * Edits of a parent trial, one recipe surface each. They work on the
 * declarative model_config and train_config (not on templates), so they
 * apply equally to configs a template, a user or an LLM wrote. A model in
 * Python (launch --from model.py) gets every recipe edit and, instead of the
 * layer edits, changes of its constructor's numeric and boolean arguments.
 */
import type { SearchDevice } from "../../core/defaults.js";
import { applies, batchSizes, cropPaddingFor, cutoutFor, DEFAULT_LR, editOf, imageSide, RECIPE_DEFAULTS, searchStart } from "../../core/space.js";
import { OPTIMIZER, type MutationName, type OptimizerName, type SurfaceName } from "../../core/enums.js";
import { argumentChanges, argumentDefault, isCodeModel, searchableArguments, type ModelConfigInput, type TrainConfigInput, type TrialModelInput } from "../../core/model-config.js";
import { ArgumentKind, type DatasetInfo, type ModelArgument } from "../../proto/gen/research/v1/runner_pb.js";
import type { LayerInput } from "../../core/model-config.js";
import { mirrors } from "../../core/tasks/index.js";
import { mapLayers, scaleWidths } from "../../core/tasks/fit.js";

export interface Genome {
  model: TrialModelInput;
  train: TrainConfigInput;
}

/** A genome whose model is a model_config: the layer edits' input. */
type LayerGenome = Genome & { model: ModelConfigInput };

/** What an edit may look at besides the parent. */
export interface EditEnv {
  info: DatasetInfo;
  rng: () => number;
  device: SearchDevice;
  /** A model in Python: its constructor's numeric and boolean arguments (launch --from model.py); else none. */
  arguments: readonly ModelArgument[];
}

/** The ways into a run that are not an edit of a parent (Mutation in common.proto). */
export const NOT_AN_EDIT = ["promotion", "last_training", "template", "random", "hand", "llm", "baseline", "warm_start", "tail"] as const satisfies readonly MutationName[];
/** An edit's name: its Mutation value's, so a proposal records which edit made it. */
export type EditName = Exclude<MutationName, (typeof NOT_AN_EDIT)[number]>;

export interface Mutation {
  surface: SurfaceName;
  name: EditName;
  /** Building blocks the edit introduces (for adoption of brief concepts). */
  blocks: string[];
  apply(g: Genome, env: EditEnv): Genome | undefined;
  describe: string;
  /** The edit in words when `describe` cannot say it (which argument, to what). */
  explain?(parent: Genome, child: Genome, env: EditEnv): string;
}

const clone = <T>(x: T): T => structuredClone(x);
/** What the trial trained with: the schema's default when its config names none. */
const lrOf = (g: Genome) => g.train.lr ?? DEFAULT_LR[RECIPE_DEFAULTS.optimizer];

/** The optimizer a recipe trains with: AdamW's decoupled decay is its only difference from Adam, and at 0 torch's steps are bit for bit Adam's. */
export const effectiveOptimizer = (optimizer: OptimizerName, weightDecay: number): OptimizerName =>
  optimizer === "adamw" && weightDecay === 0 ? "adam" : optimizer;
const DECAY = editOf("weight_decay").byOptimizer;
const LR = editOf("lr");

/** An edit of a model_config's layers: none applies to a model in Python. */
function onLayers(edit: (g: LayerGenome, env: EditEnv) => Genome | undefined): Mutation["apply"] {
  return (g, env) => (isCodeModel(g.model) ? undefined : edit(g as LayerGenome, env));
}

const isPool = (l: LayerInput) => l.type === "maxpool" || l.type === "avgpool" || l.type === "global_avgpool" || l.type === "flatten";

/** Repeats the block just before the first pooling stage (or the last hidden block of an MLP). */
function deepen(g: LayerGenome): Genome | undefined {
  const layers = g.model.layers;
  const end = layers.findIndex(isPool);
  const stop = end < 0 ? layers.length : end;
  let start = -1;
  for (let i = stop - 1; i >= 0; i--) {
    const t = layers[i]!.type;
    if (["conv2d", "residual", "mbconv", "ghost", "linear", "conv1d", "transformer_encoder", "mixer_block", "gru"].includes(t)) {
      start = i;
      break;
    }
  }
  if (start < 0) return undefined;
  const block = clone(layers.slice(start, stop));
  const head = block[0]!;
  // Stride inside a repeated block would shrink the map again.
  if ("stride" in head && head.stride !== undefined && head.stride > 1) block[0] = { ...head, stride: 1 } as LayerInput;
  if (head.type === "transformer_encoder" || head.type === "mixer_block" || head.type === "gru") {
    const model = clone(g.model);
    model.layers[start] = head.type === "gru" ? { ...head, layers: (head.layers ?? 1) + 1 } : { ...head, depth: (head.depth ?? 1) + 1 };
    return { ...g, model };
  }
  const model = clone(g.model);
  model.layers = [...layers.slice(0, stop), ...block, ...layers.slice(stop)];
  return { ...g, model };
}

function addSe(g: LayerGenome): Genome | undefined {
  if (JSON.stringify(g.model).includes('"se"')) return undefined;
  const out: LayerInput[] = [];
  let added = false;
  g.model.layers.forEach((l, i) => {
    out.push(l);
    const prev = g.model.layers[i - 2];
    if (l.type === "activation" && prev?.type === "conv2d" && g.model.layers[i + 1]?.type !== "se") {
      out.push({ type: "se", reduction: 8 });
      added = true;
    }
  });
  return added ? { ...g, model: { ...clone(g.model), layers: out } } : undefined;
}

function setActivation(g: LayerGenome, fn: "relu" | "gelu" | "silu" | "mish"): Genome | undefined {
  if (!JSON.stringify(g.model).includes('"activation"')) return undefined;
  const model = clone(g.model);
  model.layers = mapLayers(model.layers, (l) => (l.type === "activation" ? { ...l, fn } : l));
  return JSON.stringify(model) === JSON.stringify(g.model) ? undefined : { ...g, model };
}

/**
 * Every transformer block's heads halved or doubled; a count its width does not divide is the
 * compiler's to refuse, and the planner then passes over the edit.
 */
function setHeads(g: LayerGenome, rng: () => number): Genome | undefined {
  const blocks = g.model.layers.filter((l) => l.type === "transformer_encoder");
  if (!blocks.length) return undefined;
  const heads = blocks[0]!.heads ?? 4;
  const to = pick([heads * 2, ...(heads > 1 ? [heads / 2] : [])], rng);
  const model = clone(g.model);
  model.layers = model.layers.map((l) => (l.type === "transformer_encoder" ? { ...l, heads: to } : l));
  return { ...g, model };
}

/** Raises the last dropout, or adds one before the implicit head. */
function moreDropout(g: LayerGenome): Genome | undefined {
  const model = clone(g.model);
  const i = model.layers.map((l) => l.type).lastIndexOf("dropout");
  if (i >= 0) {
    const l = model.layers[i] as { type: "dropout"; p?: number };
    if ((l.p ?? 0.1) >= 0.5) return undefined;
    model.layers[i] = { type: "dropout", p: Math.min(0.5, (l.p ?? 0.1) + 0.1) };
  } else model.layers.push({ type: "dropout", p: 0.2 });
  return { ...g, model };
}

/** The values one edit may move an argument to from `v`: up or down a step of its kind's scale. */
function stepsOf(a: ModelArgument, v: number | boolean): Array<number | boolean> {
  if (typeof v === "boolean") return [!v];
  if (a.kind === ArgumentKind.INT) {
    // Small counts (depth, blocks) move by one; widths by half again.
    const up = v >= 4 ? Math.round(v * 1.5) : v + 1;
    const down = v >= 4 ? Math.round(v / 1.5) : v - 1;
    return [up, ...(down >= Math.min(1, a.defaultValue) ? [down] : [])];
  }
  // A value in [0, 1) reads as a rate (dropout, a drop-path): tenths; anything else doubles or halves.
  if (v >= 0 && v < 1) return [Math.min(0.9, Math.round((v + 0.1) * 100) / 100), ...(v > 0 ? [Math.max(0, Math.round((v - 0.1) * 100) / 100)] : [])];
  return [v * 2, v / 2];
}

/** One searchable constructor argument of a model in Python moved a step; undefined for a model_config. */
function editArgument(g: Genome, env: EditEnv): Genome | undefined {
  if (!isCodeModel(g.model)) return undefined;
  const kwargs = g.model.init_kwargs ?? {};
  const moves = searchableArguments(env.arguments, env.info).flatMap((a) => stepsOf(a, kwargs[a.name] ?? argumentDefault(a)).map((to) => ({ a, to })));
  if (moves.length === 0) return undefined;
  const { a, to } = pick(moves, env.rng);
  const init_kwargs = { ...kwargs, [a.name]: to };
  // Back at its default the argument is left out: one model, one spelling (and one fingerprint).
  if (to === argumentDefault(a)) delete init_kwargs[a.name];
  return { ...g, model: { ...g.model, init_kwargs } };
}

// A rate to four significant digits: three times 0.05 is 0.15 in a recipe, not 0.15000000000000002.
const train = (g: Genome, patch: Partial<TrainConfigInput>): Genome => ({
  ...g,
  train: { ...g.train, ...patch, ...(patch.lr !== undefined && { lr: Number(patch.lr.toPrecision(4)) }) },
});
const pick = <T>(xs: readonly T[], rng: () => number): T => xs[Math.floor(rng() * xs.length)]!;
/** The shortest context the context edit goes to: fewer bytes than a word or two leave a model nothing to read. */
const MIN_CONTEXT = 16;

/**
 * The learning rate that keeps a recipe's step at another batch size: SGD's grows with the
 * batch (Goyal et al., 2017), Adam's with its square root (the update's noise scale).
 */
export function lrForBatch(optimizer: OptimizerName, lr: number, from: number, to: number): number {
  const ratio = to / from;
  return lr * (optimizer === "sgd" ? ratio : Math.sqrt(ratio));
}


export const MUTATIONS: Mutation[] = [
  { surface: "architecture", name: "widen", blocks: [], describe: "widen every layer by 1.5x", apply: onLayers((g) => ({ ...g, model: scaleWidths(g.model, 1.5) })) },
  { surface: "architecture", name: "narrow", blocks: [], describe: "narrow every layer to 2/3", apply: onLayers((g) => ({ ...g, model: scaleWidths(g.model, 2 / 3) })) },
  { surface: "architecture", name: "deepen", blocks: [], describe: "repeat the first stage's block", apply: onLayers(deepen) },
  { surface: "architecture", name: "add_se", blocks: ["se"], describe: "add squeeze-excitation after conv blocks", apply: onLayers(addSe) },
  { surface: "architecture", name: "heads", blocks: ["transformer_encoder"], describe: "halve or double the attention heads", apply: onLayers((g, { rng }) => setHeads(g, rng)) },
  {
    surface: "architecture",
    name: "activation",
    blocks: ["activation:gelu", "activation:silu", "activation:mish"],
    describe: "switch the activation function",
    apply: onLayers((g, { rng }) => setActivation(g, pick(["gelu", "silu", "mish", "relu"] as const, rng))),
  },
  {
    surface: "architecture",
    name: "argument",
    blocks: [],
    describe: "change one of the model's constructor arguments",
    apply: editArgument,
    explain: (parent, child, env) =>
      `set ${argumentChanges(parent.model, child.model, env.arguments)
        .map((c) => `${c.name} ${c.from} -> ${c.to}`)
        .join(", ")}`,
  },
  {
    surface: "optimisation",
    name: "lr_up",
    blocks: [],
    describe: "double the learning rate",
    apply: (g) => (lrOf(g) >= LR.max ? undefined : train(g, { lr: lrOf(g) * LR.factor })),
  },
  {
    surface: "optimisation",
    name: "lr_down",
    blocks: [],
    describe: "halve the learning rate",
    apply: (g) => (lrOf(g) <= LR.min ? undefined : train(g, { lr: lrOf(g) / LR.factor })),
  },
  {
    surface: "optimisation",
    name: "cosine",
    blocks: ["cosine_schedule", "warmup"],
    describe: "cosine schedule with one warmup epoch",
    apply: (g) =>
      g.train.schedule === "cosine" ? undefined : train(g, { schedule: "cosine", warmup_epochs: (g.train.epochs ?? RECIPE_DEFAULTS.epochs) > 2 ? 1 : 0 }),
  },
  {
    surface: "optimisation",
    name: "onecycle",
    blocks: ["onecycle_schedule"],
    describe: "one-cycle schedule at 3x the peak learning rate",
    apply: (g) => (g.train.schedule === "onecycle" ? undefined : train(g, { schedule: "onecycle", lr: lrOf(g) * 3, warmup_epochs: 0 })),
  },
  {
    surface: "optimisation",
    name: "optimizer",
    blocks: ["adamw", "sgd"],
    describe: "switch optimizer",
    apply: (g, { rng }) => {
      const decay = g.train.weight_decay ?? 0;
      const opt = pick(OPTIMIZER.names.filter((o) => o !== effectiveOptimizer(g.train.optimizer ?? RECIPE_DEFAULTS.optimizer, decay)), rng);
      // Decay stays on or off at the new optimizer's scale, except that AdamW always brings it: without, it is Adam.
      const weight_decay = opt === "adamw" || decay > 0 ? DECAY[opt] : 0;
      return train(g, { ...searchStart(opt), weight_decay });
    },
  },
  {
    surface: "optimisation",
    name: "batch",
    blocks: [],
    describe: "change the batch size, the learning rate scaled with it",
    apply: (g, { rng, device, info }) => {
      const from = g.train.batch_size ?? RECIPE_DEFAULTS.batchSize;
      const to = pick(batchSizes(info, device).filter((x) => x !== from), rng);
      const optimizer = g.train.optimizer ?? RECIPE_DEFAULTS.optimizer;
      return train(g, { batch_size: to, lr: lrForBatch(optimizer, lrOf(g), from, to) });
    },
  },
  { surface: "regularisation", name: "dropout", blocks: ["dropout"], describe: "more dropout before the head", apply: onLayers(moreDropout) },
  {
    surface: "regularisation",
    name: "weight_decay",
    blocks: ["weight_decay"],
    describe: "weight decay",
    apply: (g) => ((g.train.weight_decay ?? 0) > 0 ? undefined : train(g, { weight_decay: DECAY[g.train.optimizer ?? RECIPE_DEFAULTS.optimizer] })),
  },
  {
    surface: "regularisation",
    name: "label_smoothing",
    blocks: ["label_smoothing"],
    describe: "label smoothing 0.1",
    apply: (g, { info }) => ((g.train.label_smoothing ?? 0) > 0 || !applies("label_smoothing", info) ? undefined : train(g, { label_smoothing: editOf("label_smoothing").to })),
  },
  {
    surface: "architecture",
    name: "context",
    blocks: [],
    describe: "halve or double the bytes a language model reads at once",
    apply: (g, { info, rng }) => {
      if (!applies("context", info)) return undefined;
      const row = info.inputShape[0] ?? 0;
      const from = g.train.context || row;
      const options = [from / 2, from * 2].filter((c) => c >= MIN_CONTEXT && c <= row);
      if (!options.length) return undefined;
      const to = pick(options, rng);
      // The whole row is the schema's default: one context, one spelling (and one fingerprint).
      return train(g, { context: to === row ? 0 : to });
    },
  },
  {
    surface: "regularisation",
    name: "augment",
    blocks: ["random_crop", "hflip"],
    describe: "random crop (and flips where labels allow)",
    apply: (g, { info }) => {
      if (!applies("augment.crop_padding", info) || (g.train.augment?.crop_padding ?? 0) > 0) return undefined;
      return train(g, { augment: { ...g.train.augment, crop_padding: cropPaddingFor(imageSide(info)), hflip: mirrors(info) } });
    },
  },
  {
    surface: "regularisation",
    name: "tta",
    blocks: ["tta", "hflip"],
    describe: "test-time flip averaging: each image's logits averaged with its mirror's",
    // A GPU's edit: on a CPU the second pass costs a probe most of its time again (it validates
    // 6,000 images each epoch and trains on 1,000), and that time buys trials there.
    apply: (g, { info, device }) =>
      device !== "cuda" || g.train.tta_hflip || !applies("tta_hflip", info) || !mirrors(info) ? undefined : train(g, { tta_hflip: true }),
  },
  {
    surface: "regularisation",
    name: "cutout",
    blocks: ["cutout"],
    describe: "cutout: a random square of each training image blanked",
    apply: (g, { info }) => {
      if (!applies("augment.cutout", info) || (g.train.augment?.cutout ?? 0) > 0) return undefined;
      return train(g, { augment: { ...g.train.augment, cutout: cutoutFor(imageSide(info)) } });
    },
  },
];
