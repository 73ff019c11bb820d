/**
 * A run's state folded from its events in stream order: the one fold of the
 * project. Agents keep it current per run (run-states.ts), the launcher and
 * `watch` fold the runs they follow, and the report, the run folder and the
 * lineage store's rows are drawn from it. A restarted process rebuilds it
 * from the stream.
 */
import { create } from "@bufbuild/protobuf";
import { Decision, InterventionKind, RunFinishedSchema, Verdict, type Event, type Goal, type Intervention, type LlmCall, type ResearchRequested, type RunFinished, type RunnerJobs, type RunSettings, type RunStatus, type StartingPoint, type TrialAssembled, type TrialEvaluated, type TrialJudged, type TrialProposed } from "../proto/gen/research/v1/events_pb.js";
import { parseBrief, type Brief } from "../core/brief.js";
import { briefSent, modelSent, trainSent } from "../core/config-wire.js";
import { SURFACE, TRIAL_STATUS, type SurfaceName, type TrialStatusName } from "../core/enums.js";
import { labelName, type FailureName } from "../core/failure.js";
import {
  authoredModelConfig,
  authoredTrainConfig,
  authoredTrialModel,
  parseTrainConfig,
  parseTrialModel,
  type ModelConfigInput,
  type TrainConfig,
  type TrainConfigInput,
  type TrialModel,
  type TrialModelInput,
} from "../core/model-config.js";
import { RUN_DEFAULTS } from "../core/defaults.js";
import { outranks, standingOf, type Standing } from "../core/ranking.js";
import { ACCURACY, formatMetric, objective, pessimisticBound, tolerance, type Objective } from "../core/objective.js";
import { FailureLabel, Mutation, Surface, type Failure } from "../proto/gen/research/v1/common_pb.js";
import type { DatasetInfo, LearningCurve, MetricStats, ModelArgument, SeedResult } from "../proto/gen/research/v1/runner_pb.js";

export type TrialStatus = TrialStatusName;
export type TrialStage = Exclude<TrialStatus, "failed">;
/** The pipeline stages a trial passes through, in order; "failed" is where a trial's path ends early. */
export const TRIAL_STAGES: readonly TrialStage[] = TRIAL_STATUS.names.filter((s): s is TrialStage => s !== "failed");

export interface TrialState {
  id: string;
  /** The run's: what the trial's scores are read through. */
  objective: Objective;
  proposed?: TrialProposed;
  assembled?: TrialAssembled;
  evaluated?: TrialEvaluated;
  judged?: TrialJudged;
  /**
   * model_config and train_config, parsed and validated once here from the
   * proposal's JSON text, with the schemas' defaults filled: every reader takes
   * them typed from the fold. Undefined when they do not validate; then
   * `configError` says why (the coder fails the trial with it).
   */
  model?: TrialModel;
  train?: TrainConfig;
  configError?: string;
  /** Stream order of the judged event among the run's judged events (0-based). */
  judgedPosition?: number;
  /** When the first and the last of the trial's stage events (proposed to judged) were emitted. */
  firstAtMs?: number;
  lastAtMs?: number;
}

/**
 * A person's proposal (an Intervention of kind PROPOSE) with its configs
 * parsed once here, as they wrote them: the planner lays their training over
 * the run's probe recipe, so the schema's defaults are not filled in.
 */
export interface HandProposal {
  intervention: Intervention;
  model: ModelConfigInput;
  /** Empty when they gave none: the probe recipe as it is. */
  train: TrainConfigInput;
}

/** Where the run starts from (launch --from), as its author wrote it: the planner proposes it as trial 0. */
export interface StartingPointState {
  origin: string;
  model: TrialModelInput;
  train: TrainConfigInput;
  /** A model in Python: the source every code trial trains, and what the runner found in it. */
  code?: { source: string; arguments: ModelArgument[]; params: number };
}

export interface RunState {
  runId: string;
  goal?: Goal;
  /** The metric the run decides on and its direction, from the goal (accuracy before it is known). */
  objective: Objective;
  settings?: RunSettings;
  /** Set when the run starts from a person's model (validated by the launcher); else from templates. */
  start?: StartingPointState;
  /** The dataset as the runner described it at launch; unset in runs from before it was recorded. */
  dataset?: DatasetInfo;
  startedAtMs: number;
  /** When the newest stored event was emitted: a resume counts the time since as downtime. */
  lastEventMs: number;
  /** Each `launch --resume`, in order. */
  resumes: { atMs: number; downtimeS: number; timeBudgetS: number }[];
  /** The run's runner jobs as last recorded (launch --runners slurm); undefined for runners that are not jobs. */
  runnerJobs?: RunnerJobs;
  briefs: Brief[];
  trials: Map<string, TrialState>;
  /** Trial ids in the order they were proposed. */
  order: string[];
  judgedCount: number;
  finished: boolean;
  /** How the run ended, and when: set with `finished`. */
  runFinished?: RunFinished;
  finishedAtMs: number;
  llmCalls: LlmCall[];
  /** Narrower questions the planner asked when a surface stalled. */
  researchRequests: ResearchRequested[];
  /** For each brief (same order as `briefs`), the request it answers ("" for the run's first). */
  briefRequests: string[];
  /** What people did to the run (pause, resume, stop, cancel, propose), in order. */
  interventions: Intervention[];
  /** The planner starts nothing new while paused. */
  paused: boolean;
  /** The first stop asked for: trials in flight are cancelled and the run finishes stopped. */
  stopRequested?: Intervention;
  /** Trials a person cancelled, by trial id. */
  cancelled: Map<string, Intervention>;
  /** People's proposals whose configs validate (swarm/interventions.ts lets no other in), in order. */
  handProposals: HandProposal[];
  /** The trial each queued proposal became, by intervention id. */
  proposalTrials: Map<string, string>;
}

export function emptyRunState(runId: string): RunState {
  return {
    runId,
    objective: ACCURACY,
    startedAtMs: 0,
    lastEventMs: 0,
    resumes: [],
    briefs: [],
    trials: new Map(),
    order: [],
    judgedCount: 0,
    finished: false,
    finishedAtMs: 0,
    llmCalls: [],
    researchRequests: [],
    briefRequests: [],
    interventions: [],
    paused: false,
    cancelled: new Map(),
    handProposals: [],
    proposalTrials: new Map(),
  };
}

/** The event's trial, created by its first stage event. */
function trial(state: RunState, e: Event): TrialState {
  const at = Number(e.emittedAtMs);
  let t = state.trials.get(e.trialId);
  if (!t) {
    t = { id: e.trialId, objective: state.objective, firstAtMs: at, lastAtMs: at };
    state.trials.set(e.trialId, t);
  }
  t.firstAtMs = Math.min(t.firstAtMs ?? at, at);
  t.lastAtMs = Math.max(t.lastAtMs ?? at, at);
  return t;
}

/** Seconds between the run's interruptions and their resumes: not the run's. */
export function downtimeSeconds(state: RunState): number {
  return state.resumes.reduce((s, r) => s + r.downtimeS, 0);
}

/** Seconds the run has been live at `nowMs`: its clock, which the time budget is spent on. */
export function liveSeconds(state: RunState, nowMs: number): number {
  return state.startedAtMs ? (nowMs - state.startedAtMs) / 1000 - downtimeSeconds(state) : 0;
}

function configsOf(p: TrialProposed): Pick<TrialState, "model" | "train" | "configError"> {
  const model = parseTrialModel(modelSent(p));
  if (!model.ok) return { configError: `model_config: ${model.error}` };
  const train = parseTrainConfig(trainSent(p));
  if (!train.ok) return { configError: `train_config: ${train.error}` };
  return { model: model.value, train: train.value };
}

function handProposalOf(v: Intervention): HandProposal | undefined {
  const model = authoredModelConfig(modelSent(v));
  const train = authoredTrainConfig(trainSent(v));
  return model.ok && train.ok ? { intervention: v, model: model.value, train: train.value } : undefined;
}

function startingPointOf(p: StartingPoint): StartingPointState | undefined {
  const model = authoredTrialModel(modelSent(p));
  const train = authoredTrainConfig(trainSent(p));
  if (!model.ok || !train.ok) return undefined;
  const code = p.modelCode ? { source: p.modelCode, arguments: p.arguments, params: Number(p.params) } : undefined;
  return { origin: p.origin, model: model.value, train: train.value, ...(code && { code }) };
}

export function applyToRunState(state: RunState, e: Event): RunState {
  const b = e.body;
  state.lastEventMs = Math.max(state.lastEventMs, Number(e.emittedAtMs));
  switch (b.case) {
    case "runStarted":
      state.goal = b.value.goal;
      state.objective = objective(b.value.goal?.objective);
      state.settings = b.value.settings;
      state.start = b.value.start && startingPointOf(b.value.start);
      state.dataset = b.value.dataset;
      state.startedAtMs = Number(e.emittedAtMs);
      break;
    case "runnerJobs":
      state.runnerJobs = b.value;
      break;
    case "runResumed":
      state.resumes.push({ atMs: Number(e.emittedAtMs), downtimeS: b.value.downtimeS, timeBudgetS: b.value.timeBudgetS });
      // A copy: the goal is the run_started event's, which must stay as it was emitted (the lineage store writes it out).
      if (b.value.timeBudgetS > 0 && state.goal) state.goal = { ...state.goal, timeBudgetS: b.value.timeBudgetS };
      break;
    case "briefReady": {
      const brief = parseBrief(briefSent(b.value));
      if (brief.ok) {
        state.briefs.push(brief.brief);
        state.briefRequests.push(b.value.requestId);
      }
      break;
    }
    case "trialProposed": {
      const t = trial(state, e);
      if (!t.proposed) state.order.push(e.trialId);
      t.proposed = b.value;
      Object.assign(t, configsOf(b.value));
      if (b.value.interventionId) state.proposalTrials.set(b.value.interventionId, e.trialId);
      break;
    }
    case "trialAssembled":
      trial(state, e).assembled = b.value;
      break;
    case "trialEvaluated":
      trial(state, e).evaluated = b.value;
      break;
    case "trialJudged": {
      const t = trial(state, e);
      if (!t.judged) t.judgedPosition = state.judgedCount++;
      t.judged = b.value;
      break;
    }
    case "runFinished":
      state.finished = true;
      state.runFinished = b.value;
      state.finishedAtMs = Number(e.emittedAtMs);
      break;
    case "llmCall":
      state.llmCalls.push(b.value);
      break;
    case "researchRequested":
      state.researchRequests.push(b.value);
      break;
    case "runIntervention": {
      const v = b.value;
      state.interventions.push(v);
      if (v.kind === InterventionKind.PAUSE) state.paused = true;
      else if (v.kind === InterventionKind.RESUME) state.paused = false;
      else if (v.kind === InterventionKind.STOP) state.stopRequested ??= v;
      else if (v.kind === InterventionKind.CANCEL_TRIAL && !state.cancelled.has(e.trialId)) state.cancelled.set(e.trialId, v);
      else if (v.kind === InterventionKind.PROPOSE) {
        const p = handProposalOf(v);
        if (p) state.handProposals.push(p);
      }
      break;
    }
    default:
      break;
  }
  return state;
}

export function foldRun(runId: string, events: Iterable<Event>): RunState {
  const state = emptyRunState(runId);
  for (const e of events) applyToRunState(state, e);
  return state;
}

type Stages = Pick<TrialState, "assembled" | "evaluated" | "judged">;

/**
 * A trial's outcome: the earliest labelled failure along the pipeline (the
 * root cause, not a later stage's echo of it) and the stage that reported it,
 * or none. The one rule for every view of a trial: agents, report, run
 * folder, lineage rows, CLI. It reads only which stages are in, never the
 * order they came in.
 */
export function trialFailureAt(t: Stages): { failure: Failure; stage: TrialStage } | undefined {
  const found: [Failure | undefined, TrialStage][] = [
    [t.assembled?.failure, "assembled"],
    [t.assembled?.summary?.failure, "assembled"],
    [t.evaluated?.failure, "evaluated"],
    [t.judged?.failure, "judged"],
  ];
  for (const [failure, stage] of found) if (failure && failure.label !== FailureLabel.UNSPECIFIED) return { failure, stage };
  return undefined;
}

export function trialFailure(t: Stages): Failure | undefined {
  return trialFailureAt(t)?.failure;
}

export function failureLabelOf(t: Stages): FailureName | undefined {
  const f = trialFailure(t);
  return f && (labelName(f.label) as FailureName);
}

/** The furthest stage the trial reached, failed or not. */
export function trialStage(t: TrialState): TrialStage {
  return t.judged ? "judged" : t.evaluated ? "evaluated" : t.assembled ? "assembled" : "proposed";
}

/** Where the trial stands: the furthest stage it reached, or failed. */
export function trialStatus(t: TrialState): TrialStatus {
  return trialFailure(t) ? "failed" : trialStage(t);
}

/** The proposal's surface, or the judge's when the proposal named none. */
export function surfaceOf(t: TrialState): SurfaceName | "" {
  return SURFACE.name(t.proposed?.surface || t.judged?.surface || Surface.UNSPECIFIED) ?? "";
}

/** The run's validation metric of the trial (accuracy, or a regression's RMSE, MAE or R²). */
export function valMetricOf(t: TrialState): MetricStats | undefined {
  return t.evaluated?.result?.aggregated[t.objective.key];
}

/**
 * The score ranking uses: the pessimistic end of the 95% interval (so a lucky seed does not
 * win), as a utility where higher is better: accuracy's lower bound, minus an RMSE's upper one.
 */
export function scoreOf(t: TrialState): number | undefined {
  return standing(t)?.ciLow;
}

/** The pessimistic end of the 95% interval of the trial's validation metric, in its units. */
export function boundOf(t: TrialState): number | undefined {
  const stats = valMetricOf(t);
  return stats && pessimisticBound(t.objective, stats);
}

/** The mean of the validation metric, in its units. */
export function meanOf(t: TrialState): number | undefined {
  return valMetricOf(t)?.mean;
}

/**
 * A seed's per-epoch curves of the metric: on the validation split (runners from before
 * val_metric recorded accuracy alone), and on the training split where the runner measures it
 * there: accuracy is measured in training too, a regression's metric on the validation split alone.
 */
export function metricCurves(o: Objective, c: LearningCurve | undefined): { val: number[]; train: number[] } {
  return { val: (c?.valMetric.length ? c.valMetric : c?.valAccuracy) ?? [], train: (o.proportion && c?.trainAccuracy) || [] };
}

/**
 * A trial's confusion matrix on the validation split (rows: true class, columns: predicted),
 * its seeds' counts added: every seed scores the same examples. Empty for a regression or
 * language model, and for a trial without a result.
 */
export function confusionOf(t: TrialState): number[][] {
  const sum: number[][] = [];
  for (const r of t.evaluated?.result?.seedResults ?? []) {
    r.confusionMatrix.forEach((row, i) => {
      const out = (sum[i] ??= []);
      row.counts.forEach((c, j) => (out[j] = (out[j] ?? 0) + c));
    });
  }
  return sum;
}

/** The score for people: "CI low 91.20%" or "CI high 54.3". */
export function scoreText(t: TrialState): string {
  const bound = boundOf(t);
  return `CI ${t.objective.higherIsBetter ? "low" : "high"} ${bound === undefined ? "?" : formatMetric(t.objective, bound)}`;
}

/** The evaluation's count, or the assembly's summary when the trial was not evaluated. */
export function paramsOf(t: TrialState): number | undefined {
  const p = t.evaluated?.result?.params || t.assembled?.summary?.totalParams;
  return p ? Number(p) : undefined;
}

export function judgedTrials(state: RunState): TrialState[] {
  return state.order.map((id) => state.trials.get(id)!).filter((t) => t.judged);
}

/** A rise of the best CI lower bound this small (0.1 pp) is seed noise, not progress. */
export const PLATEAU_DELTA = 1e-3;

/**
 * The first training seed of every trial of a run (its seeds count up from it): a thousand apart
 * per planner seed (--seed), so runs with different --seed are independent samples, not replays
 * of the same training seeds; every trial of one run shares them, so its comparisons are matched.
 */
export function firstSeed(settings: Pick<RunSettings, "rngSeed"> | undefined): number {
  return ((settings?.rngSeed ?? 0) % 1_000_000) * 1000;
}

/** Judged trials without progress before a run stops on a plateau. */
export function patienceOf(state: RunState): number {
  return state.settings?.patience || RUN_DEFAULTS.patience;
}

/**
 * Judged trials (those `counted`: all by default) since the best accepted CI
 * lower bound last rose by more than PLATEAU_DELTA, and that bound.
 */
export function plateau(state: RunState, counted: (t: TrialState) => boolean = () => true): { since: number; best: number } {
  let best = -Infinity;
  let since = 0;
  for (const t of judgedTrials(state).sort((a, b) => a.judgedPosition! - b.judgedPosition!)) {
    const s = t.judged?.verdict === Verdict.ACCEPT ? (scoreOf(t) ?? -Infinity) : -Infinity;
    // A share of examples rises in absolute steps; an error in the target's units, relative to its size.
    if (s > best + tolerance(state.objective, PLATEAU_DELTA, best)) {
      best = s;
      since = 0;
    } else if (counted(t)) since++;
  }
  return { since, best };
}

/** The run's starting point (launch --from) or its rung-0 anchor: trial 0 and its probe (agents/planner/policies/hand.ts baselineProposals). */
export function isBaseline(t: TrialState): boolean {
  return t.proposed?.mutation === Mutation.BASELINE;
}

/** Trial 0 of a run started from a person's model: the starting point on its own recipe, what the report compares the best with. */
export function baselineTrial(state: RunState): TrialState | undefined {
  for (const t of state.trials.values()) if (isBaseline(t) && !t.proposed!.parentIds.length) return t;
  return undefined;
}

/** The trial's fidelity rung (agents/planner/scheduler.ts): 0 for every new config. */
export function rungOf(t: TrialState): number {
  return t.proposed?.rung ?? 0;
}

/**
 * Only promotions climb: every new config starts at rung 0, so a trial above
 * it is a promotion of its one parent, trained again at a higher fidelity.
 */
export function isPromotion(t: TrialState): boolean {
  return rungOf(t) > 0;
}

/**
 * A promotion that trains with the run's seeds (TrialProposed.seeds unset),
 * not one that only ranks configs with one seed: only such a trial can raise
 * the run's best, whose interval has a seed spread.
 */
export function isClaimingPromotion(t: TrialState): boolean {
  return isPromotion(t) && !t.proposed?.seeds;
}

/** Whether a promotion is still training. */
export function longTrainingInFlight(state: RunState): boolean {
  for (const t of state.trials.values()) if (!t.judged && isPromotion(t)) return true;
  return false;
}

/** A run's opening training continued from a past run's kept weights (TrialProposed.init_weights), not the last long training that goes on from it. */
export function isContinued(t: TrialState): boolean {
  return !!t.proposed?.initWeights && !t.proposed.lastTraining;
}

/**
 * The run's last long training (TrialProposed.last_training), a training continued from kept
 * weights (TrialProposed.init_weights) or a trial whose seeds share every core
 * (TrialProposed.seeds_at_once: a target's confirmation on a CPU) while it trains: each has the
 * runner to itself, so the planner starts nothing beside it (a probe could change no result and
 * would slow it down).
 */
export function aloneInFlight(state: RunState): TrialState | undefined {
  for (const t of state.trials.values()) if (!t.judged && (t.proposed?.lastTraining || t.proposed?.initWeights || t.proposed?.seedsAtOnce)) return t;
  return undefined;
}

/** Hand-written proposals queued by people that no trial has taken yet, oldest first. */
export function queuedProposals(state: RunState): HandProposal[] {
  return state.handProposals.filter((p) => !state.proposalTrials.has(p.intervention.interventionId));
}

/** What a person did, in words: "stopped by cli:alice: enough". */
export function doneBy(v: Intervention, what: string): string {
  return `${what} by ${v.who}${v.reason ? `: ${v.reason}` : ""}`;
}

/** Why a person ended this trial (cancelled it, or stopped the run), if one did. */
export function cancelledBy(state: RunState, trialId: string): string | undefined {
  const c = state.cancelled.get(trialId);
  if (c) return doneBy(c, "cancelled");
  return state.stopRequested ? doneBy(state.stopRequested, "cancelled: the run was stopped") : undefined;
}

/** Proposed trials not judged yet. */
export function inFlightCount(state: RunState): number {
  let n = 0;
  for (const t of state.trials.values()) if (t.proposed && !t.judged) n++;
  return n;
}

/**
 * Trials the run keeps in flight now: its parallelism, in proportion to the runner jobs up when
 * its runners are jobs (none up: none, since nothing could train it), so that the planner never
 * proposes what no runner would take before the budget ends.
 */
export function capacityOf(state: RunState): number {
  const parallel = state.settings?.parallel || 1;
  const jobs = state.runnerJobs;
  return jobs?.requested ? Math.min(parallel, Math.ceil((parallel * jobs.up) / jobs.requested)) : parallel;
}

/** Whether some proposed trial has not been judged yet. */
export function inFlight(state: RunState): boolean {
  for (const t of state.trials.values()) if (!t.judged) return true;
  return false;
}

/** A trial's standing under the run's rule for "best" (core/ranking.ts). */
export function standing(t: TrialState): Standing | undefined {
  return standingOf(t.evaluated?.result, t.objective);
}

/** The accepted trials with their standing: what the rule for "best" ranks. */
function* standings(state: RunState): Generator<{ t: TrialState; s: Standing }> {
  for (const t of state.trials.values()) {
    const s = t.judged?.verdict === Verdict.ACCEPT ? standing(t) : undefined;
    if (s) yield { t, s };
  }
}

/** The accepted trials, best first by the run's rule (core/ranking.ts bestRule). */
export function rankedTrials(state: RunState): TrialState[] {
  return [...standings(state)].sort((a, b) => (outranks(a.s, b.s) ? -1 : outranks(b.s, a.s) ? 1 : 0)).map((x) => x.t);
}

/** rankedTrials' first, in one pass (read on every event). */
export function bestTrial(state: RunState): TrialState | undefined {
  let best: { t: TrialState; s: Standing } | undefined;
  for (const x of standings(state)) if (outranks(x.s, best?.s)) best = x;
  return best?.t;
}

export function isTerminal(decision: Decision | undefined): boolean {
  return decision === Decision.GOAL_ACHIEVED || decision === Decision.STOP;
}

/** The slowest seed's result: what a model costs, whatever the runner's queue added around it. */
export function slowestSeed(t: TrialState): SeedResult | undefined {
  const seeds = t.evaluated?.result?.seedResults ?? [];
  return seeds.length ? seeds.reduce((a, b) => (b.seconds > a.seconds ? b : a)) : undefined;
}

/** Wall time of the slowest seed. */
export function slowestSeedSeconds(t: TrialState): number | undefined {
  return slowestSeed(t)?.seconds;
}

/**
 * A RunFinished for a run that has not finished (still running, or its
 * launcher was stopped), for a report of the run so far; never published.
 */
export function runSoFar(state: RunState, status: RunStatus, reason: string, nowMs = Date.now()): RunFinished {
  return create(RunFinishedSchema, {
    status,
    reason,
    trials: state.judgedCount,
    seconds: liveSeconds(state, nowMs),
    bestTrialId: bestTrial(state)?.id ?? "",
  });
}

/**
 * The results of past runs the planner's surrogate held as prior observations (TrialProposed.past_observations):
 * how many proposals were planned with them, and the most at once with their summed weight then. Undefined when none.
 */
export function pastPriorOf(s: RunState): { trials: number; observations: number; weight: number } | undefined {
  const planned = [...s.trials.values()].flatMap((t) => (t.proposed && t.proposed.pastObservations > 0 ? [t.proposed] : []));
  if (!planned.length) return undefined;
  const most = planned.reduce((a, b) => (b.pastObservations > a.pastObservations ? b : a));
  return { trials: planned.length, observations: most.pastObservations, weight: most.pastWeight };
}
