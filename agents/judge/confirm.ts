import { ResearchError } from "../../core/failure.js";
import type { Logger } from "../../core/logger.js";
import { evaluateToResult, type RunnerClient } from "../../gpu-runner/client.js";
import type { EvalResult } from "../../proto/gen/research/v1/runner_pb.js";
import { budgetPlan, confirmTimeoutS, retrainFits } from "../../swarm/budget.js";
import { bestTrial, type RunState } from "../../swarm/run-state.js";
import { slowestSeedSeconds, type TrialState } from "../../swarm/trial-state.js";
import { tradeOffsOf } from "../../swarm/front.js";
import { create } from "@bufbuild/protobuf";
import { TrialTestSchema, Verdict, type TrialTest } from "../../proto/gen/research/v1/events_pb.js";

/** The confirmation's result, or why there is none (said in the report and at the end of the launch). */
export type Confirmation = { result: EvalResult; skipped?: undefined } | { result?: undefined; skipped: string };

/**
 * The best trial's weights, kept by the runner that trained it, evaluated
 * once on the test split; trained again only when no runner has them any
 * more and the budget leaves room for it. Every call has a deadline (swarm/budget.ts
 * confirmTimeoutS): a runner that never answers costs the confirmation, not the run its end.
 */
export async function confirmOnTest(state: RunState, runners: RunnerClient[], log: Logger, nowMs: number): Promise<Confirmation | undefined> {
  const best = bestTrial(state);
  if (!best) return undefined;
  const call = confirmCall(state, nowMs);
  const kept = await keptOnTest(state, best, runners, log, call);
  if (!("gone" in kept)) return kept;
  const plan = budgetPlan(state, call.runNow());
  const trainS = slowestSeedSeconds(best) ?? 0;
  if (!retrainFits(plan, trainS)) {
    return skip(log, best, `no runner kept the best trial's weights, and training it again (about ${trainS.toFixed(0)} s a seed) did not fit the ${Math.max(0, plan.remainingS).toFixed(0)} s left`);
  }
  try {
    return { result: await evaluateToResult(runners[0]!, confirmRequest(state, best), undefined, call.opts()) };
  } catch (err) {
    const e = ResearchError.from(err);
    if (e.reason === "timeout") return skip(log, best, call.unanswered());
    return skip(log, best, `training the best trial again for its confirmation failed: ${e.message.split("\n")[0]}`);
  }
}

/**
 * A Pareto goal's other front trials trained long (swarm/front.ts), each evaluated once on the
 * test split from its kept weights, as the best is: the front's claims are test results too.
 * Never trained again for it: the budget reserves a kept-weights evaluation for each.
 */
export async function confirmFront(state: RunState, runners: RunnerClient[], log: Logger, nowMs: number): Promise<TrialTest[]> {
  if (!tradeOffsOf(state).length) return [];
  const best = bestTrial(state);
  const call = confirmCall(state, nowMs);
  const out: TrialTest[] = [];
  for (const t of state.trials.values()) {
    if (!t.proposed?.lastTraining || t === best || t.judged?.verdict !== Verdict.ACCEPT) continue;
    const kept = await keptOnTest(state, t, runners, log, call);
    out.push(
      create(TrialTestSchema, "gone" in kept ? { trialId: t.id, skipped: `no runner kept its weights: ${kept.lastError}` } : { trialId: t.id, result: kept.result, skipped: kept.skipped ?? "" }),
    );
  }
  return out;
}

/** The confirmation's request: the trial's own, on the test split, its inference timed, no weights kept. */
function confirmRequest(state: RunState, t: TrialState) {
  return { ...t.assembled!.request!, trialId: `${t.id}-test`, evaluateTest: true, measureInference: true, keepWeights: false, idempotencyKey: `${state.runId}/${t.id}/confirm` };
}

/** The deadline of a run's confirmations: until the report's reserve, the run's clock `nowMs` (a test's may be its own). */
function confirmCall(state: RunState, nowMs: number) {
  const calledAtMs = Date.now();
  const timeoutS = confirmTimeoutS(budgetPlan(state, nowMs));
  return {
    runNow: () => nowMs + (Date.now() - calledAtMs),
    opts: () => (Number.isFinite(timeoutS) ? { timeoutMs: Math.max(1, timeoutS * 1000 - (Date.now() - calledAtMs)) } : {}),
    unanswered: () => `no runner answered within the ${timeoutS.toFixed(0)} s the run's budget left for it`,
  };
}

function skip(log: Logger, t: TrialState, skipped: string): Confirmation {
  log.warn({ trial: t.id }, `test confirmation skipped: ${skipped}`);
  return { skipped };
}

/**
 * `t`'s weights, kept by the runner that trained it, evaluated once on the test split: the
 * weights are on whichever runner trained the trial, and one without them says so at once
 * (`gone`: none has them).
 */
async function keptOnTest(state: RunState, t: TrialState, runners: RunnerClient[], log: Logger, call: ReturnType<typeof confirmCall>): Promise<Confirmation | { gone: true; lastError: string }> {
  if (!t.assembled?.request) return skip(log, t, "the trial has no assembled request to evaluate");
  if (runners.length === 0) return skip(log, t, "no runner was reachable");
  log.info({ trial: t.id }, "confirming a trial's weights on the held-out test split");
  let gone = false;
  let lastError = "";
  for (const runner of runners) {
    try {
      // The kept weights as they are: a continued training's starting weights are not loaded again (the runner refuses both).
      return { result: await evaluateToResult(runner, { ...confirmRequest(state, t), weightsOf: t.id, initWeights: undefined }, undefined, call.opts()) };
    } catch (err) {
      const e = ResearchError.from(err);
      if (e.reason === "timeout") return skip(log, t, call.unanswered());
      gone ||= e.label === "invalid_config";
      lastError = e.message.split("\n")[0]!;
      log.warn({ err: e.message }, "test confirmation from kept weights failed on a runner");
    }
  }
  return gone ? { gone: true, lastError } : skip(log, t, `evaluating the kept weights failed: ${lastError}`);
}
