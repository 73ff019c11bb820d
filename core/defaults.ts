import type { OptimizerName, ScheduleName } from "./enums.js";

/**
 * Recipe values for when nobody chose one. The train_config schema fills them for
 * authors (people, the planner, LLMs) and the runner for a request that leaves a
 * field unset (0 or unspecified on the wire), so a recipe means the same whoever
 * left a value out. The Python worker has none of its own: it is always sent every
 * field.
 */
export const RECIPE_DEFAULTS = {
  optimizer: "adam",
  schedule: "none",
  batchSize: 128,
  epochs: 2,
  gamma: 0.1,
} as const satisfies { optimizer: OptimizerName; schedule: ScheduleName; batchSize: number; epochs: number; gamma: number };

/**
 * The runner's learning rate for a request without one: plain SGD needs a far larger
 * step than the adaptive optimizers. A train_config without lr gets the default
 * optimizer's, whatever optimizer it names (a zod default cannot look at a sibling).
 */
export const DEFAULT_LR: Readonly<Record<OptimizerName, number>> = { sgd: 0.05, adam: 1e-3, adamw: 1e-3 };
