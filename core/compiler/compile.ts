import { ResearchError, type FailureName } from "../failure.js";
import {
  parseModelConfig,
  type Activation,
  type Layer,
  type LayerType,
  type ModelConfigInput,
} from "../model-config.js";
import type { CompileOptions } from "./options.js";
import { count, fmt, HELPERS, INDENT, pyFloat, pyPad, render, sequential, withComma, type Expr, type Helper, type Item } from "./python.js";

/*
 * model_config -> one self-contained PyTorch file. Shapes and parameter
 * counts are inferred here, layer by layer, so a bad config fails with the
 * layer that broke it before any Python starts, and the planner can check
 * parameter budgets without a runner. Every derived integer (hidden widths,
 * paddings, token counts) is computed here and written into the code
 * literally, so the Python side cannot round differently from the count.
 */

export type CompileFailureLabel = Extract<FailureName, "invalid_config" | "shape_error">;


export interface LayerShape {
  /** `input`, `layers[3] conv2d`, or `head linear` for the implicit classifier. */
  layer: string;
  shape: number[];
  params: number;
}

export type CompileResult =
  | {
      ok: true;
      code: string;
      className: string;
      shapes: LayerShape[];
      params: number;
      /** Of `params`, those in lookup tables (an embedding's rows): they cost memory, not compute. */
      lookupParams: number;
      outputShape: number[];
    }
  | { ok: false; label: CompileFailureLabel; error: string };

interface Ctx {
  helpers: Set<Helper>;
  vocabSize: number | undefined;
}

interface Flow {
  shape: number[];
  /** Still raw int64 token ids: only an embedding may come next. */
  ids: boolean;
}

const PY_RESERVED = new Set(["torch", "nn", "F", "math", "None", "True", "False", "class", "def", "import", "self"]);

export function compileModel(config: ModelConfigInput, opts: CompileOptions = {}): CompileResult {
  // Re-validated because configs arrive from LLMs and the bus typed only by assertion.
  const parsed = parseModelConfig(config);
  if (!parsed.ok) return { ok: false, label: "invalid_config", error: parsed.error };
  const cfg = parsed.value;
  try {
    const inputShape = pick("input_shape", cfg.input_shape, opts.inputShape);
    const numClasses = pick("num_classes", cfg.num_classes, opts.numClasses);
    const inputDtype = pick("input_dtype", cfg.input_dtype, opts.inputDtype) ?? "float32";
    if (!inputShape) throw invalid("the input shape is unknown: set input_shape in the config or pass the dataset's");
    if (numClasses === undefined) throw invalid("the number of classes is unknown: set num_classes or pass the dataset's");
    const shape = [...inputShape];
    if (shape.length < 1 || shape.length > 3 || !shape.every((d) => Number.isInteger(d) && d > 0)) {
      throw invalid(`input shape ${fmt(shape)} must be 1 to 3 positive dims ([features], [tokens, dim] or [C, H, W])`);
    }
    if (!Number.isInteger(numClasses) || numClasses < 1) throw invalid(`num_classes ${numClasses} must be a positive integer`);
    if (inputDtype === "int64" && shape.length !== 1) {
      throw invalid(`int64 inputs are token ids of shape [length], not ${fmt(shape)}`);
    }
    const className = opts.className ?? classNameFor(cfg.name);
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(className) || PY_RESERVED.has(className) || HELPERS.includes(className as Helper)) {
      throw invalid(`class name ${JSON.stringify(className)} is not a free Python identifier`);
    }

    const ctx: Ctx = { helpers: new Set(), vocabSize: opts.vocabSize };
    const body = compileSequence(cfg.layers, { shape, ids: inputDtype === "int64" }, "layers", ctx);
    const head = opts.perPosition ? positionHead(body.flow.shape, numClasses, cfg.layers.at(-1)) : implicitHead(body.flow.shape, numClasses);
    const items = [...body.items, ...head];
    const tied = cfg.tie_embeddings ? tiedHead(cfg.layers[0], items) : undefined;
    const params = items.reduce((sum, it) => sum + it.params, 0) - (tied?.shared ?? 0);
    // A tied table is the head's matrix too, multiplied at every position.
    const lookupParams = items.reduce((sum, it) => sum + (it.lookup ?? 0), 0) - (tied?.shared ?? 0);
    const outputShape = items[items.length - 1]?.shape ?? shape;
    const shapes: LayerShape[] = [
      { layer: "input", shape, params: 0 },
      ...items.map((it) => ({ layer: it.label, shape: it.shape, params: it.params })),
    ];
    if (cfg.counts) {
      if (!opts.perPosition || numClasses !== 256 || inputDtype !== "int64") {
        throw invalid("counts: only a byte-level language model (a corpus's 256 byte values at every position) mixes in an n-gram");
      }
      ctx.helpers.add("ByteCounts");
    }
    const code = render({
      name: cfg.name, className, inputShape: shape, inputDtype, outputShape, params, items, helpers: ctx.helpers, tie: tied?.statements, counts: cfg.counts,
    });
    return { ok: true, code, className, shapes, params, lookupParams, outputShape };
  } catch (err) {
    if (err instanceof ResearchError && isCompileFailure(err.label)) return { ok: false, label: err.label, error: err.message };
    throw err;
  }
}

function pick<T>(field: string, fromConfig: T | undefined, fromDataset: T | undefined): T | undefined {
  if (fromConfig !== undefined && fromDataset !== undefined && JSON.stringify(fromConfig) !== JSON.stringify(fromDataset)) {
    throw invalid(`config ${field} ${JSON.stringify(fromConfig)} disagrees with the dataset's ${JSON.stringify(fromDataset)}`);
  }
  return fromDataset ?? fromConfig;
}

/** "resnet-ish v2" -> "ResnetIshV2"; the name may be anything a user typed. */
export function classNameFor(name: string): string {
  const words = name.split(/[^A-Za-z0-9]+/).filter(Boolean);
  let out = words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join("");
  if (out === "" || /^[0-9]/.test(out)) out = `Model${out}`;
  if (PY_RESERVED.has(out) || HELPERS.includes(out as Helper)) out += "Model";
  return out;
}

function compileSequence(layers: readonly Layer[], flow: Flow, prefix: string, ctx: Ctx): { items: Item[]; flow: Flow } {
  const items: Item[] = [];
  let cur = flow;
  layers.forEach((layer, i) => {
    const label = `${prefix}[${i}] ${layer.type}`;
    const embeds = layer.type === "embedding" || layer.type === "ngram_embedding";
    if (cur.ids && !embeds) {
      throw invalid(`${label}: the input is int64 token ids ${fmt(cur.shape)}; start with an embedding`);
    }
    if (!cur.ids && embeds) {
      throw invalid(`${label}: expects int64 token ids straight from the input but gets float features ${fmt(cur.shape)}`);
    }
    const { exprs, shape, params, lookup, note } = compileLayer(layer, cur.shape, label, `${prefix}[${i}]`, ctx);
    const comment = `${label}${note ? ` (${note})` : ""}: ${fmt(cur.shape)} -> ${fmt(shape)}, ${count(params)} params`;
    items.push({ label, comment, exprs, shape, params, lookup });
    cur = { shape, ids: false };
  });
  return { items, flow: cur };
}

interface Compiled {
  exprs: Expr[];
  shape: number[];
  params: number;
  lookup?: number;
  note?: string;
}

/** How one layer type compiles: its PyTorch module, output shape and parameter count, checked against its input. */
type LayerCompiler<K extends LayerType> = (layer: Extract<Layer, { type: K }>, shape: number[], label: string, path: string, ctx: Ctx) => Compiled;

const use = (ctx: Ctx, h: Helper) => ctx.helpers.add(h);

// Written out, not LayerCompiler<"maxpool" | "avgpool">: TypeScript reads a conditional type's parameter as invariant.
// Over a sequence [length, channels] they pool along its length: a signal CNN downsamples as an image one does.
const maxpoolOrAvgpool = (layer: Extract<Layer, { type: "maxpool" | "avgpool" }>, shape: number[], label: string, _path: string, ctx: Ctx): Compiled => {
  const k = layer.kernel_size;
  const s = layer.stride ?? k;
  const p = layer.padding;
  if (2 * p > k) throw invalid(`${label}: padding ${p} exceeds half the kernel ${k}`);
  const mode = layer.type === "maxpool" ? "max" : "avg";
  if (shape.length === 2) {
    const [len, d] = shape as [number, number];
    const olen = shrinkLength(label, len, k, s, p);
    use(ctx, "SeqPool1d");
    return one(`SeqPool1d("${mode}", kernel_size=${k}, stride=${s}${p ? `, padding=${p}` : ""})`, [olen, d], 0);
  }
  const [c, h, w] = image(label, shape);
  const [oh, ow] = shrink(label, h, w, k, s, p);
  const cls = mode === "max" ? "nn.MaxPool2d" : "nn.AvgPool2d";
  return one(`${cls}(kernel_size=${k}, stride=${s}${p ? `, padding=${p}` : ""})`, [c, oh, ow], 0);
};

const tokenOrSequencePool = (layer: Extract<Layer, { type: "token_pool" | "sequence_pool" }>, shape: number[], label: string, _path: string, ctx: Ctx): Compiled => {
  const [, d] = tokens(label, shape, "use global_avgpool for images, or drop it for flat features");
  use(ctx, "TokenPool");
  return one(`TokenPool("${layer.mode}")`, [d], 0);
};

/** Every layer type's compiler: the mapped type makes a new layer type without one a type error. */
const LAYER_COMPILERS: { [K in LayerType]: LayerCompiler<K> } = {
  conv2d: (layer, shape, label) => {
    const [c, h, w] = image(label, shape);
    const { out_channels: out, kernel_size: k, stride: s, groups: g } = layer;
    divisible(label, "in_channels", c, "groups", g);
    divisible(label, "out_channels", out, "groups", g);
    const pad = resolvePadding(label, layer.padding, k, s);
    const [oh, ow] = shrink(label, h, w, k, s, pad);
    const args = [`${c}, ${out}`, `kernel_size=${k}`, `stride=${s}`, `padding=${pyPad(pad)}`];
    if (g > 1) args.push(`groups=${g}`);
    if (!layer.bias) args.push("bias=False");
    return one(`nn.Conv2d(${args.join(", ")})`, [out, oh, ow], (out * c * k * k) / g + (layer.bias ? out : 0));
  },
  depthwise_conv2d: (layer, shape, label) => {
    const [c, h, w] = image(label, shape);
    const { kernel_size: k, stride: s } = layer;
    const out = c * layer.multiplier;
    const pad = resolvePadding(label, layer.padding, k, s);
    const [oh, ow] = shrink(label, h, w, k, s, pad);
    const args = [`${c}, ${out}`, `kernel_size=${k}`, `stride=${s}`, `padding=${pyPad(pad)}`, `groups=${c}`];
    if (!layer.bias) args.push("bias=False");
    return one(`nn.Conv2d(${args.join(", ")})`, [out, oh, ow], out * k * k + (layer.bias ? out : 0));
  },
  pointwise_conv2d: (layer, shape, label) => {
    const [c, h, w] = image(label, shape);
    const out = layer.out_channels;
    return one(
      `nn.Conv2d(${c}, ${out}, kernel_size=1${layer.bias ? "" : ", bias=False"})`,
      [out, h, w],
      c * out + (layer.bias ? out : 0),
    );
  },
  batchnorm: (layer, shape, label, _path, ctx) => {
    const ch = shape[shape.length - 1]!;
    if (shape.length === 3) return one(`nn.BatchNorm2d(${shape[0]})`, shape, 2 * shape[0]!);
    if (shape.length === 1) return one(`nn.BatchNorm1d(${ch})`, shape, 2 * ch);
    use(ctx, "TokenBatchNorm");
    return one(`TokenBatchNorm(${ch})`, shape, 2 * ch);
  },
  groupnorm: (layer, shape, label) => {
    if (shape.length === 2) {
      throw shapeError(label, `expects [C, H, W] or [features] but gets tokens ${fmt(shape)}; use layernorm for tokens`);
    }
    const c = shape[0]!;
    divisible(label, "channels", c, "groups", layer.groups);
    return one(`nn.GroupNorm(${layer.groups}, ${c})`, shape, 2 * c);
  },
  layernorm: (layer, shape, label, _path, ctx) => {
    if (shape.length === 3) {
      use(ctx, "ChannelLayerNorm");
      return one(`ChannelLayerNorm(${shape[0]})`, shape, 2 * shape[0]!);
    }
    const d = shape[shape.length - 1]!;
    return one(`nn.LayerNorm(${d})`, shape, 2 * d);
  },
  activation: (layer, shape, label) => {
    return one(`${ACT_CLASS[layer.fn]}()`, shape, 0);
  },
  maxpool: maxpoolOrAvgpool,
  avgpool: maxpoolOrAvgpool,
  global_avgpool: (layer, shape, label) => {
    const [c] = image(label, shape);
    return { exprs: [["nn.AdaptiveAvgPool2d(1)"], ["nn.Flatten()"]], shape: [c], params: 0 };
  },
  dropout: (layer, shape, label) => {
    return one(`nn.Dropout(p=${pyFloat(layer.p)})`, shape, 0);
  },
  dropout2d: (layer, shape, label) => {
    image(label, shape);
    return one(`nn.Dropout2d(p=${pyFloat(layer.p)})`, shape, 0);
  },
  flatten: (layer, shape, label) => {
    return one("nn.Flatten()", [product(shape)], 0);
  },
  linear: (layer, shape, label) => {
    if (shape.length === 3) {
      throw shapeError(
        label,
        `expects a flat [features] input but gets ${fmt(shape)}; add a flatten or global_avgpool before it`,
      );
    }
    const fin = shape[shape.length - 1]!;
    const out = layer.out_features;
    return one(
      `nn.Linear(${fin}, ${out}${layer.bias ? "" : ", bias=False"})`,
      [...shape.slice(0, -1), out],
      fin * out + (layer.bias ? out : 0),
    );
  },
  residual: (layer, shape, label, path, ctx) => {
    return residual(layer.layers, layer.activation, shape, label, path, ctx);
  },
  se: (layer, shape, label, _path, ctx) => {
    const [c] = image(label, shape);
    const hidden = Math.max(1, Math.floor(c / layer.reduction));
    use(ctx, "SqueezeExcite");
    return one(`SqueezeExcite(${c}, ${hidden})`, shape, seParams(c, hidden), `hidden ${hidden}`);
  },
  ghost: (layer, shape, label, _path, ctx) => {
    const [c, h, w] = image(label, shape);
    const { out_channels: out, ratio, kernel_size: k, dw_kernel_size: dw, stride: s } = layer;
    const init = Math.ceil(out / ratio);
    const cheap = init * (ratio - 1);
    const [oh, ow] = shrink(label, h, w, k, s, Math.floor(k / 2));
    use(ctx, "GhostModule");
    const act = layer.activation === "none" ? "nn.Identity" : ACT_CLASS[layer.activation];
    return one(
      `GhostModule(${c}, ${out}, ratio=${ratio}, kernel_size=${k}, dw_size=${dw}, stride=${s}, act=${act})`,
      [out, oh, ow],
      c * init * k * k + 2 * init + cheap * dw * dw + 2 * cheap,
      `${init} intrinsic + ${cheap} cheap maps`,
    );
  },
  mbconv: (layer, shape, label, _path, ctx) => {
    const [c, h, w] = image(label, shape);
    const { out_channels: out, kernel_size: k, stride: s } = layer;
    const hidden = Math.max(1, Math.round(c * layer.expand_ratio));
    const seHidden = layer.se_ratio > 0 ? Math.max(1, Math.floor(c * layer.se_ratio)) : 0;
    const [oh, ow] = shrink(label, h, w, k, s, Math.floor(k / 2));
    use(ctx, "MBConv");
    use(ctx, "SqueezeExcite");
    const params =
      (hidden !== c ? c * hidden + 2 * hidden : 0) +
      hidden * k * k +
      2 * hidden +
      (seHidden > 0 ? seParams(hidden, seHidden) : 0) +
      hidden * out +
      2 * out;
    const skip = s === 1 && c === out;
    return one(
      `MBConv(${c}, ${out}, hidden=${hidden}, kernel_size=${k}, stride=${s}, se_hidden=${seHidden}, act=${ACT_CLASS[layer.activation]})`,
      [out, oh, ow],
      params,
      `expand ${hidden}${skip ? ", skip connection" : ""}`,
    );
  },
  patch_embed: (layer, shape, label, _path, ctx) => {
    const [c, h, w] = image(label, shape);
    const { patch_size: p, dim } = layer;
    if (p > h || p > w) throw shapeError(label, `patch_size ${p} is larger than the ${h}x${w} input`);
    const n = Math.floor(h / p) * Math.floor(w / p);
    use(ctx, "PatchEmbed");
    const pos = layer.position_embedding;
    return one(
      `PatchEmbed(${c}, ${dim}, patch_size=${p}, num_patches=${n}, position_embedding=${pos ? "True" : "False"})`,
      [n, dim],
      dim * c * p * p + dim + (pos ? n * dim : 0),
    );
  },
  transformer_encoder: (layer, shape, label, _path, ctx) => {
    const [, d] = tokens(label, shape, "add a patch_embed (images) or an embedding (token ids) before it");
    if (d % layer.heads !== 0) throw shapeError(label, `dim ${d} is not divisible by heads ${layer.heads}`);
    const mlp = Math.max(1, Math.round(d * layer.mlp_ratio));
    use(ctx, "TransformerBlock");
    const block = `TransformerBlock(${d}, heads=${layer.heads}, mlp_dim=${mlp}, dropout=${pyFloat(layer.dropout)}${layer.causal ? ", causal=True" : ""})`;
    const perBlock = 4 * d + (4 * d * d + 4 * d) + (2 * d * mlp + mlp + d);
    return one(repeat(block, layer.depth), shape, layer.depth * perBlock);
  },
  mixer_block: (layer, shape, label, _path, ctx) => {
    const [n, d] = tokens(label, shape, "add a patch_embed before it");
    const { token_mlp_dim: t, channel_mlp_dim: ch } = layer;
    use(ctx, "MixerBlock");
    const block = `MixerBlock(${n}, ${d}, token_mlp_dim=${t}, channel_mlp_dim=${ch}, dropout=${pyFloat(layer.dropout)})`;
    const perBlock = 4 * d + (2 * n * t + t + n) + (2 * d * ch + ch + d);
    return one(repeat(block, layer.depth), shape, layer.depth * perBlock);
  },
  token_pool: tokenOrSequencePool,
  sequence_pool: tokenOrSequencePool,
  embedding: (layer, shape, label, _path, ctx) => {
    const { vocab_size: v, dim, padding_idx: pad } = layer;
    const length = shape[0]!;
    if (ctx.vocabSize !== undefined && v < ctx.vocabSize) {
      throw invalid(`${label}: vocab_size ${v} is smaller than the dataset's vocabulary ${ctx.vocabSize}`);
    }
    if (pad !== undefined && pad >= v) throw invalid(`${label}: padding_idx ${pad} is outside vocab_size ${v}`);
    const padArg = pad === undefined ? "" : `, padding_idx=${pad}`;
    if (!layer.position_embedding) return { ...one(`nn.Embedding(${v}, ${dim}${padArg})`, [length, dim], v * dim), lookup: v * dim };
    use(ctx, "TokenEmbedding");
    const table = v * dim + length * dim;
    return { ...one(`TokenEmbedding(${v}, ${dim}, length=${length}${padArg})`, [length, dim], table), lookup: table };
  },
  ngram_embedding: (layer, shape, label, _path, ctx) => {
    const { orders, buckets, dim } = layer;
    use(ctx, "NgramEmbedding");
    // The id no token has (the vocabulary's size) stands for the bytes before a window's start.
    const table = buckets * dim;
    return { ...one(`NgramEmbedding(${orders}, ${buckets}, ${dim}, vocab_size=${ctx.vocabSize ?? 256})`, [shape[0]!, orders * dim], table), lookup: table };
  },
  conv1d: (layer, shape, label, _path, ctx) => {
    const [len, d] = tokens(label, shape, "add an embedding before it");
    const { out_channels: out, kernel_size: k, stride: s, groups: g } = layer;
    divisible(label, "in_channels", d, "groups", g);
    divisible(label, "out_channels", out, "groups", g);
    const pad = resolvePadding(label, layer.padding, k, s);
    const olen = shrinkLength(label, len, k, s, pad);
    use(ctx, "SeqConv1d");
    const args = [`${d}, ${out}`, `kernel_size=${k}`, `stride=${s}`, `padding=${pyPad(pad)}`];
    if (g > 1) args.push(`groups=${g}`);
    if (!layer.bias) args.push("bias=False");
    return one(`SeqConv1d(${args.join(", ")})`, [olen, out], (out * d * k) / g + (layer.bias ? out : 0));
  },
  gru: (layer, shape, label, _path, ctx) => {
    const [len, d] = tokens(label, shape, "add an embedding before it");
    const { hidden: h, layers: n } = layer;
    if (layer.dropout > 0 && n === 1) throw invalid(`${label}: dropout ${layer.dropout} acts between stacked layers; set layers > 1 or dropout 0`);
    use(ctx, "SeqGRU");
    const args = [`${d}, ${h}`, ...(n > 1 ? [`num_layers=${n}`] : []), ...(layer.dropout > 0 ? [`dropout=${pyFloat(layer.dropout)}`] : [])];
    // Per layer: input-to-hidden and hidden-to-hidden weights and both biases, for 3 gates.
    const params = 3 * (h * d + h * h + 2 * h) + (n - 1) * 3 * (2 * h * h + 2 * h);
    return one(`SeqGRU(${args.join(", ")})`, [len, h], params);
  },
};

function compileLayer(layer: Layer, shape: number[], label: string, path: string, ctx: Ctx): Compiled {
  return (LAYER_COMPILERS[layer.type] as LayerCompiler<LayerType>)(layer as never, shape, label, path, ctx);
}

function residual(
  layers: readonly Layer[],
  activation: Activation | "none",
  shape: number[],
  label: string,
  path: string,
  ctx: Ctx,
): Compiled {
  ctx.helpers.add("Residual");
  const body = compileSequence(layers, { shape, ids: false }, `${path}.layers`, ctx);
  const out = body.flow.shape;
  let params = body.items.reduce((sum, it) => sum + it.params, 0);
  let shortcut: string | undefined;
  let note: string | undefined;
  if (fmt(out) !== fmt(shape)) {
    if (out.length !== shape.length) {
      throw shapeError(label, `its layers turn ${fmt(shape)} into ${fmt(out)}; the shortcut cannot be projected across ranks`);
    }
    if (shape.length === 3) {
      const [c, h, w] = shape as [number, number, number];
      const [oc, oh, ow] = out as [number, number, number];
      const stride = projectionStride(h, w, oh, ow);
      if (stride === undefined) {
        throw shapeError(label, `its layers turn ${h}x${w} into ${oh}x${ow}, which no strided 1x1 projection matches`);
      }
      shortcut = `nn.Sequential(nn.Conv2d(${c}, ${oc}, kernel_size=1, stride=${stride}, bias=False), nn.BatchNorm2d(${oc}))`;
      params += c * oc + 2 * oc;
      note = `1x1 projection shortcut, stride ${stride}`;
    } else {
      if (shape.length === 2 && out[0] !== shape[0]) {
        throw shapeError(label, `its layers change the token count ${shape[0]} to ${out[0]}; the shortcut cannot follow`);
      }
      const fin = shape[shape.length - 1]!;
      const fout = out[out.length - 1]!;
      shortcut = `nn.Linear(${fin}, ${fout})`;
      params += fin * fout + fout;
      note = "linear projection shortcut";
    }
  }
  const args: Expr[] = [sequential(body.items)];
  if (shortcut) args.push([`shortcut=${shortcut}`]);
  if (activation !== "none") args.push([`act=${ACT_CLASS[activation]}()`]);
  const expr = ["Residual(", ...args.flatMap((a) => withComma(a).map((l) => INDENT + l)), ")"];
  return { exprs: [expr], shape: out, params, note };
}

/** The smallest stride s with floor((size - 1) / s) + 1 == target in both dims, which is what a 1x1 conv gives. */
function projectionStride(h: number, w: number, oh: number, ow: number): number | undefined {
  for (let s = 1; s <= Math.max(h, w); s++) {
    if (Math.floor((h - 1) / s) + 1 === oh && Math.floor((w - 1) / s) + 1 === ow) return s;
  }
  return undefined;
}

function implicitHead(shape: number[], numClasses: number): Item[] {
  if (shape.length === 1 && shape[0] === numClasses) return [];
  const why = `head (implicit: the layers end at ${fmt(shape)}, not [${numClasses}])`;
  const items: Item[] = [];
  let features = shape[0]!;
  if (shape.length !== 1) {
    features = product(shape);
    items.push({ label: "head flatten", comment: `${why}: flatten`, exprs: [["nn.Flatten()"]], shape: [features], params: 0 });
  }
  const params = features * numClasses + numClasses;
  items.push({
    label: "head linear",
    comment: `${items.length ? "head" : why}: linear to ${numClasses} classes, ${count(params)} params`,
    exprs: [[`nn.Linear(${features}, ${numClasses})`]],
    shape: [numClasses],
    params,
  });
  return items;
}

/**
 * A language model's head: at each position, a linear map to the vocabulary's scores, unless the
 * layers end with their own (a linear or conv1d of the vocabulary's width). A byte vocabulary is
 * 256 wide, a common width for any layer: a GRU of 256 read as scores is bounded by its tanh, and
 * trained to 5.7 bits per byte where with a head it reaches 2.5.
 */
function positionHead(shape: number[], vocab: number, last: Layer | undefined): Item[] {
  const [length, d] = tokens("head", shape, "a language model keeps one vector per position: no pooling or flatten");
  if (d === vocab && (last?.type === "linear" || last?.type === "conv1d")) return [];
  const params = d * vocab + vocab;
  return [{ label: "head linear", comment: `head (implicit): at each position, linear to ${vocab} scores, ${count(params)} params`, exprs: [[`nn.Linear(${d}, ${vocab})`]], shape: [length, vocab], params }];
}

/**
 * Weight tying: the head's matrix is the first layer's embedding table, so the model learns one
 * vector per token for reading and writing; `shared` is the parameter count it saves.
 */
function tiedHead(first: Layer | undefined, items: Item[]): { statements: string[]; shared: number } {
  const head = items[items.length - 1];
  if (first?.type !== "embedding" || head?.label !== "head linear" || items.length < 2) {
    throw invalid("tie_embeddings: the layers must start with an embedding and end where the implicit head maps them to the vocabulary");
  }
  const [, width] = items[items.length - 2]!.shape;
  if (width !== first.dim) throw invalid(`tie_embeddings: the head reads width ${width}, the embedding's dim is ${first.dim}; they must match`);
  const table = first.position_embedding ? "self.layers[0].tok.weight" : "self.layers[0].weight";
  // nn.Embedding's N(0, 1) table would make the head's logits ~sqrt(dim) wide: initial losses of
  // tens of bits per byte. At 1/sqrt(dim) they start near unit width, as GPT-2's 0.02 does at 768.
  return {
    statements: [`self.layers[${items.length - 1}].weight = ${table}`, `nn.init.normal_(${table}, std=${pyFloat(Number((1 / Math.sqrt(width!)).toPrecision(4)))})`],
    shared: first.vocab_size * first.dim,
  };
}

function image(label: string, shape: number[]): [number, number, number] {
  if (shape.length === 3) return shape as [number, number, number];
  const hint =
    shape.length === 2
      ? "image layers cannot follow a patch_embed or embedding; use conv1d or the token layers"
      : "image layers cannot follow a flatten or a pooling to [features]";
  throw shapeError(label, `expects an image [channels, height, width] but gets ${fmt(shape)}; ${hint}`);
}

function tokens(label: string, shape: number[], hint: string): [number, number] {
  if (shape.length === 2) return shape as [number, number];
  throw shapeError(label, `expects tokens [count, dim] but gets ${fmt(shape)}; ${hint}`);
}

function divisible(label: string, what: string, value: number, by: string, divisor: number): void {
  if (value % divisor !== 0) throw shapeError(label, `${what} ${value} is not divisible by ${by} ${divisor}`);
}

/** PyTorch only supports padding="same" at stride 1; odd kernels get the equivalent integer so any stride works. */
function resolvePadding(label: string, padding: "same" | number, k: number, stride: number): number | "same" {
  if (padding !== "same") return padding;
  if (k % 2 === 1) return (k - 1) / 2;
  if (stride === 1) return "same";
  throw invalid(`${label}: padding "same" with the even kernel ${k} needs stride 1; use an odd kernel or an integer padding`);
}

function convOut(size: number, k: number, s: number, pad: number | "same"): number {
  return pad === "same" ? size : Math.floor((size + 2 * pad - k) / s) + 1;
}

/** A sequence's length after a kernel along it (conv1d, a pooling), refused where nothing is left. */
function shrinkLength(label: string, len: number, k: number, s: number, pad: number | "same"): number {
  const olen = convOut(len, k, s, pad);
  if (olen < 1) throw shapeError(label, `kernel ${k} (stride ${s}, padding ${pyPad(pad)}) shrinks length ${len} to 0`);
  return olen;
}

function shrink(label: string, h: number, w: number, k: number, s: number, pad: number | "same"): [number, number] {
  const oh = convOut(h, k, s, pad);
  const ow = convOut(w, k, s, pad);
  if (oh < 1 || ow < 1) {
    throw shapeError(
      label,
      `kernel ${k} (stride ${s}, padding ${pyPad(pad)}) shrinks ${h}x${w} to ${Math.max(0, oh)}x${Math.max(0, ow)}`,
    );
  }
  return [oh, ow];
}

function seParams(c: number, hidden: number): number {
  return c * hidden + hidden + hidden * c + c;
}

const ACT_CLASS: Record<Activation, string> = {
  relu: "nn.ReLU",
  gelu: "nn.GELU",
  silu: "nn.SiLU",
  mish: "nn.Mish",
  tanh: "nn.Tanh",
  sigmoid: "nn.Sigmoid",
  leaky_relu: "nn.LeakyReLU",
  hardswish: "nn.Hardswish",
};

function one(expr: string, shape: number[], params: number, note?: string): Compiled {
  return { exprs: [[expr]], shape, params, note };
}

function repeat(expr: string, times: number): string {
  return times === 1 ? expr : `nn.Sequential(*[${expr} for _ in range(${times})])`;
}

function shapeError(label: string, message: string): ResearchError {
  return new ResearchError("shape_error", `${label}: ${message}`);
}

function invalid(message: string): ResearchError {
  return new ResearchError("invalid_config", message);
}

function isCompileFailure(label: FailureName): label is CompileFailureLabel {
  return label === "shape_error" || label === "invalid_config";
}

function product(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}
