/**
 * What every policy (policies/) builds its proposals from: the decision's input, the run's
 * probe fidelity and starting recipe, a template as it fits the goal's parameter limit, and the
 * checks a candidate must pass (withinBudget): not tried here, not failed in the lineage, within
 * the limits and the run's space.
 */
import { SEARCH_DEFAULTS } from "../../core/defaults.js";
import { intoSpace, isImage, outsideSpace, RECIPE_DEFAULTS, searchStart, spaceOf } from "../../core/space.js";
import { isCodeModel, type TrainConfigInput } from "../../core/model-config.js";
import type { DatasetInfo } from "../../proto/gen/research/v1/runner_pb.js";
import { learningOf } from "../../core/learning/index.js";
import type { RunState } from "../../swarm/run-state.js";
import type { TrialState } from "../../swarm/trial-state.js";
import { lrForBatch, type EditEnv, type Genome } from "./mutations.js";
import type { Template } from "../../core/tasks/task.js";
import { mirrors } from "../../core/tasks/index.js";
import { narrowedToFit } from "../../core/tasks/fit.js";
import { paramsCounter, workCounter } from "./params.js";
import type { Fidelity } from "./scheduler.js";
import type { PlanInput } from "./types.js";
import { fingerprint } from "./identity.js";
import { predictedLatencyMs } from "./time-model.js";

/**
 * The input of the decision for trial `index`: the run's random stream for that trial (seeded
 * by the run's --seed and the index, so a replay of the run's events decides the same), its
 * parameter counter, and what the caller knows of the lineage and the runner.
 */
export function planInputFor(state: RunState, info: DatasetInfo, index: number, rest: Omit<PlanInput, "state" | "info" | "rng" | "params" | "work" | "failedElsewhere"> & Partial<Pick<PlanInput, "failedElsewhere">>): PlanInput {
  return {
    state,
    info,
    rng: mulberry32((state.settings?.rngSeed ?? 0) * 100_003 + index),
    params: paramsCounter(state, info),
    work: workCounter(state, info),
    failedElsewhere: new Set(),
    ...rest,
  };
}

export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Channels-last memory for images where the device's convolutions are faster on it (core/defaults.ts):
 * how a trial is laid out in memory, not what it trains, so the search's trials of a starting
 * point take it too (trial 0 keeps its own recipe whole). The runner keeps a model whose code
 * cannot run on it in its own layout.
 */
export function memoryFormat(input: PlanInput): Pick<TrainConfigInput, "channels_last"> {
  return SEARCH_DEFAULTS[input.device ?? "cpu"].channelsLast && isImage(input.info) ? { channels_last: true } : {};
}

/**
 * The rung-0 probe for the runner's device (core/defaults.ts SEARCH_DEFAULTS): the run's
 * search subset and epochs, the device's batch size with Adam's rate scaled to it, on a GPU
 * mixed precision, and channels-last images. A template's own recipe goes on top.
 */
export function startingTrain(input: PlanInput, template?: Template): TrainConfigInput {
  const s = input.state.settings;
  const d = SEARCH_DEFAULTS[input.device ?? "cpu"];
  const total = input.info.nTrain + input.info.nVal;
  // A corpus probes on rows of windows, other data on examples.
  const slice = learningOf(input.info.task).perPosition ? d.corpusRows : d.subset;
  // A set barely larger than the slice is not worth slicing.
  const subset = s?.subset || (slice && total > 1.2 * slice ? slice : 0);
  const recipe: TrainConfigInput = { ...searchStart(RECIPE_DEFAULTS.optimizer), ...template?.recipe };
  const image = isImage(input.info);
  // A family that names its batch keeps it, its lr being for that batch (a language model's
  // batch counts windows of hundreds of bytes); any other lr is for 128, scaled to the device's.
  const batch = template?.recipe?.batch_size;
  return intoSpace(spaceOf(s?.space), {
    ...recipe,
    lr: batch ? recipe.lr : lrForBatch(recipe.optimizer ?? RECIPE_DEFAULTS.optimizer, recipe.lr!, 128, d.batchSize),
    batch_size: batch ?? d.batchSize,
    epochs: s?.epochs || d.epochs,
    subset,
    ...(d.amp && { amp: true }),
    ...memoryFormat(input),
    ...(template?.recipe && image && mirrors(input.info) && { augment: { hflip: true } }),
  });
}

export function withinBudget(input: PlanInput, g: Genome, seen: Set<string>, parent?: TrialState): string | undefined {
  const fp = fingerprint(g.model, g.train);
  if (seen.has(fp)) return "already tried in this run";
  if (input.failedElsewhere.has(fp)) return "failed the same way in the lineage";
  const p = input.params(g.model);
  if (typeof p === "string") return p;
  const max = Number(input.state.goal?.maxParams ?? 0n);
  if (max > 0 && p > max) return `${p} parameters exceed the limit of ${max}`;
  const limit = input.state.goal?.maxLatencyMs ?? 0;
  const latency = limit > 0 ? predictedLatencyMs(input, g, parent) : undefined;
  if (latency !== undefined && latency > limit) return `predicted ${latency.toPrecision(2)} ms per example, over the goal's limit of ${limit} ms`;
  return outsideSpace(spaceOf(input.state.settings?.space), g.train);
}

/** A template's genome as it fits the goal's parameter limit (core/tasks/fit.ts); a model in Python as it is. */
export const fitted = (input: PlanInput, g: Genome): Genome =>
  isCodeModel(g.model) ? g : { ...g, model: narrowedToFit(g.model, Number(input.state.goal?.maxParams ?? 0n), input.params) };

/** The rung-0 fidelity every new config trains at, whoever authored it. */
export function probeFidelity(input: PlanInput): Fidelity {
  const probe = startingTrain(input);
  return { subset: probe.subset ?? 0, epochs: probe.epochs ?? RECIPE_DEFAULTS.epochs };
}

/** What edits of `parent` may change: an edited class's constructor is the one its trial's runner summarised. */
export function editEnv(input: PlanInput, parent?: TrialState): EditEnv {
  const summarised = parent?.model && isCodeModel(parent.model) ? parent.assembled?.summary?.arguments : undefined;
  return { info: input.info, rng: input.rng, device: input.device ?? "cpu", arguments: summarised ?? input.state.start?.code?.arguments ?? [] };
}
