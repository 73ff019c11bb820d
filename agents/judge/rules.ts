/**
 * The judge's rules, as pure functions of the run state: legality, the
 * verdict, the iterate / goal achieved / stop decision and the run's final
 * status. The goal is decided on the pessimistic end of the 95% interval of
 * the run's validation metric (the lower bound of accuracy, the upper bound of
 * an RMSE), never the mean. An open-ended goal (no target) is never achieved:
 * it stops on the trial budget, the time budget or a plateau.
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { failure, labelName } from "../../core/failure.js";
import { pct } from "../../core/format.js";
import { Decision, RunEnd, RunStatus, TrialJudgedSchema, Verdict, type TrialJudged } from "../../proto/gen/research/v1/events_pb.js";
import { FailureLabel } from "../../proto/gen/research/v1/common_pb.js";
import { baselineTrial, bestTrial, doneBy, inFlight, longTrainingInFlight, patienceOf, plateau, PLATEAU_DELTA, type RunState } from "../../swarm/run-state.js";
import { isClaimingPromotion, scoreOf, slowestSeedSeconds, valMetricOf, type TrialState } from "../../swarm/trial-state.js";
import { formatMetric, pessimisticBound, reaches, utility } from "../../core/objective.js";
import { budgetPlan, nothingFits, opensRound, tailSeconds } from "../../swarm/budget.js";
import { learningOf } from "../../core/learning/index.js";
import { longTrainingsLeft, overLimit } from "../../swarm/front.js";

// Time over the per-trial budget tolerated before a trial is called illegal (process start, transfer).
const TRIAL_TIME_SLACK = 1.25;

export function legality(state: RunState, t: TrialState): string | undefined {
  const goal = state.goal;
  const result = t.evaluated?.result;
  // Trial 0 of a run from a person's model is scored on the test split with its training, for the
  // report's comparison alone (agents/coder/main.ts); no other trial may be.
  if (t.assembled?.request?.evaluateTest && t !== baselineTrial(state)) return "the search evaluated on the test split";
  if (goal?.maxParams && result && result.params > goal.maxParams) {
    return `${result.params} parameters exceed the goal's limit of ${goal.maxParams}`;
  }
  const budget = state.settings?.trialTimeBudgetS ?? 0;
  const seconds = slowestSeedSeconds(t) ?? result?.seconds ?? 0;
  if (budget > 0 && seconds > budget * TRIAL_TIME_SLACK) {
    return `a seed took ${seconds.toFixed(0)} s, over the trial budget of ${budget} s`;
  }
  return undefined;
}

/** Why a trial is no better than a guess, by the run's task's gate (core/learning/); undefined when it is better. */
function gateMiss(state: RunState, t: TrialState) {
  const result = t.evaluated?.result;
  return learningOf(state.objective.task).gateMiss(result?.aggregated ?? {}, result?.numClasses ?? 0);
}

/** Labels of trials stopped from outside, not failed. */
const STOPPED: ReadonlySet<FailureLabel> = new Set([FailureLabel.CANCELLED, FailureLabel.PRUNED]);

function verdictOf(state: RunState, t: TrialState) {
  const f = t.evaluated?.failure;
  // A trial stopped from outside (cancelled: a person, the run's end, a confirmation; pruned: the
  // scheduler) did not fail: its label says what, its message why.
  if (f) return { verdict: Verdict.REJECT, failure: f, reason: `${STOPPED.has(f.label) ? "" : "failed: "}${labelName(f.label)}: ${f.message.split("\n")[0]}` };
  const illegal = legality(state, t);
  if (illegal) return { verdict: Verdict.ILLEGAL, failure: failure("illegal", illegal), reason: `illegal: ${illegal}` };
  const miss = gateMiss(state, t);
  if (miss) return { verdict: Verdict.REJECT, failure: failure("gate_miss", miss.message), reason: miss.reason };
  // A limit that only the trained model shows: its latency, measured by the runner where it ran.
  const over = overLimit(state, t);
  if (over) return { verdict: Verdict.REJECT, failure: failure("over_limit", over), reason: `over the limit: ${over}` };
  return { verdict: Verdict.ACCEPT, failure: undefined, reason: "accepted" };
}

/**
 * Whether judging `t` ends the run, and why, by the first rule that holds: the goal met with
 * confidence, a person's stop once nothing is in flight, the trial budget spent, no trial fitting
 * before the reserve, the last long training of the last research round done, or a plateau.
 * `withThis`: the run with `t` counted as judged.
 */
function runEndOf(state: RunState, withThis: RunState, t: TrialState, verdict: Verdict, nowMs: number): { end: RunEnd; why: string } | undefined {
  const o = state.objective;
  const stats = valMetricOf(t);
  const ending = (end: RunEnd, why: string) => ({ end, why });
  const target = state.goal?.openEnded ? 0 : (state.goal?.target ?? 0);
  const settings = state.settings;
  // A run gives up before its budget only on a confident plateau: a patience of
  // promotions trained with the run's seeds that did not raise the best. One-seed
  // probes (and one-seed promotions that only rank configs for the next rung)
  // cannot raise a three-seed best's CI lower bound, so counting them stopped
  // a 30-minute open-ended run at 1,240 s, and a "reach 90%" run at 1,482 s with its
  // best 0.004 pp short of the target. The random baseline has no promotions: every
  // trial of it counts ("reach X%" gives up; "the best you can" uses its budget).
  const openEnded = state.goal?.openEnded ?? false;
  const patience = patienceOf(withThis);
  const promotionsOnly = openEnded || settings?.planner !== "random";
  const flat = promotionsOnly ? plateau(withThis, isClaimingPromotion) : plateau(withThis);

  const plan = budgetPlan(withThis, nowMs);
  if (verdict === Verdict.ACCEPT && target > 0 && stats && stats.n >= 2 && reaches(o, pessimisticBound(o, stats), target)) {
    const bound = o.higherIsBetter ? "lower bound" : "upper bound";
    return ending(RunEnd.GOAL_MET, `goal met: 95% CI ${bound} ${formatMetric(o, pessimisticBound(o, stats))} ${o.higherIsBetter ? ">=" : "<="} target ${formatMetric(o, target)}`);
  } else if (state.stopRequested) {
    // The analyst cancels every trial in flight; the last of them to be judged ends the run.
    if (!inFlight(withThis)) return ending(RunEnd.STOPPED_BY_PERSON, doneBy(state.stopRequested, "stopped"));
  } else if (settings?.maxTrials && withThis.judgedCount >= settings.maxTrials) {
    return ending(RunEnd.TRIAL_BUDGET, `trial budget of ${settings.maxTrials} spent`);
  } else if (nothingFits(withThis, nowMs) && !inFlight(withThis)) {
    // Not even the quickest trial seen so far fits before the reserve for the
    // test confirmation and the report, and none still runs (the planner
    // started each only if it fit; the analyst cancels one that reaches the
    // reserve): stop now, so the run ends within its budget.
    return ending(RunEnd.TIME_BUDGET,
      plan.remainingS <= 0
        ? `time budget of ${state.goal!.timeBudgetS} s spent`
        : `time budget of ${state.goal!.timeBudgetS} s nearly spent: ${plan.remainingS.toFixed(0)} s left, ${plan.reserveS.toFixed(0)} s reserved for the test confirmation and the report`,
    );
  } else if (t.proposed?.lastTraining && !inFlight(withThis) && longTrainingsLeft(withThis) === 0 && !opensRound(withThis, plan.availableS) && tailSeconds(withThis, nowMs) === undefined) {
    // The last long training of the run's last research round: no other long training fits after
    // it (one that reached its epochs early opens another round: swarm/budget.ts roundStartS), nor
    // the best's tail (tailSeconds), and a probe started now could not change the best, so the run
    // ends with its confirmation. A Pareto goal's front trials train long one after another: the
    // last of them ends it (one that no longer fits leaves the planner idle, which ends it too).
    return ending(RunEnd.LAST_TRAINING, `the run's last long training is done, and no training long enough to change the best fits the ${Math.max(0, plan.availableS).toFixed(0)} s left`);
  } else if (flat.since >= patience && !longTrainingInFlight(withThis)) {
    // Not while a promotion trains: the planner's exploit phase answers a
    // plateau by training the best config longer, and that result decides.
    const what = !Number.isFinite(flat.best)
      ? "no trial was accepted"
      : o.proportion
        ? `the best 95% CI lower bound (${pct(flat.best)}) has not risen by more than ${PLATEAU_DELTA * 100} pp`
        : `the best 95% CI ${o.higherIsBetter ? "lower" : "upper"} bound (${formatMetric(o, utility(o, flat.best))}) has not ${o.higherIsBetter ? "risen" : "fallen"} by more than ${PLATEAU_DELTA * 100}%`;
    return ending(RunEnd.PLATEAU, `plateau: ${what} in the last ${patience} ${promotionsOnly ? "promotions with the run's seeds" : "judged trials"}`);
  }
  return undefined;
}

/**
 * Judges trial `t`. `state` must already contain the trial's evaluation,
 * and no judgement for it yet; `nowMs` is injected so the rule is testable.
 */
export function judge(state: RunState, t: TrialState, nowMs: number): TrialJudged {
  const { verdict, failure: f, reason } = verdictOf(state, t);
  const score = scoreOf(t) ?? 0;
  const stats = valMetricOf(t);
  const parent = t.proposed?.parentIds[0] ? state.trials.get(t.proposed.parentIds[0]) : undefined;
  const parentScore = parent ? scoreOf(parent) : undefined;
  const gain = verdict === Verdict.ACCEPT && parentScore !== undefined ? score - parentScore : 0;

  // The trial counts as judged from here on.
  const provisional: TrialState = { ...t, judged: create(TrialJudgedSchema, { verdict }) , judgedPosition: state.judgedCount };
  const withThis: RunState = { ...state, trials: new Map(state.trials).set(t.id, provisional), judgedCount: state.judgedCount + 1 };
  const best = bestTrial(withThis);
  const ended = runEndOf(state, withThis, t, verdict, nowMs);
  const init: MessageInitShape<typeof TrialJudgedSchema> = {
    verdict,
    decision: !ended ? Decision.ITERATE : ended.end === RunEnd.GOAL_MET ? Decision.GOAL_ACHIEVED : Decision.STOP,
    reason,
    runEnd: ended?.end ?? RunEnd.UNSPECIFIED,
    runReason: ended?.why ?? "",
    bestTrialId: best?.id ?? "",
    score,
    ciLow: stats?.ci95[0] ?? 0,
    ciHigh: stats?.ci95[1] ?? 0,
    failure: f,
    surface: t.proposed?.surface,
    gain,
    trialsDone: withThis.judgedCount,
  };
  return create(TrialJudgedSchema, init);
}

/**
 * The status of a run that `last` ended. An open-ended run that found a
 * model completed: spending its budget or reaching a plateau is how it is
 * meant to end, and it had no goal to miss.
 */
export function runStatus(state: RunState, last: TrialJudged): RunStatus {
  if (last.decision === Decision.GOAL_ACHIEVED) return RunStatus.GOAL_ACHIEVED;
  // The watchdog's end is no run's plan, whatever it found.
  if (state.stopRequested || last.runEnd === RunEnd.IDLE) return RunStatus.STOPPED;
  if (state.goal?.openEnded && bestTrial(state)) return RunStatus.COMPLETED;
  // The last long training spent what the plan had for long trainings, and nothing fitting is the
  // time budget spent too: the budget, not a plateau.
  const spent = [RunEnd.TRIAL_BUDGET, RunEnd.TIME_BUDGET, RunEnd.LAST_TRAINING, RunEnd.NOTHING_FITS];
  return spent.includes(last.runEnd) ? RunStatus.BUDGET_EXHAUSTED : RunStatus.STOPPED;
}
