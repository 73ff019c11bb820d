/**
 * Text (`text:PATH`): labelled sentences to classify (a folder with train.tsv or train.jsonl, a
 * label per text), or a corpus to model byte by byte (a text file, or a folder's .txt files);
 * the loaders are gpu-runner/python/tasks/text.py. The starting models are an
 * embedding bag and a 1-D CNN for classes, a causal transformer, a GRU and a neural n-gram model
 * for a corpus.
 */
import { learningOf } from "../learning/index.js";
import type { TaskName } from "../enums.js";
import type { TaskModule, Template } from "./task.js";

const CLASSIFIERS: Template[] = [
  {
    name: "bag-of-embeddings",
    blocks: ["embedding", "sequence_pool", "linear"],
    build: (info) => ({
      name: "bag-of-embeddings",
      layers: [
        { type: "embedding", vocab_size: info.vocabSize || 16384, dim: 64, padding_idx: 0 },
        { type: "sequence_pool", mode: "mean" },
        { type: "linear", out_features: 64 },
        { type: "activation", fn: "relu" },
        { type: "dropout", p: 0.2 },
      ],
    }),
  },
  {
    name: "conv1d-text",
    blocks: ["embedding", "conv1d", "sequence_pool"],
    build: (info) => ({
      name: "conv1d-text",
      layers: [
        { type: "embedding", vocab_size: info.vocabSize || 16384, dim: 64, padding_idx: 0 },
        { type: "conv1d", out_channels: 64, kernel_size: 3, padding: "same" },
        { type: "activation", fn: "relu" },
        { type: "sequence_pool", mode: "max" },
        { type: "dropout", p: 0.2 },
      ],
    }),
  },
];

/**
 * Byte-level language models, sized for two CPU cores: a GPT-style causal transformer (learned
 * positions, pre-norm blocks, a head tied to the embedding), a GRU, the recurrent baseline, and a
 * neural n-gram model (hashed n-grams of the last 8 bytes into an MLP), which learns a text's
 * repeated phrases in a pass where the others need many. On the KJV's bytes 2M-3M (not the
 * benchmark's text), 60 s of 2 cores: 1.59 validation bits per byte, the GRU's recipe 2.05 (a
 * Kneser-Ney n-gram 1.44); its dropout from 90-s runs there (0.5 -> 0.7: 1.59 -> 1.56), its rate
 * from 60-s runs (bench/lm_template.py, bench/results/lm-template-443d1ef.json; two seeds each:
 * lr 6e-3 1.544-1.549, 1e-2 1.534-1.536, 1.5e-2 1.533-1.535).
 * It comes first: a run's first probes are the first templates (one per slot), and a family
 * probed later is timed from the measured trial closest in size, for this one's table of 4.2M
 * rows a small net's pace times sqrt(params), which no 4-minute run's exploration fits.
 * All read 128 bytes at once (the context edit moves it) and clip gradients, as language models
 * are trained, and mix their predictions with their own Kneser-Ney counts of the training text
 * (`counts`, core/compiler/blocks.py ByteCounts, its defaults: order 12, the network's weight
 * 0.3): on that text the template trained 60 s reads 1.535-1.548 bits per byte alone, 1.414 mixed
 * at order 12, where the counts alone read 1.442 (bench/lm_mixture.py, lm-mixture-a68d6d3.json).
 */
const LANGUAGE_MODELS: Template[] = [
  {
    name: "byte-ngram",
    blocks: ["ngram_embedding", "layernorm", "dropout", "linear"],
    build: (_info, width = 1) => ({
      name: "byte-ngram",
      layers: [
        { type: "ngram_embedding", orders: 8, buckets: 1 << 17, dim: 32 * width },
        { type: "layernorm" },
        // Its table memorises the training text at once: dropout and weight decay keep it general.
        { type: "dropout", p: 0.7 },
        { type: "linear", out_features: 512 * width },
        { type: "activation", fn: "gelu" },
      ],
      counts: {},
    }),
    recipe: { optimizer: "adamw", lr: 1.5e-2, weight_decay: 0.1, batch_size: 32, context: 128, grad_clip: 1, schedule: "cosine" },
  },
  {
    name: "byte-transformer",
    blocks: ["embedding", "transformer_encoder", "layernorm"],
    build: (info, width = 1) => ({
      name: "byte-transformer",
      tie_embeddings: true,
      layers: [
        { type: "embedding", vocab_size: info.vocabSize, dim: 128 * width, position_embedding: true },
        { type: "transformer_encoder", heads: 4, mlp_ratio: 4, depth: 2, causal: true },
        { type: "layernorm" },
      ],
      counts: {},
    }),
    recipe: { optimizer: "adamw", lr: 2e-3, weight_decay: 0.05, batch_size: 16, context: 128, grad_clip: 1, schedule: "cosine" },
  },
  {
    name: "byte-gru",
    blocks: ["embedding", "gru"],
    build: (info, width = 1) => ({
      name: "byte-gru",
      layers: [
        { type: "embedding", vocab_size: info.vocabSize, dim: 64 * width },
        { type: "gru", hidden: 256 * width },
      ],
      counts: {},
    }),
    recipe: { optimizer: "adam", lr: 3e-3, batch_size: 16, context: 128, grad_clip: 1, schedule: "cosine" },
  },
];

/** A text dataset's path as an example: a corpus for a language model, labelled sentences otherwise. */
const textPath = (task: TaskName): string => (learningOf(task).perPosition ? "/data/corpus.txt" : "/data/reviews");

export const TEXT = {
  name: "text",
  describe: "text: labelled sentences, or a corpus to model byte by byte",
  modality: "text",
  datasets: [
    {
      name: "text",
      serves: ["classification", "language_modelling"],
      file: {
        usage: "text:<path>",
        example: (task, given) => `text:${given?.dataDir ?? textPath(task)}`,
        missingTarget: () => undefined,
        dataProblem: () => undefined,
      },
    },
  ],
  templates: (info) => (learningOf(info.task).perPosition ? LANGUAGE_MODELS : CLASSIFIERS),
} as const satisfies TaskModule;
