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

/** Seeds per evaluation when nobody chose a number: the fewest that give a seed spread worth an interval. */
export const DEFAULT_SEEDS = 3;

/**
 * Where the planner starts a run when its settings leave subset or epochs at 0:
 * a slice of a large training split, so early comparisons are cheap (the data
 * surface grows it), and a few epochs.
 */
export const SEARCH_DEFAULTS = { epochs: 3, subset: 10_000 } as const;

/**
 * The runner's learning rate for a request without one: plain SGD needs a far larger
 * step than the adaptive optimizers. A train_config without lr gets the default
 * optimizer's, whatever optimizer it names (a zod default cannot look at a sibling).
 */
export const DEFAULT_LR: Readonly<Record<OptimizerName, number>> = { sgd: 0.05, adam: 1e-3, adamw: 1e-3 };
