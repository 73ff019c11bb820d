/**
 * A task's learning: how a model of a proto `Task` (classification, regression, byte-level
 * language modelling) learns and is judged, as far as the swarm needs to know it. Each is one
 * module here (the registry is index.ts); the runner's twin is gpu-runner/python/learning/,
 * which holds the loss, the batches and the referee's scoring. What a kind of data brings (its
 * loader, goal words, templates) is the other half of a task: core/tasks/ for the data read
 * from a person's files, the goal parser's table for the built-in datasets.
 */
import type { DatasetInfo, MetricStats } from "../../proto/gen/research/v1/runner_pb.js";
import type { MetricName } from "../enums.js";
import type { TaskName } from "../enums.js";

/** Where a reported number can lie: a share in [0, 1], an error or loss that is never negative, or any real (R² of a bad model is below 0). */
export type MetricRange = "unit" | "non_negative" | "real";

/** What a goal may decide on: which way is better, and how it reads. */
export interface MetricFacts {
  higherIsBetter: boolean;
  /** A share of examples, shown as a percentage (its interval counts the finite validation set). */
  proportion: boolean;
  /** For people: "RMSE", "accuracy". */
  label: string;
  /** A target as a goal states it, after the metric's name: "below 55", "above 0.5". */
  example: string;
}

/** Why a trial learns next to nothing, for the judge's verdict and the failure's message. */
export interface GateMiss {
  message: string;
  reason: string;
}

/** A goal that asks a task of a dataset that serves others, for the task's refusal. */
export interface Mismatch {
  dataset: string;
  /** The metric the goal named. */
  metric: string;
  /** The tasks the dataset serves. */
  serves: readonly TaskName[];
  /** The metrics a goal on that dataset decides on. */
  decidesOn: readonly string[];
}

export interface Learning {
  name: TaskName;
  /** The metrics a goal of this task may decide on. */
  metrics: Partial<Record<MetricName, MetricFacts>>;
  /**
   * Every number its results report, by name without the split (val_, test_, train_), and its
   * range: gpu-runner/stats.ts clips an interval there. test/runner/stats.test.ts scores with the
   * worker's own code and fails on a reported name that no task's table holds.
   */
  ranges: Readonly<Record<string, MetricRange>>;
  /** Numbers a model outputs per example, or at each position where `perPosition`. */
  outputWidth(info: DatasetInfo): number;
  /** An example is a window of a corpus, predicted at every position: batches count windows, and the recipe's context applies. */
  perPosition: boolean;
  /** Examples have classes: what only a classifier's recipe has (label smoothing) applies. */
  classes: boolean;
  /** What a model predicts, for the console's line about the dataset: "10 classes". */
  describeTarget(info: DatasetInfo): string;
  /** Why a goal cannot ask this task of a dataset (one line, for the goal parser). */
  refusal(m: Mismatch): string;
  /** The judge's gate: why a trial is no better than a guess, from its aggregated metrics; undefined when it is better. */
  gateMiss(aggregated: Readonly<Record<string, MetricStats>>, numClasses: number): GateMiss | undefined;
}
