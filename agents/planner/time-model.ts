/**
 * The planner's time model: how long a candidate will take, predicted from
 * its parent's measured seeds, and whether that fits the trial budget and
 * what the run has left before its reserve (swarm/budget.ts, the plan the
 * judge stops by). The scheduler's moves (promotion.ts) and the policies
 * take every prediction and budget check of seconds from here.
 */
import { DEFAULT_SEEDS, RECIPE_DEFAULTS } from "../../core/defaults.js";
import type { TrainConfigInput } from "../../core/model-config.js";
import { budgetPlan, overRunBudget } from "../../swarm/budget.js";
import { liveSeconds, slowestSeed, slowestSeedSeconds, type TrialState } from "../../swarm/run-state.js";
import type { Genome } from "./mutations.js";
import type { PlanInput, Proposal } from "./policy.js";

/**
 * The share of a run's time budget for exploration before the exploit phase
 * trains the best config at a shortened top rung (promotion.ts exploit), when
 * the whole top rung no longer fits.
 */
export const EXPLORE_SHARE = 1 / 3;

/**
 * The run's last long training is planned to end this far into the time left
 * before the reserve: it is the run's longest training, and one cut by the
 * reserve (a loaded machine, a seed queued behind a probe) is lost whole.
 */
const LAST_MARGIN = 0.9;

/**
 * A last long training takes at least this share of the run's budget, and longer than
 * its config trained before: a shorter one tells little more than the trials it follows.
 */
const LAST_SHARE = 0.1;

/** Epochs a last long training may reach when its time allows: it stops at its time (train_seconds) first. */
export const LAST_EPOCHS = 200;

/** A candidate and the seconds its slowest seed is predicted to take. */
export interface Timed {
  proposal: Proposal;
  predictedS: number;
}

/**
 * Seconds a genome's slowest seed should take, from its parent's measured seed: the time to
 * its first step stays (the job's start-up: ~1 s of CUDA context on a GPU host, most of a
 * short probe there), the training after it scales with examples x epochs and sqrt(params).
 */
export function predictedSeconds(input: PlanInput, parent: TrialState, g: Genome, pg: Genome): number | undefined {
  const seed = slowestSeed(parent);
  if (!seed) return undefined;
  // subset 0 is the whole training split (validation is held out of it).
  const size = (t: TrainConfigInput) => (t.subset || input.info.nTrain) * (t.epochs ?? RECIPE_DEFAULTS.epochs);
  const pp = input.params(pg.model);
  const cp = input.params(g.model);
  const capacity = typeof pp === "number" && typeof cp === "number" && pp > 0 ? Math.sqrt(cp / pp) : 1;
  const startUp = Math.min(seed.secondsToFirstStep, seed.seconds);
  return startUp + (seed.seconds - startUp) * (size(g.train) / size(pg.train)) * capacity;
}

/**
 * How much longer a trial with `seeds` seeds takes from start to its last
 * seed than its slowest seed: its seeds share the runner's slots with each
 * other and with the run's other trials in flight. The parent's, measured,
 * scaled by the rounds its seeds take on the runner's slots against the
 * parent's (pessimistic: the run's other trials use slots too, yet a
 * 30-minute run's 3-seed training on 2 slots took 1.6 times its slowest
 * seed, not the 2 rounds assumed here; without the slot count, 3 as if
 * seeds ran one after another, it was planned 6 epochs where 9 fitted).
 */
function queueFactor(input: PlanInput, parent: TrialState, seeds: number): number {
  const result = parent.evaluated?.result;
  const seed = slowestSeedSeconds(parent);
  const measured = result?.seconds && seed ? Math.max(1, result.seconds / seed) : 1;
  const rounds = (n: number) => Math.ceil(n / (input.slots || 1));
  return measured * Math.max(1, rounds(seeds) / rounds(result?.seedResults.length || seeds));
}

/** Seeds a proposal evaluates with. */
export function seedsOf(input: PlanInput, p: Pick<Proposal, "seeds">): number {
  return p.seeds || input.state.settings?.seeds || DEFAULT_SEEDS;
}

/**
 * The seeds of the run's last long training: the run's, and when they take several rounds of
 * the runner's slots, as many more as fill the last round (3 on 2 slots: 4). Nothing starts
 * beside a last training, so those slots would idle through its last round; each seed more
 * joins its ensemble and narrows its interval at no cost in time. Undefined: the run's seeds.
 */
export function lastTrainingSeeds(input: PlanInput): number | undefined {
  const seeds = seedsOf(input, {});
  const slots = input.slots || 1;
  const filled = Math.ceil(seeds / slots) * slots;
  return seeds > slots && filled > seeds ? filled : undefined;
}

/**
 * Why a genome cannot start now, given a seed's predicted time; undefined
 * when it fits: each seed within the trial budget, the whole trial (seeds
 * queued as its parent's were) before the run's reserve.
 */
export function overBudget(input: PlanInput, parent: TrialState, predicted: number | undefined, seeds: number): string | undefined {
  if (predicted === undefined) return undefined;
  const trialBudget = input.state.settings?.trialTimeBudgetS ?? 0;
  if (trialBudget > 0 && predicted > trialBudget * 0.85) return `predicted ${predicted.toFixed(0)} s exceeds the trial budget`;
  return overRunBudget(budgetPlan(input.state, input.nowMs ?? Date.now()), predicted * queueFactor(input, parent, seeds));
}

/** A candidate's predicted wall time: its slowest seed, queued as its parent's seeds were. */
export function wallOf(input: PlanInput, parent: TrialState, c: Timed): number {
  return c.predictedS * queueFactor(input, parent, seedsOf(input, c.proposal));
}

/** The run's time spent and its budget, once it has spent its exploration share (EXPLORE_SHARE); undefined before, or without a budget. */
export function explorationSpent(input: PlanInput): { spentS: number; budgetS: number } | undefined {
  const budgetS = input.state.goal?.timeBudgetS ?? 0;
  const spentS = liveSeconds(input.state, input.nowMs ?? Date.now());
  return budgetS > 0 && spentS >= EXPLORE_SHARE * budgetS ? { spentS, budgetS } : undefined;
}

/**
 * The seconds left before the reserve when a training of `wallS` is now or
 * never: after it, another as long would not fit. Undefined while it would.
 */
export function nowOrNever(input: PlanInput, wallS: number): number | undefined {
  const { availableS } = budgetPlan(input.state, input.nowMs ?? Date.now());
  return availableS < 2 * wallS ? availableS : undefined;
}

/**
 * A rung's predicted wall time when the budget is tight: after its `epochs`,
 * no training twice as long fits in LAST_MARGIN of what is left before the
 * reserve. Undefined when one would.
 */
export function tightRungSeconds(input: PlanInput, parent: TrialState, c: Timed, epochs: number): number | undefined {
  const plan = budgetPlan(input.state, input.nowMs ?? Date.now());
  const perEpoch = wallOf(input, parent, c) / epochs;
  const after = plan.availableS - perEpoch * epochs;
  return LAST_MARGIN * after >= 2 * perEpoch * epochs ? undefined : perEpoch * epochs;
}

/**
 * The time of the run's last long training of `pick` (promotion.ts timedTop),
 * not a number of epochs: the job anneals its schedule over that time
 * (train_seconds). Epochs predicted from trials timed beside others were
 * wrong both ways: a GPU shared with probes measured 2-3 times slower than
 * the training would run alone (nothing starts beside the last training), and
 * a loaded CPU slower still; the job itself knows how fast it goes. Its time
 * is LAST_MARGIN of what is left before the reserve, its `seeds` run in
 * rounds of the runner's slots (nothing starts beside it, so no queueing
 * measured beside others applies: planned as its parent's queue, a 30-minute
 * run left 307 s unused), each round paying the job's start-up and its last
 * validation pass, and within the trial budget. `epochs`: what it should reach at
 * `pick`'s measured pace on the full training split.
 * Undefined when that is less than LAST_SHARE of the budget or than what `pick` trained.
 */
export function lastTrainingTime(
  input: PlanInput,
  pick: TrialState,
  pg: Genome,
  seeds: number | undefined,
): { trainS: number; epochs: number; predictedS: number } | undefined {
  const { state } = input;
  const seed = slowestSeed(pick);
  if (!seed || !((state.goal?.timeBudgetS ?? 0) > 0)) return undefined;
  const startUp = Math.min(seed.secondsToFirstStep, seed.seconds);
  const trained = seed.seconds - startUp;
  const passes = ((pg.train.subset || input.info.nTrain) / input.info.nTrain) * (pg.train.epochs ?? RECIPE_DEFAULTS.epochs);
  const fullEpochS = trained / passes;
  // The job stops mid-epoch at its time, then predicts the validation split once: a forward
  // pass over nVal examples, taken as long as training on them (about three times what it is).
  // Counting a whole epoch here left 325 s of a 30-minute run unused.
  const overhead = startUp + (fullEpochS * input.info.nVal) / input.info.nTrain;
  const plan = budgetPlan(state, input.nowMs ?? Date.now());
  const rounds = Math.ceil(seedsOf(input, { seeds }) / (input.slots || 1));
  let trainS = (LAST_MARGIN * plan.availableS) / rounds - overhead;
  const trialBudget = state.settings?.trialTimeBudgetS ?? 0;
  if (trialBudget > 0) trainS = Math.min(trainS, 0.85 * trialBudget - overhead);
  trainS = Math.floor(trainS);
  if (trainS < LAST_SHARE * state.goal!.timeBudgetS || trainS <= trained) return undefined;
  return { trainS, epochs: Math.min(LAST_EPOCHS, Math.floor(trainS / fullEpochS)), predictedS: overhead + trainS };
}
