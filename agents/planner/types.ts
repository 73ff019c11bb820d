/**
 * The planner's shared types: what a decision takes (PlanInput) and gives (Move, Proposal), in
 * one file of their own so that the modules that use them (policy, decide, promises, the time
 * model, promotion, past runs) import no implementation for a type.
 */
import type { SearchDevice } from "../../core/defaults.js";
import type { MutationName, SurfaceName as Surface } from "../../core/enums.js";
import type { TrainConfig, TrainConfigInput, TrialModelInput } from "../../core/model-config.js";
import type { DatasetInfo } from "../../proto/gen/research/v1/runner_pb.js";
import type { RunState } from "../../swarm/run-state.js";
import type { Observation } from "./surrogate.js";

export interface Proposal {
  /** Fidelity rung (scheduler.ts): 0 for every new config. */
  rung: number;
  /** Seeds to evaluate with; undefined: the run's setting. */
  seeds?: number;
  hypothesis: string;
  rationale: string;
  parentIds: string[];
  /** None for a person's proposal: the bandit over surfaces learns only from its own. */
  surface?: Surface;
  /** How it was made: the planner decides by this (TrialProposed.mutation), never by the hypothesis' words. */
  mutation: MutationName;
  model: TrialModelInput;
  train: TrainConfigInput;
  /** A person's queued proposal this one carries. */
  interventionId?: string;
  /** The run's last long training: nothing long fits after it, so nothing else starts beside it. */
  lastTraining?: boolean;
  /** Its seeds start at once, sharing the cores (time-model.ts seedsAtOnce; a lone seed has them all: promotion.ts quickestPath). */
  seedsAtOnce?: boolean;
  /** Past trials (of other runs) it starts from, each with its weight: a warm start (TrialProposed.informed_by). */
  informedBy?: { trialId: string; weight: number }[];
  /** The kept weights each seed starts from (TrialProposed.init_weights): a continued training. */
  initWeights?: { runId: string; trialId: string };
}

/** A past run's config on this goal's data or data that looks the same, measured at this run's probe fidelity (the lineage's warm start). */
export interface PastConfig {
  trialId: string;
  runId: string;
  model: TrialModelInput;
  /** Validated (past-runs.ts rowConfigs): other runs' rows enter the planner only that way. */
  train: TrainConfig;
  /** Its validation lower bound there: the order of the warm start, never a result of this run. */
  ciLow: number;
  /** What its result weighs in this run's surrogate: less the farther its dataset (past-runs.ts). */
  weight: number;
}

export interface PlanInput {
  state: RunState;
  info: DatasetInfo;
  rng: () => number;
  /** Parameter count of a config, or an error message when it does not compile. */
  params: (model: TrialModelInput) => number | string;
  /** What a config's time scales by (params.ts workCounter); without it, its parameter count. */
  work?: (model: TrialModelInput) => number | undefined;
  /** Fingerprints of configs that failed in any run (lineage feedback). */
  failedElsewhere: Set<string>;
  /** Now, for the budget plan; injected so the policy is testable. */
  nowMs?: number;
  /** Rung-0 results of past runs on comparable data (lineage warm start), weighted below this run's, the less the farther their data. */
  pastObservations?: Observation[];
  /** Past runs' configs on this dataset at this run's probe fidelity, strongest first: the first proposals' candidates. */
  pastConfigs?: PastConfig[];
  /** Past runs' long trainings on this dataset, strongest first: what a continued training starts from (promotion.ts continuation). */
  pastLong?: PastConfig[];
  /** Training slots of the runner (its Health); unknown: a trial's seeds are taken to run one after another. */
  slots?: number;
  /** What the runner trains on (its Health): the starting fidelity, batch, precision and templates (core/defaults.ts). */
  device?: SearchDevice;
}

export type Policy = (input: PlanInput, index: number) => Proposal | undefined;

/** Who authored a new config: a person, the starting point, or the built-in policy (an edit, or a template when nothing works yet). */
export type Author = "person" | "starting point" | "policy";

export type Move =
  /** A new config (an edit, a template, a person's proposal), at the probe's fidelity. */
  | { kind: "propose"; proposal: Proposal; by: Author }
  /** The scheduler's: a config trained again at another fidelity (ASHA, a confirmation, the last long training). */
  | { kind: "promote"; proposal: Proposal }
  /** Nothing now; a trial in flight will be judged and bring the next decision. */
  | { kind: "wait"; why: string }
  /** Nothing now, nor for this slot; `broken` when a move was held back because it would break a promise (a bug). */
  | { kind: "nothing"; why: string; broken?: string[] };
