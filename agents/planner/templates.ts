/**
 * Starting architectures per input modality, written in the coder's
 * model_config vocabulary. Each template names the building blocks it uses,
 * so a brief's suggestion can pick the template that adopts it. They start
 * small on purpose (16 channels in the first stage): a 2-core CPU trains a
 * 20k-parameter CNN through Fashion-MNIST in seconds per epoch, and the
 * architecture surface widens and deepens what pays off.
 */
import type { ModelConfigInput } from "../../core/model-config.js";
import type { DatasetInfo } from "../../proto/gen/research/v1/runner_pb.js";

export type LayerIn = ModelConfigInput["layers"][number];
type Layer = LayerIn;

export interface Template {
  name: string;
  blocks: string[];
  build(info: DatasetInfo): ModelConfigInput;
}

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

const IMAGE: Template[] = [
  {
    // The capacity the small templates lack: two convolutions per stage, 24
    // channels doubling per stage (Fashion-MNIST: 160k parameters), the shape of
    // the strongest configs Optuna's baseline found.
    name: "vgg-cnn",
    blocks: ["conv2d", "batchnorm", "maxpool", "dropout"],
    build: (info) => {
      const layers: Layer[] = [];
      for (let s = 0, w = 24; s < stagesFor(info); s++, w *= 2) layers.push(conv(w), bn(), act(), conv(w), bn(), act(), pool());
      layers.push({ type: "flatten" }, { type: "dropout", p: 0.3 });
      return { name: "vgg-cnn", layers };
    },
  },
  {
    name: "bn-cnn",
    blocks: ["conv2d", "batchnorm", "maxpool", "dropout"],
    build: (info) => {
      const layers: Layer[] = [];
      for (let s = 0, w = 16; s < Math.min(2, stagesFor(info)); s++, w *= 2) layers.push(conv(w), bn(), act(), pool());
      layers.push({ type: "flatten" }, { type: "dropout", p: 0.2 });
      return { name: "bn-cnn", layers };
    },
  },
  {
    name: "se-cnn",
    blocks: ["conv2d", "batchnorm", "se", "maxpool", "global_avgpool"],
    build: (info) => {
      const layers: Layer[] = [];
      for (let s = 0, w = 16; s < stagesFor(info); s++, w *= 2) layers.push(conv(w), bn(), act(), { type: "se", reduction: 8 }, pool());
      layers.push({ type: "global_avgpool" }, { type: "dropout", p: 0.1 });
      return { name: "se-cnn", layers };
    },
  },
  {
    name: "resnet-small",
    blocks: ["conv2d", "batchnorm", "residual", "global_avgpool"],
    build: (info) => {
      const layers: Layer[] = [conv(16), bn(), act()];
      for (let s = 0, w = 16; s < stagesFor(info); s++, w *= 2) {
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
    build: (info) => {
      const layers: Layer[] = [conv(16), bn(), act("silu")];
      for (let s = 0, w = 24; s < stagesFor(info); s++, w += 16) {
        layers.push({ type: "mbconv", out_channels: w, expand_ratio: 4, kernel_size: 3, stride: 2, se_ratio: 0.25 });
      }
      layers.push({ type: "global_avgpool" });
      return { name: "mbconv-net", layers };
    },
  },
  {
    name: "ghost-net",
    blocks: ["ghost", "batchnorm", "maxpool", "global_avgpool"],
    build: (info) => {
      const layers: Layer[] = [];
      for (let s = 0, w = 16; s < stagesFor(info); s++, w *= 2) layers.push({ type: "ghost", out_channels: w, ratio: 2 }, pool());
      layers.push({ type: "global_avgpool" });
      return { name: "ghost-net", layers };
    },
  },
  {
    name: "vit-tiny",
    blocks: ["patch_embed", "transformer_encoder", "token_pool", "layernorm", "activation:gelu"],
    build: (info) => {
      const patch = patchSize(info);
      return {
        name: "vit-tiny",
        layers: [
          { type: "patch_embed", patch_size: patch, dim: 64 },
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
    build: (info) => {
      const patch = patchSize(info);
      return {
        name: "mixer-tiny",
        layers: [
          { type: "patch_embed", patch_size: patch, dim: 64 },
          { type: "mixer_block", token_mlp_dim: 64, channel_mlp_dim: 128, depth: 2 },
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

export function templatesFor(info: DatasetInfo): Template[] {
  if (info.inputDtype === "int64") return TEXT;
  return info.inputShape.length === 3 ? IMAGE : TABULAR;
}
