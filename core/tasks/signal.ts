/**
 * 1-D signals: sensor-style sequences, one class per sequence (`signal:PATH target=COLUMN:
 * maximise accuracy`). PATH is a CSV whose target column is the class and whose other columns
 * are the sequence's steps (or a folder with train.csv and test.csv), or a folder of .npy
 * arrays (x.npy, y.npy, optionally x_test.npy and y_test.npy); the runner's loader is
 * gpu-runner/python/tasks/signal.py. A sample is [length, channels] floats, scored by accuracy.
 *
 * The starting models: a 1-D CNN (strided convolutions, then a global max over time: what a
 * class is does not depend on where in the window it happens) and a GRU behind a small
 * convolutional front end, the recurrent family.
 */
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { csvColumnProblem } from "./files.js";
import type { TaskModule, Template } from "./task.js";

const isArrays = (path: string) => statSync(path, { throwIfNoEntry: false })?.isDirectory() === true && existsSync(join(path, "x.npy"));

const TEMPLATES: Template[] = [
  {
    name: "cnn1d",
    blocks: ["conv1d", "batchnorm", "sequence_pool"],
    build: () => ({
      name: "cnn1d",
      layers: [
        { type: "conv1d", out_channels: 32, kernel_size: 5, padding: "same" },
        { type: "batchnorm" },
        { type: "activation", fn: "relu" },
        { type: "conv1d", out_channels: 64, kernel_size: 5, stride: 2, padding: 2 },
        { type: "batchnorm" },
        { type: "activation", fn: "relu" },
        { type: "conv1d", out_channels: 64, kernel_size: 3, stride: 2, padding: 1 },
        { type: "batchnorm" },
        { type: "activation", fn: "relu" },
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
