/**
 * A trial as the run's fold holds it (swarm/run-state.ts): its events by stage, its configs
 * parsed once, and what every view reads of it by one rule: its stage and failure, its scores
 * under the run's objective, its rung and its cost.
 */
import type { TrialAssembled, TrialEvaluated, TrialJudged, TrialProposed } from "../proto/gen/research/v1/events_pb.js";
import { SURFACE, TRIAL_STATUS, type SurfaceName, type TrialStatusName } from "../core/enums.js";
import { labelName, type FailureName } from "../core/failure.js";
import type { TrainConfig, TrialModel } from "../core/model-config.js";
import { standingOf, type Standing } from "../core/ranking.js";
import { formatMetric, pessimisticBound, type Objective } from "../core/objective.js";
import { FailureLabel, Mutation, Surface, type Failure } from "../proto/gen/research/v1/common_pb.js";
import type { LearningCurve, MetricStats, SeedResult } from "../proto/gen/research/v1/runner_pb.js";

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

/** One class's validation scores: precision, recall and F1 averaged over the trial's seeds. */
export interface ClassScores {
  class_index: number;
  precision: number;
  recall: number;
  f1: number;
  /** Its validation examples (each seed scores the same ones). */
  support: number;
}

/** Each class's precision, recall and F1 averaged over seeds (all score the same validation examples), by class index. */
export function perClassOf(t: TrialState): ClassScores[] {
  const by = new Map<number, ClassScores & { seeds: number }>();
  for (const r of t.evaluated?.result?.seedResults ?? []) {
    for (const c of r.perClass) {
      const a = by.get(c.classIndex) ?? { class_index: c.classIndex, precision: 0, recall: 0, f1: 0, support: c.support, seeds: 0 };
      a.precision += c.precision;
      a.recall += c.recall;
      a.f1 += c.f1;
      a.seeds++;
      by.set(c.classIndex, a);
    }
  }
  return [...by.values()]
    .sort((a, b) => a.class_index - b.class_index)
    .map(({ seeds: n, ...c }) => ({ ...c, precision: c.precision / n, recall: c.recall / n, f1: c.f1 / n }));
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

/** The run's starting point (launch --from) or its rung-0 anchor: trial 0 and its probe (agents/planner/policies/hand.ts baselineProposals). */
export function isBaseline(t: TrialState): boolean {
  return t.proposed?.mutation === Mutation.BASELINE;
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

/** A run's opening training continued from a past run's kept weights (TrialProposed.init_weights), not the last long training that goes on from it. */
export function isContinued(t: TrialState): boolean {
  return !!t.proposed?.initWeights && !t.proposed.lastTraining;
}

/** A trial's standing under the run's rule for "best" (core/ranking.ts). */
export function standing(t: TrialState): Standing | undefined {
  return standingOf(t.evaluated?.result, t.objective);
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
