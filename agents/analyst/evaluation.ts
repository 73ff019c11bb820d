/**
 * One trial's evaluation on the runner, watched: each epoch is reported, and
 * the evaluation is cancelled (the runner kills its jobs) when the median
 * stopping rule prunes it, when a person cancels it or stops the run, when a
 * target's confirmation takes every core (run-state.ts preemptedBy), when
 * the run has decided to stop, or when the
 * run's time reaches the reserve for the test confirmation and the report
 * (the judge waits for trials in flight before it stops on the budget), so
 * the confirmation gets the runner to itself and the run ends within its budget.
 * A last long training, which the runner ends by its deadline, is cancelled only
 * once the report's time alone is left.
 * Every such stop tells the runner (Cancel), which otherwise keeps an evaluation whose caller
 * went away running for the restarted analyst to join.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { failure } from "../../core/failure.js";
import { evaluateToResult, type RunnerClient } from "../../gpu-runner/client.js";
import type { Failure } from "../../proto/gen/research/v1/common_pb.js";
import type { EpochProgress, EvalResult, EvaluateRequestSchema } from "../../proto/gen/research/v1/runner_pb.js";
import { budgetPlan, budgetSpent } from "../../swarm/budget.js";
import { cancelledBy, isTerminal, preemptedBy, type RunState } from "../../swarm/run-state.js";
import type { TrialState } from "../../swarm/trial-state.js";
import { partialResult, pruneReason } from "./pruning.js";

export type Evaluation = { result: EvalResult; stopped?: undefined } | { stopped: Failure; partial: EvalResult };

/** How often a running evaluation looks whether its run has stopped. */
const STOP_POLL_MS = 500;

/** Why the run ended while a trial trained (the judge's words), or undefined while it goes on. */
function runEnded(state: RunState): string | undefined {
  for (const t of state.trials.values()) if (isTerminal(t.judged?.decision)) return t.judged!.runReason || "its judge stopped it";
  return state.finished ? "it finished" : undefined;
}

/**
 * `state` must be live (a run follower's): peers finishing meanwhile count for
 * pruning, and a stop decision is seen within half a second.
 */
export async function watchedEvaluation(
  runner: RunnerClient,
  request: MessageInitShape<typeof EvaluateRequestSchema>,
  watch: { state: RunState; trial: TrialState; prune: boolean },
  onProgress: (p: EpochProgress) => void,
): Promise<Evaluation> {
  const progress: EpochProgress[] = [];
  const abort = new AbortController();
  let stopped: Failure | undefined;
  const stop = (f: Failure) => {
    if (!stopped && request.idempotencyKey) {
      // On purpose, so the runner ends it now: a caller that only goes away (crashed) leaves it
      // running for the redelivery to join (gpu-runner/flights.ts).
      runner.cancel({ idempotencyKey: request.idempotencyKey }, { timeoutMs: 5_000 }).catch(() => undefined);
    }
    stopped ??= f;
    abort.abort();
  };
  const poll = setInterval(() => {
    const cancelled = cancelledBy(watch.state, watch.trial.id) ?? preemptedBy(watch.state, watch.trial);
    const ended = runEnded(watch.state);
    if (cancelled) stop(failure("cancelled", cancelled));
    // Not a fault of the trial: the run it served is over (its goal met, a stop rule, a person).
    else if (ended) stop(failure("cancelled", `the run ended while this trial was training (${ended})`));
    else if (request.budget?.deadlineS) {
      // A last long training: the runner ends its seeds by the deadline the planner set before the
      // reserve, but on a loaded machine a seed's scoring after it can run into the reserve.
      // Cancelled there, the run's promised training was lost and a one-seed probe became its best
      // (the open-ended test, beside two other files on 2 cores). It may finish on the reserve's
      // time; only the report's is kept from it, and the confirmation's floor bounds the overrun.
      if (budgetSpent(watch.state, Date.now())) stop(failure("budget_overrun", "cancelled: the run's time budget is spent but for the report"));
    } else if (budgetPlan(watch.state, Date.now()).availableS <= 0) {
      stop(failure("budget_overrun", "cancelled: the run's time budget reached its reserve for the test confirmation and the report"));
    }
  }, STOP_POLL_MS);
  try {
    const result = await evaluateToResult(
      runner,
      request,
      (e) => {
        if (e.event.case !== "progress" || stopped) return;
        progress.push(e.event.value);
        onProgress(e.event.value);
        const pruned = watch.prune ? pruneReason(watch.state, watch.trial, e.event.value) : undefined;
        if (pruned) stop(failure("pruned", pruned));
      },
      { signal: abort.signal },
    );
    return { result };
  } catch (err) {
    if (stopped) return { stopped, partial: partialResult(progress) };
    throw err;
  } finally {
    clearInterval(poll);
  }
}
