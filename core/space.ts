/**
 * The search space, as one table: every field of a training recipe is a row (name, type,
 * bounds, default, and for the dimensions the planner searches: the surface an edit moves
 * it on, its prior for a random draw, how the surrogate encodes it, which data it applies
 * to). What reads or writes a recipe derives from the rows: the train_config zod schema
 * (core/model-config.ts), the worker's JSON Schema (core/recipe.ts), the proto Recipe's
 * field maps, the surrogate's encoding, the random draw, the edits' steps, and the check of
 * a person's narrowed space (`launch --space`). A new dimension is one row here plus the
 * worker code that uses it (docs/ARCHITECTURE.md, "Extending").
 *
 * A user's space (`SpaceSpec`) names rows of this table and narrows them, as Optuna's
 * distributions or Ray Tune's param_space do: a range, a set of values, one value (pinned),
 * or "default" (left out of the search); `families` limits the model templates. Fidelity
 * (epochs, subset) and execution settings (amp, channels_last, deterministic, train_seconds)
 * are rows the search does not move: the scheduler and the device decide them.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { z } from "zod";
import { bool, nonNegInt, posInt } from "./zod-fields.js";
import type { SearchDevice } from "./defaults.js";
import { OPTIMIZER, SCHEDULE, type OptimizerName, type SurfaceName } from "./enums.js";
import type { SearchSpace, SearchSpaceSchema } from "../proto/gen/research/v1/events_pb.js";
import type { DatasetInfo } from "../proto/gen/research/v1/runner_pb.js";
import { learningOf } from "./learning/index.js";


type Kind = "float" | "int" | "bool" | "choice";
export type DimValue = number | boolean | string;

interface Row {
  /** The train_config field; "augment.cutout" lies in the augment object. */
  name: string;
  kind: Kind;
  /** Bounds the schema accepts; `lt`: the upper bound is excluded, `positive`: 0 is. */
  min?: number;
  max?: number;
  lt?: boolean;
  positive?: boolean;
  choices?: readonly string[];
  /** Undefined only for lr, whose default is its optimizer's (DEFAULT_LR). */
  default?: DimValue;
  describe?: string;
  /** The proto Recipe tracks the field's presence: 0 is a value, not "unset". */
  presence?: boolean;
  /** The surface the planner's edits move it on; absent: the search leaves it alone, and `fixed` says why. */
  surface?: SurfaceName;
  fixed?: string;
  /** The data it means something for; absent: every dataset. */
  appliesTo?: (info: DatasetInfo) => boolean;
  /** The surrogate's encoding (agents/planner/surrogate.ts): its bounds and how a value maps onto them. */
  feature?: { name: string; low: number; high: number; encode: (v: number) => number } | { name: string; categorical: true };
  /** How the planner's edit of it moves it (agents/planner/mutations.ts): a factor within limits, or the value it sets. */
  edit?: { factor: number; min: number; max: number } | { to: number } | { byOptimizer: Readonly<Record<OptimizerName, number>> };
  /**
   * Where the search starts it for an optimizer, where that is not its default (`searchStart`):
   * the planner's first recipes and its optimizer edit set these together.
   */
  start?: Partial<Readonly<Record<OptimizerName, DimValue>>>;
  /** The random planner's prior: a log-uniform or uniform range, or the values it picks among. */
  draw?: { log?: boolean; low: number; high: number; int?: boolean } | { values: (device: SearchDevice, info: DatasetInfo) => readonly DimValue[] };
}

/** Examples with classes (core/learning/): the task of every dataset before regression (unspecified) and since. */
export const hasClasses = (info: DatasetInfo) => learningOf(info.task).classes;
export const isImage = (info: DatasetInfo) => info.inputShape.length === 3 && info.inputDtype !== "int64";
/** The shorter side of an image dataset's samples; 0 for other data. */
export const imageSide = (info: DatasetInfo) => (isImage(info) ? Math.min(info.inputShape[1] ?? 0, info.inputShape[2] ?? 0) : 0);
/**
 * Random crops' padding: a shift of up to 1/14 of the side (2 px on 28 x 28 and 32 x 32, 1 on the
 * digits' 8 x 8). On the digits 2 px (a quarter of the image) cost the VGG-style template 0.8-1.7
 * pp of validation accuracy against 1 px or none, 3 seeds at 30 and 90 epochs
 * (bench/results/crop-digits-val.json).
 */
export const cropPaddingFor = (side: number) => Math.max(1, Math.round(side / 14));
/** Cutout's square: a quarter of the side (7 px on 28 x 28, 8 on 32 x 32), the size that pays on both. */
export const cutoutFor = (side: number) => Math.max(4, Math.round(side / 4));
/** Examples are windows of a corpus, predicted at every position (a language model's). */
const isCorpus = (info: DatasetInfo) => learningOf(info.task).perPosition;

/**
 * The runner's learning rate for a request without one: plain SGD needs a far larger
 * step than the adaptive optimizers. A train_config without lr gets the default
 * optimizer's, whatever optimizer it names (a zod default cannot look at a sibling).
 */
export const DEFAULT_LR: Readonly<Record<OptimizerName, number>> = { sgd: 0.05, adam: 1e-3, adamw: 1e-3 };

/** Batch sizes the batch edit and the random draw choose among: larger on a GPU, where small batches leave it idle. */
const BATCH_SIZES: Readonly<Record<SearchDevice, readonly number[]>> = { cpu: [64, 128, 256], cuda: [256, 512, 1024] };
/** A language model's batch counts windows of up to 256 bytes: an image batch's sizes would be 10-100x its tokens. */
const WINDOW_BATCH_SIZES: Readonly<Record<SearchDevice, readonly number[]>> = { cpu: [8, 16, 32], cuda: [32, 64, 128] };

/** The batch sizes the batch edit and the random draw choose among, for the dataset and device. */
export function batchSizes(info: DatasetInfo, device: SearchDevice): readonly number[] {
  return (isCorpus(info) ? WINDOW_BATCH_SIZES : BATCH_SIZES)[device];
}

/**
 * The rows, in the order of the train_config schema (and so of the worker's JSON Schema).
 * The surrogate reads the rows with a `feature` in this order too.
 */
export const SPACE = [
  { name: "optimizer", kind: "choice", choices: OPTIMIZER.names, default: "adam", surface: "optimisation", feature: { name: "optimizer", categorical: true }, draw: { values: () => OPTIMIZER.names } },
  {
    name: "lr",
    kind: "float",
    positive: true,
    max: 10,
    describe: "default: the optimizer's (core/space.ts DEFAULT_LR: sgd 0.05, adam and adamw 1e-3)",
    surface: "optimisation",
    feature: { name: "log10_lr", low: -5, high: 0, encode: Math.log10 },
    // Doubled or halved, never above 0.5 or below 1e-5.
    edit: { factor: 2, min: 1e-5, max: 0.5 },
    // Adam's and AdamW's at twice the runner's default: every built-in search has started there,
    // and the recorded runs the planner's replays check were made with it.
    start: { sgd: 0.05, adam: 2e-3, adamw: 2e-3 },
    draw: { log: true, low: 3e-4, high: 1e-2 },
  },
  { name: "momentum", kind: "float", min: 0, max: 1, lt: true, default: 0.9, presence: true, surface: "optimisation", start: { sgd: 0.9 } },
  { name: "nesterov", kind: "bool", default: false, surface: "optimisation", start: { sgd: true } },
  {
    name: "weight_decay",
    kind: "float",
    min: 0,
    max: 1,
    default: 0,
    surface: "regularisation",
    feature: { name: "log10_weight_decay", low: -6, high: 0, encode: (v) => Math.log10(v + 1e-6) },
    // AdamW's decay is scaled by the learning rate, hence its far larger usual value.
    edit: { byOptimizer: { sgd: 5e-4, adam: 5e-4, adamw: 0.05 } },
  },
  {
    name: "schedule",
    kind: "choice",
    choices: SCHEDULE.names,
    default: "none",
    surface: "optimisation",
    feature: { name: "schedule", categorical: true },
    // The step schedule's decays are set in epochs a random draw of epochs would not know.
    draw: { values: () => ["none", "cosine", "onecycle"] },
  },
  { name: "warmup_epochs", kind: "int", min: 0, max: 10000, default: 0, surface: "optimisation" },
  { name: "step_size", fixed: "the step schedule's own setting", kind: "int", min: 1, max: 10000, default: 10, describe: "epochs between decays of the step schedule" },
  { name: "gamma", fixed: "the step schedule's own setting", kind: "float", positive: true, max: 1, default: 0.1 },
  {
    name: "label_smoothing",
    kind: "float",
    min: 0,
    max: 1,
    lt: true,
    default: 0,
    surface: "regularisation",
    // A regression has no labels to smooth, and a language model's bits per byte would pay for them.
    appliesTo: hasClasses,
    feature: { name: "label_smoothing", low: 0, high: 0.3, encode: (v) => v },
    edit: { to: 0.1 },
    draw: { low: 0, high: 0.2 },
  },
  { name: "grad_clip", kind: "float", min: 0, default: 0, describe: "max gradient norm; 0 disables", surface: "optimisation", draw: { values: () => [0, 1] } },
  {
    name: "batch_size",
    kind: "int",
    min: 1,
    max: 1 << 16,
    default: 128,
    surface: "optimisation",
    feature: { name: "log2_batch_size", low: 4, high: 10, encode: Math.log2 },
    draw: { values: (device, info) => batchSizes(info, device) },
  },
  { name: "epochs", fixed: "epochs are the scheduler's fidelity: --epochs sets the probes', the time budget and --last-epochs the last training's", kind: "int", min: 1, max: 10000, default: 2, draw: { low: 2, high: 6, int: true } },
  { name: "subset", fixed: "the training examples are the scheduler's fidelity: --subset sets the probes'", kind: "int", min: 0, max: 1 << 30, default: 0, describe: "stratified training examples used; 0 means the whole training split" },
  { name: "augment.hflip", kind: "bool", default: false, surface: "regularisation", appliesTo: isImage },
  {
    name: "augment.crop_padding",
    kind: "int",
    min: 0,
    max: 64,
    default: 0,
    describe: "random crop after zero padding; 0 disables",
    surface: "regularisation",
    appliesTo: isImage,
    feature: { name: "augment", low: 0, high: 1, encode: (v) => (v > 0 ? 1 : 0) },
    draw: { values: (_device, info) => [0, cropPaddingFor(imageSide(info))] },
  },
  { name: "augment.cutout", kind: "int", min: 0, max: 1024, default: 0, describe: "side of the square cut out; 0 disables", surface: "regularisation", appliesTo: isImage },
  { name: "amp", fixed: "how the device computes, chosen for it", kind: "bool", default: false },
  { name: "channels_last", fixed: "how the device lays out images, chosen for it", kind: "bool", default: false },
  { name: "deterministic", fixed: "how the device computes, chosen for it", kind: "bool", default: false, describe: "bit-for-bit repeatable training where torch allows it (slower on GPUs)" },
  {
    name: "ema_decay",
    kind: "float",
    min: 0,
    max: 1,
    lt: true,
    default: 0,
    describe: "decay of an exponential moving average of the weights, used for evaluation (e.g. 0.999); 0 disables",
    surface: "regularisation",
  },
  {
    name: "swa",
    fixed: "a continued training's weight average, set by the planner",
    kind: "bool",
    default: false,
    describe: "stochastic weight averaging: evaluate and keep the mean of the weights at each epoch's end (not with ema_decay)",
  },
  {
    name: "tta_hflip",
    kind: "bool",
    default: false,
    describe: "test-time flip averaging: predict each image from its logits and its mirror's, averaged (two forward passes)",
    surface: "regularisation",
    appliesTo: isImage,
  },
  {
    name: "train_seconds",
    fixed: "the last training's clock, set by the time budget",
    kind: "float",
    min: 0,
    max: 86400,
    default: 0,
    describe: "stop training this many seconds after the job starts (its start-up included), annealing the schedule over that time (0: train every epoch)",
  },
  {
    // Whether it divides the row is the dataset's to say: the worker checks it (trainer.py).
    name: "context",
    kind: "int",
    min: 0,
    max: 4096,
    default: 0,
    describe: "language modelling: the bytes a model reads at once, a power of two dividing the dataset's row (0: the whole row)",
    surface: "architecture",
    appliesTo: isCorpus,
  },
] as const satisfies readonly Row[];

export type DimensionName = (typeof SPACE)[number]["name"];
const ROWS: readonly Row[] = SPACE;
const BY_NAME = new Map(ROWS.map((r) => [r.name, r]));

/** A row by name; undefined for a name outside the table. */
export function dimension(name: string): Row | undefined {
  return BY_NAME.get(name);
}

/** Whether a row means something for a dataset: label smoothing for classes, augmentation for images, context for a corpus. */
export function applies(name: DimensionName, info: DatasetInfo): boolean {
  return dimension(name)?.appliesTo?.(info) ?? true;
}

type EditOf<N extends DimensionName> = Extract<(typeof SPACE)[number], { name: N }> extends { edit: infer E } ? E : never;
/** A row's edit step, typed by its row: `editOf("lr").factor`. */
export const editOf = <N extends DimensionName>(name: N) => BY_NAME.get(name)!.edit as EditOf<N>;

type DefaultOf<N extends DimensionName> = Extract<(typeof SPACE)[number], { name: N }> extends { default: infer D } ? D : never;
const defaultOf = <N extends DimensionName>(name: N) => BY_NAME.get(name)!.default as DefaultOf<N>;

/**
 * Recipe values for when nobody chose one, read off the rows. The train_config schema fills
 * them for authors (people, the planner, LLMs) and the runner for a request that leaves a
 * field unset (0 or unspecified on the wire), so a recipe means the same whoever left a value
 * out. The Python worker has none of its own: it is always sent every field.
 */
export const RECIPE_DEFAULTS = {
  optimizer: defaultOf("optimizer"),
  schedule: defaultOf("schedule"),
  batchSize: defaultOf("batch_size"),
  epochs: defaultOf("epochs"),
  gamma: defaultOf("gamma"),
};

// ---------------------------------------------------------------- the zod schema

function zodOf(r: Row): z.ZodType {
  let t: z.ZodType;
  switch (r.kind) {
    case "bool":
      t = bool();
      break;
    case "choice":
      t = z.enum(r.choices as [string, ...string[]]);
      break;
    case "int":
      t = r.min === 1 ? posInt(r.max!) : nonNegInt(r.max!);
      break;
    case "float": {
      let n = z.number();
      if (r.positive) n = n.positive();
      if (r.min !== undefined) n = n.min(r.min);
      if (r.max !== undefined) n = r.lt ? n.lt(r.max) : n.max(r.max);
      t = n;
    }
  }
  t = r.default === undefined ? t.optional() : (t as z.ZodType<unknown>).default(r.default);
  return r.describe ? t.describe(r.describe) : t;
}

type Rows = (typeof SPACE)[number];
type ValueOf<R> = R extends { kind: "bool" } ? boolean : R extends { kind: "choice"; choices: readonly (infer C)[] } ? C : number;
type TopRow = Exclude<Rows, { name: `${string}.${string}` }>;
type Head = Rows["name"] extends infer N ? (N extends `${infer H}.${string}` ? H : never) : never;
type Leaf<N, H extends string> = N extends `${H}.${infer L}` ? L : never;
type Nested<H extends string> = { [R in Extract<Rows, { name: `${H}.${string}` }> as Leaf<R["name"], H>]: ValueOf<R> };

/** A recipe with every field filled, as the rows type it (lr: absent until its optimizer's default fills it). */
export type RecipeValues = { [R in Exclude<TopRow, { name: "lr" }> as R["name"]]: ValueOf<R> } & { lr?: number } & { [H in Head]: Nested<H> };
/** A recipe as an author writes it: every field may be left out. */
export type RecipeInput = { [K in keyof RecipeValues]?: RecipeValues[K] extends object ? Partial<RecipeValues[K]> : RecipeValues[K] };

/**
 * The train_config's fields as one strict zod object, from the rows: what core/model-config.ts's
 * TrainConfigSchema is built on (it adds the rules across fields and lr's default). A nested
 * object (augment) takes the place of its first row, so the fields keep the table's order.
 */
export function recipeObjectSchema(): z.ZodType<RecipeValues, RecipeInput> {
  const nested = new Map<string, Record<string, z.ZodType>>();
  for (const r of ROWS) {
    const [head, leaf] = r.name.split(".") as [string, string | undefined];
    if (leaf !== undefined) nested.set(head, { ...nested.get(head), [leaf]: zodOf(r) });
  }
  const heads = ROWS.map((r) => r.name.split(".")[0]!).filter((head, i, all) => all.indexOf(head) === i);
  const shape = Object.fromEntries(heads.map((h) => [h, nested.has(h) ? z.strictObject(nested.get(h)!).prefault({}) : zodOf(BY_NAME.get(h)!)]));
  // The one assertion: the rows' kinds and defaults are what the types above read off them.
  return z.strictObject(shape) as unknown as z.ZodType<RecipeValues, RecipeInput>;
}

// ---------------------------------------------------------------- the wire (proto Recipe)

const camel = (s: string) => s.replace(/_(\w)/g, (_, c: string) => c.toUpperCase());
const closed = (r: Row) => (r.name === "optimizer" ? OPTIMIZER : r.name === "schedule" ? SCHEDULE : undefined);

/** A value of a row as the proto Recipe carries it: an enum's number for a choice. */
function toWire(r: Row, v: unknown): unknown {
  return r.kind === "choice" ? closed(r)!.value(String(v)) : v;
}

/** A wire value as the row's, undefined where the wire says "not set" (0, false, an unspecified enum). */
function fromWire(r: Row, v: unknown): unknown {
  if (v === undefined || (!r.presence && (v === 0 || v === false))) return undefined;
  return r.kind === "choice" ? (closed(r)!.name(v as never) ?? v) : v;
}

/** A train_config's fields in the proto Recipe's shape (camelCase, nested, enums as numbers); `subset` travels in the dataset spec. */
export function wireFields(train: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const r of ROWS) {
    if (r.name === "subset") continue;
    const [head, leaf] = r.name.split(".") as [string, string | undefined];
    const v = leaf === undefined ? train[head] : (train[head] as Record<string, unknown> | undefined)?.[leaf];
    if (leaf === undefined) out[camel(head)] = toWire(r, v);
    else ((out[camel(head)] ??= {}) as Record<string, unknown>)[camel(leaf)] = toWire(r, v);
  }
  return out;
}

/** A proto Recipe's fields as the train_config an author would have written: unset fields left out. */
export function authoredFromWire(wire: Record<string, unknown> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const r of ROWS) {
    if (r.name === "subset") continue;
    const [head, leaf] = r.name.split(".") as [string, string | undefined];
    if (leaf === undefined) {
      const v = fromWire(r, wire?.[camel(head)]);
      if (v !== undefined) out[head] = v;
    } else {
      const v = fromWire(r, (wire?.[camel(head)] as Record<string, unknown> | undefined)?.[camel(leaf)]);
      if (v !== undefined) ((out[head] ??= {}) as Record<string, unknown>)[leaf] = v;
    }
  }
  return out;
}

// ---------------------------------------------------------------- reading a recipe

/** The value a recipe trains with for a row: the authored one, else the row's default (lr: its optimizer's). */
export function valueOf(train: Record<string, unknown>, name: DimensionName): DimValue {
  const [head, leaf] = name.split(".") as [string, string | undefined];
  const v = leaf === undefined ? train[head] : (train[head] as Record<string, unknown> | undefined)?.[leaf];
  if (v !== undefined) return v as DimValue;
  if (name === "lr") return DEFAULT_LR[(train.optimizer as OptimizerName | undefined) ?? RECIPE_DEFAULTS.optimizer];
  return dimension(name)!.default!;
}

/** A recipe with one row set (a copy; nested rows in their object). */
export function withValue<T extends Record<string, unknown>>(train: T, name: string, v: DimValue): T {
  const [head, leaf] = name.split(".") as [string, string | undefined];
  if (leaf === undefined) return { ...train, [head]: v };
  return { ...train, [head]: { ...(train[head] as Record<string, unknown> | undefined), [leaf]: v } };
}

/** An optimizer as the search starts it: the rows' `start` for it (SGD: lr 0.05 with Nesterov momentum 0.9; Adam and AdamW: lr 2e-3). */
export function searchStart(optimizer: OptimizerName): RecipeInput & { optimizer: OptimizerName; lr: number } {
  let out: Record<string, unknown> = { optimizer };
  for (const r of ROWS) {
    const v = r.start?.[optimizer];
    if (v !== undefined) out = withValue(out, r.name, v);
  }
  return out as RecipeInput & { optimizer: OptimizerName; lr: number };
}

// ---------------------------------------------------------------- the surrogate's encoding

/** The surrogate's dimensions for the recipe, in the table's order (agents/planner/surrogate.ts adds the model's own). */
export const RECIPE_FEATURES = ROWS.flatMap((r) => (r.feature ? [{ row: r, feature: r.feature }] : []));

/** A recipe's surrogate features, in RECIPE_FEATURES' order; absent fields read as the schema's defaults. */
export function recipeFeatures(train: Record<string, unknown>): number[] {
  return RECIPE_FEATURES.map(({ row, feature }) => {
    const v = valueOf(train, row.name as DimensionName);
    return "categorical" in feature ? row.choices!.indexOf(String(v)) : feature.encode(Number(v));
  });
}

// ---------------------------------------------------------------- a person's space

/** One narrowed dimension: a range, or the values allowed (one value: pinned). */
export interface DimRange {
  low?: number;
  high?: number;
  values?: DimValue[];
}

/** What a person narrowed the search to; unnamed dimensions keep the table's. */
export interface SpaceSpec {
  families: string[];
  dims: Partial<Record<DimensionName, DimRange>>;
}

export const EMPTY_SPACE: SpaceSpec = { families: [], dims: {} };

/** The dimensions a space may narrow: the ones the search moves. */
export const SEARCHED = ROWS.filter((r) => r.surface !== undefined).map((r) => r.name as DimensionName);

const rangeText = (r: Row) => {
  if (r.kind === "choice") return `one of ${r.choices!.join(", ")}`;
  if (r.kind === "bool") return "true or false";
  const lo = r.positive ? "(0" : `[${r.min ?? "-inf"}`;
  return `in ${lo}, ${r.max ?? "inf"}${r.lt ? ")" : "]"}`;
};

function inBounds(r: Row, v: number): boolean {
  if (r.positive && !(v > 0)) return false;
  if (r.min !== undefined && v < r.min) return false;
  if (r.max !== undefined && (r.lt ? v >= r.max : v > r.max)) return false;
  return r.kind !== "int" || Number.isInteger(v);
}

/** One value of a row as a person wrote it, checked against the row: its error line otherwise. */
function badValue(r: Row, v: unknown): string | undefined {
  const ok = r.kind === "bool" ? typeof v === "boolean" : r.kind === "choice" ? typeof v === "string" && r.choices!.includes(v) : typeof v === "number" && inBounds(r, v);
  return ok ? undefined : `space: ${r.name} ${JSON.stringify(v)} is not ${rangeText(r)}`;
}

const SpaceDocSchema = z.record(z.string(), z.unknown());

/**
 * A person's space document (YAML or JSON, already decoded): `families: [..]`, and per
 * dimension a value (pinned), `{low, high}`, `{values: [..]}` or "default" (left out: the
 * table's default). Every problem is one line naming the dimension and what it accepts.
 */
export function parseSpace(doc: unknown): { ok: true; value: SpaceSpec } | { ok: false; error: string } {
  const top = SpaceDocSchema.safeParse(doc);
  if (!top.success) return { ok: false, error: "space: expected a mapping of dimensions, e.g. {lr: {low: 1e-4, high: 1e-2}, optimizer: {values: [adam, adamw]}}" };
  const out: SpaceSpec = { families: [], dims: {} };
  for (const [name, spec] of Object.entries(top.data)) {
    if (name === "families") {
      if (!Array.isArray(spec) || spec.length === 0 || !spec.every((f) => typeof f === "string")) return { ok: false, error: "space: families must be a list of template names, e.g. [vgg-cnn, resnet]" };
      out.families = spec;
      continue;
    }
    const r = dimension(name);
    if (!r) return { ok: false, error: `space: unknown dimension "${name}"; the search's dimensions are ${SEARCHED.join(", ")} (and families)` };
    if (!r.surface) return { ok: false, error: `space: ${name} is not searched (${r.fixed}); set it with a --recipe or a flag instead` };
    const range = rangeOf(r, spec);
    if (typeof range === "string") return { ok: false, error: range };
    out.dims[name as DimensionName] = range;
  }
  return { ok: true, value: out };
}

function rangeOf(r: Row, spec: unknown): DimRange | string {
  if (spec === "default") {
    if (r.default === undefined) return `space: ${r.name} has no single default (it is the optimizer's): pin a value instead`;
    return { values: [r.default] };
  }
  if (spec !== null && typeof spec === "object" && !Array.isArray(spec)) {
    const o = spec as Record<string, unknown>;
    const keys = Object.keys(o);
    if (keys.length === 1 && keys[0] === "values") {
      if (!Array.isArray(o.values) || o.values.length === 0) return `space: ${r.name}.values must be a non-empty list`;
      const bad = o.values.map((v) => badValue(r, v)).find((e) => e !== undefined);
      return bad ?? { values: o.values as DimValue[] };
    }
    if (keys.length > 0 && keys.every((k) => k === "low" || k === "high")) {
      if (r.kind === "bool" || r.kind === "choice") return `space: ${r.name} takes {values: [...]}, not a range: it is ${rangeText(r)}`;
      const bad = keys.map((k) => [badValue(r, o[k]), k] as const).find(([e]) => e);
      if (bad) return `${bad[0]} (its ${bad[1]})`;
      const low = o.low as number | undefined;
      const high = o.high as number | undefined;
      if (low !== undefined && high !== undefined && low > high) return `space: ${r.name} low ${low} is above high ${high}`;
      return { ...(low !== undefined && { low }), ...(high !== undefined && { high }) };
    }
    return `space: ${r.name} takes a value, {low, high}, {values: [...]} or "default"; got keys ${keys.join(", ") || "none"}`;
  }
  return badValue(r, spec) ?? { values: [spec as DimValue] };
}

/** A dimension's range for people: "in [0.0001, 0.01]", "one of adam, adamw", "fixed at 0". */
export function rangeWords(d: DimRange): string {
  if (d.values) return d.values.length === 1 ? `fixed at ${d.values[0]}` : `one of ${d.values.join(", ")}`;
  return `in [${d.low ?? "-"}, ${d.high ?? "-"}]`;
}

/** The space for people, one phrase per narrowed dimension; empty for the built-in space. */
export function describeSpace(s: SpaceSpec): string[] {
  return [...(s.families.length ? [`families ${s.families.join(", ")}`] : []), ...Object.entries(s.dims).map(([n, d]) => `${n} ${rangeWords(d!)}`)];
}

/** Whether a value lies in a narrowed dimension. */
function admits(d: DimRange, v: DimValue): boolean {
  if (d.values) return d.values.some((x) => x === v);
  const n = Number(v);
  return (d.low === undefined || n >= d.low) && (d.high === undefined || n <= d.high);
}

/** Why a recipe lies outside the space ("lr 0.02 is outside the space: in [0.0001, 0.01]"), or undefined. */
export function outsideSpace(s: SpaceSpec, train: Record<string, unknown>): string | undefined {
  for (const [name, d] of Object.entries(s.dims) as [DimensionName, DimRange][]) {
    const v = valueOf(train, name);
    if (!admits(d, v)) return `${name} ${typeof v === "number" ? Number(v.toPrecision(4)) : v} is outside the space: ${rangeWords(d)}`;
  }
  return undefined;
}

/** A recipe moved into the space: ranges clamp, a value not allowed becomes the first allowed. Where a run starts. */
export function intoSpace<T extends Record<string, unknown>>(s: SpaceSpec, train: T): T {
  let out = train;
  for (const [name, d] of Object.entries(s.dims) as [DimensionName, DimRange][]) {
    const v = valueOf(out, name);
    if (admits(d, v)) continue;
    const to = d.values ? d.values[0]! : Math.min(d.high ?? Infinity, Math.max(d.low ?? -Infinity, Number(v)));
    out = withValue(out, name, to);
  }
  return out;
}

/** The rows the random planner draws, in the table's order: those with a prior. A row with one is searched by it. */
export const DRAWN = ROWS.filter((r) => r.draw).map((r) => r.name as DimensionName);

/** A row's random draw within the space: its prior, narrowed by the person's range or values. */
export function drawIn(s: SpaceSpec, name: DimensionName, rng: () => number, device: SearchDevice, info: DatasetInfo): DimValue {
  const r = dimension(name)!;
  const d = s.dims[name];
  const draw = r.draw!;
  if ("values" in draw || d?.values) {
    const all = d?.values ?? ("values" in draw ? draw.values(device, info) : []);
    const values = d?.values ?? all.filter((v) => !d || admits(d, v));
    const pool = values.length ? values : all;
    return pool[Math.floor(rng() * pool.length)]!;
  }
  const low = Math.max(draw.low, d?.low ?? -Infinity);
  const high = Math.min(draw.high, d?.high ?? Infinity);
  // A person's range that misses the prior's is drawn from as it is.
  const [lo, hi] = low <= high ? [low, high] : [d?.low ?? draw.low, d?.high ?? draw.high];
  if (draw.int) return lo + Math.floor(rng() * (hi - lo + 1));
  return draw.log ? Math.exp(Math.log(lo) + rng() * (Math.log(hi) - Math.log(lo))) : lo + rng() * (hi - lo);
}

// ---------------------------------------------------------------- the space on the wire (RunSettings.space)

/** A person's space as the run's settings carry it. */
export function spaceMessage(s: SpaceSpec): MessageInitShape<typeof SearchSpaceSchema> {
  return {
    families: s.families,
    dimensions: (Object.entries(s.dims) as [DimensionName, DimRange][]).map(([name, d]) => ({
      name,
      low: d.low,
      high: d.high,
      numbers: d.values?.filter((v) => typeof v !== "string").map(Number) ?? [],
      names: d.values?.filter((v): v is string => typeof v === "string") ?? [],
    })),
  };
}

const read = new WeakMap<SearchSpace, SpaceSpec>();

/**
 * The space a run's settings carry; unset (every run before --space): the built-in space.
 * Read once per message: the planner asks for it with every candidate it weighs.
 */
export function spaceOf(m: SearchSpace | undefined): SpaceSpec {
  if (!m) return EMPTY_SPACE;
  let space = read.get(m);
  if (!space) read.set(m, (space = spaceFromMessage(m)));
  return space;
}

function spaceFromMessage(m: SearchSpace): SpaceSpec {
  const dims: SpaceSpec["dims"] = {};
  for (const d of m.dimensions) {
    const row = dimension(d.name);
    if (!row) continue;
    const values = row.kind === "choice" ? d.names : row.kind === "bool" ? d.numbers.map((n) => n !== 0) : d.numbers;
    dims[d.name as DimensionName] = values.length ? { values } : { ...(d.low !== undefined && { low: d.low }), ...(d.high !== undefined && { high: d.high }) };
  }
  return { families: [...m.families], dims };
}
