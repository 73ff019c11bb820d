/**
 * Images: Fashion-MNIST, MNIST, CIFAR-10/100, SVHN (the runner's copies under
 * /usr/share/datasets) and scikit-learn's 8x8 digits; the loaders are
 * gpu-runner/python/tasks/images.py.
 *
 * The starting architectures, in the coder's model_config vocabulary. Each template names the
 * building blocks it uses, so a brief's suggestion can pick the template that adopts it. On a
 * CPU they start small on purpose (16 channels in the first stage): a 2-core CPU trains a
 * 20k-parameter CNN through Fashion-MNIST in seconds per epoch, and the architecture surface
 * widens and deepens what pays off. On a GPU they are four times as wide, with ResNet-9 first:
 * a 3M-parameter ResNet-9 trains a Fashion-MNIST epoch in under a second there, and its 3-epoch
 * probe led the other families' on validation in the H200 run (92.83% against 88.90-90.77%,
 * test/fixtures/runs/h200-5.5min-open-ea238f7.jsonl).
 */
import type { LayerInput as Layer } from "../model-config.js";
import type { DatasetInfo } from "../../proto/gen/research/v1/runner_pb.js";
import type { TaskModule, Template } from "./task.js";

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

const FAMILIES: Template[] = [
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

export const IMAGES = {
  name: "images",
  describe: "images, one class each",
  modality: "vision",
  datasets: [
    { name: "fashion-mnist", aliases: /\b(?:fashion[-_ ]?mnist|f[-_]?mnist)\b/gi, serves: ["classification"], mirrors: true },
    { name: "cifar100", aliases: /\bcifar[-_ ]?100\b/gi, serves: ["classification"], mirrors: true },
    { name: "cifar10", aliases: /\bcifar[-_ ]?10\b/gi, serves: ["classification"], mirrors: true },
    // "MNIST digits" is MNIST, not sklearn's digits. A mirrored digit is another symbol or none.
    { name: "mnist", aliases: /\bmnist(?:[-_ ]digits)?\b/gi, serves: ["classification"] },
    { name: "svhn", aliases: /\bsvhn\b/gi, serves: ["classification"] },
    { name: "digits", aliases: /\b(?:sklearn[-_ ]?)?digits\b/gi, serves: ["classification"] },
  ],
  /**
   * ResNet-9 is a GPU family: on two CPU cores its 0.19M-parameter form made every probe as slow
   * as the VGG-style net's, and a "reach 90%" launch that started with the two had not reached
   * it after 30 minutes.
   */
  templates: (_info, device) => (device === "cuda" ? [RESNET9, ...FAMILIES] : FAMILIES),
} as const satisfies TaskModule;
