/**
 * A run's state folded from its events in stream order: the one fold of the
 * project. Agents keep it current per run (run-states.ts), the launcher and
 * `watch` fold the runs they follow, and the report, the run folder and the
 * lineage store's rows are drawn from it. A restarted process rebuilds it
 * from the stream.
 */
import { create } from "@bufbuild/protobuf";
import { Decision, InterventionKind, RunFinishedSchema, Verdict, type Event, type Goal, type Intervention, type LlmCall, type ResearchRequested, type RunFinished, type RunnerJobs, type RunSettings, type RunStatus, type StartingPoint, type TrialProposed } from "../proto/gen/research/v1/events_pb.js";
import { parseBrief, type Brief } from "../core/brief.js";
import { briefSent, modelSent, trainSent } from "../core/config-wire.js";
import {
  authoredModelConfig,
  authoredTrainConfig,
  authoredTrialModel,
  parseTrainConfig,
  parseTrialModel,
  type ModelConfigInput,
  type TrainConfigInput,
  type TrialModelInput,
} from "../core/model-config.js";
import { RUN_DEFAULTS } from "../core/defaults.js";
import { outranks, type Standing } from "../core/ranking.js";
import { ACCURACY, objective, tolerance, type Objective } from "../core/objective.js";
import type { DatasetInfo, ModelArgument } from "../proto/gen/research/v1/runner_pb.js";
import { isBaseline, isClaimingPromotion, isContinued, isPromotion, scoreOf, standing, type TrialState } from "./trial-state.js";
import { trialId } from "../core/ids.js";

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

/** Trial 0 of a run started from a person's model: the starting point on its own recipe, what the report compares the best with. */
export function baselineTrial(state: RunState): TrialState | undefined {
  for (const t of state.trials.values()) if (isBaseline(t) && !t.proposed!.parentIds.length) return t;
  return undefined;
}

/** Whether a promotion is still training. */
export function longTrainingInFlight(state: RunState): boolean {
  for (const t of state.trials.values()) if (!t.judged && isPromotion(t)) return true;
  return false;
}

/**
 * The run's last long training (TrialProposed.last_training), a training continued from kept
 * weights (TrialProposed.init_weights) or a trial whose seeds share every core
 * (TrialProposed.seeds_at_once: a target's confirmation on a CPU, or the promotion whose score
 * decides whether one follows, agents/planner/promotion.ts quickestPath) while it trains: each has the
 * runner to itself, so the planner starts nothing beside it (a probe could change no result and
 * would slow it down).
 */
export function aloneInFlight(state: RunState): TrialState | undefined {
  for (const t of state.trials.values()) if (!t.judged && isAlone(t)) return t;
  return undefined;
}

/** A trial that has the runner to itself while it trains (aloneInFlight). */
function isAlone(t: TrialState): boolean {
  return !!(t.proposed?.lastTraining || t.proposed?.initWeights || t.proposed?.seedsAtOnce);
}

/**
 * Why trial `t`, still training, gives way to a target's confirmation whose seeds share every core
 * (TrialProposed.seeds_at_once, neither a last nor a continued training: agents/planner/promotion.ts
 * confirmation), or to the promotion whose one seed has them all (quickestPath), proposed while `t`
 * trained: the run ends once that confirmation meets the goal,
 * and a trial beside it slows its seeds (the README's goal at 314 s, where its confirmation alone
 * on the cores met it at 227-235 s: a rung-1 promotion proposed 17 s before it trained beside it
 * for its 3 minutes; bench/results/search-series-4f3f5b9.json). Undefined when it does not.
 */
export function preemptedBy(state: RunState, t: TrialState): string | undefined {
  if (t.judged || state.goal?.openEnded || !(state.goal?.target ?? 0) || isAlone(t)) return undefined;
  for (const c of state.trials.values()) {
    if (c !== t && !c.judged && c.proposed?.seedsAtOnce && !c.proposed.lastTraining && !c.proposed.initWeights) {
      return `${c.id}, ${isClaimingPromotion(c) ? "the confirmation of a likely target" : "a promotion that may make the target likely"}, has the cores to itself`;
    }
  }
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

/**
 * Why a person ended this trial (cancelled it, or stopped the run), if one did: the message of a
 * `cancelled` failure, which says why and not what (the label does).
 */
export function cancelledBy(state: RunState, trialId: string): string | undefined {
  const c = state.cancelled.get(trialId);
  if (c) return doneBy(c, "asked");
  return state.stopRequested ? doneBy(state.stopRequested, "the run was stopped") : undefined;
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

/**
 * The slots to fill now, oldest first, up to what the run keeps in flight (capacityOf): with
 * runner jobs, the opening slots a launch left for runners still queued (none once a continued
 * training holds the runner: it has it to itself), then the slots judgements freed that nobody
 * filled (the run was paused, the planner waited or nothing fitted then, no runner was up). The
 * trial budget counts slots, so a slot skipped for good is a trial lost: a Slurm run of 5 trials
 * on 4 opening slots ended after 4 when only a judgement's own slot was filled.
 */
export function slotsToFill(state: RunState): { openings: number[]; after: TrialState[] } {
  if (state.finished) return { openings: [], after: [] };
  const parallel = state.settings?.parallel || 1;
  const proposedAt = (i: number) => !!state.trials.get(trialId(state.runId, i))?.proposed;
  let free = Math.max(0, capacityOf(state) - inFlightCount(state));
  const openings =
    state.runnerJobs && state.order.length && ![...state.trials.values()].some(isContinued)
      ? Array.from({ length: Math.min(parallel, state.settings?.maxTrials || Infinity) }, (_, i) => i)
          .filter((i) => !proposedAt(i))
          .slice(0, free)
      : [];
  free -= openings.length;
  const after = judgedTrials(state)
    .filter((t) => t.judged?.decision === Decision.ITERATE && !proposedAt(parallel + t.judgedPosition!))
    .sort((a, b) => a.judgedPosition! - b.judgedPosition!)
    .slice(0, free);
  return { openings, after };
}

/** Whether some proposed trial has not been judged yet. */
export function inFlight(state: RunState): boolean {
  for (const t of state.trials.values()) if (!t.judged) return true;
  return false;
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
