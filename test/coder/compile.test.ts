import { beforeAll, describe, expect, it } from "vitest";
import { classNameFor, compileModel } from "../../core/compiler/compile.js";
import type { CompileOptions } from "../../core/compiler/options.js";
import { LAYER_TYPES, type Layer, type ModelConfigInput } from "../../core/model-config.js";
import { run } from "../helpers/run.js";

// Debian's torch lives with the system interpreter, not whatever python3 is first on PATH.
const PYTHON = process.env.CODER_TEST_PYTHON ?? "/usr/bin/python3";

interface Case {
  config: ModelConfigInput;
  opts: CompileOptions & { inputShape: number[]; numClasses: number };
  /** True when the config already ends at [numClasses], so no head may be appended. */
  headless?: boolean;
}

const CASES: Case[] = [
  {
    config: {
      name: "plain-cnn",
      layers: [
        { type: "conv2d", out_channels: 16, bias: false },
        { type: "batchnorm" },
        { type: "activation", fn: "relu" },
        { type: "maxpool" },
        { type: "conv2d", out_channels: 32, padding: 0, groups: 2 },
        { type: "groupnorm", groups: 8 },
        { type: "activation", fn: "gelu" },
        { type: "conv2d", out_channels: 32, kernel_size: 2 },
        { type: "layernorm" },
        { type: "avgpool", kernel_size: 3, stride: 2, padding: 1 },
        { type: "dropout2d", p: 0.1 },
        { type: "flatten" },
        { type: "linear", out_features: 64 },
        { type: "batchnorm" },
        { type: "activation", fn: "mish" },
        { type: "dropout", p: 0.3 },
      ],
    },
    opts: { inputShape: [1, 28, 28], numClasses: 10 },
  },
  {
    config: {
      name: "resnet-ish",
      layers: [
        { type: "conv2d", out_channels: 16, bias: false },
        { type: "batchnorm" },
        { type: "activation" },
        {
          type: "residual",
          activation: "relu",
          layers: [
            { type: "conv2d", out_channels: 16, bias: false },
            { type: "batchnorm" },
            { type: "activation" },
            { type: "conv2d", out_channels: 16, bias: false },
            { type: "batchnorm" },
            { type: "se", reduction: 4 },
          ],
        },
        {
          type: "residual",
          activation: "relu",
          layers: [
            { type: "conv2d", out_channels: 32, stride: 2, bias: false },
            { type: "batchnorm" },
            { type: "activation" },
            { type: "conv2d", out_channels: 32, bias: false },
            { type: "batchnorm" },
          ],
        },
        { type: "depthwise_conv2d", stride: 2, multiplier: 2, bias: false },
        { type: "pointwise_conv2d", out_channels: 48 },
        { type: "activation", fn: "hardswish" },
        { type: "global_avgpool" },
        { type: "linear", out_features: 10 },
      ],
    },
    opts: { inputShape: [3, 32, 32], numClasses: 10 },
    headless: true,
  },
  {
    config: {
      name: "ghost-mbconv",
      layers: [
        { type: "conv2d", out_channels: 16, stride: 2 },
        { type: "batchnorm" },
        { type: "activation", fn: "silu" },
        { type: "ghost", out_channels: 24, ratio: 3 },
        { type: "ghost", out_channels: 32, stride: 2, kernel_size: 3, activation: "none" },
        { type: "mbconv", out_channels: 32, expand_ratio: 1, se_ratio: 0 },
        { type: "mbconv", out_channels: 40, expand_ratio: 6, kernel_size: 5, stride: 2, activation: "hardswish" },
        { type: "activation", fn: "leaky_relu" },
        { type: "pointwise_conv2d", out_channels: 10 },
        { type: "global_avgpool" },
      ],
    },
    opts: { inputShape: [3, 32, 32], numClasses: 10 },
    headless: true,
  },
  {
    config: {
      name: "vit-tiny",
      layers: [
        { type: "patch_embed", patch_size: 4, dim: 48 },
        { type: "dropout", p: 0.1 },
        { type: "transformer_encoder", heads: 4, depth: 2, mlp_ratio: 2, dropout: 0.1 },
        { type: "layernorm" },
        { type: "token_pool" },
      ],
    },
    opts: { inputShape: [3, 32, 32], numClasses: 10 },
  },
  {
    config: {
      name: "mixer",
      layers: [
        { type: "patch_embed", patch_size: 7, dim: 32, position_embedding: false },
        { type: "mixer_block", token_mlp_dim: 32, channel_mlp_dim: 64, depth: 2 },
        { type: "layernorm" },
        { type: "token_pool", mode: "max" },
        { type: "linear", out_features: 10 },
      ],
    },
    opts: { inputShape: [1, 28, 28], numClasses: 10 },
    headless: true,
  },
  {
    config: {
      name: "tabular-mlp",
      layers: [
        { type: "linear", out_features: 64 },
        { type: "batchnorm" },
        { type: "activation", fn: "silu" },
        { type: "dropout", p: 0.2 },
        {
          type: "residual",
          layers: [
            { type: "linear", out_features: 32 },
            { type: "activation", fn: "tanh" },
            { type: "linear", out_features: 32 },
          ],
        },
        { type: "layernorm" },
        { type: "linear", out_features: 16, bias: false },
        { type: "groupnorm", groups: 4 },
        { type: "activation", fn: "sigmoid" },
        { type: "linear", out_features: 2 },
      ],
    },
    opts: { inputShape: [30], numClasses: 2 },
    headless: true,
  },
  {
    config: {
      name: "text-cnn",
      layers: [
        { type: "embedding", vocab_size: 1000, dim: 32, padding_idx: 0, position_embedding: true },
        { type: "conv1d", out_channels: 64, kernel_size: 5 },
        { type: "batchnorm" },
        { type: "activation" },
        { type: "residual", layers: [{ type: "conv1d", out_channels: 64 }, { type: "activation", fn: "gelu" }] },
        { type: "conv1d", out_channels: 64, kernel_size: 4, stride: 2, padding: 1 },
        { type: "linear", out_features: 48 },
        { type: "transformer_encoder", heads: 4 },
        { type: "gru", hidden: 40, layers: 2, dropout: 0.1 },
        { type: "sequence_pool", mode: "max" },
      ],
    },
    opts: { inputShape: [128], numClasses: 4, inputDtype: "int64", vocabSize: 1000 },
  },
  {
    config: {
      name: "text-mixer",
      input_dtype: "int64",
      layers: [
        { type: "embedding", vocab_size: 500, dim: 16 },
        { type: "mixer_block" },
      ],
    },
    opts: { inputShape: [64], numClasses: 3 },
  },
  {
    config: {
      name: "text-ngrams",
      layers: [{ type: "ngram_embedding", orders: 3, buckets: 2048, dim: 8 }, { type: "layernorm" }, { type: "sequence_pool", mode: "mean" }],
    },
    opts: { inputShape: [32], numClasses: 5, inputDtype: "int64", vocabSize: 700 },
  },
  {
    config: {
      name: "series-conv",
      layers: [
        { type: "conv1d", out_channels: 16, kernel_size: 2 },
        { type: "activation" },
        { type: "maxpool" },
        { type: "avgpool", kernel_size: 3, stride: 2, padding: 1 },
        { type: "sequence_pool" },
      ],
    },
    opts: { inputShape: [16, 8], numClasses: 5 },
  },
];

function compiled(c: Case) {
  const r = compileModel(c.config, c.opts);
  if (!r.ok) throw new Error(`${c.config.name}: ${r.error}`);
  return r;
}

function errorOf(layers: Layer[] | ModelConfigInput["layers"], opts: CompileOptions) {
  const r = compileModel({ name: "broken", layers }, opts);
  if (r.ok) throw new Error("expected a compile error");
  return r;
}

const PY_HARNESS = `
import json, sys, traceback
import torch
torch.manual_seed(0)
torch.set_num_threads(2)
results = []
for case in json.load(sys.stdin):
    try:
        ns = {"__name__": "generated"}
        exec(compile(case["code"], case["name"] + ".py", "exec"), ns)
        model = ns[case["class_name"]]()
        if case["dtype"] == "int64":
            x = torch.randint(0, case["vocab"], (2, *case["shape"]))
        else:
            x = torch.randn(2, *case["shape"])
        model.train()
        out = model(x)
        out.sum().backward()
        model.eval()
        with torch.no_grad():
            out_eval = model(x)
        results.append({
            "name": case["name"],
            "shape": list(out.shape),
            "eval_shape": list(out_eval.shape),
            "finite": bool(torch.isfinite(out).all()),
            "params": sum(p.numel() for p in model.parameters()),
        })
    except Exception:
        results.append({"name": case["name"], "error": traceback.format_exc()})
print(json.dumps(results))
`;

interface PyResult {
  name: string;
  shape?: number[];
  eval_shape?: number[];
  finite?: boolean;
  params?: number;
  error?: string;
}

describe("compileModel", () => {
  it("covers every layer type of the vocabulary", () => {
    const seen = new Set<string>();
    const walk = (layers: readonly { type: string; layers?: unknown }[]) => {
      for (const l of layers) {
        seen.add(l.type);
        if (Array.isArray(l.layers)) walk(l.layers);
      }
    };
    for (const c of CASES) walk(c.config.layers);
    expect([...seen].sort()).toEqual([...LAYER_TYPES].sort());
  });

  it("is deterministic and names the config in the header", () => {
    for (const c of CASES) {
      const a = compiled(c);
      const b = compiled(structuredClone(c));
      expect(a.code).toBe(b.code);
      expect(a.code.split("\n")[0]).toContain(`"${c.config.name}"`);
      expect(a.code).toContain("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n");
      expect(a.code).toContain(`class ${a.className}(nn.Module):`);
      expect(a.outputShape).toEqual([c.opts.numClasses]);
    }
  });

  it("appends the classifier head only when the layers do not end at [numClasses]", () => {
    for (const c of CASES) {
      const r = compiled(c);
      const hasHead = r.shapes.some((s) => s.layer.startsWith("head"));
      expect(hasHead, c.config.name).toBe(!c.headless);
      expect(r.code.includes("head (implicit"), c.config.name).toBe(!c.headless);
    }
    const tokens = compiled(CASES.find((c) => c.config.name === "text-mixer")!);
    expect(tokens.shapes.slice(-2)).toEqual([
      { layer: "head flatten", shape: [1024], params: 0 },
      { layer: "head linear", shape: [3], params: 1024 * 3 + 3 },
    ]);
  });

  it("emits only the helper classes in use", () => {
    const cnn = compiled(CASES[0]!);
    expect(cnn.code).toContain("class ChannelLayerNorm(nn.LayerNorm):");
    expect(cnn.code).not.toContain("class Residual(");
    expect(cnn.code).not.toContain("class TransformerBlock(");
    const vit = compiled(CASES[3]!);
    expect(vit.code).toContain("class PatchEmbed(nn.Module):");
    expect(vit.code).toContain("class TransformerBlock(nn.Module):");
    expect(vit.code).toContain("nn.Sequential(*[TransformerBlock(48, heads=4, mlp_dim=96, dropout=0.1) for _ in range(2)])");
  });

  it("derives a Python class name from the config name", () => {
    expect(classNameFor("resnet-ish v2")).toBe("ResnetIshV2");
    expect(classNameFor("3 layer mlp")).toBe("Model3LayerMlp");
    expect(classNameFor("residual")).toBe("ResidualModel");
    expect(classNameFor("--")).toBe("Model");
    const r = compileModel(CASES[0]!.config, { ...CASES[0]!.opts, className: "Net" });
    expect(r.ok && r.className).toBe("Net");
    const bad = compileModel(CASES[0]!.config, { ...CASES[0]!.opts, className: "not valid" });
    expect(bad).toMatchObject({ ok: false, label: "invalid_config" });
  });

  describe("shape errors name the layer before any Python runs", () => {
    it("linear on an image", () => {
      const r = errorOf(
        [
          { type: "conv2d", out_channels: 32 },
          { type: "maxpool" },
          { type: "maxpool" },
          { type: "activation" },
          { type: "linear", out_features: 10 },
        ],
        { inputShape: [1, 28, 28], numClasses: 10 },
      );
      expect(r).toEqual({
        ok: false,
        label: "shape_error",
        error:
          "layers[4] linear: expects a flat [features] input but gets [32, 7, 7]; add a flatten or global_avgpool before it",
      });
    });

    it("pooling past 1x1", () => {
      const r = errorOf([{ type: "maxpool", kernel_size: 4 }, { type: "maxpool" }, { type: "maxpool" }], {
        inputShape: [1, 8, 8],
        numClasses: 2,
      });
      expect(r.error).toBe("layers[2] maxpool: kernel 2 (stride 2, padding 0) shrinks 1x1 to 0x0");
      const seq = errorOf([{ type: "maxpool", kernel_size: 4 }, { type: "maxpool" }], { inputShape: [6, 3], numClasses: 2 });
      expect(seq.error).toBe("layers[1] maxpool: kernel 2 (stride 2, padding 0) shrinks length 1 to 0");
    });

    it("heads that do not divide the dim, inside a residual", () => {
      const r = errorOf(
        [
          { type: "patch_embed", patch_size: 4, dim: 30 },
          { type: "residual", layers: [{ type: "layernorm" }, { type: "transformer_encoder", heads: 4 }] },
        ],
        { inputShape: [3, 32, 32], numClasses: 10 },
      );
      expect(r.label).toBe("shape_error");
      expect(r.error).toBe("layers[1].layers[1] transformer_encoder: dim 30 is not divisible by heads 4");
    });

    it("layers that need another rank", () => {
      const seq = errorOf([{ type: "flatten" }, { type: "conv2d", out_channels: 8 }], { inputShape: [3, 8, 8], numClasses: 2 });
      expect(seq.error).toMatch(/^layers\[1\] conv2d: expects an image \[channels, height, width\] but gets \[192\]/);
      const tok = errorOf([{ type: "token_pool" }], { inputShape: [3, 8, 8], numClasses: 2 });
      expect(tok.error).toMatch(/^layers\[0\] token_pool: expects tokens \[count, dim\] but gets \[3, 8, 8\]/);
      const groups = errorOf([{ type: "conv2d", out_channels: 8, groups: 2 }], { inputShape: [3, 8, 8], numClasses: 2 });
      expect(groups.error).toBe("layers[0] conv2d: in_channels 3 is not divisible by groups 2");
      const res = errorOf([{ type: "residual", layers: [{ type: "global_avgpool" }] }], { inputShape: [3, 8, 8], numClasses: 2 });
      expect(res.error).toContain("layers[0] residual: its layers turn [3, 8, 8] into [3]");
    });

    it("config problems are invalid_config", () => {
      expect(errorOf([{ type: "linear", out_features: 4 }], { inputShape: [128], inputDtype: "int64", numClasses: 2 })).toEqual({
        ok: false,
        label: "invalid_config",
        error: "layers[0] linear: the input is int64 token ids [128]; start with an embedding",
      });
      const vocab = errorOf([{ type: "embedding", vocab_size: 100 }], {
        inputShape: [16],
        inputDtype: "int64",
        numClasses: 2,
        vocabSize: 5000,
      });
      expect(vocab.error).toBe("layers[0] embedding: vocab_size 100 is smaller than the dataset's vocabulary 5000");
      const mismatch = compileModel({ name: "m", input_shape: [3, 32, 32], layers: [{ type: "flatten" }] }, { inputShape: [1, 28, 28], numClasses: 10 });
      expect(mismatch).toMatchObject({ ok: false, label: "invalid_config" });
      expect(!mismatch.ok && mismatch.error).toContain("config input_shape [3,32,32] disagrees with the dataset's [1,28,28]");
      const schema = compileModel({ name: "m", layers: [{ type: "dropout", p: 2 }] }, { inputShape: [4], numClasses: 2 });
      expect(schema).toEqual({
        ok: false,
        label: "invalid_config",
        error: "invalid model_config:\n- layers[0].p: expected a number in [0, 1)",
      });
      expect(compileModel({ name: "m", layers: [{ type: "flatten" }] }, { inputShape: [4] })).toMatchObject({ label: "invalid_config" });
    });
  });

  describe("language models", () => {
    const lm = { inputShape: [256], numClasses: 256, inputDtype: "int64" as const, vocabSize: 256, perPosition: true };
    const embedding = { type: "embedding" as const, vocab_size: 256, dim: 64, position_embedding: true };
    const gpt = (extra: Partial<ModelConfigInput> = {}) =>
      compileModel({ name: "gpt", layers: [embedding, { type: "transformer_encoder", heads: 4, causal: true }, { type: "layernorm" }], ...extra }, lm);

    it("end at a score per byte value at every position, the head shared with the embedding when tied", () => {
      const untied = gpt();
      const tied = gpt({ tie_embeddings: true });
      if (!untied.ok || !tied.ok) throw new Error("did not compile");
      expect(untied.outputShape).toEqual([256, 256]);
      expect(untied.shapes.at(-1)).toEqual({ layer: "head linear", shape: [256, 256], params: 64 * 256 + 256 });
      expect(tied.params).toBe(untied.params - 256 * 64);
      // Its tables are looked up, not multiplied: the token and position rows; tied, the token table is the head's matrix too.
      expect(untied.lookupParams).toBe(256 * 64 + 256 * 64);
      expect(tied.lookupParams).toBe(256 * 64);
      expect(tied.code).toContain("self.layers[3].weight = self.layers[0].tok.weight\n        nn.init.normal_(self.layers[0].tok.weight, std=0.125)");
      expect(untied.code).toContain("TransformerBlock(64, heads=4, mlp_dim=256, dropout=0.0, causal=True)");
      const gru = compileModel({ name: "rnn", layers: [{ type: "embedding", vocab_size: 256, dim: 32 }, { type: "gru", hidden: 48 }] }, lm);
      expect(gru.ok && gru.shapes.slice(-2)).toEqual([
        { layer: "layers[1] gru", shape: [256, 48], params: 3 * (48 * 32 + 48 * 48 + 2 * 48) },
        { layer: "head linear", shape: [256, 256], params: 48 * 256 + 256 },
      ]);
    });

    it("get the head whenever the layers end at the vocabulary's width without a linear or conv1d of their own", () => {
      // A GRU of 256 over bytes read as scores is bounded by its tanh: the byte-gru template trained to 5.7 bits per byte so.
      const gru = compileModel({ name: "rnn", layers: [{ type: "embedding", vocab_size: 256, dim: 32 }, { type: "gru", hidden: 256 }] }, lm);
      expect(gru.ok && gru.shapes.at(-1)).toEqual({ layer: "head linear", shape: [256, 256], params: 256 * 256 + 256 });
      const wide = gpt({ tie_embeddings: true, layers: [{ ...embedding, dim: 256 }, { type: "transformer_encoder", heads: 4, causal: true }, { type: "layernorm" }] });
      expect(wide.ok && wide.shapes.at(-1)?.layer).toBe("head linear");
      const own = compileModel({ name: "own", layers: [embedding, { type: "linear", out_features: 256 }] }, lm);
      expect(own.ok && own.shapes.at(-1)?.layer).toBe("layers[1] linear");
    });

    it("read hashed n-grams of the ids as their first layer, as an embedding does, and refuse them after float features", () => {
      const ngram = compileModel({ name: "ngram", layers: [{ type: "ngram_embedding", orders: 6, buckets: 4096, dim: 16 }, { type: "linear", out_features: 64 }] }, lm);
      if (!ngram.ok) throw new Error(ngram.error);
      expect(ngram.shapes.slice(1)).toEqual([
        { layer: "layers[0] ngram_embedding", shape: [256, 96], params: 4096 * 16 },
        { layer: "layers[1] linear", shape: [256, 64], params: 96 * 64 + 64 },
        { layer: "head linear", shape: [256, 256], params: 64 * 256 + 256 },
      ]);
      expect(ngram.code).toContain("NgramEmbedding(6, 4096, 16, vocab_size=256)");
      expect(ngram.lookupParams).toBe(4096 * 16);
      const late = compileModel({ name: "late", layers: [embedding, { type: "ngram_embedding" }] }, lm);
      expect(!late.ok && late.error).toMatch(/layers\[1\] ngram_embedding: expects int64 token ids straight from the input/);
    });

    it("mix in their own n-gram counts where the config asks, in eval mode only, and refuse them elsewhere", async () => {
      const counted = compileModel({ name: "counted", layers: [{ type: "ngram_embedding", orders: 4, buckets: 1024, dim: 8 }], counts: { orders: 5 } }, lm);
      if (!counted.ok) throw new Error(counted.error);
      expect(counted.code).toContain("self.counts = ByteCounts(5, weight=0.3)");
      expect(counted.code).toContain("return logits if self.training else self.counts(logits, x)");
      const classifier = compileModel({ name: "c", layers: [{ type: "linear", out_features: 8 }], counts: {} }, { inputShape: [4], numClasses: 3 });
      expect(!classifier.ok && classifier.error).toMatch(/^counts: only a byte-level language model/);
      // In the oldest torch the workers take (Debian's 1.13): counted, the eval output is a
      // distribution's log; the training output is the network's; a model built afresh loads the counts.
      const check = [
        "import json, sys, torch",
        "src = json.load(sys.stdin)",
        "scope = {}",
        "exec(src['code'], scope)",
        "model = scope[src['cls']]()",
        "rows = torch.randint(0, 40, (30, 257), dtype=torch.uint8)",
        "stats = model.counts.fit_counts(rows)",
        "x = rows[:2, :64].long()",
        "model.eval()",
        "out = model(x)",
        "fresh = scope[src['cls']]()",
        "fresh.load_state_dict(model.state_dict())",
        "fresh.eval()",
        "model.train()",
        "print(json.dumps({'orders': stats['orders'], 'sums': out.logsumexp(-1).abs().max().item(), 'same': torch.equal(fresh(x), out),",
        "                  'mixed': not torch.allclose(model(x), out)}))",
      ].join("\n");
      const py = await run(PYTHON, ["-c", check], { input: JSON.stringify({ code: counted.code, cls: counted.className }), timeout: 55_000 });
      expect(py.status, py.stderr).toBe(0);
      const result = JSON.parse(py.stdout) as { orders: number; sums: number; same: boolean; mixed: boolean };
      expect(result).toMatchObject({ orders: 5, same: true, mixed: true });
      expect(result.sums).toBeLessThan(1e-4);
    }, 60_000);

    it("refuse a pooled output and a tie the widths do not allow", () => {
      const pooled = compileModel({ name: "pooled", layers: [embedding, { type: "sequence_pool" }] }, lm);
      expect(pooled).toMatchObject({ ok: false, label: "shape_error" });
      expect(!pooled.ok && pooled.error).toMatch(/a language model keeps one vector per position/);
      const wide = compileModel({ name: "wide", tie_embeddings: true, layers: [embedding, { type: "linear", out_features: 32 }] }, lm);
      expect(!wide.ok && wide.error).toBe("tie_embeddings: the head reads width 32, the embedding's dim is 64; they must match");
      const single = compileModel({ name: "g", layers: [embedding, { type: "gru", hidden: 32, dropout: 0.2 }] }, lm);
      expect(!single.ok && single.error).toMatch(/dropout 0\.2 acts between stacked layers; set layers > 1 or dropout 0/);
    });
  });

  describe("generated code runs in PyTorch", () => {
    let results: PyResult[] = [];

    beforeAll(async () => {
      const payload = CASES.map((c) => {
        const r = compiled(c);
        const embedding = c.config.layers.find((l) => l.type === "embedding") as { vocab_size: number } | undefined;
        return {
          name: c.config.name,
          code: r.code,
          class_name: r.className,
          shape: c.opts.inputShape,
          dtype: c.opts.inputDtype ?? c.config.input_dtype ?? "float32",
          vocab: embedding?.vocab_size ?? c.opts.vocabSize ?? 0,
        };
      });
      const py = await run(PYTHON, ["-c", PY_HARNESS], {
        input: JSON.stringify(payload),
        timeout: 55_000,
        env: { ...process.env, OMP_NUM_THREADS: "2" },
      });
      if (py.status !== 0) throw new Error(`python failed (${py.status ?? "killed"}): ${py.stderr}`);
      results = JSON.parse(py.stdout.trim().split("\n").pop()!) as PyResult[];
    }, 60_000);

    it.each(CASES.map((c) => [c.config.name, c] as const))("%s: output [2, numClasses] and the exact parameter count", (name, c) => {
      const r = compiled(c);
      const py = results.find((x) => x.name === name);
      expect(py?.error, py?.error).toBeUndefined();
      expect(py).toMatchObject({ shape: [2, c.opts.numClasses], eval_shape: [2, c.opts.numClasses], finite: true });
      expect(py?.params).toBe(r.params);
    });
  });
});
