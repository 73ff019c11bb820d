import { ResearchError } from "../../core/failure.js";
import type { Logger } from "../../core/logger.js";
import { evaluateToResult, type RunnerClient } from "../../gpu-runner/client.js";
import type { EvalResult } from "../../proto/gen/research/v1/runner_pb.js";
import { budgetPlan, retrainFits } from "../../swarm/budget.js";
import { bestTrial, slowestSeedSeconds, type RunState } from "../../swarm/run-state.js";

/**
 * The best trial's weights, kept by the runner that trained it, evaluated
 * once on the test split; trained again only when no runner has them any
 * more and the budget leaves room for it.
 */
export async function confirmOnTest(state: RunState, runners: RunnerClient[], log: Logger, nowMs: number): Promise<EvalResult | undefined> {
  const best = bestTrial(state);
  const request = best?.assembled?.request;
  if (!best || !request || runners.length === 0) {
    log.warn({ best: best?.id }, best ? "test confirmation skipped: the best trial has no assembled request" : "test confirmation skipped: no trial was accepted");
    return undefined;
  }
  const confirm = { ...request, trialId: `${best.id}-test`, evaluateTest: true, keepWeights: false };
  log.info({ best: best.id }, "confirming the best trial's weights on the held-out test split");
  // The weights are on whichever runner trained the trial; one without them says so at once.
  let gone = false;
  for (const runner of runners) {
    try {
      return await evaluateToResult(runner, { ...confirm, weightsOf: best.id });
    } catch (err) {
      const e = ResearchError.from(err);
      gone ||= e.label === "invalid_config";
      log.warn({ err: e.message }, "test confirmation from kept weights failed on a runner");
    }
  }
  const retrain = gone && retrainFits(budgetPlan(state, nowMs), slowestSeedSeconds(best) ?? 0);
  log.warn({ retrain }, "no runner could confirm the kept weights");
  if (!retrain) return undefined;
  try {
    return await evaluateToResult(runners[0]!, confirm);
  } catch (err) {
    log.warn({ err: ResearchError.from(err).message }, "test confirmation failed");
    return undefined;
  }
}
