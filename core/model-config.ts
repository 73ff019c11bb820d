import { z } from "zod";
import { parseDocument } from "yaml";
import { DEFAULT_LR, recipeObjectSchema } from "./space.js";
import { isId } from "./ids.js";
import { bool, nonNegInt, posInt } from "./zod-fields.js";
import { safeValidate } from "./json.js";
import { ArgumentKind, type DatasetInfo, type ModelArgument } from "../proto/gen/research/v1/runner_pb.js";

/*
 * The declarative model and recipe language of the swarm. Users, the built-in
 * brain and LLMs all author these; the coder compiles them to PyTorch. Every
 * object is strict so a typo ("kernal_size") fails loudly instead of silently
 * falling back to a default.
 */

/** A probability that still lets signal through: p = 1 would zero every activation. */
const dropProb = () =>
  z.number({ error: "expected a number in [0, 1)" }).min(0, { error: "expected a number in [0, 1)" }).lt(1, { error: "expected a number in [0, 1)" });

export const ACTIVATIONS = ["relu", "gelu", "silu", "mish", "tanh", "sigmoid", "leaky_relu", "hardswish"] as const;
export const ActivationSchema = z.enum(ACTIVATIONS);
export type Activation = z.infer<typeof ActivationSchema>;
const ActivationOrNone = z.enum([...ACTIVATIONS, "none"]);

const MAX_CHANNELS = 16384;
const MAX_KERNEL = 63;
const MAX_STRIDE = 16;

const kernel = (dflt: number) => posInt(MAX_KERNEL).default(dflt).describe("square kernel size");
const stride = () => posInt(MAX_STRIDE).default(1);
const padding = () =>
  z
    .union([z.literal("same"), nonNegInt(MAX_KERNEL)], { error: 'expected "same" or a non-negative integer' })
    .default("same")
    .describe('"same" keeps the spatial size at stride 1 (ceil(size / stride) otherwise); an integer pads every side');
const channels = () => posInt(MAX_CHANNELS);
const poolMode = () => z.enum(["mean", "max"]).default("mean");

/** What a 2-d and a 1-d convolution share. */
const convFields = () => ({
  out_channels: channels(),
  kernel_size: kernel(3),
  stride: stride(),
  padding: padding(),
  groups: posInt(MAX_CHANNELS).default(1),
  bias: bool().default(true),
});

const Conv2d = z
  .strictObject({ type: z.literal("conv2d"), ...convFields() })
  .describe("2-d convolution over [C, H, W]");

const DepthwiseConv2d = z
  .strictObject({
    type: z.literal("depthwise_conv2d"),
    kernel_size: kernel(3),
    stride: stride(),
    padding: padding(),
    multiplier: posInt(64).default(1).describe("output channels per input channel"),
    bias: bool().default(true),
  })
  .describe("per-channel convolution (groups = channels)");

const PointwiseConv2d = z
  .strictObject({ type: z.literal("pointwise_conv2d"), out_channels: channels(), bias: bool().default(true) })
  .describe("1x1 convolution mixing channels");

const BatchNorm = z
  .strictObject({ type: z.literal("batchnorm") })
  .describe("batch normalisation over channels ([C,H,W]), features ([F]) or the token dim ([N,D])");

const GroupNorm = z
  .strictObject({ type: z.literal("groupnorm"), groups: posInt(MAX_CHANNELS).default(8) })
  .describe("group normalisation; channels must be divisible by groups");

const LayerNorm = z
  .strictObject({ type: z.literal("layernorm") })
  .describe("layer normalisation over the last dim ([F], [N,D]) or over channels at each position ([C,H,W])");

const ActivationLayer = z
  .strictObject({ type: z.literal("activation"), fn: ActivationSchema.default("relu") })
  .describe("elementwise non-linearity");

const poolFields = {
  kernel_size: kernel(2),
  stride: posInt(MAX_STRIDE).optional().describe("defaults to kernel_size"),
  padding: nonNegInt(MAX_KERNEL).default(0),
};
const MaxPool = z.strictObject({ type: z.literal("maxpool"), ...poolFields }).describe("max pooling: 2-d over an image, along the length of a sequence");
const AvgPool = z.strictObject({ type: z.literal("avgpool"), ...poolFields }).describe("average pooling: 2-d over an image, along the length of a sequence");

const GlobalAvgPool = z
  .strictObject({ type: z.literal("global_avgpool") })
  .describe("mean over H and W: [C,H,W] -> [C]");

const Dropout = z.strictObject({ type: z.literal("dropout"), p: dropProb().default(0.1) }).describe("elementwise dropout");

const Dropout2d = z
  .strictObject({ type: z.literal("dropout2d"), p: dropProb().default(0.1) })
  .describe("drops whole channels of [C,H,W]");

const Flatten = z.strictObject({ type: z.literal("flatten") }).describe("any shape -> [features]");

const Linear = z
  .strictObject({ type: z.literal("linear"), out_features: posInt(1 << 20), bias: bool().default(true) })
  .describe("fully connected over [F], or over the last dim of tokens [N,D]");

const SqueezeExcite = z
  .strictObject({ type: z.literal("se"), reduction: posInt(256).default(4) })
  .describe("squeeze-and-excitation channel gating; hidden = max(1, channels // reduction)");

const Ghost = z
  .strictObject({
    type: z.literal("ghost"),
    out_channels: channels(),
    ratio: z.int({ error: "expected an integer >= 2" }).min(2, { error: "expected an integer >= 2" }).max(16).default(2),
    kernel_size: kernel(1).describe("primary convolution kernel"),
    dw_kernel_size: kernel(3)
      .refine((k) => k % 2 === 1, { error: "expected an odd kernel size" })
      .describe("cheap depthwise convolution kernel (odd, so both halves keep the same size)"),
    stride: stride(),
    activation: ActivationOrNone.default("relu"),
  })
  .describe("GhostNet module: ceil(out/ratio) maps from a conv, the rest from a cheap depthwise conv, then BN");

const MBConv = z
  .strictObject({
    type: z.literal("mbconv"),
    out_channels: channels(),
    expand_ratio: z.number().min(1, { error: "expected a number >= 1" }).max(16).default(4),
    kernel_size: kernel(3).refine((k) => k % 2 === 1, { error: "expected an odd kernel size" }),
    stride: stride(),
    se_ratio: z.number().min(0).max(1).default(0.25).describe("SE hidden = max(1, int(in_channels * se_ratio)); 0 disables"),
    activation: ActivationSchema.default("silu"),
  })
  .describe("MobileNetV2/EfficientNet inverted residual: expand 1x1, depthwise, SE, project 1x1; skip when shapes match");

const PatchEmbed = z
  .strictObject({
    type: z.literal("patch_embed"),
    patch_size: posInt(MAX_KERNEL).default(4),
    dim: channels().default(64),
    position_embedding: bool().default(true),
  })
  .describe("non-overlapping patches to tokens: [C,H,W] -> [(H/p)*(W/p), dim]");

const TransformerEncoder = z
  .strictObject({
    type: z.literal("transformer_encoder"),
    heads: posInt(256).default(4),
    mlp_ratio: z.number().positive().max(16).default(4),
    dropout: dropProb().default(0),
    depth: posInt(64).default(1),
    causal: bool().default(false).describe("each position attends to itself and earlier ones only (a language model)"),
  })
  .describe("pre-norm transformer blocks over tokens [N,D]; D comes from the input and must divide by heads");

const MixerBlock = z
  .strictObject({
    type: z.literal("mixer_block"),
    token_mlp_dim: posInt(1 << 16).default(64),
    channel_mlp_dim: posInt(1 << 16).default(256),
    dropout: dropProb().default(0),
    depth: posInt(64).default(1),
  })
  .describe("MLP-Mixer blocks over tokens [N,D]: token-mixing MLP then channel-mixing MLP");

const TokenPool = z
  .strictObject({ type: z.literal("token_pool"), mode: poolMode() })
  .describe("pool over tokens: [N,D] -> [D]");

const Embedding = z
  .strictObject({
    type: z.literal("embedding"),
    vocab_size: posInt(1 << 24),
    dim: channels().default(64),
    padding_idx: nonNegInt(1 << 24).optional(),
    position_embedding: bool().default(false),
  })
  .describe("int64 token ids [L] -> [L, dim]; must come first for int64 inputs");

const NgramEmbedding = z
  .strictObject({
    type: z.literal("ngram_embedding"),
    orders: posInt(16).default(8),
    buckets: posInt(1 << 22).default(1 << 17),
    dim: channels().default(32),
  })
  .describe(
    "int64 token ids [L] -> [L, orders*dim]: at each position the last 1..orders ids, each n-gram hashed into one table of `buckets` rows (a neural n-gram model's features); causal; comes first for int64 inputs",
  );

const Conv1d = z
  .strictObject({ type: z.literal("conv1d"), ...convFields() })
  .describe("1-d convolution along a sequence [L,D] -> [L', out_channels]");

const Gru = z
  .strictObject({
    type: z.literal("gru"),
    hidden: channels().default(128),
    layers: posInt(8).default(1),
    dropout: dropProb().default(0).describe("between stacked layers (needs layers > 1)"),
  })
  .describe("a GRU along a sequence [L,D] -> [L, hidden], reading left to right (causal)");

const SequencePool = z
  .strictObject({ type: z.literal("sequence_pool"), mode: poolMode() })
  .describe("pool over sequence positions: [L,D] -> [D]");

const Residual = z
  .strictObject({
    type: z.literal("residual"),
    get layers(): z.ZodArray<typeof LayerSchema> {
      return z.array(LayerSchema).min(1, { error: "expected at least one layer" });
    },
    activation: ActivationOrNone.default("none").describe("applied after the sum"),
  })
  .describe(
    "adds the input to the output of its layers; when shapes differ the shortcut is projected (strided 1x1 conv + BN, or linear)",
  );

export const LayerSchema = z
  .discriminatedUnion("type", [
    Conv2d,
    DepthwiseConv2d,
    PointwiseConv2d,
    BatchNorm,
    GroupNorm,
    LayerNorm,
    ActivationLayer,
    MaxPool,
    AvgPool,
    GlobalAvgPool,
    Dropout,
    Dropout2d,
    Flatten,
    Linear,
    Residual,
    SqueezeExcite,
    Ghost,
    MBConv,
    PatchEmbed,
    TransformerEncoder,
    MixerBlock,
    TokenPool,
    Embedding,
    NgramEmbedding,
    Conv1d,
    Gru,
    SequencePool,
  ])
  .meta({ id: "Layer" });

export type Layer = z.infer<typeof LayerSchema>;
export type LayerType = Layer["type"];
export const LAYER_TYPES = LayerSchema.options.map((o) => o.shape.type.value) as LayerType[];

/** The first is the default. The worker keeps a copy (specs.py INPUT_DTYPES), checked by test/core/closed-sets.test.ts. */
export const InputDtypeSchema = z.enum(["float32", "int64"]);
export type InputDtype = z.infer<typeof InputDtypeSchema>;

/**
 * A byte-level language model's own n-gram, mixed into its predictions (core/compiler/blocks.py
 * ByteCounts). The defaults are bench/lm_mixture.py's measurement on the design text: order 12
 * gained most (order 8 1.452-1.456, 10 1.428, 12 1.414 bits per byte against the n-gram's 1.442
 * alone), and the network's weight picked on held-out halves was 0.3-0.35.
 */
export const ByteCountsSchema = z
  .strictObject({
    orders: posInt(16).default(12).describe("the longest context counted, in bytes, plus one"),
    weight: z.number().gt(0).lt(1).default(0.3).describe("the network's share of the mixture; the counts have the rest"),
  })
  .describe(
    "a byte-level language model's own n-gram: Kneser-Ney counts of the training text mixed into the network's predictions, log(weight * softmax(net) + (1 - weight) * p_counts); the network trains alone, evaluation and exports see the mixture",
  );

export const ModelConfigSchema = z
  .strictObject({
    name: z.string().min(1, { error: "expected a non-empty name" }).max(200),
    description: z.string().max(4000).optional(),
    input_shape: z
      .array(posInt(1 << 20))
      .min(1)
      .max(3)
      .optional()
      .describe("one sample's shape without batch, e.g. [1, 28, 28]; filled from the dataset when absent"),
    num_classes: posInt(1 << 20).optional(),
    input_dtype: InputDtypeSchema.optional().describe("int64 for token ids"),
    layers: z.array(LayerSchema).min(1, { error: "expected at least one layer" }).max(512),
    tie_embeddings: bool()
      .optional()
      .describe("a language model's head shares the weights of its first layer, an embedding of the same width (Press & Wolf 2017)"),
    counts: ByteCountsSchema.optional(),
  })
  .describe(
    "a model as a list of layers; a linear head to num_classes is appended when the last shape is not [num_classes] (a language model: at each position, to the vocabulary)",
  );

export type ModelConfig = z.infer<typeof ModelConfigSchema>;
export type ModelConfigInput = z.input<typeof ModelConfigSchema>;
/** A layer as a template or an edit writes it (before defaults). */
export type LayerInput = ModelConfigInput["layers"][number];

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

export const CodeModelSchema = z
  .strictObject({
    name: z.string().min(1, { error: "expected a non-empty name" }).max(200),
    description: z.string().max(4000).optional(),
    class_name: z.string().regex(IDENTIFIER, { error: "expected a Python class name" }),
    init_kwargs: z
      .record(z.string().regex(IDENTIFIER, { error: "expected a Python identifier" }), z.union([z.number(), z.boolean()], { error: "expected a number or true/false" }))
      .default({})
      .describe("constructor keyword arguments that differ from the class's defaults"),
    code_edit: z
      .string()
      .min(10, { error: "expected a change to the code in at least 10 characters" })
      .max(4000)
      .optional()
      .describe("a change to the code this model starts from, in words: the coder's LLM makes it, and the runner checks the result before it trains"),
    source_trial: z
      .string()
      .refine(isId, { error: "expected a trial id" })
      .optional()
      .describe("the trial whose code this class is taken from (one that made a code edit); absent: the run's own model source"),
  })
  .describe("a model in Python (launch --from model.py --class NAME): the class of the run's model source, or of an earlier trial's edit of it, built with these keyword arguments");

export type CodeModel = z.infer<typeof CodeModelSchema>;
export type CodeModelInput = z.input<typeof CodeModelSchema>;
/** What a trial trains: a model_config the compiler builds, or a person's own class in Python. */
export type TrialModel = ModelConfig | CodeModel;
export type TrialModelInput = ModelConfigInput | CodeModelInput;

/**
 * Arguments that fix the data's shape, not the model's capacity, are not searched: one named for
 * the classes or the input (num_classes, in_channels, input_dim), or an int whose default is the
 * class count, the flat input size or an input dimension above 1 (n_out=10, features=784).
 * Changing them can only break the model.
 */
export function searchableArguments(args: readonly ModelArgument[], info: DatasetInfo): ModelArgument[] {
  const shapeSizes = new Set([info.numClasses, ...info.inputShape.filter((d) => d > 1), info.inputShape.reduce((a, b) => a * b, 1)]);
  return args.filter((a) => !/class|^in_|^input|^n_?inputs?$/i.test(a.name) && !(a.kind === ArgumentKind.INT && shapeSizes.has(a.defaultValue)));
}

/** An argument's default as the value its kind takes. */
export const argumentDefault = (a: ModelArgument): number | boolean => (a.kind === ArgumentKind.BOOL ? a.defaultValue !== 0 : a.defaultValue);

/** The constructor arguments two code models build with differently, defaults filled from `args`. */
export function argumentChanges(from: TrialModelInput, to: TrialModelInput, args: readonly ModelArgument[]) {
  if (!isCodeModel(from) || !isCodeModel(to)) return [];
  const defaults = new Map(args.map((a) => [a.name, argumentDefault(a)]));
  const a: CodeModelInput["init_kwargs"] = from.init_kwargs ?? {};
  const b: CodeModelInput["init_kwargs"] = to.init_kwargs ?? {};
  return [...new Set([...Object.keys(a), ...Object.keys(b)])]
    .map((name) => ({ name, from: a[name] ?? defaults.get(name) ?? null, to: b[name] ?? defaults.get(name) ?? null }))
    .filter((c) => c.from !== c.to)
    .sort((x, y) => x.name.localeCompare(y.name));
}

/**
 * The model a child of trial `id` starts from: a code edit, once made, is that trial's code, so
 * its children take their class from it (`source_trial`) and do not make the edit again.
 */
export function childModel(model: TrialModel, id: string): TrialModel {
  if (!isCodeModel(model) || !model.code_edit) return model;
  const { code_edit: _made, ...rest } = model;
  return { ...rest, source_trial: id };
}

/** A code model names its class; a model_config lists layers. */
export function isCodeModel<M extends TrialModelInput>(m: M): m is Extract<M, CodeModelInput> {
  return "class_name" in m;
}

/** The recipe's fields, bounds and defaults are the search space's rows (core/space.ts); the rules across fields are here. */
export const TrainConfigSchema = recipeObjectSchema()
  .refine((c) => c.warmup_epochs < c.epochs || c.warmup_epochs === 0, {
    error: "expected fewer warmup epochs than epochs",
    path: ["warmup_epochs"],
  })
  // torch's SGD refuses Nesterov without momentum; other optimizers ignore both.
  .refine((c) => !(c.optimizer === "sgd" && c.nesterov && c.momentum === 0), {
    error: "expected momentum > 0 with nesterov",
    path: ["nesterov"],
  })
  .refine((c) => !(c.swa && c.ema_decay > 0), {
    error: "expected one weight average: swa or ema_decay, not both",
    path: ["swa"],
  })
  // A default that depends on a sibling: plain SGD needs a far larger step than Adam.
  .transform((c) => ({ ...c, lr: c.lr ?? DEFAULT_LR[c.optimizer] }));

export type TrainConfig = z.infer<typeof TrainConfigSchema>;
export type TrainConfigInput = z.input<typeof TrainConfigSchema>;

/** JSON Schema of what an author may write (defaulted fields optional), for LLM structured outputs. */
export function modelConfigJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(ModelConfigSchema, { io: "input" }) as Record<string, unknown>;
}

export function trainConfigJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(TrainConfigSchema, { io: "input" }) as Record<string, unknown>;
}

export type ParseResult<T> = { ok: true; value: T } | { ok: false; error: string };

export function parseModelConfig(input: unknown): ParseResult<ModelConfig> {
  return parseWith(ModelConfigSchema, input, "model_config");
}

/** A trial's model: a code model when it names a class_name, else a model_config. */
export function parseTrialModel(input: unknown): ParseResult<TrialModel> {
  const data = typeof input === "string" ? decodeText(input) : { ok: true as const, value: input };
  if (!data.ok) return { ok: false, error: `model_config: ${data.error}` };
  return namesClass(data.value) ? parseWith(CodeModelSchema, data.value, "model_config") : parseModelConfig(data.value);
}

export function authoredTrialModel(input: unknown): ParseResult<TrialModelInput> {
  const data = typeof input === "string" ? decodeText(input) : { ok: true as const, value: input };
  if (!data.ok) return { ok: false, error: `model_config: ${data.error}` };
  return namesClass(data.value) ? authoredWith(CodeModelSchema, data.value, "model_config") : authoredModelConfig(data.value);
}

const namesClass = (x: unknown) => x !== null && typeof x === "object" && "class_name" in x;

export function parseTrainConfig(input: unknown): ParseResult<TrainConfig> {
  return parseWith(TrainConfigSchema, input, "train_config");
}

/**
 * A config as its author wrote it, once the schema accepts it: the defaults
 * not filled, so it can be laid over another config (a person's training
 * over the planner's probe recipe) without overriding what it left out.
 */
export function authoredModelConfig(input: unknown): ParseResult<ModelConfigInput> {
  return authoredWith(ModelConfigSchema, input, "model_config");
}

export function authoredTrainConfig(input: unknown): ParseResult<TrainConfigInput> {
  return authoredWith(TrainConfigSchema, input, "train_config");
}

function authoredWith<S extends z.ZodType>(schema: S, input: unknown, what: string): ParseResult<z.input<S>> {
  const data = typeof input === "string" ? decodeText(input) : { ok: true as const, value: input };
  if (!data.ok) return { ok: false, error: `${what}: ${data.error}` };
  const parsed = parseWith(schema, data.value, what);
  // What the schema accepted is of its input type: the one place that is asserted.
  return parsed.ok ? { ok: true, value: data.value as z.input<S> } : parsed;
}

function parseWith<T>(schema: z.ZodType<T>, input: unknown, what: string): ParseResult<T> {
  let value = input;
  if (typeof input === "string") {
    const text = decodeText(input);
    if (!text.ok) return { ok: false, error: `${what}: ${text.error}` };
    value = text.value;
  }
  const result = safeValidate({ value, schema });
  if (result.success) return { ok: true, value: result.value };
  // Reworded against the value (a missing layer type, an unknown field), which zod's own text does not say.
  return { ok: false, error: `invalid ${what}:\n${formatIssues(result.error.issues, value)}` };
}

export function decodeText(text: string): ParseResult<unknown> {
  const trimmed = text.trim();
  if (trimmed === "") return { ok: false, error: "empty text" };
  // JSON first for its sharper error messages; YAML (a JSON superset) covers the rest.
  if (trimmed.startsWith("{")) {
    try {
      return { ok: true, value: JSON.parse(trimmed) };
    } catch {
      // Fall through: a YAML flow mapping also starts with "{".
    }
  }
  // A warning (an unknown tag or directive) refuses too: it is a mistake in the file, and the
  // library would otherwise print it to stderr in many lines and read on.
  const doc = parseDocument(text, { logLevel: "silent" });
  const problem = doc.errors[0] ?? doc.warnings[0];
  // The first line names the place ("at line 3, column 1:"); the excerpt after its colon is dropped.
  if (problem) return { ok: false, error: `not valid JSON or YAML: ${problem.message.split("\n")[0]!.replace(/:$/, "")}` };
  try {
    return { ok: true, value: doc.toJS() };
  } catch (err) {
    // An alias the document cannot resolve, or one that expands too far.
    return { ok: false, error: `not valid JSON or YAML: ${(err as Error).message.split("\n")[0]}` };
  }
}

/** `["layers", 3, "kernel_size"]` -> `layers[3].kernel_size`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const key of path) {
    if (typeof key === "number") out += `[${key}]`;
    else out += out === "" ? String(key) : `.${String(key)}`;
  }
  return out === "" ? "(root)" : out;
}

function formatIssues(issues: readonly z.core.$ZodIssue[], data: unknown): string {
  return issues.map((issue) => `- ${formatPath(issue.path)}: ${issueMessage(issue, data)}`).join("\n");
}

function issueMessage(issue: z.core.$ZodIssue, data: unknown): string {
  if (issue.code === "invalid_union" && "discriminator" in issue && issue.discriminator === "type") {
    const got = valueAt(data, issue.path);
    const options = (issue as { options?: unknown[] }).options ?? LAYER_TYPES;
    const what = got === undefined ? "missing layer type" : `unknown layer type ${JSON.stringify(got)}`;
    return `${what}; expected one of ${options.join(", ")}`;
  }
  if (issue.code === "unrecognized_keys") {
    return `unknown field${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((k) => JSON.stringify(k)).join(", ")}`;
  }
  if (issue.code === "invalid_type" && valueAt(data, issue.path) === undefined) {
    return "required field is missing";
  }
  return issue.message.replace(/^Invalid input: /, "");
}

/** The value at a zod issue's path, or undefined where the path leaves the data. */
export function valueAt(data: unknown, path: readonly PropertyKey[]): unknown {
  let cur = data;
  for (const key of path) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[key];
  }
  return cur;
}
