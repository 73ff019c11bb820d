/** The random baseline: uniform draws from the same space, no memory. */
import { SEARCH_DEFAULTS } from "../../../core/defaults.js";
import { applies, DRAWN, drawIn, spaceOf, withValue, type DimensionName } from "../../../core/space.js";
import type { TrainConfigInput } from "../../../core/model-config.js";
import { MUTATIONS } from "../mutations.js";
import type { PlanInput, Policy, Proposal } from "../types.js";
import { tried } from "../identity.js";
import { editEnv, fitted, startingTrain, withinBudget } from "../proposals.js";
import { searchTemplates } from "../../../core/tasks/fit.js";

/**
 * The random baseline: a random template with a random recipe and fidelity; no memory, no
 * feedback, no scheduler.
 */
export const randomPolicy: Policy = (input, index) => {
  const { rng, info } = input;
  const device = input.device ?? "cpu";
  const space = spaceOf(input.state.settings?.space);
  const templates = searchTemplates(info, device, space.families);
  const seen = tried(input.state);
  const draw = (name: DimensionName) => drawIn(space, name, rng, device, info);
  for (let attempt = 0; attempt < 20; attempt++) {
    const t = templates[Math.floor(rng() * templates.length)]!;
    const start = startingTrain(input);
    const subsets = start.subset ? [start.subset, start.subset * 2, start.subset * 4, 0] : [0];
    // Every row with a prior that means something for the data, in the table's order.
    let train: TrainConfigInput = start;
    for (const name of DRAWN) if (applies(name, info)) train = withValue(train, name, draw(name));
    train = { ...train, subset: subsets[Math.floor(rng() * subsets.length)]! };
    let g = fitted(input, { model: t.build(info, SEARCH_DEFAULTS[device].templateWidth), train });
    // One coin for the draw (a coin per element could match neither).
    const width = rng() < 0.5 ? "widen" : "narrow";
    const widen = MUTATIONS.find((m) => m.name === width)!;
    if (rng() < 0.5) g = widen.apply(g, editEnv(input)) ?? g;
    if (withinBudget(input, g, seen)) continue;
    return {
      rung: 0,
      hypothesis: `random draw: ${t.name}, ${train.optimizer} lr ${train.lr!.toExponential(1)}, ${train.epochs} epochs`,
      rationale: `random planner, trial ${index}`,
      parentIds: [],
      surface: "architecture",
      mutation: "random",
      model: g.model,
      train: g.train,
    };
  }
  return undefined;
};

export const initialRandom = (input: PlanInput, count: number): Proposal[] =>
  Array.from({ length: count }, (_, k) => randomPolicy(input, k)).filter((p): p is Proposal => p !== undefined);
