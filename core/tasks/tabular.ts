/**
 * Tables: scikit-learn's iris, wine and breast cancer (classes) and diabetes (a number), and a
 * person's CSV (`csv:PATH target=COLUMN`: classes, or a number with an error metric); the
 * loaders are gpu-runner/python/tasks/tabular.py. The starting models are MLPs.
 */
import { csvColumnProblem } from "./files.js";
import type { TaskModule, Template } from "./task.js";

const FAMILIES: Template[] = [
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

const csvExample = (given?: { dataDir?: string; targetColumn?: string }) => `csv:${given?.dataDir || "/data/titanic.csv"} target=${given?.targetColumn ?? "Survived"}`;

export const TABULAR = {
  name: "tabular",
  describe: "tables of numbers and categories, one class or one number per row",
  modality: "tabular",
  datasets: [
    { name: "iris", aliases: /\biris\b/gi, serves: ["classification"] },
    { name: "wine", aliases: /\bwine\b/gi, serves: ["classification"] },
    { name: "breast_cancer", aliases: /\bbreast[-_ ]?cancer\b/gi, serves: ["classification"] },
    { name: "diabetes", aliases: /\bdiabetes\b/gi, serves: ["regression"] },
    {
      name: "csv",
      serves: ["classification", "regression"],
      file: {
        usage: "csv:<path> target=<column>",
        example: (_task, given) => csvExample(given),
        missingTarget: (path) => `csv needs its target column, e.g. "${csvExample({ dataDir: path })}"`,
        // Whether a target column was given at all is the caller's to say, in its own words (goal or flag).
        dataProblem: (path, targetColumn) => (targetColumn ? csvColumnProblem("csv", path, targetColumn) : undefined),
      },
    },
  ],
  templates: () => FAMILIES,
} as const satisfies TaskModule;
