/**
 * Starting architectures per input modality, written in the coder's
 * model_config vocabulary. Each template names the building blocks it uses,
 * so a brief's suggestion can pick the template that adopts it. On a CPU they
 * start small on purpose (16 channels in the first stage): a 2-core CPU trains
 * a 20k-parameter CNN through Fashion-MNIST in seconds per epoch, and the
 * architecture surface widens and deepens what pays off. On a GPU the image
 * templates are four times as wide, with ResNet-9 first: a 3M-parameter ResNet-9
 * trains a Fashion-MNIST epoch in under a second there, and its 3-epoch probe led
 * the other families' on validation in the H200 run (92.83% against 88.90-90.77%,
 * test/fixtures/runs/h200-5.5min-open-ea238f7.jsonl).
 */
import type { SearchDevice } from "../../core/defaults.js";
import type { ModelConfigInput } from "../../core/model-config.js";
import { taskFor } from "../../core/tasks/index.js";
import type { Template } from "../../core/tasks/task.js";
import type { DatasetInfo } from "../../proto/gen/research/v1/runner_pb.js";
import { learningOf } from "../../core/learning/index.js";

export type LayerIn = ModelConfigInput["layers"][number];
type Layer = LayerIn;


/** Channel multiplier of the image templates by device. */
export const TEMPLATE_WIDTH: Readonly<Record<SearchDevice, number>> = { cpu: 1, cuda: 4 };

const conv = (out: number): Layer => ({ type: "conv2d", out_channels: out, kernel_size: 3, padding: "same", bias: false });
const bn = (): Layer => ({ type: "batchnorm" });
const act = (fn: "relu" | "gelu" | "silu" | "mish" = "relu"): Layer => ({ type: "activation", fn });
const pool = (): Layer => ({ type: "maxpool", kernel_size: 2 });

/** Pooling stages that keep at least 2x2 spatial positions. */
function stagesFor(info: DatasetInfo): number {
  const side = Math.min(info.inputShape[1] ?? 1, info.inputShape[2] ?? 1);
  return Math.max(1, Math.min(3, Math.floor(Math.log2(side / 2))));
}

/** Patches of 4 on larger images, 2 on small ones: enough tokens either way. */
function patchSize(info: DatasetInfo): number {
  const side = Math.min(info.inputShape[1] ?? 1, info.inputShape[2] ?? 1);
  return side % 4 === 0 && side >= 16 ? 4 : side % 2 === 0 ? 2 : 1;
}

/**
 * ResNet-9 (Page, "How to train your ResNet", 2018): a stem, then three stages that double the
 * channels and halve the side, the first two with a residual pair of convolutions. At 64
 * channels in the stem it has 3.0M parameters; its recipe is the one that trains it fastest
 * (SGD with Nesterov momentum, one cycle, label smoothing, weight decay).
 */
const RESNET9: Template = {
  name: "resnet9",
  blocks: ["conv2d", "batchnorm", "residual", "maxpool", "global_avgpool", "onecycle_schedule", "label_smoothing", "sgd"],
  build: (info, width = 1) => {
    const w = 16 * width;
    const res = (c: number): Layer => ({ type: "residual", layers: [conv(c), bn(), act(), conv(c), bn(), act()] });
    const layers: Layer[] = [conv(w), bn(), act()];
    for (let s = 0, c = 2 * w; s < stagesFor(info); s++, c *= 2) {
      layers.push(conv(c), bn(), act(), pool());
      if (s < 2) layers.push(res(c));
    }
    layers.push({ type: "global_avgpool" });
    return { name: "resnet9", layers };
  },
  recipe: { optimizer: "sgd", lr: 0.05, momentum: 0.9, nesterov: true, weight_decay: 5e-4, schedule: "onecycle", label_smoothing: 0.1 },
};

const IMAGE: Template[] = [
  {
    // The capacity the small templates lack: two convolutions per stage, 24
    // channels doubling per stage (Fashion-MNIST: 160k parameters), the shape of
    // the strongest configs Optuna's baseline found.
    name: "vgg-cnn",
    blocks: ["conv2d", "batchnorm", "maxpool", "dropout"],
    build: (info, width = 1) => {
      const layers: Layer[] = [];
      for (let s = 0, w = 24 * width; s < stagesFor(info); s++, w *= 2) layers.push(conv(w), bn(), act(), conv(w), bn(), act(), pool());
      layers.push({ type: "flatten" }, { type: "dropout", p: 0.3 });
      return { name: "vgg-cnn", layers };
    },
  },
  {
    name: "bn-cnn",
    blocks: ["conv2d", "batchnorm", "maxpool", "dropout"],
    build: (info, width = 1) => {
      const layers: Layer[] = [];
      for (let s = 0, w = 16 * width; s < Math.min(2, stagesFor(info)); s++, w *= 2) layers.push(conv(w), bn(), act(), pool());
      layers.push({ type: "flatten" }, { type: "dropout", p: 0.2 });
      return { name: "bn-cnn", layers };
    },
  },
  {
    name: "se-cnn",
    blocks: ["conv2d", "batchnorm", "se", "maxpool", "global_avgpool"],
    build: (info, width = 1) => {
      const layers: Layer[] = [];
      for (let s = 0, w = 16 * width; s < stagesFor(info); s++, w *= 2) layers.push(conv(w), bn(), act(), { type: "se", reduction: 8 }, pool());
      layers.push({ type: "global_avgpool" }, { type: "dropout", p: 0.1 });
      return { name: "se-cnn", layers };
    },
  },
  {
    name: "resnet-small",
    blocks: ["conv2d", "batchnorm", "residual", "global_avgpool"],
    build: (info, width = 1) => {
      const layers: Layer[] = [conv(16 * width), bn(), act()];
      for (let s = 0, w = 16 * width; s < stagesFor(info); s++, w *= 2) {
        layers.push(
          { type: "residual", layers: [conv(w), bn(), act(), conv(w), bn()], activation: "relu" },
          pool(),
        );
      }
      layers.push({ type: "global_avgpool" });
      return { name: "resnet-small", layers };
    },
  },
  {
    name: "mbconv-net",
    blocks: ["mbconv", "depthwise_conv2d", "se", "global_avgpool", "activation:silu"],
    build: (info, width = 1) => {
      const layers: Layer[] = [conv(16 * width), bn(), act("silu")];
      for (let s = 0, w = 24 * width; s < stagesFor(info); s++, w += 16 * width) {
        layers.push({ type: "mbconv", out_channels: w, expand_ratio: 4, kernel_size: 3, stride: 2, se_ratio: 0.25 });
      }
      layers.push({ type: "global_avgpool" });
      return { name: "mbconv-net", layers };
    },
  },
  {
    name: "ghost-net",
    blocks: ["ghost", "batchnorm", "maxpool", "global_avgpool"],
    build: (info, width = 1) => {
      const layers: Layer[] = [];
      for (let s = 0, w = 16 * width; s < stagesFor(info); s++, w *= 2) layers.push({ type: "ghost", out_channels: w, ratio: 2 }, pool());
      layers.push({ type: "global_avgpool" });
      return { name: "ghost-net", layers };
    },
  },
  {
    name: "vit-tiny",
    blocks: ["patch_embed", "transformer_encoder", "token_pool", "layernorm", "activation:gelu"],
    build: (info, width = 1) => {
      const patch = patchSize(info);
      return {
        name: "vit-tiny",
        layers: [
          { type: "patch_embed", patch_size: patch, dim: 64 * width },
          { type: "transformer_encoder", heads: 4, mlp_ratio: 2, depth: 2 },
          { type: "layernorm" },
          { type: "token_pool" },
        ],
      };
    },
  },
  {
    name: "mixer-tiny",
    blocks: ["patch_embed", "mixer_block", "token_pool", "layernorm"],
    build: (info, width = 1) => {
      const patch = patchSize(info);
      return {
        name: "mixer-tiny",
        layers: [
          { type: "patch_embed", patch_size: patch, dim: 64 * width },
          { type: "mixer_block", token_mlp_dim: 64 * width, channel_mlp_dim: 128 * width, depth: 2 },
          { type: "layernorm" },
          { type: "token_pool" },
        ],
      };
    },
  },
];

const TABULAR: Template[] = [
  {
    name: "mlp",
    blocks: ["linear", "batchnorm", "dropout"],
    build: () => ({
      name: "mlp",
      layers: [
        { type: "linear", out_features: 128 },
        { type: "batchnorm" },
        { type: "activation", fn: "relu" },
        { type: "dropout", p: 0.1 },
        { type: "linear", out_features: 64 },
        { type: "batchnorm" },
        { type: "activation", fn: "relu" },
      ],
    }),
  },
  {
    name: "residual-mlp",
    blocks: ["linear", "layernorm", "residual", "activation:gelu"],
    build: () => ({
      name: "residual-mlp",
      layers: [
        { type: "linear", out_features: 128 },
        { type: "activation", fn: "gelu" },
        { type: "residual", layers: [{ type: "layernorm" }, { type: "linear", out_features: 128 }, { type: "activation", fn: "gelu" }] },
        { type: "dropout", p: 0.1 },
      ],
    }),
  },
];

const TEXT: Template[] = [
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
 * positions, pre-norm blocks, a head tied to the embedding) and a GRU, the recurrent baseline.
 * Both read 128 bytes at once (the context edit moves it) and clip gradients, as language
 * models are trained.
 */
const LANGUAGE: Template[] = [
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
    }),
    recipe: { optimizer: "adam", lr: 3e-3, batch_size: 16, context: 128, grad_clip: 1, schedule: "cosine" },
  },
];

/**
 * The templates for a dataset, in the order the planner tries them. ResNet-9 is a GPU family: on
 * two CPU cores its 0.19M-parameter form made every probe as slow as the VGG-style net's, and a
 * "reach 90%" launch that started with the two had not reached it after 30 minutes.
 */
export function templatesFor(info: DatasetInfo, device: SearchDevice = "cpu"): Template[] {
  const task = taskFor(info.name);
  if (task) return task.templates(info, device);
  if (learningOf(info.task).perPosition) return LANGUAGE;
  if (info.inputDtype === "int64") return TEXT;
  if (info.inputShape.length !== 3) return TABULAR;
  return device === "cuda" ? [RESNET9, ...IMAGE] : IMAGE;
}
