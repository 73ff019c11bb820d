/**
 * 1-D signals: sensor-style sequences, one class per sequence (`signal:PATH target=COLUMN:
 * maximise accuracy`). PATH is a CSV whose target column is the class and whose other columns
 * are the sequence's steps (or a folder with train.csv and test.csv), or a folder of .npy
 * arrays (x.npy, y.npy, optionally x_test.npy and y_test.npy); the runner's loader is
 * gpu-runner/python/tasks/signal.py. A sample is [length, channels] floats, scored by accuracy.
 *
 * The starting models: a 1-D CNN (strided convolutions until what each output sees spans the
 * window, then a global max over time: what a class is does not depend on where in the window
 * it happens) and a GRU behind a small convolutional front end, the recurrent family.
 */
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { csvColumnProblem } from "./files.js";
import type { LayerInput } from "../model-config.js";
import type { TaskModule, Template } from "./task.js";

const isArrays = (path: string) => statSync(path, { throwIfNoEntry: false })?.isDirectory() === true && existsSync(join(path, "x.npy"));

/** The CNN's strided stages after its first: two, then one more while its receptive field is shorter than the window. */
function strided(length: number): LayerInput[] {
  const layers: LayerInput[] = [];
  // After a kernel-5 convolution at stride 1: a receptive field of 5 steps, one step apart.
  for (let stage = 0, field = 5, jump = 1; stage < 2 || field < length; stage++, jump *= 2) {
    // A class may be where two patterns sit relative to each other, which a field shorter than
    // the window cannot see: three convolutions saw 13 of 80 steps, and a class that was the order of
    // two shapes stayed at chance between the two orders.
    const kernel = stage === 1 ? 3 : 5;
    field += (kernel - 1) * jump;
    layers.push({ type: "conv1d", out_channels: 64, kernel_size: kernel, stride: 2, padding: (kernel - 1) / 2 }, { type: "batchnorm" }, { type: "activation", fn: "relu" });
  }
  return layers;
}

const TEMPLATES: Template[] = [
  {
    name: "cnn1d",
    blocks: ["conv1d", "batchnorm", "sequence_pool"],
    build: (info) => ({
      name: "cnn1d",
      layers: [
        { type: "conv1d", out_channels: 32, kernel_size: 5, padding: "same" },
        { type: "batchnorm" },
        { type: "activation", fn: "relu" },
        ...strided(info.inputShape[0] ?? 0),
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
