/** The planner's policies by the name a run's settings give (RunSettings.planner), each with its first proposals and its next. */
import { initialBuiltin, nextBuiltin } from "./builtin.js";
import { initialRandom, randomPolicy } from "./random.js";

export const POLICIES = {
  builtin: { initial: initialBuiltin, next: nextBuiltin },
  random: { initial: initialRandom, next: randomPolicy },
};
