/**
 * A candidate's parameter count: the planner holds it against the goal's limit, scales a
 * trial's time by it, and shows it to the surrogate. A model_config is compiled here. A
 * model in Python is built only in the runner's sandbox, so its count is the runner's: a
 * trial of this run with the same class, arguments and code once the coder has summarised it,
 * else the trial whose code edit it builds on, else the starting point's, as the launcher
 * measured it. An argument edit's own size is
 * known once it is built; the runner holds it against the limit then (a labelled failure).
 */
import { isCodeModel, type TrialModelInput } from "../../core/model-config.js";
import type { DatasetInfo } from "../../proto/gen/research/v1/runner_pb.js";
import { configParamsCounter, configWorkCounter } from "../../core/tasks/fit.js";
import type { RunState } from "../../swarm/run-state.js";
import { fingerprint } from "./identity.js";

export function paramsCounter(state: RunState, info: DatasetInfo): (model: TrialModelInput) => number | string {
  const configParams = configParamsCounter(info);
  // The recipe plays no part in the count: fingerprints are taken at an empty one.
  const modelKey = (model: TrialModelInput) => fingerprint(model, {});
  let summarised: Map<string, number> | undefined;
  return (model) => {
    if (!isCodeModel(model)) return configParams(model);
    const code = state.start?.code;
    if (!code) return `model_config: ${model.class_name} is a model in Python, and this run started from none`;
    // Read once per counter (one proposal's), not once per candidate: the planner asks for every edit it weighs.
    summarised ??= new Map(
      [...state.trials.values()].flatMap((t) => (t.model && isCodeModel(t.model) && t.assembled?.summary?.totalParams ? [[modelKey(t.model), Number(t.assembled.summary.totalParams)] as const] : [])),
    );
    // An edited class is counted as the trial that made the edit built it, until this one is built.
    const source = model.source_trial ? state.trials.get(model.source_trial)?.assembled?.summary?.totalParams : undefined;
    return summarised.get(modelKey(model)) ?? (source ? Number(source) : code.params);
  };
}

/**
 * What a candidate's time scales by (time-model.ts): its parameters less its lookup tables' rows,
 * of which an example reads a few (a hashed n-gram table of 4.2M parameters costs a step what a
 * few thousand do); a model in Python by its parameter count (paramsCounter), its tables unknown.
 */
export function workCounter(state: RunState, info: DatasetInfo): (model: TrialModelInput) => number | undefined {
  const params = paramsCounter(state, info);
  const configWork = configWorkCounter(info);
  // The time model asks for one candidate's work several times (its pace source, its training, its confirmation): compiled once.
  const counted = new WeakMap<TrialModelInput, number | undefined>();
  return (model) => {
    if (counted.has(model)) return counted.get(model);
    const p = isCodeModel(model) ? params(model) : configWork(model);
    const work = typeof p === "number" ? p : undefined;
    counted.set(model, work);
    return work;
  };
}
