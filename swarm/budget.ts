/**
 * The run's time budget as a plan, shared by the planner (what may still
 * start) and the judge (when to stop): the one-time test confirmation of the
 * best trial and the report are reserved from the start, so a run ends,
 * report written, within its budget.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { BudgetSchema, SeedResult } from "../proto/gen/research/v1/runner_pb.js";
import { Verdict } from "../proto/gen/research/v1/events_pb.js";
import { Mutation } from "../proto/gen/research/v1/common_pb.js";
import { bestTrial, liveSeconds, type RunState } from "./run-state.js";
import { isPromotion, slowestSeed, slowestSeedSeconds, type TrialState } from "./trial-state.js";
import { FRONT_TRAININGS, tradeOffsOf } from "./front.js";
import { learningOf } from "../core/learning/index.js";

/**
 * Writing the report and closing the run, after the confirmation: 2-3 s on two CPU cores (a
 * launch's wall less its run's seconds, its start-up included, was 5-7 s in the c1b09e8 task
 * series), with room for a machine busier than that.
 */
const REPORT_S = 8;
/**
 * The confirmation's job beside its passes and a language model's sample: timing the model's
 * inference (CONFIRM_TIMING_S of it) and loading the weights.
 */
const CONFIRM_FIXED_S = 5;
/** The seconds a timing of loaded weights takes at least (gpu-runner/python/trainer.py: 3 x INFERENCE_SECONDS). */
const CONFIRM_TIMING_S = 3;
/** Bytes a language model's confirmation writes as its sample, a pass of one window each (python/learning/language_modelling.py SAMPLE_BYTES). */
export const SAMPLE_BYTES = 300;
/**
 * A confirmation may run on a machine busier than its trial's measurement saw: its seeds' jobs
 * share the cores (3 on 2 slots), and passes bound by memory slow down more than their share. A
 * 4-minute language model's confirmation predicted 10.6 ms a row where its probe, alone on its
 * core, had taken 5.1, and took 23.0 s where 1.5 times its probe's passes reserved 16.4 s: two runs
 * of three lost their test figures, one by 14 ms (bench/HISTORY.md).
 */
const CONFIRM_LOAD = 2;

/**
 * Seconds the test confirmation of a model whose seed `seed` measured takes: a job that loads its
 * kept weights, paying the start-up the seed measured before its first step, predicts the
 * validation and test splits (the seed's last validation pass, scaled by the splits' sizes), times
 * its inference (CONFIRM_TIMING_S, or what the seed's own timing took at the full split's batch
 * where its fewest passes outlast that: a language model mixing in its counts took 5-6 s), and, for
 * a language model, writes its sample (SAMPLE_BYTES passes at the seed's measured latency), all
 * scaled by `capacity`, how much more a candidate's forward pass costs than the measured one's.
 * Undefined for a seed measured without its pass's time (eval_seconds, from a runner before it):
 * legacyConfirmS then.
 */
export function confirmSeconds(state: RunState, seed: SeedResult | undefined, capacity = 1): number | undefined {
  if (!seed?.evalSeconds) return undefined;
  const info = state.dataset;
  const pass = info?.nVal ? passSeconds(seed, info.nVal + info.nTest, info.nVal) : 2 * seed.evalSeconds;
  const timing = Math.max(0, timedSeconds(seed, info?.nVal) - CONFIRM_TIMING_S);
  const sample = info && learningOf(info.task).perPosition ? (SAMPLE_BYTES * (seed.inference?.batch1?.medianMs ?? 0)) / 1000 : 0;
  return CONFIRM_LOAD * (Math.min(seed.secondsToFirstStep, seed.seconds) + (pass + timing + sample) * capacity) + CONFIRM_FIXED_S;
}

/**
 * Seconds `seed`'s model takes to predict `examples` examples: its last validation pass, over its
 * own validation examples (valExamples; a probe validates on its subset's share of the split of
 * `nVal`, a tenth of them for a 1,000-row corpus), scaled to them.
 */
function passSeconds(seed: SeedResult, examples: number, nVal: number): number {
  return (seed.evalSeconds * examples) / (seed.valExamples || nVal);
}
/**
 * Seconds a training of `seed`'s config on the full split spends after its clock stops, from what
 * the seed measured: its last validation pass, scaled to the full validation split of `nVal`
 * examples (passSeconds), then the timing of its inference. Undefined for a seed measured without its pass's
 * time (eval_seconds, from a runner before it). A language model mixing in its counts spent 6 s
 * of a 31-s training timing them, where its probe had taken 2-4: a last training that left both
 * out overran its run's budget.
 */
export function endSeconds(seed: SeedResult, nVal: number | undefined): number | undefined {
  if (!seed.evalSeconds) return undefined;
  return (nVal ? passSeconds(seed, nVal, nVal) : seed.evalSeconds) + timedSeconds(seed, nVal);
}

/** Seconds `seed`'s inference timing took, scaled to the evaluation batch of a full validation split of `nVal` examples: at most TIMED_BATCH of them. */
function timedSeconds(seed: SeedResult, nVal: number | undefined): number {
  const measured = seed.inference?.measureSeconds ?? 0;
  return nVal ? (measured * Math.min(TIMED_BATCH, nVal)) / Math.min(TIMED_BATCH, seed.valExamples || nVal) : measured;
}
/** The smallest evaluation batch a job times its inference at (gpu-runner/python/trainer.py EVAL_BATCH). */
export const TIMED_BATCH = 256;
/** A confirmation timed by the training it follows (`trainS` a seed), when no pass was measured. */
const legacyConfirmS = (trainS: number) => 10 + 0.05 * trainS;
/** Training the best config again, when its weights are gone: its seeds may queue behind each other, and a loaded machine runs slower than when it was measured (smoke runs at load 7-10 overran with 1.5). */
const RETRAIN_FACTOR = 2;

export interface BudgetPlan {
  /** Seconds until the run's budget is spent (Infinity without one). */
  remainingS: number;
  /** Held back for the confirmation and the report. */
  reserveS: number;
  /** What a trial started now may take. */
  availableS: number;
}

export function budgetPlan(state: RunState, nowMs: number): BudgetPlan {
  const budget = state.goal?.timeBudgetS ?? 0;
  const remainingS = budget > 0 ? budget - liveSeconds(state, nowMs) : Infinity;
  const best = bestTrial(state);
  const seed = best && slowestSeed(best);
  const measured = confirmSeconds(state, seed);
  // A Pareto goal confirms its other front trials trained long too, from their kept weights.
  const front = tradeOffsOf(state).length ? (FRONT_TRAININGS - 1) * (measured ?? legacyConfirmS(0)) : 0;
  const reserveS = REPORT_S + (measured ?? legacyConfirmS(seed?.seconds ?? 0)) + front;
  return { remainingS, reserveS, availableS: remainingS - reserveS };
}

/**
 * Why a trial predicted to take `predictedS` cannot start now, or undefined
 * when it fits: it must finish before the reserve, and, since it may become
 * the best, leave room for its own confirmation too (`confirmS`, predicted
 * like its training).
 */
export function overRunBudget(plan: BudgetPlan, predictedS: number, confirmS = legacyConfirmS(predictedS)): string | undefined {
  const confirm = REPORT_S + confirmS;
  const room = plan.remainingS - Math.max(plan.reserveS, confirm);
  if (predictedS <= room) return undefined;
  return `predicted ${predictedS.toFixed(0)} s exceeds the ${Math.max(0, room).toFixed(0)} s the run has left after reserving its confirmation`;
}

/**
 * Seconds from `nowMs` by which the seeds of a run's last long training must all end
 * (EvaluateRequest budget.deadline_s: a seed that starts late trains less): the time before
 * the reserve, less a few seconds for the request to reach the runner and its end to reach the judge.
 */
export function lastTrainingDeadlineS(state: RunState, nowMs: number): number {
  return Math.max(1, budgetPlan(state, nowMs).availableS - DEADLINE_SLACK_S);
}
const DEADLINE_SLACK_S = 5;

/**
 * The runner's budget for trial `t` (EvaluateRequest.budget): the goal's parameter limit; its
 * latency limit for the runner's check before training, but not for a promotion, whose config was
 * timed within the limit at its lower rung (timed again beside another slot's training, it could be
 * stopped for the noise); the run's time per trial; and a last long training's deadline.
 */
export function trialBudget(state: RunState, t: TrialState, nowMs: number): MessageInitShape<typeof BudgetSchema> {
  const goal = state.goal;
  return {
    maxParams: goal?.maxParams ?? 0n,
    maxLatencyMs: isPromotion(t) ? 0 : (goal?.maxLatencyMs ?? 0),
    timeBudgetS: state.settings?.trialTimeBudgetS ?? 0,
    deadlineS: t.proposed?.lastTraining ? lastTrainingDeadlineS(state, nowMs) : 0,
  };
}

/**
 * Seconds the test confirmation may wait for a runner: until the report's reserve, but never less
 * than CONFIRM_FLOOR_S, so a run judged late still gets a confirmation (seconds when the runner
 * answers) and a runner that never answers holds the run past its budget by the floor at most.
 */
export function confirmTimeoutS(plan: BudgetPlan): number {
  return Math.max(CONFIRM_FLOOR_S, plan.remainingS - REPORT_S);
}
const CONFIRM_FLOOR_S = 20;

/**
 * Whether only the report's time is left and the run must end now, whatever is in flight (the
 * launcher's watchdog asks the judge to): a run whose agents work has ended or is ending by then,
 * since its trials are cancelled at the reserve, which is longer.
 */
export function budgetSpent(state: RunState, nowMs: number): boolean {
  return budgetPlan(state, nowMs).remainingS <= REPORT_S;
}

/** Whether the best trial, measured at `trainS` a seed, can still be trained again for its confirmation. */
export function retrainFits(plan: BudgetPlan, trainS: number): boolean {
  return plan.remainingS - REPORT_S >= RETRAIN_FACTOR * trainS;
}

/** Whether not even the quickest trial seen so far fits before the reserve: nothing more may start. */
export function nothingFits(state: RunState, nowMs: number): boolean {
  return budgetPlan(state, nowMs).availableS < cheapestTrialSeconds(state);
}

/** The shortest evaluation the run has seen: the least a new trial can be expected to take. */
export function cheapestTrialSeconds(state: RunState): number {
  let min = Infinity;
  for (const t of state.trials.values()) {
    const s = slowestSeedSeconds(t);
    if (s !== undefined && s < min) min = s;
  }
  return Number.isFinite(min) ? min : 0;
}

/**
 * The run's last long training is planned to end this far into the time left before the
 * reserve: it is the run's longest training, and one cut by the reserve (a loaded machine, a
 * seed queued behind a probe) is lost whole. It stops at its time whatever the machine's speed,
 * so the margin holds only its seeds' start-ups and last validation passes running slow: at 0.9,
 * 30-minute CPU runs ended with 67-162 s of their budgets unused (test/fixtures/runs,
 * bench/results/search-dev-runs-2026-11-27.json).
 */
export const LAST_MARGIN = 0.95;

/**
 * A last long training takes at least this share of the run's budget (a Pareto goal's front
 * trainings, this share of the budget's third each): a shorter one tells little more than the
 * trials before it.
 */
export const LAST_SHARE = 0.1;

/** The shortest last long training worth proposing (LAST_SHARE). */
export function lastTrainingFloorS(state: RunState): number {
  return (LAST_SHARE * state.goal!.timeBudgetS) / (tradeOffsOf(state).length ? FRONT_TRAININGS : 1);
}

/**
 * Whether any last long training could fit in `availableS` before the reserve: lastTrainingTime's
 * floor against its margin of the time, with no start-up or validation pass yet, so false means
 * none could, whatever the pick.
 */
export function lastTrainingCouldFit(state: RunState, availableS: number): boolean {
  return LAST_MARGIN * availableS >= lastTrainingFloorS(state);
}

/**
 * When the run's current research round began, in live seconds; undefined in its first. A run
 * researches in rounds: each explores, then trains its best config long (its "last" long
 * training). A long training that ends with time left for another (it reached the epochs it
 * could use before its time: a 3,000-row table's 200 epochs took 35 s of the 133 s it had, and
 * the run ended at 116 s of 240) opens a new round as it is judged: the run explores again, for
 * the same share of the time it has left, then trains its best long again. Not for a Pareto goal,
 * whose long trainings are its front's, one after another (swarm/front.ts).
 */
export function roundStartS(state: RunState): number | undefined {
  let latest: TrialState | undefined;
  for (const t of state.trials.values()) if (t.proposed?.lastTraining && (!latest || (t.firstAtMs ?? 0) >= (latest.firstAtMs ?? 0))) latest = t;
  if (!latest?.judged || latest.lastAtMs === undefined) return undefined;
  const at = liveSeconds(state, latest.lastAtMs);
  return opensRound(state, state.goal!.timeBudgetS - at - budgetPlan(state, latest.lastAtMs).reserveS) ? at : undefined;
}

/**
 * Whether a long training judged with `availableS` left before the reserve opens another
 * research round (roundStartS): one more long training could fit, and the goal is not a Pareto
 * goal's, whose long trainings are its front's. The judge ends a run on its last long training
 * only where this is false.
 */
export function opensRound(state: RunState, availableS: number): boolean {
  return !tradeOffsOf(state).length && (state.goal?.timeBudgetS ?? 0) > 0 && lastTrainingCouldFit(state, availableS);
}

/**
 * The share of the run's trial budget (RunSettings.trial_time_budget_s) a seed is planned to
 * take: the runner stops a seed at the budget, so a plan holds back room for its pace to vary.
 */
export const TRIAL_BUDGET_SHARE = 0.85;

/** The fewest epochs a tail trains (tailSeconds): an average of fewer end-of-epoch weights is hardly one. */
export const TAIL_EPOCHS = 3;

/**
 * The seconds the run's tail trains, or undefined when it has none. Once the run's last long
 * training is done and no other fits (opensRound is false), the time before the reserve went
 * unused: 3- and 4-minute task runs ended with 12-17% of their budgets left that way
 * (bench/results/tasks-series-0366420.json). Where that time fits TAIL_EPOCHS of the best's
 * measured epochs, with its seeds' start-up and last validation pass, the best goes on training
 * from its kept weights (agents/planner/promotion.ts tailTraining), judged like any trial: it
 * becomes the best only if it outranks the training it continues. None for a Pareto goal (its
 * long trainings are its front's), a best that is no accepted long training of this run, a best
 * whose seeds trained in rounds (a tail's would too, which this time does not foresee), or a run
 * that had its tail. The judge ends a run on its last long training only where this is
 * undefined, so the two decide by one rule.
 */
export function tailSeconds(state: RunState, nowMs: number): number | undefined {
  const best = bestTrial(state);
  const p = best?.proposed;
  if (!best || !p?.lastTraining || best.judged?.verdict !== Verdict.ACCEPT || tradeOffsOf(state).length || !((state.goal?.timeBudgetS ?? 0) > 0)) return undefined;
  if ([...state.trials.values()].some((t) => t.proposed?.mutation === Mutation.TAIL)) return undefined;
  const seeds = best.evaluated?.result?.seedResults ?? [];
  const seed = slowestSeed(best);
  if (!seed?.epochsCompleted || !(p.seedsAtOnce || seeds.every((s) => s.seedsTogether >= seeds.length))) return undefined;
  const startUp = Math.min(seed.secondsToFirstStep, seed.seconds);
  // Its wall seconds per epoch with its seeds sharing the cores, as the tail's will.
  const epochS = (seed.seconds - startUp) / seed.epochsCompleted;
  // The job's clock counts from its start, its start-up included (trainer.py).
  const end = endSeconds(seed, state.dataset?.nVal) ?? epochS;
  let trainS = LAST_MARGIN * budgetPlan(state, nowMs).availableS - end;
  const trialBudget = state.settings?.trialTimeBudgetS ?? 0;
  if (trialBudget > 0) trainS = Math.min(trainS, TRIAL_BUDGET_SHARE * trialBudget - end);
  trainS = Math.floor(trainS);
  return trainS >= 1 && trainS - startUp >= TAIL_EPOCHS * epochS ? trainS : undefined;
}
