/**
 * Does similarity search find what a person means? A labelled query set, recall@5, for the
 * hashing embedder against MiniLM (all-MiniLM-L6-v2), on:
 *   (a) lineage: ~150 realistic trials (hypothesis, configs, failure label) in a real
 *       LineageStore, searched with similarTrials (vector only);
 *   (b) the research corpus (research/corpus.jsonl) in a real CorpusIndex: the vector
 *       retriever alone, BM25 alone, and the fused ranking the researcher uses;
 * plus the model's load time and embedding latency per batch.
 *
 * Every query lists its relevant items; recall@5 = relevant items in the top 5 / min(5,
 * relevant). Each query is marked "words" (shares a content word with its relevant texts)
 * or "meaning" (a paraphrase sharing none, or almost none), since the two embedders differ
 * most on the second kind. The queries and labels were written before any result was seen.
 *
 * Run: npx tsx bench/embedder-bench.ts [out.json]   (needs .venv: bash scripts/setup.sh)
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HashingEmbedder, type Embedder } from "../core/embedder.js";
import { MiniLmEmbedder } from "../core/embedder-minilm.js";
import type { FailureName } from "../core/failure.js";
import { trialId } from "../core/ids.js";
import { LineageStore } from "../lineage-store/store.js";
import { CorpusIndex } from "../research/corpus-index.js";
import { CORPUS } from "../research/corpus.js";
import { runEvents, type TrialSpec } from "../test/lineage-store/fixtures.js";

const K = 5;
const RUN = "bench";
const out = process.argv[2] ?? "bench/results/embedder-cpu-2core.json";

// ---------------------------------------------------------------- trials

interface Technique {
  key: string;
  surface: TrialSpec["surface"];
  /** How different planners (templates, LLMs) phrase the same idea. */
  hypotheses: string[];
  model?: Record<string, unknown>;
  train?: Record<string, unknown>;
}

const base = { family: "cnn", channels: [32, 64, 64], kernel_size: 3, head: "linear", batchnorm: true };

const TECHNIQUES: Technique[] = [
  { key: "se", surface: "architecture", model: { squeeze_excitation: true }, hypotheses: [
    "add squeeze-excitation blocks after each conv stage",
    "SE modules to reweight channels",
    "channel attention gates on every stage",
    "recalibrate feature maps with a squeeze and excite branch",
  ] },
  { key: "residual", surface: "architecture", model: { family: "resnet", blocks: 4 }, hypotheses: [
    "residual blocks with identity shortcuts",
    "small ResNet with two blocks per stage",
    "skip connections around each pair of convolutions",
    "turn the plain stack into a resnet so gradients flow",
  ] },
  { key: "wider", surface: "architecture", model: { channels: [64, 128, 128] }, hypotheses: [
    "wider conv stack with more channels",
    "double the filters in every layer",
    "increase width of the convolutional stages",
    "more feature maps per convolution",
  ] },
  { key: "deeper", surface: "architecture", model: { channels: [32, 32, 64, 64, 128, 128] }, hypotheses: [
    "deeper network with six conv layers",
    "stack more convolutional layers",
    "add two extra stages to increase depth",
    "go deeper: three more conv blocks",
  ] },
  { key: "separable", surface: "architecture", model: { separable: true }, hypotheses: [
    "depthwise separable convolutions to cut parameters",
    "MobileNet-style factorised convolutions",
    "replace 3x3 convs by depthwise plus pointwise",
    "lightweight blocks to stay under the parameter budget",
  ] },
  { key: "gap", surface: "architecture", model: { head: "gap" }, hypotheses: [
    "global average pooling head instead of flatten",
    "average-pool the last feature map before the classifier",
    "replace the dense head with GAP",
  ] },
  { key: "vit", surface: "architecture", model: { family: "vit", patch_size: 4, depth: 6, heads: 4 }, hypotheses: [
    "vision transformer over 4x4 patches",
    "small ViT with six encoder layers",
    "self-attention over image patches instead of convolutions",
  ] },
  { key: "dropout", surface: "regularisation", model: { dropout: 0.3 }, hypotheses: [
    "dropout before the classifier head",
    "randomly zero 30% of activations in the head",
    "add dropout to reduce overfitting",
    "regularise the dense layer with p=0.3 dropout",
  ] },
  { key: "label_smoothing", surface: "regularisation", train: { label_smoothing: 0.1 }, hypotheses: [
    "label smoothing 0.1",
    "soften the one-hot targets",
    "smoothed labels to curb overconfident predictions",
  ] },
  { key: "weight_decay", surface: "regularisation", train: { optimizer: "adamw", weight_decay: 0.05 }, hypotheses: [
    "adamw optimizer with decoupled weight decay",
    "stronger L2 penalty on the weights",
    "weight decay 5e-2 with AdamW",
    "shrink weights each step to generalise better",
  ] },
  { key: "cosine", surface: "optimisation", train: { optimizer: "sgd", schedule: "cosine" }, hypotheses: [
    "cosine learning rate schedule",
    "anneal the learning rate to zero along a half cosine",
    "SGD with cosine decay of the step size",
    "decay lr smoothly over the epochs",
  ] },
  { key: "warmup", surface: "optimisation", train: { warmup_epochs: 2 }, hypotheses: [
    "linear warmup for the first two epochs",
    "start with a tiny learning rate and ramp it up",
    "warm up the optimiser before the main schedule",
  ] },
  { key: "lr_up", surface: "optimisation", train: { lr: 0.3 }, hypotheses: [
    "raise the learning rate to 0.3",
    "much larger step size to converge faster",
    "aggressive learning rate for quicker training",
  ] },
  { key: "batch", surface: "optimisation", train: { batch_size: 512 }, hypotheses: [
    "bigger batches of 512 images",
    "increase batch size to speed up epochs",
    "large-batch training",
  ] },
  { key: "flip_crop", surface: "data", train: { augment: { hflip: true, crop_padding: 4 } }, hypotheses: [
    "random crop and horizontal flip augmentation",
    "pad-and-crop plus mirror images",
    "standard geometric augmentation of the training images",
    "flip images left-right and shift them by a few pixels",
  ] },
  { key: "mixup", surface: "data", train: { mixup_alpha: 0.2 }, hypotheses: [
    "mixup with alpha 0.2",
    "blend pairs of images and their labels",
    "interpolate training examples and targets",
  ] },
  { key: "cutout", surface: "data", train: { augment: { cutout: 8 } }, hypotheses: [
    "cutout 8x8 patches",
    "erase a random square of each image",
    "occlude random regions of the input",
  ] },
  { key: "epochs", surface: "optimisation", train: { epochs: 60 }, hypotheses: [
    "train for 60 epochs instead of 15",
    "longer training schedule",
    "give the model many more passes over the data",
  ] },
];

interface Failing {
  tech: string;
  label: FailureName;
  hypothesis: string;
  model?: Record<string, unknown>;
  train?: Record<string, unknown>;
}

// Failures as they happen: each comes from trying a technique too hard.
const FAILURES: Failing[] = [
  { tech: "deeper", label: "oom", hypothesis: "very deep residual network with sixteen blocks at full resolution", model: { family: "resnet", blocks: 16, width: 256 } },
  { tech: "wider", label: "oom", hypothesis: "quadruple every layer's width", model: { channels: [256, 512, 512] } },
  { tech: "batch", label: "oom", hypothesis: "batch of 4096 images per step", train: { batch_size: 4096 } },
  { tech: "vit", label: "oom", hypothesis: "ViT on 2x2 patches with twelve layers", model: { family: "vit", patch_size: 2, depth: 12, heads: 8 } },
  { tech: "deeper", label: "oom", hypothesis: "dense connectivity across forty layers", model: { family: "densenet", layers: 40 } },
  { tech: "wider", label: "oom", hypothesis: "huge fully connected head with 8192 units", model: { head: "mlp", hidden: 8192 } },
  { tech: "lr_up", label: "nan_loss", hypothesis: "learning rate 2.0 with plain SGD", train: { lr: 2.0, optimizer: "sgd" } },
  { tech: "lr_up", label: "nan_loss", hypothesis: "push the step size as high as it goes", train: { lr: 5.0 } },
  { tech: "deeper", label: "nan_loss", hypothesis: "twenty conv layers without normalisation", model: { channels: Array(20).fill(32), batchnorm: false } },
  { tech: "warmup", label: "nan_loss", hypothesis: "skip warmup and start at the peak learning rate", train: { warmup_epochs: 0, lr: 1.0 } },
  { tech: "mixup", label: "nan_loss", hypothesis: "mixup with half precision and no loss scaling", train: { mixup_alpha: 1.0, precision: "fp16" } },
  { tech: "gap", label: "shape_error", hypothesis: "global pooling feeding a flatten layer sized for 7x7", model: { head: "gap", flatten_dim: 3136 } },
  { tech: "separable", label: "shape_error", hypothesis: "depthwise conv with mismatched group count", model: { separable: true, groups: 3 } },
  { tech: "vit", label: "shape_error", hypothesis: "patch size 5 on 28x28 images", model: { family: "vit", patch_size: 5 } },
  { tech: "residual", label: "shape_error", hypothesis: "shortcut without projection when channels change", model: { family: "resnet", projection: false } },
  { tech: "se", label: "shape_error", hypothesis: "excitation branch with the wrong reduction size", model: { squeeze_excitation: true, se_reduction: 128 } },
  { tech: "epochs", label: "budget_overrun", hypothesis: "train for 300 epochs", train: { epochs: 300 } },
  { tech: "deeper", label: "budget_overrun", hypothesis: "fifty-layer network trained from scratch", model: { family: "resnet", blocks: 24 } },
  { tech: "vit", label: "budget_overrun", hypothesis: "transformer with 24 layers and long training", model: { family: "vit", depth: 24 }, train: { epochs: 100 } },
  { tech: "batch", label: "budget_overrun", hypothesis: "batch size 8 so each epoch has thousands of steps", train: { batch_size: 8 } },
  { tech: "cutout", label: "budget_overrun", hypothesis: "heavy augmentation pipeline on the CPU each step", train: { augment: { cutout: 16, autoaugment: true } } },
];

interface Item {
  techs: string[];
  label?: FailureName;
  surface: string;
}

function trials(): { specs: TrialSpec[]; items: Item[] } {
  const specs: TrialSpec[] = [];
  const items: Item[] = [];
  TECHNIQUES.forEach((t, ti) =>
    t.hypotheses.forEach((h, hi) => {
      // Some trials of each technique end with a score, a few late ones with an unrelated failure
      // (a crash), so "failed" is not a feature of the technique.
      const crash = (ti + hi) % 11 === 5;
      specs.push({
        hypothesis: h,
        surface: t.surface,
        model: { ...base, ...t.model },
        train: t.train,
        score: crash ? undefined : 0.85 + ((ti * 7 + hi * 3) % 10) / 100,
        fails: crash ? { label: "crash", at: "evaluated" } : undefined,
        parent: specs.length > 0 ? 0 : undefined,
      });
      items.push({ techs: [t.key], label: crash ? "crash" : undefined, surface: t.surface });
    }),
  );
  // Planners stack edits: each phrasing again on top of another technique's change.
  TECHNIQUES.forEach((t, ti) =>
    t.hypotheses.forEach((h, hi) => {
      const other = TECHNIQUES[(ti + 1 + hi * 5) % TECHNIQUES.length]!;
      specs.push({
        hypothesis: `${h}, plus ${other.hypotheses[(hi + 1) % other.hypotheses.length]}`,
        surface: t.surface,
        model: { ...base, ...other.model, ...t.model },
        train: t.train || other.train ? { ...other.train, ...t.train } : undefined,
        score: 0.86 + ((ti * 5 + hi) % 10) / 100,
        parent: 0,
      });
      items.push({ techs: [t.key, other.key], surface: t.surface });
    }),
  );
  for (const f of FAILURES) {
    const t = TECHNIQUES.find((x) => x.key === f.tech)!;
    specs.push({
      hypothesis: f.hypothesis,
      surface: t.surface,
      model: { ...base, ...(f.model ?? t.model) },
      train: f.train ?? t.train,
      fails: { label: f.label, at: f.label === "shape_error" ? "assembled" : "evaluated" },
      parent: 0,
    });
    items.push({ techs: [f.tech], label: f.label, surface: t.surface });
  }
  return { specs, items };
}

interface Query {
  text: string;
  style: "words" | "meaning";
  relevant: (item: Item) => boolean;
}

const tech = (...keys: string[]) => (i: Item) => i.techs.some((k) => keys.includes(k));
const failed = (label: FailureName) => (i: Item) => i.label === label;

const TRIAL_QUERIES: Query[] = [
  { text: "models that ran out of memory", style: "meaning", relevant: failed("oom") },
  { text: "CUDA out of memory", style: "meaning", relevant: failed("oom") },
  { text: "training diverged", style: "meaning", relevant: failed("nan_loss") },
  { text: "loss became NaN", style: "words", relevant: failed("nan_loss") },
  { text: "tensor shape mismatch", style: "meaning", relevant: failed("shape_error") },
  { text: "failed with a shape error", style: "words", relevant: failed("shape_error") },
  { text: "took longer than the time budget", style: "meaning", relevant: failed("budget_overrun") },
  { text: "squeeze-excitation blocks", style: "words", relevant: tech("se") },
  { text: "channel attention", style: "words", relevant: tech("se") },
  { text: "skip connections", style: "words", relevant: tech("residual") },
  { text: "ResNet", style: "words", relevant: tech("residual") },
  { text: "more channels per layer", style: "words", relevant: tech("wider") },
  { text: "add layers to make the network deeper", style: "words", relevant: tech("deeper") },
  { text: "fewer parameters with cheaper convolutions", style: "words", relevant: tech("separable") },
  { text: "global average pooling", style: "words", relevant: tech("gap") },
  { text: "transformer on image patches", style: "words", relevant: tech("vit") },
  { text: "dropout", style: "words", relevant: tech("dropout") },
  { text: "randomly switch off neurons during training", style: "meaning", relevant: tech("dropout") },
  { text: "softer targets instead of hard labels", style: "meaning", relevant: tech("label_smoothing") },
  { text: "penalise large weights", style: "meaning", relevant: tech("weight_decay") },
  { text: "learning rate annealing", style: "words", relevant: tech("cosine") },
  { text: "gradually increase the learning rate at the start", style: "meaning", relevant: tech("warmup") },
  { text: "a higher learning rate", style: "words", relevant: tech("lr_up") },
  { text: "larger minibatches", style: "meaning", relevant: tech("batch") },
  { text: "data augmentation with flips and crops", style: "words", relevant: tech("flip_crop") },
  { text: "mirror the training pictures", style: "meaning", relevant: tech("flip_crop") },
  { text: "mixing two examples and their labels", style: "words", relevant: tech("mixup") },
  { text: "mask out part of the image", style: "meaning", relevant: tech("cutout") },
  { text: "train for more epochs", style: "words", relevant: tech("epochs") },
  { text: "regularisation against overfitting", style: "meaning", relevant: (i) => i.surface === "regularisation" },
];

// ---------------------------------------------------------------- corpus

interface CorpusQuery {
  text: string;
  style: "words" | "meaning";
  relevant: string[];
}

const CORPUS_QUERIES: CorpusQuery[] = [
  { text: "regularisation for small CNNs", style: "words", relevant: ["dropout", "spatial-dropout", "dropblock", "cutout", "weight-decay", "crop-flip"] },
  { text: "channel attention that reweights feature maps", style: "words", relevant: ["se", "eca", "cbam", "bam", "gcnet", "coordinate-attention", "resnest"] },
  { text: "cheap convolutions for a tight parameter budget", style: "words", relevant: ["mobilenet-v1", "mobilenet-v2", "ghostnet", "shufflenet", "squeezenet", "mcunet", "squeezenext", "shift-op"] },
  { text: "shortcuts so that very deep networks still train", style: "meaning", relevant: ["resnet", "preact-resnet", "highway", "resnet-bottleneck", "inception-resnet"] },
  { text: "learning rate that follows a cosine curve", style: "words", relevant: ["sgdr"] },
  { text: "start training with a small learning rate and ramp it up", style: "meaning", relevant: ["goyal-warmup", "radam"] },
  { text: "soft targets instead of one-hot labels", style: "words", relevant: ["label-smoothing", "when-label-smoothing", "knowledge-distillation", "born-again"] },
  { text: "blend two images and their labels", style: "meaning", relevant: ["mixup", "cutmix", "manifold-mixup", "mixmatch"] },
  { text: "training diverged with NaN losses", style: "meaning", relevant: ["gradient-clipping", "nfnets"] },
  { text: "the model does not fit in GPU memory", style: "words", relevant: ["mixed-precision", "adafactor", "lion"] },
  { text: "vision transformers when there is little data", style: "meaning", relevant: ["compact-transformers", "vit-small-datasets", "convit", "deit", "how-to-train-vit"] },
  { text: "Adam with decoupled weight decay", style: "words", relevant: ["adamw"] },
  { text: "randomly drop units to stop co-adaptation", style: "words", relevant: ["dropout", "dropout-coadaptation", "dropconnect", "concrete-dropout"] },
  { text: "stop when the validation score stops improving", style: "meaning", relevant: ["early-stopping"] },
  { text: "tables with categorical columns", style: "words", relevant: ["entity-embeddings", "tabtransformer", "target-encoding", "catboost", "deepfm"] },
  { text: "boosted decision trees beat neural networks on tables", style: "meaning", relevant: ["xgboost", "tabular-not-all-you-need", "catboost", "lightgbm", "why-trees", "tabzilla"] },
  { text: "some classes are far rarer than others", style: "meaning", relevant: ["class-balanced-loss", "ldam", "decoupled-long-tail", "logit-adjustment", "focal-loss", "smote"] },
  { text: "wrong labels in the training set", style: "meaning", relevant: ["generalized-cross-entropy", "co-teaching", "confident-learning", "label-errors"] },
  { text: "shrink a big model into a small one", style: "meaning", relevant: ["knowledge-distillation", "distilbert", "tinybert", "deep-compression", "fitnets"] },
  { text: "hyper-parameter search that stops bad runs early", style: "words", relevant: ["successive-halving", "hyperband", "asha", "bohb", "optuna"] },
  { text: "average the weights along the training trajectory", style: "words", relevant: ["swa", "polyak-averaging", "mean-teacher"] },
  { text: "augmentation policies learned automatically", style: "words", relevant: ["autoaugment", "fast-autoaugment", "randaugment", "population-based-augmentation", "trivialaugment"] },
  { text: "hide random patches of the input image", style: "meaning", relevant: ["cutout", "random-erasing", "gridmask", "cutmix"] },
  { text: "normalisation that works with tiny batches", style: "words", relevant: ["groupnorm", "batch-renorm", "weight-standardization", "filter-response-norm", "switchable-norm"] },
  { text: "smooth nonlinearities instead of ReLU", style: "meaning", relevant: ["gelu", "swish", "silu", "mish", "elu"] },
  { text: "classify short sentences with convolutions", style: "words", relevant: ["kim-cnn", "char-cnn", "cnn-sentence-sensitivity", "vdcnn"] },
  { text: "results differ from one random seed to another", style: "meaning", relevant: ["seed-variance", "benchmark-variance", "show-your-work"] },
  { text: "reach good accuracy in a few minutes of training", style: "meaning", relevant: ["airbench", "budgeted-training", "cramming", "super-convergence"] },
  { text: "let an algorithm design the network", style: "meaning", relevant: ["nas-rl", "nasnet", "enas", "darts", "regularized-evolution", "large-scale-evolution", "random-search-nas"] },
  { text: "initialise weights so signals neither explode nor vanish", style: "words", relevant: ["glorot-init", "prelu-he-init", "lsuv", "orthogonal-init", "fixup"] },
];

// ---------------------------------------------------------------- measurement

function recall(top: string[], relevant: Set<string>): number {
  const hits = top.slice(0, K).filter((id) => relevant.has(id)).length;
  return hits / Math.min(K, relevant.size);
}

interface PerQuery {
  query: string;
  style: string;
  relevant: number;
  recall: Record<string, number>;
}

function summary(rows: PerQuery[], methods: string[]) {
  const mean = (xs: number[]) => Number((xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length)).toFixed(3));
  const by = (style?: string) =>
    Object.fromEntries(methods.map((m) => [m, mean(rows.filter((r) => !style || r.style === style).map((r) => r.recall[m]!))]));
  return { all: by(), words: by("words"), meaning: by("meaning"), queries: { all: rows.length, words: rows.filter((r) => r.style === "words").length, meaning: rows.filter((r) => r.style === "meaning").length } };
}

async function lineageRecall(embedders: Embedder[], root: string) {
  const { specs, items } = trials();
  const events = runEvents(RUN, specs);
  const perQuery: PerQuery[] = TRIAL_QUERIES.map((q) => ({
    query: q.text,
    style: q.style,
    relevant: items.filter(q.relevant).length,
    recall: {},
  }));
  const writeMs: Record<string, number> = {};
  for (const e of embedders) {
    const store = await LineageStore.open(join(root, `lineage-${e.dim}-${e.name.replace(/\W/g, "_")}`), { embedder: e });
    const t = performance.now();
    await store.applyEvents(events);
    writeMs[e.name] = Math.round(performance.now() - t);
    for (const [i, q] of TRIAL_QUERIES.entries()) {
      const relevant = new Set(items.flatMap((item, n) => (q.relevant(item) ? [trialId(RUN, n)] : [])));
      const hits = await store.similarTrials({ text: q.text, k: K, runId: RUN });
      perQuery[i]!.recall[e.name] = recall(hits.map((h) => h.trial_id), relevant);
    }
    await store.close();
  }
  return { trials: specs.length, events: events.length, writeMs, summary: summary(perQuery, embedders.map((e) => e.name)), perQuery };
}

async function corpusRecall(embedders: Embedder[], root: string) {
  const ids = new Set(CORPUS.map((e) => e.id));
  for (const q of CORPUS_QUERIES) for (const id of q.relevant) if (!ids.has(id)) throw new Error(`query "${q.text}": no corpus entry ${id}`);
  const perQuery: PerQuery[] = CORPUS_QUERIES.map((q) => ({ query: q.text, style: q.style, relevant: q.relevant.length, recall: {} }));
  const methods: string[] = [];
  const buildMs: Record<string, number> = {};
  for (const e of embedders) {
    const t = performance.now();
    const index = await CorpusIndex.open(join(root, `corpus-${e.name.replace(/\W/g, "_")}`), { embedder: e });
    buildMs[e.name] = Math.round(performance.now() - t);
    for (const [i, q] of CORPUS_QUERIES.entries()) {
      // Deep enough that every entry in either retriever's top 5 is in the fused list.
      const hits = await index.search(q.text, { k: 100 });
      const relevant = new Set(q.relevant);
      const byRank = (rank: (h: (typeof hits)[number]) => number | null) =>
        hits.filter((h) => rank(h) !== null).sort((a, b) => rank(a)! - rank(b)!).map((h) => h.id);
      const r = perQuery[i]!.recall;
      r[`vector ${e.name}`] = recall(byRank((h) => h.vectorRank), relevant);
      r[`fused ${e.name}`] = recall(hits.map((h) => h.id), relevant);
      r.bm25 = recall(byRank((h) => h.textRank), relevant);
    }
    await index.close();
    methods.push(`vector ${e.name}`, `fused ${e.name}`);
  }
  return { entries: CORPUS.length, buildMs, summary: summary(perQuery, ["bm25", ...methods]), perQuery };
}

async function latency(embedders: Embedder[]) {
  const { specs } = trials();
  const texts = specs.map((s) => `${s.hypothesis}. surface ${s.surface}. ${JSON.stringify(s.model)}`);
  const result: Record<string, Record<string, number>> = {};
  for (const e of embedders) {
    result[e.name] = {};
    for (const size of [1, 16, 64]) {
      const ms: number[] = [];
      for (let rep = 0; rep < 7; rep++) {
        // A fresh suffix per call: MiniLmEmbedder remembers texts it has embedded.
        const batch = Array.from({ length: size }, (_, i) => `${texts[(rep * size + i) % texts.length]} #${rep}-${i}-${size}`);
        const t = performance.now();
        await e.embed(batch);
        ms.push(performance.now() - t);
      }
      ms.sort((a, b) => a - b);
      result[e.name]![`batch ${size}: median ms`] = Number(ms[Math.floor(ms.length / 2)]!.toFixed(2));
    }
  }
  return result;
}

const root = mkdtempSync(join(tmpdir(), "embedder-bench-"));
// No vectors file: every text, the corpus included, is timed through the model.
const minilm = new MiniLmEmbedder({ cacheFile: null });
try {
  const t0 = performance.now();
  await minilm.embed(["warm up"]);
  const loadMs = performance.now() - t0;
  const embedders: Embedder[] = [new HashingEmbedder(), minilm];
  const lineage = await lineageRecall(embedders, root);
  const corpus = await corpusRecall(embedders, root);
  const timing = await latency(embedders);
  const result = {
    date: new Date().toISOString(),
    machine: "2 CPU cores shared with other work (load average during the run in `load`)",
    load: (await import("node:os")).loadavg().map((x) => Number(x.toFixed(1))),
    k: K,
    modelLoadMs: Math.round(loadMs),
    latency: timing,
    lineage,
    corpus,
  };
  writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
  console.log(JSON.stringify({ load: result.load, modelLoadMs: result.modelLoadMs, latency: timing, lineageWriteMs: lineage.writeMs, lineage: lineage.summary, corpusBuildMs: corpus.buildMs, corpus: corpus.summary }, null, 2));
  console.log(`wrote ${out}`);
} finally {
  await minilm.close();
  rmSync(root, { recursive: true, force: true });
}
