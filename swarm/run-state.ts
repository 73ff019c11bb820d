/**
 * A run's state folded from its events in stream order: the one fold of the
 * project. Agents keep it current per run (run-states.ts), the launcher and
 * `watch` fold the runs they follow, the report and the run folder are drawn
 * from it, and the lineage store's rows take a trial's outcome from the same
 * rule (trialFailure). A restarted process rebuilds it from the stream.
 */
import { Decision, Verdict, type Event, type Goal, type LlmCall, type ResearchRequested, type RunSettings, type TrialAssembled, type TrialEvaluated, type TrialJudged, type TrialProposed } from "../proto/gen/research/v1/events_pb.js";
import { parseBrief, type Brief } from "../core/brief.js";
import { TRIAL_STATUS, type TrialStatusName } from "../core/enums.js";
import { parseJson } from "../core/json.js";
import { FailureLabel, type Failure } from "../proto/gen/research/v1/common_pb.js";

export type TrialStatus = TrialStatusName;
export type TrialStage = Exclude<TrialStatus, "failed">;
/** The pipeline stages a trial passes through, in order; "failed" is where a trial's path ends early. */
export const TRIAL_STAGES: readonly TrialStage[] = TRIAL_STATUS.names.filter((s): s is TrialStage => s !== "failed");

export interface TrialState {
  id: string;
  proposed?: TrialProposed;
  assembled?: TrialAssembled;
  evaluated?: TrialEvaluated;
  judged?: TrialJudged;
  /**
   * model_config and train_config as authored (parsed once here from the
   * proposal's JSON text, not validated: the coder validates them); undefined
   * when the text is not JSON.
   */
  model?: unknown;
  train?: unknown;
  /** Stream order of the judged event among the run's judged events (0-based). */
  judgedPosition?: number;
}

export interface RunState {
  runId: string;
  goal?: Goal;
  settings?: RunSettings;
  startedAtMs: number;
  briefs: Brief[];
  trials: Map<string, TrialState>;
  /** Trial ids in the order they were proposed. */
  order: string[];
  judgedCount: number;
  finished: boolean;
  llmCalls: LlmCall[];
  /** Narrower questions the planner asked when a surface stalled. */
  researchRequests: ResearchRequested[];
  /** For each brief (same order as `briefs`), the request it answers ("" for the run's first). */
  briefRequests: string[];
}

export function emptyRunState(runId: string): RunState {
  return { runId, startedAtMs: 0, briefs: [], trials: new Map(), order: [], judgedCount: 0, finished: false, llmCalls: [], researchRequests: [], briefRequests: [] };
}

function trial(state: RunState, id: string): TrialState {
  let t = state.trials.get(id);
  if (!t) {
    t = { id };
    state.trials.set(id, t);
  }
  return t;
}

export function applyToRunState(state: RunState, e: Event): RunState {
  const b = e.body;
  switch (b.case) {
    case "runStarted":
      state.goal = b.value.goal;
      state.settings = b.value.settings;
      state.startedAtMs = Number(e.emittedAtMs);
      break;
    case "briefReady": {
      const brief = parseBrief(b.value.briefJson);
      if (brief.ok) {
        state.briefs.push(brief.brief);
        state.briefRequests.push(b.value.requestId);
      }
      break;
    }
    case "trialProposed": {
      const t = trial(state, e.trialId);
      if (!t.proposed) state.order.push(e.trialId);
      t.proposed = b.value;
      t.model = parseJson(b.value.modelConfigJson);
      t.train = parseJson(b.value.trainConfigJson);
      break;
    }
    case "trialAssembled":
      trial(state, e.trialId).assembled = b.value;
      break;
    case "trialEvaluated":
      trial(state, e.trialId).evaluated = b.value;
      break;
    case "trialJudged": {
      const t = trial(state, e.trialId);
      if (!t.judged) t.judgedPosition = state.judgedCount++;
      t.judged = b.value;
      break;
    }
    case "runFinished":
      state.finished = true;
      break;
    case "llmCall":
      state.llmCalls.push(b.value);
      break;
    case "researchRequested":
      state.researchRequests.push(b.value);
      break;
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
 * root cause, not a later stage's echo of it), or none. The one rule for
 * every view of a trial: agents, report, run folder, lineage rows, CLI.
 */
export function trialFailure(t: Stages): Failure | undefined {
  return [t.assembled?.failure, t.assembled?.summary?.failure, t.evaluated?.failure, t.judged?.failure].find(
    (f): f is Failure => f !== undefined && f.label !== FailureLabel.UNSPECIFIED,
  );
}

/** Where the trial stands: the furthest stage it reached, or failed. */
export function trialStatus(t: TrialState): TrialStatus {
  if (trialFailure(t)) return "failed";
  return t.judged ? "judged" : t.evaluated ? "evaluated" : t.assembled ? "assembled" : "proposed";
}

/** Validation accuracy used for ranking: the CI lower bound, so a lucky seed does not win. */
export function scoreOf(t: TrialState): number | undefined {
  const acc = t.evaluated?.result?.aggregated.val_accuracy;
  return acc ? acc.ci95[0] : undefined;
}

export function meanOf(t: TrialState): number | undefined {
  return t.evaluated?.result?.aggregated.val_accuracy?.mean;
}

export function judgedTrials(state: RunState): TrialState[] {
  return state.order.map((id) => state.trials.get(id)!).filter((t) => t.judged);
}

/** Best accepted trial by CI lower bound. */
export function bestTrial(state: RunState): TrialState | undefined {
  let best: TrialState | undefined;
  for (const t of state.trials.values()) {
    if (t.judged?.verdict !== Verdict.ACCEPT) continue;
    if (best === undefined || (scoreOf(t) ?? -1) > (scoreOf(best) ?? -1)) best = t;
  }
  return best;
}

export function isTerminal(decision: Decision | undefined): boolean {
  return decision === Decision.GOAL_ACHIEVED || decision === Decision.STOP;
}

/** Wall time of the slowest seed: what a model costs, whatever the runner's queue added around it. */
export function slowestSeedSeconds(t: TrialState): number | undefined {
  const seeds = t.evaluated?.result?.seedResults ?? [];
  return seeds.length ? Math.max(...seeds.map((s) => s.seconds)) : undefined;
}
