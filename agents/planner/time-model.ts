/**
 * The planner's time model: how long a candidate will take, predicted from the pace this run
 * measured, and the run's time plan every move is checked against (promises.ts):
 *
 * - exploration has the first EXPLORE_SHARE of the budget; by its end at the latest the run's
 *   last long training starts, so nothing else may be planned to run past it;
 * - the last long training trains the chosen config on the full training split with the run's
 *   seeds for the time left before the reserve (swarm/budget.ts, the plan the judge stops by),
 *   its seeds started at once sharing a CPU's cores when rounds on the slots would leave one idle,
 *   else placed on the runner's slots as the trials in flight will free them.
 */
import { DEFAULT_SEEDS, lastEpochsOf } from "../../core/defaults.js";
import { RECIPE_DEFAULTS } from "../../core/space.js";
import type { TrainConfigInput } from "../../core/model-config.js";
import { budgetPlan, confirmSeconds, endSeconds, LAST_MARGIN, LAST_SHARE, lastTrainingFloorS, overRunBudget, roundStartS, TRIAL_BUDGET_SHARE } from "../../swarm/budget.js";
import { liveSeconds, type RunState } from "../../swarm/run-state.js";
import { paramsOf, slowestSeed, slowestSeedSeconds, type TrialState } from "../../swarm/trial-state.js";
import { derivedOf, familyOf, genomeOf } from "./identity.js";
import { latencyOf } from "../../swarm/front.js";
import type { Genome } from "./mutations.js";
import type { PlanInput, Proposal } from "./types.js";

/**
 * The share of a run's time budget that exploration (probes, edits, ASHA's promotions) may use:
 * the last long training starts by then at the latest. On two CPU cores a 30-minute
 * Fashion-MNIST run's best config was found by minute 5 to 12 in every recorded run, and what
 * then raised validation accuracy was training it longer (3 -> 8 full-split epochs: 92.3% -> 93.1%
 * val, bench/HISTORY.md), never a later probe; a run that kept probing to the end
 * (test/fixtures/runs/fmnist-30min-open-c982011) never trained a config on the full split.
 */
export const EXPLORE_SHARE = 1 / 3;

/**
 * A warm open-ended run's opening continuation (continuationTime) ends this far into the budget.
 * Its result, the past run's best trained further, is the warm run's first confirmed score, and
 * it should be in hand well inside a third of the time a cold run takes to its best (issue 37's
 * measure). A cold 30-minute run's best is its last long training, confirmed near the end (1688 s
 * in the 174b884 pair: a third is 563 s), so a continuation that ran to exploration's third (600 s)
 * would be judged just past it. Ending sooner costs the run one more start-up and schedule: the
 * last long training continues from it at once, for the rest of the budget.
 */
export const CONTINUE_SHARE = 1 / 4;

/**
 * A config's last long training should reach at least this many times the passes over the
 * training split it was measured at: a config that can only train about as long as it did
 * (a 381k-parameter net at 1.55 epochs, after its 1.67 at rung 1) gains less there than a
 * smaller one trained several times as long (the c982011 recordings: the 381k net's best
 * validation was its one-seed 91.77% at rung 1; the 170k net trained 5 epochs reached 92.26%).
 */
export const LAST_GAIN = 2;

/** A candidate and the seconds its slowest seed is predicted to take. */
export interface Timed {
  proposal: Proposal;
  predictedS: number;
}

/** Passes over the full training split a recipe makes (subset 0 is the whole split, validation held out). */
export function passesOf(input: Pick<PlanInput, "info">, train: TrainConfigInput): number {
  const n = input.info.nTrain;
  return ((train.subset || n) / n) * (train.epochs ?? RECIPE_DEFAULTS.epochs);
}

/**
 * Passes over the full training split a measured trial made: its recipe's, or for a training
 * that stopped at its time (train_seconds: a last or continued training) the epochs its slowest
 * seed completed.
 */
function passesMade(input: PlanInput, t: TrialState, g: Genome): number {
  const seed = slowestSeed(t);
  return g.train.train_seconds && seed ? ((g.train.subset || input.info.nTrain) / input.info.nTrain) * seed.epochsCompleted : passesOf(input, g.train);
}

/** The share of a core each seed of a measured trial had: less than one when its seeds started at once (seedsAtOnce). */
function coreShare(input: PlanInput, t: TrialState): number {
  return t.proposed?.seedsAtOnce ? Math.min(1, (input.slots || 1) / seedsOf(input, t.proposed)) : 1;
}

/**
 * The measured trial whose pace predicts a candidate's: its parent when measured (the same
 * model at another fidelity, or one edit away), else the run's measured trial closest in size
 * (a template, a random draw). Undefined while the run has measured nothing.
 */
export function paceSource(input: PlanInput, g: Genome, parent?: TrialState): TrialState | undefined {
  const onSlot = parent && everyCore(input, parent) ? input.state.trials.get(parent.proposed!.parentIds[0] ?? "") : parent;
  if (onSlot && slowestSeed(onSlot)) return onSlot;
  // A cut or pruned seed's time is not its recipe's.
  return closestInSize(input, g, (t) => !!slowestSeed(t) && !t.evaluated?.failure && !!genomeOf(t) && !everyCore(input, t));
}

/**
 * Whether trial `t`'s one seed had every core (a target's promotion, promotion.ts quickestPath):
 * its pace is no slot's, and by how much it is faster depends on the model (the 170k VGG-style
 * net's whole 30,000 x 3 promotion 1.55x on two cores, its steps 1.9x). Its parent, the same
 * model measured on a slot, predicts what follows it instead.
 */
function everyCore(input: PlanInput, t: TrialState): boolean {
  return !!t.proposed?.seedsAtOnce && loneSeedHasEveryCore(input, seedsOf(input, t.proposed));
}

/**
 * Whether a training of `seeds` seeds started at once has every core to itself where a slot has
 * its share: one seed on a CPU of several slots (gpu-runner/evaluation.ts jobThreads).
 */
export function loneSeedHasEveryCore(input: PlanInput, seeds: number): boolean {
  return seeds === 1 && input.device !== "cuda" && (input.slots || 1) > 1;
}

/** The run's trial closest in work to `g` (workOf, on a log scale) among those `measured`; undefined when `g` does not count. */
function closestInSize(input: PlanInput, g: Genome, measured: (t: TrialState) => boolean): TrialState | undefined {
  const size = workOf(input, g.model);
  if (size === undefined) return undefined;
  let best: TrialState | undefined;
  let gap = Infinity;
  for (const t of input.state.trials.values()) {
    if (!measured(t)) continue;
    const p = derivedWork(input, t) ?? paramsOf(t);
    if (!p) continue;
    const d = Math.abs(Math.log(size / p));
    if (d < gap) [best, gap] = [t, d];
  }
  return best;
}

/**
 * Seconds a genome's slowest seed should take, from the measured seed of `from`: the time to its
 * first step stays (the job's start-up: ~1 s of CUDA context on a GPU host, most of a short
 * probe there), the training after it scales with examples x epochs and sqrt(params), from the
 * passes `from` made in the share of a core its seeds had (passesMade, coreShare).
 */
export function predictedSeconds(input: PlanInput, g: Genome, from: TrialState): number | undefined {
  const seed = slowestSeed(from);
  const fg = genomeOf(from);
  if (!seed || !fg) return undefined;
  const startUp = Math.min(seed.secondsToFirstStep, seed.seconds);
  return startUp + (seed.seconds - startUp) * coreShare(input, from) * (passesOf(input, g.train) / passesMade(input, from, fg)) * capacity(input, g, from);
}

/** How much more a genome's pass over an example costs than measured trial `from`'s: the square root of their work's ratio (workOf). */
function capacity(input: PlanInput, g: Genome, from: TrialState): number {
  const pp = derivedWork(input, from);
  const cp = workOf(input, g.model);
  return pp !== undefined && cp !== undefined && pp > 0 ? Math.sqrt(cp / pp) : 1;
}

/**
 * A candidate's latency per example (ms, batch 1), from the timed trial that predicts it: its
 * parent when timed, else the timed trial of its family closest in size; scaled by the square
 * root of the parameter ratio, as its training time is (a forward pass grows with the model, and
 * at batch 1 a small model's per-layer overhead keeps it from growing in proportion). Never from
 * another family: at batch 1 the layers count more than the parameters (a 25k-parameter SE-CNN
 * timed 1.2 ms where a 20k BN-CNN takes 0.3), and a0f36fe's run under 1 ms, predicting every
 * template from its first SE-CNN and MBConv probes, proposed none and ended after 27 s.
 * Undefined then: the runner stops a model clearly over the limit before it trains, and the
 * judge holds the rest to it once they have run (swarm/front.ts).
 */
export function predictedLatencyMs(input: PlanInput, g: Genome, parent?: TrialState): number | undefined {
  const size = workOf(input, g.model);
  if (size === undefined) return undefined;
  const family = familyOf(g.model.name);
  const from = parent && latencyOf(parent) ? parent : closestInSize(input, g, (t) => latencyOf(t) !== undefined && familyOf(genomeOf(t)?.model.name) === family);
  const measured = from && latencyOf(from);
  const fp = from && derivedWork(input, from);
  if (!measured || fp === undefined || !(fp > 0)) return undefined;
  return measured.mean * Math.sqrt(size / fp);
}

/**
 * What a model's time scales by: its parameters less its lookup tables' (PlanInput.work), since
 * an embedding's rows are read, not multiplied; undefined when it does not count.
 */
function workOf(input: PlanInput, model: Genome["model"]): number | undefined {
  if (input.work) return input.work(model);
  const p = input.params(model);
  return typeof p === "number" ? p : undefined;
}

/** A trial's work as the planner counts candidates' (workOf), so the two scale alike. */
function derivedWork(input: PlanInput, t: TrialState): number | undefined {
  const d = derivedOf(t);
  const g = genomeOf(t);
  if (!g) return undefined;
  if (!("work" in d)) d.work = workOf(input, g.model);
  return d.work;
}

/**
 * How much longer a trial with `seeds` seeds takes from start to its last seed than its slowest
 * seed: its seeds share the runner's slots with each other and with the run's other trials in
 * flight. The measured ratio of `from`, scaled by the rounds its seeds take on the runner's
 * slots against the ones `from` took (without the slot count, as if seeds ran one after another).
 */
function queueFactor(input: PlanInput, from: TrialState, seeds: number): number {
  const result = from.evaluated?.result;
  const seed = slowestSeedSeconds(from);
  const measured = result?.seconds && seed ? Math.max(1, result.seconds / seed) : 1;
  const rounds = (n: number) => Math.ceil(n / (input.slots || 1));
  return measured * Math.max(1, rounds(seeds) / rounds(result?.seedResults.length || seeds));
}

/** Seeds a proposal evaluates with. */
export function seedsOf(input: Pick<PlanInput, "state">, p: Pick<Proposal, "seeds">): number {
  return p.seeds || input.state.settings?.seeds || DEFAULT_SEEDS;
}

/** A candidate's predicted wall time from its start to its last seed, scaled from `from`. */
export function wallSeconds(input: PlanInput, g: Genome, seeds: number, from: TrialState): number | undefined {
  const s = predictedSeconds(input, g, from);
  return s === undefined ? undefined : s * queueFactor(input, from, seeds);
}

/** Whether the run plans a last long training: the built-in brain's runs with a clock (the random baseline has none). */
export function plansLastTraining(state: RunState): boolean {
  return state.settings?.planner !== "random" && (state.goal?.timeBudgetS ?? 0) > 0;
}

/** Seconds of the run's clock left until `share` of its time budget is spent (negative once it is). */
function leftUntilS(input: PlanInput, share: number): number {
  return share * input.state.goal!.timeBudgetS - liveSeconds(input.state, input.nowMs ?? Date.now());
}

/**
 * Seconds of the run's clock left until exploration's share of the budget is spent (negative once
 * it is); in a later research round (swarm/budget.ts roundStartS), that share of the time the round
 * began with. Infinity without a plan.
 */
export function exploreLeftS(input: PlanInput): number {
  if (!plansLastTraining(input.state)) return Infinity;
  const start = roundStartS(input.state) ?? 0;
  return start + EXPLORE_SHARE * (input.state.goal!.timeBudgetS - start) - liveSeconds(input.state, input.nowMs ?? Date.now());
}

/** The run's long trainings ("last" of their research rounds), in the order they were proposed. */
export function longTrainings(state: RunState): TrialState[] {
  return [...state.trials.values()].filter((t) => t.proposed?.lastTraining).sort((a, b) => (a.firstAtMs ?? 0) - (b.firstAtMs ?? 0));
}

/** The current research round's last long training, once proposed (a new round has none yet). */
export function lastTrainingOf(state: RunState): TrialState | undefined {
  return roundStartS(state) === undefined ? longTrainings(state).at(-1) : undefined;
}

/**
 * Why a candidate whose trial is predicted to take `wallS` (start to last seed) cannot start
 * now, or undefined when it fits: each seed within the trial budget, the whole trial before the
 * run's reserve, and, while the run's last long training is still to come, before exploration's
 * share of the budget ends (a probe past it would slow that training, or delay it).
 */
export function overBudget(input: PlanInput, seedS: number, wallS: number, confirmS?: number): string | undefined {
  const trialBudget = input.state.settings?.trialTimeBudgetS ?? 0;
  if (trialBudget > 0 && seedS > TRIAL_BUDGET_SHARE * trialBudget) return `predicted ${seedS.toFixed(0)} s exceeds the trial budget`;
  const reserve = overRunBudget(budgetPlan(input.state, input.nowMs ?? Date.now()), wallS, confirmS);
  if (reserve) return reserve;
  const left = exploreLeftS(input);
  if (!lastTrainingOf(input.state) && wallS > left) {
    return `predicted ${wallS.toFixed(0)} s would run past the end of exploration (${Math.max(0, left).toFixed(0)} s away), when the run's last long training starts`;
  }
  return undefined;
}

/** A candidate of `seeds` seeds timed from the run's measured pace, and why it cannot start now (undefined: it fits). */
export function timing(input: PlanInput, g: Genome, seeds: number, parent?: TrialState, atOnce = false): { seedS?: number; wallS?: number; over?: string } {
  const from = paceSource(input, g, parent);
  const seedS = from && predictedSeconds(input, g, from);
  if (!from || seedS === undefined) return {};
  const wallS = atOnce ? atOnceWallS(input, seeds, seedS) : seedS * queueFactor(input, from, seeds);
  // Its confirmation, should it become the best, is timed by the same measured trial.
  const confirmS = confirmSeconds(input.state, slowestSeed(from), capacity(input, g, from));
  return { seedS, wallS, over: overBudget(input, seedS, wallS, confirmS) };
}

/**
 * Seconds from now until each of the runner's slots is free, by the predicted ends of the trials
 * in flight (each of their seeds holds a slot until its trial's predicted end); a trial with
 * nothing measured to predict it from counts as ending now.
 */
export function slotsFreeIn(input: PlanInput): number[] {
  const now = input.nowMs ?? Date.now();
  const busy: number[] = [];
  for (const t of input.state.trials.values()) {
    const g = genomeOf(t);
    if (!t.proposed || t.judged || !g) continue;
    const parent = t.proposed.parentIds[0] ? input.state.trials.get(t.proposed.parentIds[0]) : undefined;
    const seeds = seedsOf(input, t.proposed);
    const from = paceSource(input, g, parent);
    // A time-boxed training stops at its time.
    const wall = g.train.train_seconds ? g.train.train_seconds : from && wallSeconds(input, g, seeds, from);
    const left = wall === undefined ? 0 : Math.max(0, wall - (now - (t.firstAtMs ?? now)) / 1000);
    for (let i = 0; i < seeds; i++) busy.push(left);
  }
  const slots = input.slots || 1;
  const out = busy.sort((a, b) => b - a).slice(0, slots);
  while (out.length < slots) out.push(0);
  return out;
}

/** When `seeds` jobs of `durationS` each end, taken in order by whichever slot is free first. */
function lastEnd(freeIn: readonly number[], seeds: number, durationS: number): number {
  const slots = [...freeIn];
  let end = 0;
  for (let i = 0; i < seeds; i++) {
    const j = slots.indexOf(Math.min(...slots));
    slots[j] = slots[j]! + durationS;
    end = Math.max(end, slots[j]!);
  }
  return end;
}

/** The longest duration per seed with which `seeds` jobs on those slots all end within `horizonS`. */
function longestSeed(freeIn: readonly number[], seeds: number, horizonS: number): number {
  let lo = 0;
  let hi = Math.max(0, horizonS);
  for (let i = 0; i < 40; i++) {
    const mid = (lo + hi) / 2;
    if (lastEnd(freeIn, seeds, mid) <= horizonS) lo = mid;
    else hi = mid;
  }
  return lo;
}

/**
 * Whether a last training's `seeds` start at once, each its own job sharing the cores, rather
 * than in rounds on the runner's slots: on a CPU, when their last round would leave a slot idle.
 * 3 seeds on 2 slots in rounds train half the time left each, one slot idle for the second half;
 * at once they train all of it at 2/3 of a core each. On this 2-core machine three one-thread
 * trainings at once made 317-322 steps in 40 s against 343-354 for two (a tenth lost to sharing
 * the caches), so each seed makes about a fifth more steps by the same end. A GPU trains a
 * trial's seeds together in one job (gpu-runner/device.ts).
 */
export function seedsAtOnce(input: Pick<PlanInput, "slots" | "device">, seeds: number, seedS: number): boolean {
  return idleInRounds(input, seeds) && seedS >= AT_ONCE_MIN_SEED_S;
}

/** Whether `seeds` seeds in rounds on the runner's slots would leave a slot idle in the last round, on a CPU. */
function idleInRounds(input: Pick<PlanInput, "slots" | "device">, seeds: number): boolean {
  const slots = input.slots || 1;
  return input.device !== "cuda" && seeds > slots && seeds % slots !== 0;
}

/** A tenth of the cores' work lost to sharing the caches when more seeds than slots train at once (seedsAtOnce's measurement). */
const AT_ONCE_SHARING = 1.1;

/**
 * Seconds from the start of `seeds` seeds started at once to the end of the last, each `seedS`
 * alone on a slot: where they outnumber the slots, each at slots/seeds of a slot's pace, less
 * the sharing's tenth (AT_ONCE_SHARING); a lone seed as alone. Timed in rounds instead, the
 * README goal's confirmation was predicted 374 s (twice the 187 s a seed of its probe's pace
 * predicts) and took 287-329 s at once; a run whose probe was measured on a busier machine
 * found it no longer fitted before exploration's end, and trained edits instead.
 */
export function atOnceWallS(input: Pick<PlanInput, "slots">, seeds: number, seedS: number): number {
  const share = seeds / (input.slots || 1);
  return share > 1 ? seedS * share * AT_ONCE_SHARING : seedS;
}

/**
 * The shortest training, in seconds of one seed alone, whose seeds start at once. The seeds past
 * the slots take spare workers (gpu-runner/pool.ts), each a fork server started for them: 2-5
 * CPU-seconds of imports. 3 seeds on 2 slots at once end in about 1.65 of a seed's time (the
 * sharing above) against 2 in rounds, so they gain a third of a seed's time, and two spares' starts
 * cost about 2.5 s of both cores: at 20 s the gain is several times the cost; a digits training of
 * a few seconds spent more starting spares than training.
 */
export const AT_ONCE_MIN_SEED_S = 20;

export interface LastTrainingTime {
  /** Seconds each seed's job trains from its start (train_seconds): the job anneals its schedule over that time. */
  trainS: number;
  /** The epochs that should reach at `pick`'s measured pace on the full training split, its seeds sharing the cores when at once. */
  epochs: number;
  /** Whether its seeds start at once (seedsAtOnce). */
  atOnce: boolean;
  /** How many times the passes `pick` was measured at its training reaches. */
  gain: number;
}

/**
 * The time of the run's last long training of `pick`, not a number of epochs: the job anneals its
 * schedule over that time (train_seconds). Epochs predicted from trials timed beside others were
 * wrong both ways (a GPU shared with probes measured 2-3 times slower than the training runs
 * alone; a loaded CPU slower still); the job itself knows how fast it goes. Its seeds start at
 * once (seedsAtOnce), each at slots/seeds of a core's pace, or are placed on the runner's slots
 * as the trials in flight free them (slotsFreeIn); each pays the job's start-up and its last
 * validation pass, all ending within LAST_MARGIN of the time left before the reserve and each
 * within the trial budget. Undefined when that is less than LAST_SHARE of the budget (of its
 * FRONT_TRAININGS-th for a Pareto goal) or no more training than `pick` had. `share`: the part of
 * the time left this training has (a Pareto goal's front trials train long one after another,
 * swarm/front.ts). The floor is not scaled with `share`: with it, the last of dc836a7's Pareto
 * run's front trainings, whose share was the whole time left, needed 90 s a seed of 900 where the
 * first had needed 30, and it did not train (75 s fitted).
 */
export function lastTrainingTime(input: PlanInput, pick: TrialState, pg: Genome, share = 1): LastTrainingTime | undefined {
  const { state } = input;
  const seed = slowestSeed(pick);
  if (!seed || !plansLastTraining(state)) return undefined;
  const startUp = Math.min(seed.secondsToFirstStep, seed.seconds);
  const passes = passesMade(input, pick, pg);
  // In work: a pick whose seeds shared the cores did a share of a core's work in its seconds.
  const trained = (seed.seconds - startUp) * coreShare(input, pick);
  const fullEpochS = trained / passes;
  const seeds = seedsOf(input, {});
  const horizon = LAST_MARGIN * share * budgetPlan(state, input.nowMs ?? Date.now()).availableS;
  const trialBudget = state.settings?.trialTimeBudgetS ?? 0;
  const lastEpochs = lastEpochsOf(state.settings);
  const timed = (atOnce: boolean): LastTrainingTime | undefined => {
    // A seed's share of a core: its wall seconds do this much of what they would alone.
    const pace = atOnce ? (input.slots || 1) / seeds : 1;
    // The job's clock counts from its start, its start-up included (trainer.py); at its time it
    // stops mid-epoch, then predicts the validation split once and times its inference
    // (endSeconds), or, from a runner before the pass was measured, a forward pass over nVal
    // examples taken as long as training on them (about three times what it is).
    const end = (endSeconds(seed, input.info.nVal) ?? (fullEpochS * input.info.nVal) / input.info.nTrain) / pace;
    let trainS = (atOnce ? horizon : longestSeed(slotsFreeIn(input), seeds, horizon)) - end;
    if (trialBudget > 0) trainS = Math.min(trainS, TRIAL_BUDGET_SHARE * trialBudget - end);
    trainS = Math.floor(trainS);
    if (trainS < lastTrainingFloorS(state)) return undefined;
    // No longer than its last epochs (lastEpochsOf) take at its pace, and a quarter more (seeds sharing the cores
    // ran a quarter slower than their measured pace predicted: 35-41 s for 32): the time left after
    // it goes to another research round (swarm/budget.ts roundStartS), not to a training that
    // would end early.
    trainS = Math.min(trainS, Math.ceil((startUp + 1.25 * lastEpochs * fullEpochS) / pace));
    const work = (trainS - startUp / pace) * pace;
    if (work <= trained) return undefined;
    return { trainS, epochs: Math.min(lastEpochs, Math.floor(work / fullEpochS)), atOnce, gain: work / fullEpochS / passes };
  };
  return atOnceOrApart(input, seeds, timed);
}

/**
 * A training of `seeds` seeds timed at once and in rounds (`timed`): at once when a seed's work
 * then repays the spare workers (seedsAtOnce), or when only at once fits.
 */
function atOnceOrApart<T extends { trainS: number }>(input: PlanInput, seeds: number, timed: (atOnce: boolean) => T | undefined): T | undefined {
  const apart = timed(false);
  const together = idleInRounds(input, seeds) ? timed(true) : undefined;
  return together && (!apart || seedsAtOnce(input, seeds, together.trainS * ((input.slots || 1) / seeds))) ? together : apart;
}

/**
 * The time of a continued training that opens a warm open-ended run (promotion.ts continuation):
 * its seeds train until CONTINUE_SHARE of the budget, at once when rounds would leave
 * a slot idle (seedsAtOnce), each in rounds' share of that time otherwise, within LAST_MARGIN of
 * it (the run has measured nothing yet to predict a seed's start-up and last validation pass by)
 * and of the trial budget. The run's last long training then continues from it for the rest.
 * Undefined when that is less than LAST_SHARE of the budget.
 */
export function continuationTime(input: PlanInput, seeds: number): { trainS: number; atOnce: boolean } | undefined {
  const { state } = input;
  if (!plansLastTraining(state)) return undefined;
  const timed = (atOnce: boolean) => {
    const rounds = atOnce ? 1 : Math.ceil(seeds / (input.slots || 1));
    let trainS = (LAST_MARGIN * leftUntilS(input, CONTINUE_SHARE)) / rounds;
    const trialBudget = state.settings?.trialTimeBudgetS ?? 0;
    if (trialBudget > 0) trainS = Math.min(trainS, LAST_MARGIN * TRIAL_BUDGET_SHARE * trialBudget);
    trainS = Math.floor(trainS);
    return trainS >= LAST_SHARE * state.goal!.timeBudgetS ? { trainS, atOnce } : undefined;
  };
  return atOnceOrApart(input, seeds, timed);
}

/** The predicted end, in seconds from now, of a last training of `seeds` seeds of `predictedS` each: all now when at once, else on the slots as they free up. */
export function lastTrainingEnd(input: PlanInput, seeds: number, predictedS: number, atOnce: boolean): number {
  return atOnce ? predictedS : lastEnd(slotsFreeIn(input), seeds, predictedS);
}
