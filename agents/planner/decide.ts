/**
 * The planner's decision core: what the slot a judgement freed should do next, as a pure
 * function of the run's folded state and the clock (PlanInput), in the spirit of a Ray Tune
 * scheduler's on_trial_result: propose a new config, promote one (train it again at another
 * fidelity), wait, or nothing. agents/planner/main.ts publishes what it returns; the tests and
 * the replays of recorded runs call it the same way. Every move is checked against the
 * planner's promises (promises.ts) before it leaves here.
 *
 * A warm open-ended run may open with a training continued from a past run's instead of its
 * first proposals (promotion.ts continuation; agents/planner/main.ts proposes it). Then, in order:
 * 1. nothing once the run is over, paused, stopping, past its reserve or out of trials; wait while
 *    the runner jobs up (launch --runners slurm) have all the trials they can take;
 * 2. a person's queued proposal, then the starting point's anchor (launch --from);
 * 3. wait while the run's last long training, or a continued one, trains: nothing starts beside it;
 * 4. the random baseline draws (it has no scheduler and no last training);
 * 5. once exploitation has begun (exploration's share of the budget spent, the trial budget
 *    down to its last trial, a patience of judged trials without progress, or a training
 *    continued from a past run's accepted), the last long training; after it, where no other
 *    fits, the run's tail: the best continued from its kept weights (promotion.ts tailTraining);
 * 6. while exploring: a confirmation of a probe that makes a target likely; when ASHA sends a
 *    config from a slice to the full training split, the last long training in an open-ended
 *    run (with a target, when the promotion does not fit: promotion.ts fullSplitDue); ASHA's
 *    promotion; a re-test of an edit whose gain its trials could not resolve, at the next rung
 *    (promotion.ts retest); the policy's edit; each only if it ends before exploration does;
 * 7. with nothing left that fits, the last long training now, unless a promotion in flight
 *    may become the best first: the time goes to training the best config longer, not to
 *    random draws (a run that drew 26 of them in its last six minutes, 21 pruned within
 *    seconds, never trained its best on the full split: test/fixtures/runs/fmnist-30min-open-c982011).
 */
import { Verdict } from "../../proto/gen/research/v1/events_pb.js";
import { RUN_DEFAULTS } from "../../core/defaults.js";
import { nothingFits, roundStartS } from "../../swarm/budget.js";
import { jobsText } from "../../core/format.js";
import { aloneInFlight, capacityOf, inFlightCount, liveSeconds, patienceOf, plateau, queuedProposals } from "../../swarm/run-state.js";
import { isContinued } from "../../swarm/trial-state.js";
import { baselineProposals, handProposal } from "./policies/hand.js";
import { nextBuiltin } from "./policies/builtin.js";
import { randomPolicy } from "./policies/random.js";
import type { Move, PlanInput } from "./types.js";
import { ashaPromotion, confirmation, fullSplitDue, lastTraining, promotionInFlight, retest, tailTraining } from "./promotion.js";
import { brokenPromises } from "./promises.js";
import { exploreLeftS, lastTrainingOf, plansLastTraining } from "./time-model.js";

/** Why exploitation has begun (the last long training is due), or undefined while the run explores. */
export function exploiting(input: PlanInput, index: number): string | undefined {
  const { state } = input;
  if (!plansLastTraining(state)) return undefined;
  if (lastTrainingOf(state)) return "the run's last long training was proposed";
  // Probes after it could not outrank a training continued from a past run's: the rest of the time continues it.
  const continued = [...state.trials.values()].find((t) => isContinued(t) && t.judged?.verdict === Verdict.ACCEPT);
  if (continued) return `the run continued a past run's long training (${continued.id})`;
  if (exploreLeftS(input) <= 0) return "exploration has spent its share of the budget";
  const maxTrials = state.settings?.maxTrials || RUN_DEFAULTS.maxTrials;
  if (index >= maxTrials - 1) return "the trial budget is down to its last trial";
  const patience = patienceOf(state);
  // A later research round counts its own trials only: the stall that ended the round before
  // is what it opened to break.
  const start = roundStartS(state);
  const judgedInRound = start === undefined ? state.judgedCount : [...state.trials.values()].filter((t) => t.judged && liveSeconds(state, t.lastAtMs ?? 0) > start).length;
  const since = Math.min(plateau(state).since, judgedInRound);
  if (judgedInRound >= patience && since >= patience) return `the best CI low has not risen in the last ${since} judged trials`;
  return undefined;
}

function choose(input: PlanInput, index: number): Move {
  const { state } = input;
  const now = input.nowMs ?? Date.now();
  if (state.finished || state.paused || state.stopRequested) return { kind: "nothing", why: "the run is finished, paused or stopping" };
  // Past the reserve nothing may start: not even the quickest trial seen so far would finish.
  if (nothingFits(state, now)) return { kind: "nothing", why: "past the reserve for the test confirmation and the report" };
  if (index >= (state.settings?.maxTrials || RUN_DEFAULTS.maxTrials)) return { kind: "nothing", why: "the trial budget is spent" };
  // A slot freed while runner jobs are lost or still queued waits for one to come up (main.ts fills it then).
  const jobs = state.runnerJobs;
  if (jobs) {
    const [capacity, flying] = [capacityOf(state), inFlightCount(state)];
    if (flying >= capacity) return { kind: "wait", why: `the runner jobs (${jobsText(jobs)}) take ${capacity} trial(s) at once, and ${flying} are in flight` };
  }
  const queued = queuedProposals(state)[0];
  if (queued) return { kind: "propose", proposal: handProposal(input, queued), by: "person" };
  // With one trial at a time, the starting point's anchor comes after trial 0.
  const anchor = baselineProposals(input)[0];
  if (anchor) return { kind: "propose", proposal: anchor, by: "starting point" };
  // The last long training, a continued one or a confirmation whose seeds share every core has
  // the runner to itself: no trial started now could change the result, and each would slow it
  // down on the shared device.
  const alone = aloneInFlight(state);
  if (alone) {
    const p = alone.proposed!;
    const what = p.lastTraining ? "the run's last long training" : p.initWeights ? "the run's continued training" : p.seeds === 1 ? "a promotion that has every core" : "a confirmation whose seeds share every core";
    return { kind: "wait", why: `${what} (${alone.id}) is running` };
  }
  if (state.settings?.planner === "random") {
    const p = randomPolicy(input, index);
    return p ? { kind: "propose", proposal: p, by: "policy" } : { kind: "nothing", why: "no random draw is left" };
  }
  const exploit = exploiting(input, index);
  if (exploit) {
    const p = lastTraining(input);
    if (p) return { kind: "promote", proposal: { ...p, rationale: `${exploit}: ${p.rationale}` } };
    const tail = tailTraining(input);
    if (tail) return { kind: "promote", proposal: tail };
    return { kind: "nothing", why: `${exploit}, and no last long training fits the time left` };
  }
  const confirm = confirmation(input);
  if (confirm) return { kind: "promote", proposal: confirm };
  const due = fullSplitDue(input);
  const earned = due && due !== "wait" && lastTraining(input);
  if (due && due !== "wait" && earned) {
    const why = `ASHA promotes ${due.trial.id} to the full training split (${due.reason})${state.goal?.openEnded ? "" : ", which does not fit before exploration ends"}`;
    return { kind: "promote", proposal: { ...earned, rationale: `${why}: ${earned.rationale}` } };
  }
  const promotion = due === "wait" ? undefined : ashaPromotion(input);
  if (promotion) return { kind: "promote", proposal: promotion };
  const again = retest(input);
  if (again) return { kind: "promote", proposal: again };
  const edit = nextBuiltin(input, index);
  if (edit) return { kind: "propose", proposal: edit, by: "policy" };
  // Nothing else ends before exploration does: the last long training starts early, after a
  // promotion in flight that may become the best (an H200 run passed a ResNet-9 still at
  // rung 1 over for a smaller CNN's last training, and the ResNet-9 then beat it).
  const promoting = promotionInFlight(state);
  if (promoting) return { kind: "wait", why: `nothing else fits before exploration ends; ${promoting.id}, a promotion in flight, may become the best to train last` };
  const p = lastTraining(input);
  if (p) return { kind: "promote", proposal: { ...p, rationale: `nothing else fits before exploration ends: ${p.rationale}` } };
  // With nothing accepted there is nothing to edit or train long: the policy restarts from the
  // starting templates, and when every one has been tried the run has nothing left to try.
  const accepted = [...state.trials.values()].some((t) => t.judged?.verdict === Verdict.ACCEPT);
  return { kind: "nothing", why: accepted ? "no trial fits the time left" : "no trial was accepted and every starting template has been tried" };
}

/** The move for trial `index`, the slot a judgement freed (trial P + its judged position). */
export function decide(input: PlanInput, index: number): Move {
  const move = choose(input, index);
  const broken = brokenPromises(input, index, move);
  return broken.length ? { kind: "nothing", why: `held back: ${broken.join("; ")}`, broken } : move;
}
