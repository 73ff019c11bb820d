/**
 * A candidate's identity: two configs that train the same are one config,
 * whatever their names or how they spell the defaults. The planner drops a
 * candidate whose fingerprint already ran in this run or failed anywhere in
 * the lineage.
 */
import { createHash } from "node:crypto";
import { childModel, isCodeModel, parseTrainConfig, parseTrialModel, type TrainConfig, type TrainConfigInput, type TrialModel, type TrialModelInput } from "../../core/model-config.js";
import type { RunState } from "../../swarm/run-state.js";
import type { TrialState } from "../../swarm/trial-state.js";
import { effectiveOptimizer, type Genome } from "./mutations.js";

function canonical(x: unknown): string {
  if (Array.isArray(x)) return `[${x.map(canonical).join(",")}]`;
  if (x && typeof x === "object") {
    return `{${Object.keys(x)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((x as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(x);
}

/**
 * The recipe as gpu-runner/python/trainer.py runs it: what it ignores left
 * out, so that two recipes that train identically share a fingerprint.
 * Dataset- and device-dependent no-ops (augmentation of non-images, amp on a
 * CPU) stay distinct: a fingerprint also matches lineage rows of other runs.
 * Deterministic training replays a config; it is not another one.
 */
function effectiveRecipe(train: TrainConfig): Partial<TrainConfig> {
  const { momentum, nesterov, step_size, gamma, deterministic: _replays, ...rest } = train;
  const optimizer = effectiveOptimizer(train.optimizer, train.weight_decay);
  return {
    ...rest,
    optimizer,
    // Nesterov without momentum stays distinct: torch's SGD refuses it.
    ...(optimizer === "sgd" ? { momentum, nesterov } : {}),
    ...(train.schedule === "step" ? { step_size, gamma } : {}),
  };
}

/**
 * What makes a model the model it is: a model_config's layers, or a code model's class,
 * arguments and where its code comes from (the run's source, an earlier trial's edit, or an edit
 * still to make). Code models of two runs share a fingerprint only when all of that does, so the
 * lineage's failures are not held against them; the planner reads other runs' rows only as
 * model_configs.
 */
function modelIdentity(model: TrialModelInput): unknown {
  if (!isCodeModel(model)) return model.layers;
  const { class_name, init_kwargs = {}, code_edit, source_trial } = model;
  return { class_name, init_kwargs, ...(code_edit && { code_edit }), ...(source_trial && { source_trial }) };
}

function hashOf(model: unknown, recipe: unknown): string {
  return createHash("sha256").update(canonical({ layers: model, train: recipe })).digest("hex").slice(0, 16);
}

/** Identity of validated configs (a trial's from the fold, a past run's row): layers (or class and arguments) and recipe, not the name. */
export function configFingerprint(model: TrialModel, train: TrainConfig): string {
  return hashOf(modelIdentity(model), effectiveRecipe(train));
}

/**
 * Identity of a config as its author wrote it (a candidate the planner
 * makes): parsed here, at the planner's edge, with the schema's defaults
 * filled, so it matches the same config spelt out in full. A config that
 * does not parse keeps its raw form, which can only match itself.
 */
export function fingerprint(model: TrialModelInput, train: TrainConfigInput): string {
  const m = parseTrialModel(model);
  const t = parseTrainConfig(train);
  return hashOf(modelIdentity(m.ok ? m.value : model), t.ok ? effectiveRecipe(t.value) : train);
}

/** What an edit of trial `t` starts from: its configs, with the code its edit made (childModel). */
export function genomeOf(t: TrialState): Genome | undefined {
  return t.model && t.train ? { model: childModel(t.model, t.id), train: t.train } : undefined;
}

/**
 * What the planner derives from a proposed trial never changes once it is
 * proposed; kept per trial object (the follower's state reuses them), so a
 * proposal costs the same at trial 500 as at trial 5.
 */
const derived = new WeakMap<TrialState, { fingerprint?: string; params?: number | string; work?: number }>();
export function derivedOf(t: TrialState) {
  let d = derived.get(t);
  if (!d) derived.set(t, (d = {}));
  return d;
}

/** Fingerprints of the configs this run has proposed. */
export function tried(state: RunState): Set<string> {
  const out = new Set<string>();
  for (const t of state.trials.values()) {
    const d = derivedOf(t);
    if (d.fingerprint === undefined && t.model && t.train) d.fingerprint = configFingerprint(t.model, t.train);
    if (d.fingerprint) out.add(d.fingerprint);
  }
  return out;
}

/** A config's starting family by its name: an edited config keeps its family's name before the edits' ("bn-cnn+add_se"). */
export function familyOf(name: string | undefined): string {
  return (name ?? "").split("+")[0]!;
}
