/**
 * 1-D signals: sensor-style sequences, one class per sequence (`signal:PATH target=COLUMN:
 * maximise accuracy`). PATH is a CSV whose target column is the class and whose other columns
 * are the sequence's steps (or a folder with train.csv and test.csv), or a folder of .npy
 * arrays (x.npy, y.npy, optionally x_test.npy and y_test.npy); the runner's loader is
 * gpu-runner/python/tasks/signal.py. A sample is [length, channels] floats, scored by accuracy.
 *
 * The starting models: a 1-D CNN (max-pools and convolutions until what each output sees spans
 * the window, then a global max over time: what a class is does not depend on where in the window
 * it happens) and a GRU behind a small convolutional front end, the recurrent family.
 */
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { csvColumnProblem } from "./files.js";
import type { LayerInput } from "../model-config.js";
import type { TaskModule, Template } from "./task.js";

const isArrays = (path: string) => statSync(path, { throwIfNoEntry: false })?.isDirectory() === true && existsSync(join(path, "x.npy"));

/**
 * The CNN's downsampling stages after its first convolution: each a max-pool that halves the
 * length, then a convolution; two, then one more while what each output sees is shorter than the
 * window (and there is a length left to halve).
 */
function stages(length: number): LayerInput[] {
  const layers: LayerInput[] = [];
  // After a kernel-5 convolution at stride 1: a receptive field of 5 steps, one step apart.
  for (let stage = 0, field = 5, jump = 1, left = length; (stage < 2 || field < length) && left >= 2; stage++, left >>= 1) {
    // A class may be where two patterns sit relative to each other, which a field shorter than
    // the window cannot see: three convolutions saw 13 of 80 steps, and a class that was the order of
    // two shapes stayed at chance between the two orders. A max-pool rather than a strided
    // convolution keeps a pattern's response wherever it falls between two strides (hard signals,
    // data seed 1, the same recipe: 92.1-92.4% validation against 89.2-89.4%).
    field += jump; // the pool's second step
    jump *= 2;
    field += 4 * jump; // the kernel-5 convolution's four more
    layers.push({ type: "maxpool", kernel_size: 2 }, { type: "conv1d", out_channels: 64, kernel_size: 5, padding: "same" }, { type: "batchnorm" }, { type: "activation", fn: "relu" });
  }
  return layers;
}

const TEMPLATES: Template[] = [
  {
    name: "cnn1d",
    blocks: ["conv1d", "batchnorm", "maxpool", "sequence_pool"],
    build: (info) => ({
      name: "cnn1d",
      layers: [
        { type: "conv1d", out_channels: 32, kernel_size: 5, padding: "same" },
        { type: "batchnorm" },
        { type: "activation", fn: "relu" },
        ...stages(info.inputShape[0] ?? 0),
        { type: "sequence_pool", mode: "max" },
        { type: "dropout", p: 0.1 },
      ],
    }),
  },
  {
    name: "gru1d",
    blocks: ["conv1d", "gru", "sequence_pool"],
    build: () => ({
      name: "gru1d",
      layers: [
        { type: "conv1d", out_channels: 32, kernel_size: 3, padding: "same" },
        { type: "activation", fn: "relu" },
        { type: "gru", hidden: 64 },
        { type: "sequence_pool", mode: "max" },
      ],
    }),
    recipe: { grad_clip: 1 },
  },
];

const EXAMPLE = "signal:/data/signals.csv target=label";

export const SIGNAL = {
  name: "signal",
  describe: "1-D signals (sensor-style sequences), one class each",
  datasets: [
    {
      name: "signal",
      serves: ["classification"],
      file: {
        usage: "signal:<path>",
        example: () => EXAMPLE,
        missingTarget: (path) => (isArrays(path) ? undefined : `signal needs its class column for ${path}, e.g. "${EXAMPLE}"`),
        dataProblem: (path, targetColumn) => (isArrays(path) || !targetColumn ? undefined : csvColumnProblem("signal", path, targetColumn)),
      },
    },
  ],
  templates: () => TEMPLATES,
} as const satisfies TaskModule;
