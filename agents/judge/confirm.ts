import { ResearchError } from "../../core/failure.js";
import type { Logger } from "../../core/logger.js";
import { evaluateToResult, type RunnerClient } from "../../gpu-runner/client.js";
import type { EvalResult } from "../../proto/gen/research/v1/runner_pb.js";
import { budgetPlan, confirmTimeoutS, retrainFits } from "../../swarm/budget.js";
import { bestTrial, slowestSeedSeconds, type RunState } from "../../swarm/run-state.js";

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
  const request = best.assembled?.request;
  const skip = (skipped: string): Confirmation => {
    log.warn({ best: best.id }, `test confirmation skipped: ${skipped}`);
    return { skipped };
  };
  if (!request) return skip("the best trial has no assembled request to evaluate");
  if (runners.length === 0) return skip("no runner was reachable");
  // The report also says what the best model costs to run (seconds within the confirmation's reserve).
  const confirm = { ...request, trialId: `${best.id}-test`, evaluateTest: true, measureInference: true, keepWeights: false, idempotencyKey: `${state.runId}/${best.id}/confirm` };
  log.info({ best: best.id }, "confirming the best trial's weights on the held-out test split");
  // The run's clock is `nowMs` (a test's may be its own); the calls' deadlines count from now.
  const calledAtMs = Date.now();
  const runNow = () => nowMs + (Date.now() - calledAtMs);
  const timeoutS = confirmTimeoutS(budgetPlan(state, nowMs));
  const opts = () => (Number.isFinite(timeoutS) ? { timeoutMs: Math.max(1, timeoutS * 1000 - (Date.now() - calledAtMs)) } : {});
  const unanswered = () => `no runner answered within the ${timeoutS.toFixed(0)} s the run's budget left for it`;
  // The weights are on whichever runner trained the trial; one without them says so at once.
  let gone = false;
  let lastError = "";
  for (const runner of runners) {
    try {
      return { result: await evaluateToResult(runner, { ...confirm, weightsOf: best.id }, undefined, opts()) };
    } catch (err) {
      const e = ResearchError.from(err);
      if (e.reason === "timeout") return skip(unanswered());
      gone ||= e.label === "invalid_config";
      lastError = e.message.split("\n")[0]!;
      log.warn({ err: e.message }, "test confirmation from kept weights failed on a runner");
    }
  }
  if (!gone) return skip(`evaluating the kept weights failed: ${lastError}`);
  const plan = budgetPlan(state, runNow());
  const trainS = slowestSeedSeconds(best) ?? 0;
  if (!retrainFits(plan, trainS)) {
    return skip(`no runner kept the best trial's weights, and training it again (about ${trainS.toFixed(0)} s a seed) did not fit the ${Math.max(0, plan.remainingS).toFixed(0)} s left`);
  }
  try {
    return { result: await evaluateToResult(runners[0]!, confirm, undefined, opts()) };
  } catch (err) {
    const e = ResearchError.from(err);
    if (e.reason === "timeout") return skip(unanswered());
    return skip(`training the best trial again for its confirmation failed: ${e.message.split("\n")[0]}`);
  }
}
