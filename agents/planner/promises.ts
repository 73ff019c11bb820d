/**
 * The planner's promises, each stated once here and checked on every decision (decide.ts):
 * a move that would break one is held back and logged as a bug, and the tests that replay
 * recorded runs (test/agents/replay.test.ts) assert that none is ever broken. They bind the
 * built-in brain and what an LLM proposes in its place (llm-policy.ts checks its proposals
 * here); the random baseline and a person's own proposals are theirs to make.
 *
 * Two more promises are about a whole run and are checked on its stored events
 * (runPromiseBreaks): a run with a time budget ends with its best trained on the full
 * training split with the run's seeds (its best is never a one-seed probe), and its last
 * long training starts at the first decision after exploration's share of the budget.
 */
import { RunEnd, Verdict } from "../../proto/gen/research/v1/events_pb.js";
import { Mutation } from "../../proto/gen/research/v1/common_pb.js";
import { bestTrial, liveSeconds, type RunState } from "../../swarm/run-state.js";
import { isClaimingPromotion, valMetricOf } from "../../swarm/trial-state.js";
import type { Move, PlanInput, Proposal } from "./types.js";
import { confirmation, lastTraining, makesTargetLikely } from "./promotion.js";
import { EXPLORE_SHARE, exploreLeftS, lastTrainingEnd, lastTrainingOf, longTrainings, plansLastTraining, seedsOf, timing } from "./time-model.js";
import { budgetPlan, lastTrainingCouldFit } from "../../swarm/budget.js";

export interface PlannerPromise {
  name: string;
  /** The promise in words, as docs/ARCHITECTURE.md states it. */
  statement: string;
  /** Why `move` for trial `index` breaks it; undefined when it keeps it. */
  broken(input: PlanInput, index: number, move: Move): string | undefined;
}

const proposalOf = (move: Move): Proposal | undefined => (move.kind === "propose" || move.kind === "promote" ? move.proposal : undefined);
const isLast = (move: Move) => proposalOf(move)?.lastTraining === true;
/** Moves the promises bind: the planner's own (a person's proposals and the starting point are theirs). */
const ownMove = (input: PlanInput, move: Move) =>
  input.state.settings?.planner !== "random" && (move.kind === "promote" || (move.kind === "propose" && move.by === "policy"));

export const PROMISES: readonly PlannerPromise[] = [
  {
    name: "last training by the end of exploration",
    statement: `once a run with a time budget has spent ${Math.round(EXPLORE_SHARE * 100)}% of it exploring, its next move is its last long training (when one fits)`,
    broken(input, _index, move) {
      const { state } = input;
      if (!plansLastTraining(state) || lastTrainingOf(state) || exploreLeftS(input) > 0 || isLast(move)) return undefined;
      if (move.kind === "nothing" && !move.broken && !lastTraining(input)) return undefined;
      return `exploration's share of the budget is spent and the move is ${describe(move)}, not the last long training`;
    },
  },
  {
    name: "every trial fits before exploration ends",
    statement: "no trial is proposed whose predicted time, from the pace measured in this run, does not end before the reserve and, until the last long training, before exploration's share of the budget ends",
    broken(input, _index, move) {
      const p = proposalOf(move);
      if (!p || p.lastTraining || !ownMove(input, move)) return undefined;
      const parent = p.parentIds[0] ? input.state.trials.get(p.parentIds[0]) : undefined;
      const over = timing(input, p, seedsOf(input, p), parent, p.seedsAtOnce ?? false).over;
      return over && `${p.hypothesis}: ${over}`;
    },
  },
  {
    name: "the last training is on the full split with the run's seeds",
    statement: "the last long training trains an accepted config on the full training split with at least the run's seeds, for a time that ends before the reserve",
    broken(input, _index, move) {
      const p = proposalOf(move);
      if (!p?.lastTraining) return undefined;
      const parent = p.parentIds[0] ? input.state.trials.get(p.parentIds[0]) : undefined;
      if (parent?.judged?.verdict !== Verdict.ACCEPT) return `the last training's parent ${p.parentIds[0]} is not an accepted trial`;
      if (p.train.subset) return `the last training trains on ${p.train.subset} examples, not the full split`;
      const seeds = seedsOf(input, p);
      if (seeds < seedsOf(input, {})) return `the last training has ${seeds} seeds, fewer than the run's ${seedsOf(input, {})}`;
      const trainS = p.train.train_seconds ?? 0;
      if (!(trainS > 0)) return "the last training has no time (train_seconds)";
      const availableS = budgetPlan(input.state, input.nowMs ?? Date.now()).availableS;
      // Its training time alone: the plan's margin (time-model.ts LAST_MARGIN) holds each seed's start-up and last validation.
      const end = lastTrainingEnd(input, seeds, trainS, p.seedsAtOnce ?? false);
      return end > availableS ? `the last training's seeds end ${end.toFixed(0)} s from now, after the ${availableS.toFixed(0)} s before the reserve` : undefined;
    },
  },
  {
    name: "no random draws once exploitation has begun",
    statement: "no random draw is proposed once the run's exploration has ended or its last long training was proposed (the built-in brain draws none at all; the random baseline is exempt)",
    broken(input, index, move) {
      const p = proposalOf(move);
      if (p?.mutation !== "random" || input.state.settings?.planner === "random") return undefined;
      if (lastTrainingOf(input.state)) return "a random draw after the last long training was proposed";
      return exploreLeftS(input) <= 0 ? "a random draw after exploration's share of the budget" : undefined;
    },
  },
  {
    name: "a likely target is confirmed",
    statement: "a goal with a target goes for a multi-seed confirmation as soon as a one-seed probe makes the target likely (and one fits)",
    broken(input, _index, move) {
      const { state } = input;
      if (state.settings?.planner === "random" || !ownMove(input, move) || move.kind !== "propose") return undefined;
      const likely = [...state.trials.values()].find((t) => t.judged?.verdict === Verdict.ACCEPT && makesTargetLikely(state, t, input.info));
      return likely && confirmation(input) ? `${likely.id} makes the target likely and its confirmation fits, yet the move is ${describe(move)}` : undefined;
    },
  },
];

function describe(move: Move): string {
  return move.kind === "wait" || move.kind === "nothing" ? `${move.kind} (${move.why})` : `"${move.proposal.hypothesis}"`;
}

/** The promises `move` would break, in words. */
export function brokenPromises(input: PlanInput, index: number, move: Move): string[] {
  return PROMISES.flatMap((p) => {
    const why = p.broken(input, index, move);
    return why ? [`${p.name}: ${why}`] : [];
  });
}

/**
 * When the last long training is due, in live seconds: at the end of exploration's share of the
 * budget, or later when a starting template was judged later, since the planner waits for every
 * one of them (promotion.ts fullSplitDue). A template is proposed before the run has a pace to
 * predict it by, so its overrun is the machine's, not a promise the planner broke.
 */
export function lastTrainingDueS(state: RunState): number {
  const templates = [...state.trials.values()].filter((t) => t.proposed?.mutation === Mutation.TEMPLATE && t.judged);
  return Math.max(EXPLORE_SHARE * state.goal!.timeBudgetS, ...templates.map((t) => liveSeconds(state, t.lastAtMs ?? 0)));
}

/**
 * A whole run's promises, on its events as stored: `deadlineSlackS` is how long after
 * exploration's share of the budget the last long training may still be proposed (the trials in
 * flight then were planned to end by it; measured durations overrun predictions a little).
 */
export function runPromiseBreaks(state: RunState, deadlineSlackS: number): string[] {
  const out: string[] = [];
  if (!plansLastTraining(state)) return out;
  const budget = state.goal!.timeBudgetS;
  // The first round's long training is due by exploration's end; a later round's (swarm/budget.ts
  // roundStartS) by its own, which the decisions' promises check as they are made.
  const longs = longTrainings(state);
  const last = longs[0];
  const goalMet = [...state.trials.values()].some((t) => t.judged?.runEnd === RunEnd.GOAL_MET);
  const accepted = [...state.trials.values()].some((t) => t.judged?.verdict === Verdict.ACCEPT);
  // Owed only where one could still fit once it was due: a template that ran until too little was
  // left (a starved machine, at a fifth of its pace) left none to propose, and its overrun is the
  // machine's (lastTrainingDueS). Then a one-seed best is all the run had to report.
  const due = lastTrainingDueS(state);
  const couldFit = lastTrainingCouldFit(state, budget - due - budgetPlan(state, state.lastEventMs).reserveS);
  if (!goalMet && accepted) {
    if (!last && couldFit) out.push("the run never proposed its last long training");
    else if (last) {
      const at = liveSeconds(state, last.firstAtMs ?? 0);
      if (at > due + deadlineSlackS) out.push(`the last long training was proposed at ${at.toFixed(0)} s, after ${due.toFixed(0)} s + ${deadlineSlackS} s`);
      for (const long of longs) {
        if (long.train?.subset) out.push(`the long training ${long.id} trained on ${long.train.subset} examples`);
        const seeds = long.evaluated?.result?.seedResults.length ?? 0;
        if (seeds < (state.settings?.seeds || 3)) out.push(`the long training ${long.id} has ${seeds} seeds`);
      }
    }
  }
  const best = bestTrial(state);
  if (best && state.finished && (last || couldFit) && (valMetricOf(best)?.n ?? 0) < 2) out.push(`the run ended with a one-seed best (${best.id})`);
  // A Pareto goal trains several front trials last (swarm/front.ts), any of which may be the best.
  if (best && state.finished && !goalMet && last && !best.proposed?.lastTraining && !isClaimingPromotion(best)) out.push(`the run's best (${best.id}) is not a trial with the run's seeds`);
  for (const t of state.trials.values()) {
    if (t.proposed?.mutation !== Mutation.RANDOM) continue;
    const at = liveSeconds(state, t.firstAtMs ?? 0);
    if (at > EXPLORE_SHARE * budget + deadlineSlackS || (last && (t.firstAtMs ?? 0) > (last.firstAtMs ?? 0))) out.push(`${t.id}: a random draw at ${at.toFixed(0)} s, once exploitation had begun`);
  }
  return out;
}
