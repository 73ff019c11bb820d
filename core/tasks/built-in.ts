/**
 * The datasets the runner knows by name (gpu-runner/python/datasets.py loads them), one row
 * each: what a goal calls it, its modality, and the tasks (core/learning/) a goal may ask of it.
 * The goal parser and the researcher read this table; the registry's tasks (index.ts) add theirs.
 */
import type { TaskName } from "../enums.js";

/** What the research corpus's briefs key on. */
export type Modality = "vision" | "tabular" | "text";

export interface BuiltInDataset {
  name: string;
  /** Other words a goal names it by ("FashionMNIST", "cifar-10"); a goal names every dataset by its name too. */
  aliases?: RegExp;
  /** undefined: none fixed (synthetic data's shape is chosen per run). */
  modality?: Modality;
  /** The tasks a goal may ask of it; the first when a goal names no metric. */
  serves: readonly [TaskName, ...TaskName[]];
  /** Named with a path ("csv:PATH"): a person's files, not the runner's copy. */
  path?: boolean;
}

// In the order the goal parser tries them: longer names first, so that "fashion-mnist" wins over
// "mnist" and "cifar100" over "cifar10".
export const BUILT_IN = [
  { name: "fashion-mnist", aliases: /\b(?:fashion[-_ ]?mnist|f[-_]?mnist)\b/gi, modality: "vision", serves: ["classification"] },
  { name: "cifar100", aliases: /\bcifar[-_ ]?100\b/gi, modality: "vision", serves: ["classification"] },
  { name: "cifar10", aliases: /\bcifar[-_ ]?10\b/gi, modality: "vision", serves: ["classification"] },
  // "MNIST digits" is MNIST, not sklearn's digits.
  { name: "mnist", aliases: /\bmnist(?:[-_ ]digits)?\b/gi, modality: "vision", serves: ["classification"] },
  { name: "svhn", aliases: /\bsvhn\b/gi, modality: "vision", serves: ["classification"] },
  { name: "digits", aliases: /\b(?:sklearn[-_ ]?)?digits\b/gi, modality: "vision", serves: ["classification"] },
  { name: "iris", aliases: /\biris\b/gi, modality: "tabular", serves: ["classification"] },
  { name: "wine", aliases: /\bwine\b/gi, modality: "tabular", serves: ["classification"] },
  { name: "breast_cancer", aliases: /\bbreast[-_ ]?cancer\b/gi, modality: "tabular", serves: ["classification"] },
  { name: "diabetes", aliases: /\bdiabetes\b/gi, modality: "tabular", serves: ["regression"] },
  { name: "csv", modality: "tabular", serves: ["classification", "regression"], path: true },
  // Labelled sentences (one folder per class), or a corpus to model byte by byte.
  { name: "text", modality: "text", serves: ["classification", "language_modelling"], path: true },
  { name: "synthetic", aliases: /\bsynthetic\b/gi, serves: ["classification"] },
] as const satisfies readonly BuiltInDataset[];

/** The built-in dataset of a name, undefined for another. */
export function builtIn(name: string): BuiltInDataset | undefined {
  return (BUILT_IN as readonly BuiltInDataset[]).find((d) => d.name === name);
}
