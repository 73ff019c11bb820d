/**
 * The scheduler's moves on a run (scheduler.ts has the ladder and ASHA's choice): the same
 * config trained again at another fidelity, a new trial whose parent it is.
 *
 * - ASHA's promotion, when a finished trial has earned the next rung;
 * - a re-test, when an edit's gain is unresolved and the next rung would resolve it;
 * - a confirmation, for a goal with a target: a one-seed probe that makes the target likely is
 *   trained on the full split with the run's seeds, whose interval can meet the goal;
 * - the run's last long training: the best config for the time the run has left;
 * - the run's tail: that training continued, when no other long training fits after it.
 *
 * Every move is timed by the time model (time-model.ts); decide.ts chooses among them.
 */
import { Verdict } from "../../proto/gen/research/v1/events_pb.js";
import type { DatasetInfo } from "../../proto/gen/research/v1/runner_pb.js";
import { Mutation } from "../../proto/gen/research/v1/common_pb.js";
import { formatChange, formatHalfWidth, formatMetric, reaches } from "../../core/objective.js";
import { bestTrial, type RunState } from "../../swarm/run-state.js";
import { tailSeconds, TAIL_EPOCHS } from "../../swarm/budget.js";
import { isClaimingPromotion, isPromotion, meanOf, rungOf, scoreOf, scoreText, valMetricOf, type TrialState } from "../../swarm/trial-state.js";
import { familyOf, genomeOf, tried } from "./identity.js";
import { frontOf, frontPicks, tradeOffsOf, trainedLong } from "../../swarm/front.js";
import type { Genome } from "./mutations.js";
import { probeFidelity, withinBudget } from "./proposals.js";
import type { PlanInput, Proposal } from "./types.js";
import { atRung, ladder, nextPromotion, promotedIds, PROMOTION_SURFACE, seedsAtRung, type Fidelity, type Promotion } from "./scheduler.js";
import { editFinding } from "../../swarm/findings.js";
import { AT_ONCE_MIN_SEED_S, CONTINUE_SHARE, continuationTime, LAST_GAIN, lastTrainingTime, loneSeedHasEveryCore, passesOf, seedsAtOnce, seedsOf, timing, type LastTrainingTime } from "./time-model.js";
import { imageSide, spaceOf } from "../../core/space.js";
import { pct } from "../../core/format.js";
import { Z975 } from "../../core/stats.js";
import { parseTrainConfig, type TrainConfig, type TrainConfigInput } from "../../core/model-config.js";
import { lastEpochsOf } from "../../core/defaults.js";

function rungs(input: PlanInput): Fidelity[] {
  return ladder(input.info, probeFidelity(input));
}

/**
 * ASHA's promotion when a finished trial has earned the next rung and it fits (time-model.ts
 * overBudget); with every core when it is the run's quickest path to its target (quickestPath).
 */
export function ashaPromotion(input: PlanInput): Proposal | undefined {
  const ladderNow = rungs(input);
  const promotion = nextPromotion(input.state, ladderNow.length - 1);
  const p = promotion && promotionAt(input, promotion, ladderNow[promotion.rung]!);
  if (!p || !quickestPath(input, promotion.trial, p)) return p;
  return {
    ...p,
    seedsAtOnce: true,
    rationale: `${p.rationale}; it has every core: its one seed, as the whole split would lift it, reaches the target ${input.state.goal!.target}, not yet by a confirmation's margin, so its score decides whether a confirmation follows`,
  };
}

/**
 * Whether ASHA's promotion `p` of `t` is the run's quickest path to its target, and so has every
 * core: its one seed starts at once (TrialProposed.seeds_at_once), where the runner gives a lone
 * seed all the cores (gpu-runner/evaluation.ts jobThreads), nothing starts beside it and what
 * trains from before is cancelled (swarm/run-state.ts aloneInFlight, preemptedBy), as for a
 * confirmation. So when the goal has a target, on a CPU of several slots, the promotion trains one
 * seed on a slice long enough to repay what it stops (AT_ONCE_MIN_SEED_S), and `t`'s one seed,
 * as the whole split would lift it (wholeSplitMean), reaches the target: whether a confirmation
 * follows is then the promotion's score. On the README's goal on the CPU without bf16 the
 * VGG-style net's rung-1 promotion trained about 150 s on one core beside edits, none of which
 * became the best, and the confirmation waited for it (4b03420); with both cores it took 93-109 s
 * and the confirmation started 34-67 s sooner (bench/results/search-series-8c24bc6.json).
 */
function quickestPath(input: PlanInput, t: TrialState, p: Proposal): boolean {
  const { state } = input;
  const goal = state.goal;
  if (!goal || goal.openEnded || !(goal.target > 0) || !loneSeedHasEveryCore(input, seedsOf(input, p))) return false;
  if (!p.train.subset || tradeOffsOf(state).length) return false;
  const whole = wholeSplitMean(state, t, input.info);
  if (whole === undefined || !reaches(state.objective, whole, goal.target)) return false;
  const seedS = timing(input, { model: p.model, train: p.train }, 1, t).seedS ?? 0;
  return seedS >= AT_ONCE_MIN_SEED_S;
}

/**
 * ASHA's promotion of a config from a slice of the training split to the whole of it, when it
 * should be the run's last long training instead: always in an open-ended run (the config has
 * earned a training where claims are made, against at least two others at the rung below, and
 * the time left is worth more as that training than as more probes and a shorter one: on two
 * CPU cores a 30-minute run that trained its first such config from minute 5 reached 93.09%
 * validation, bench/results/search-dev-runs-2026-11-27.json), and with a target when the promotion does not
 * fit before exploration ends (where it fits, its seeds may meet the goal sooner). (Where probes
 * see the whole split already, as on a GPU, no promotion is this one.) "wait": it is due, but a
 * starting template is still probing, or the goal is a Pareto goal, whose claims on the full
 * split are its front's long trainings; neither it nor ASHA's promotion goes ahead yet.
 */
export function fullSplitDue(input: PlanInput): Promotion | "wait" | undefined {
  const ladderNow = rungs(input);
  const promotion = nextPromotion(input.state, ladderNow.length - 1);
  if (!promotion || ladderNow[promotion.rung]!.subset !== 0 || ladderNow[promotion.rung - 1]!.subset === 0) return undefined;
  // A Pareto goal's claims are its front's long trainings once exploration ends (swarm/front.ts
  // frontPicks): until then every slot goes to probes that build the front. (One such run,
  // 1805356's pareto-0, trained its first front trial long at 125 s of 900 and probed 12 configs.)
  if (tradeOffsOf(input.state).length) return "wait";
  const due = input.state.goal?.openEnded || !promotionAt(input, promotion, ladderNow[promotion.rung]!);
  if (!due) return undefined;
  // Not while a starting template still probes, nor while another promotion trains: either may be
  // the one to train (a small CNN's three quick probes once sent it to the full split while the
  // VGG-style net, better, still ran; at c1b09e8 a 20k CNN's rung-1 edit went there at 85 s of a
  // 10-minute run while the VGG-style net's rung-1 promotion trained, which then read 90.53% to its
  // 88.93%: 92.00% test where a run that met the VGG-style net first reached 93.33%).
  for (const t of input.state.trials.values()) if (t.proposed?.mutation === Mutation.TEMPLATE && !t.judged) return "wait";
  if (promotionInFlight(input.state)) return "wait";
  return promotion;
}

/** A promotion still training. */
export function promotionInFlight(state: RunState): TrialState | undefined {
  for (const t of state.trials.values()) if (isPromotion(t) && !t.judged) return t;
  return undefined;
}

/**
 * How a one-seed probe on a slice of the training split predicts its config's error on the whole
 * split: its error times (slice / split)^SLICE_ERROR_EXPONENT. A confirmation makes at least the
 * probe's passes over several times its examples, and error falls with examples: in the recorded
 * Fashion-MNIST runs (test/fixtures/runs) the same config's validation error fell as the ratio's
 * power 0.14-0.30 from 10,000 examples to 30,000 or to the whole 54,000 (88.6% -> 91.8% and
 * 89.4% -> 91.9% in the README goal's confirmations). 0.1, slower than any of them, so that a
 * probe the whole split would not lift past the target is not confirmed on this alone.
 */
const SLICE_ERROR_EXPONENT = 0.1;

/** A one-seed proportion's mean on the whole training split, as its slice predicts it (SLICE_ERROR_EXPONENT); other means as they are. */
function wholeSplitMean(state: RunState, t: TrialState, info: Pick<DatasetInfo, "nTrain">): number | undefined {
  const mean = meanOf(t);
  const slice = t.train?.subset ?? 0;
  if (mean === undefined || !state.objective.proportion || !(slice > 0 && slice < info.nTrain)) return mean;
  return 1 - (1 - mean) * (slice / info.nTrain) ** SLICE_ERROR_EXPONENT;
}

/**
 * Whether a one-seed trial makes the goal's target likely: its mean on the whole split
 * (wholeSplitMean) beats the target by the sampling half-width a confirmation on the full
 * validation split would have (a proportion's binomial part; another metric's own interval,
 * narrowed to the full split's size). Then a confirmation with the run's seeds is worth its time;
 * below it, more search is. The goal is met or missed by the confirmation's own interval, never
 * by this prediction.
 */
export function makesTargetLikely(state: RunState, t: TrialState, info: Pick<DatasetInfo, "nTrain" | "nVal">): boolean {
  const goal = state.goal;
  const stats = valMetricOf(t);
  const mean = wholeSplitMean(state, t, info);
  if (!goal || goal.openEnded || !(goal.target > 0) || !stats || stats.n !== 1 || mean === undefined) return false;
  const o = state.objective;
  const probeExamples = t.evaluated?.result?.seedResults[0]?.valExamples || info.nVal;
  const margin = o.proportion
    ? Z975 * Math.sqrt((goal.target * (1 - goal.target)) / info.nVal)
    : ((stats.ci95[1]! - stats.ci95[0]!) / 2) * Math.sqrt(probeExamples / info.nVal);
  return reaches(o, o.higherIsBetter ? mean - margin : mean + margin, goal.target);
}

/**
 * A re-test of an edit the run could not resolve: its gain favours the edit but its interval
 * (swarm/findings.ts editFinding) holds no change too, and the next rung, a larger slice of the
 * training split, would resolve that gain. The interval's sampling part narrows with the square
 * root of the validation examples, which are a fixed share of the slice (runner datasets.py
 * val_count), so the next rung is predicted to resolve about detectable * sqrt(slice / next
 * slice); the edit is re-tested when that is smaller than its gain. The move promotes whichever
 * side of the pair has not gone up yet (the edit's config first, then its parent's), so the two
 * train at the same fidelity and the report compares them there. In an open-ended run without
 * trade-offs only: a target's run ends once the target is met, and a Pareto goal's probes build
 * its front; and never to the full split, where a run's claims train (the last long training).
 * ASHA sends an edit up without its parent: in the recorded 30-minute Fashion-MNIST run 0e3b084,
 * t003 gained 2.20 pp over t001 at 10k x 3, inside their +-2.97 pp (two intervals), went to
 * 30k x 3, and t001 never did, so the edit stayed unresolved at the probes' size.
 */
export function retest(input: PlanInput): Proposal | undefined {
  const { state } = input;
  if (!state.goal?.openEnded || tradeOffsOf(state).length) return undefined;
  const ladderNow = rungs(input);
  const promoted = promotedIds(state);
  const o = state.objective;
  const due: { change: number; promotion: Promotion }[] = [];
  for (const t of state.trials.values()) {
    const f = t.judged?.verdict === Verdict.ACCEPT ? editFinding(state, t) : undefined;
    if (!f || f.outcome !== "inconclusive" || !(f.change > 0)) continue;
    const rung = rungOf(f.pair[0]);
    const [now, next] = [ladderNow[rung], ladderNow[rung + 1]];
    const side = f.pair.find((u) => !promoted.has(u.id));
    if (!now?.subset || !next?.subset || !side) continue;
    const predicted = f.detectable * Math.sqrt(now.subset / next.subset);
    if (predicted >= f.change) continue;
    const reason = `a re-test of ${t.id}: its gain of ${formatChange(o, f.change)} over ${f.parent.id} is unresolved (±${formatHalfWidth(o, f.detectable)}) at rung ${rung}, and rung ${rung + 1} should resolve about ±${formatHalfWidth(o, predicted)}`;
    due.push({ change: f.change, promotion: { trial: side, rung: rung + 1, reason } });
  }
  // The largest gain first, of those that fit.
  for (const { promotion } of due.sort((a, b) => b.change - a.change)) {
    const p = promotionAt(input, promotion, ladderNow[promotion.rung]!);
    if (p) return p;
  }
  return undefined;
}

/** Trials that a trial with the run's seeds trained again: confirmed, or trained for the time left. */
function trainedWithSeeds(state: RunState): Set<string> {
  const out = new Set<string>();
  for (const t of state.trials.values()) if (isClaimingPromotion(t) && t.proposed!.parentIds[0]) out.add(t.proposed!.parentIds[0]);
  return out;
}

/**
 * The confirmation a goal with a target asks for as soon as a probe makes it likely: the
 * probe's config on the full training split, with the run's seeds, for about as many passes
 * as the probe made (at least two epochs), whose interval can meet the goal. One at a time,
 * and none once a multi-seed trial is training. On a CPU whose slots would train its seeds in
 * rounds with one idle (time-model.ts seedsAtOnce), they start at once and the runner is theirs
 * alone (run-state.ts aloneInFlight): the README's goal waited 182 s for a confirmation whose
 * third seed trained after the first two, beside a probe, where at once on both cores the
 * same work takes about two thirds of that.
 */
export function confirmation(input: PlanInput): Proposal | undefined {
  const { state } = input;
  if (state.goal?.openEnded || !(state.goal?.target ?? 0)) return undefined;
  for (const t of state.trials.values()) if (!t.judged && isClaimingPromotion(t)) return undefined;
  const done = trainedWithSeeds(state);
  const pick = [...state.trials.values()]
    .filter((t) => t.judged?.verdict === Verdict.ACCEPT && !done.has(t.id) && makesTargetLikely(state, t, input.info))
    .sort((a, b) => (scoreOf(b) ?? 0) - (scoreOf(a) ?? 0))[0];
  const pg = pick && genomeOf(pick);
  if (!pick || !pg) return undefined;
  // Its rung: the first on the full split (a probe on a slice is confirmed there, not beside the
  // slices of the rung above it), and above the pick's own.
  const ladderNow = rungs(input);
  const rung = Math.min(ladderNow.length - 1, Math.max(rungOf(pick) + 1, ladderNow.findIndex((f) => f.subset === 0)));
  const fidelity = { subset: 0, epochs: Math.max(2, Math.ceil(passesOf(input, pg.train))) };
  const p = promotionAt(input, { trial: pick, rung, reason: "" }, fidelity, true);
  if (!p) return undefined;
  const whole = wholeSplitMean(state, pick, input.info);
  return {
    ...p,
    hypothesis: `confirm ${pick.id} on the full training split with the run's seeds (${fidelity.epochs} epochs): its one seed makes the target likely`,
    rationale: `${pick.id}'s mean ${formatMetric(state.objective, meanOf(pick)!)}${whole !== meanOf(pick) ? `, ${formatMetric(state.objective, whole!)} as its ${pick.train!.subset} examples predict the whole split,` : ""} clears the target ${state.goal!.target} by more than a confirmation's interval would need; ${p.rationale}`,
  };
}

/** A continued training's constant learning rate, as a share of the rate its past recipe peaked at. */
export const SWA_LR_SCALE = 1 / 4;

/**
 * A continued training's recipe: the past training's model and recipe at a constant SWA_LR_SCALE
 * of its rate, with the weights at each epoch's end averaged (stochastic weight averaging,
 * Recipe.swa). Its past weights had annealed to their schedule's end and converged: trained
 * again over the same schedule for 300 s they scored 0.03 pp lower on validation, at a tenth of
 * the rate 0.01 pp higher (bench/results/continue-open0-b232407-300s-*.json); averaged at a
 * quarter of the rate, 0.04 pp lower after 240 s and 0.06 pp higher after 600 s more
 * (continue-open0-26b8e18-240s-600s-swa.json). All within noise of a converged model; the
 * average is the one whose score rose with its time, and a constant rate is what the run's
 * last long training can go on from without a second restart.
 */
export function continuedTrain(train: TrainConfig, trainS: number, epochs: number): TrainConfig {
  return { ...train, epochs, train_seconds: trainS, schedule: "none", warmup_epochs: 0, lr: train.lr * SWA_LR_SCALE, ema_decay: 0, swa: true };
}

/**
 * A warm open-ended run's first move when a past run on this data (past-runs.ts: the same data,
 * or data that looks the same) trained a config long: its training continued. Each seed starts
 * from the weights the runner kept of a seed of that training (EvaluateRequest.init_weights) and
 * trains the same model on the full split with the run's seeds until a quarter of the budget
 * (time-model.ts continuationTime, CONTINUE_SHARE), averaging its weights (continuedTrain); the
 * run's last long training then continues from it, averaging on (lastTraining, atRung).
 * Probes are passed over: a past run on this data probed them, and on its two cores a 30-minute
 * warm start that probed again repeated the cold run's path and ended 0.004 pp above it
 * (bench/results/search-series-174b884.json). Evaluated and judged here like any trial; the past
 * score is never this run's. None for a goal with a target (after the first config that meets
 * it), a Pareto goal or a latency limit (whose costs the past training's row does not carry), a
 * run from a person's model, or a past config outside this run's limits and space.
 */
export function continuation(input: PlanInput): Proposal | undefined {
  const { state } = input;
  const goal = state.goal;
  if (!goal?.openEnded || state.start || tradeOffsOf(state).length || (goal.maxLatencyMs ?? 0) > 0 || state.order.length) return undefined;
  const seeds = seedsOf(input, {});
  const time = continuationTime(input, seeds);
  if (!time) return undefined;
  const families = new Set(spaceOf(state.settings?.space).families);
  const seen = tried(state);
  for (const past of input.pastLong ?? []) {
    if (families.size && !families.has(familyOf(past.model.name))) continue;
    const g: Genome = { model: structuredClone(past.model), train: continuedTrain(past.train, time.trainS, lastEpochsOf(state.settings)) };
    if (withinBudget(input, g, seen)) continue;
    return {
      rung: rungs(input).length - 1,
      hypothesis: `continue past run ${past.runId}'s long training ${past.trialId} (CI low ${pct(past.ciLow)} there) for ${time.trainS} s on the full training split`,
      rationale: `a warm start from trained weights: each of the run's ${seeds} seeds starts from a seed of ${past.trialId}'s kept weights and trains the same model again${time.atOnce ? ", all at once" : ""} until ${Math.round(CONTINUE_SHARE * 100)}% of the budget at a constant ${Math.round(SWA_LR_SCALE * 100)}% of its learning rate, the mean of its weights at each epoch's end evaluated (stochastic weight averaging); the run's last long training continues from it. Its past score is not this run's`,
      parentIds: [],
      surface: PROMOTION_SURFACE,
      mutation: "warm_start",
      model: g.model,
      train: g.train,
      ...(time.atOnce && { seedsAtOnce: true }),
      informedBy: [{ trialId: past.trialId, weight: past.weight }],
      initWeights: { runId: past.runId, trialId: past.trialId },
    };
  }
  return undefined;
}

/** Whether the long-rung habits (scheduler.ts atRung) add random crops to `from`'s recipe, which a rationale says. */
const addsCrops = (from: TrainConfigInput, to: TrainConfigInput): boolean => !from.augment?.crop_padding && !!to.augment?.crop_padding;

/** `pick`'s last long training in `share` of the time left and its time, or undefined when none fits (time-model.ts lastTrainingTime). */
function timedLast(input: PlanInput, pick: TrialState, share: number): { pick: TrialState; pg: Genome; time: LastTrainingTime } | undefined {
  const pg = genomeOf(pick);
  const time = pg && lastTrainingTime(input, pick, pg, share);
  return pg && time && { pick, pg, time };
}

/**
 * The run's last long training: an accepted config on the full training split with the run's
 * seeds for the time left (time-model.ts lastTrainingTime), with the long-training habits
 * (atRung) for the epochs it should reach at its measured pace. Which config: the best by its
 * score among those whose training there reaches LAST_GAIN times the passes it was measured
 * at; when none does, the one whose training gains most on what it was measured at.
 */
export function lastTraining(input: PlanInput): Proposal | undefined {
  const { state } = input;
  const front = frontOf(state);
  // A Pareto goal trains its front picks (swarm/front.ts: the knee, then by hypervolume) one after
  // another, each in an even share of the time left.
  const done = trainedLong(state);
  const picks = front && frontPicks(front).filter((t) => !done.has(t.id));
  const ranked =
    picks ??
    [...state.trials.values()].filter((t) => t.judged?.verdict === Verdict.ACCEPT && !t.proposed?.lastTraining && !done.has(t.id)).sort((a, b) => (scoreOf(b) ?? 0) - (scoreOf(a) ?? 0));
  const share = picks?.length ? 1 / picks.length : 1;
  const timed = ranked.map((t) => timedLast(input, t, share)).filter((x) => x !== undefined);
  const chosen = timed.find((x) => x.time.gain >= LAST_GAIN) ?? timed.sort((a, b) => b.time.gain - a.time.gain)[0];
  if (!chosen) return undefined;
  const { pick, pg, time } = chosen;
  const best = ranked[0];
  const train = { ...atRung(pg.train, { subset: 0, epochs: time.epochs }, imageSide(input.info)), epochs: lastEpochsOf(state.settings), train_seconds: time.trainS };
  const why = front
    ? `${pick === front.knee ? "the knee of the Pareto front" : "the Pareto front's trial adding most hypervolume to those trained long before it"} (${scoreText(pick)}), front trial ${done.size + 1} of ${done.size + ranked.length} to train long, in ${share === 1 ? "the" : `1/${ranked.length} of the`} time left`
    : pick === best
      ? `the run's best by score (${scoreText(pick)})`
      : time.gain >= LAST_GAIN
        ? `${scoreText(pick)}, the best by score whose training in the time left reaches ${LAST_GAIN}x the passes it was measured at (${time.gain.toFixed(1)}x; ${ranked[0]!.id} would not)`
        : `${scoreText(pick)}: no config reaches ${LAST_GAIN}x the passes it was measured at in the time left, and this one gains most (${time.gain.toFixed(1)}x)`;
  return {
    rung: rungs(input).length - 1,
    hypothesis: `train ${pick.id} for ${time.trainS} s on the full training split (about ${time.epochs} epochs at its measured pace${time.atOnce ? ", its seeds sharing the cores" : ""})`,
    rationale: `the run's last long training: ${why}; the same model and recipe on the full split with the run's seeds${time.atOnce ? ` (all ${seedsOf(input, {})} at once on the runner's ${input.slots} slots' cores: a round of them would leave a slot idle)` : ""}, for the time the run has left, its schedule annealed over that time${addsCrops(pg.train, train) ? ", with random crops" : ""}`,
    parentIds: [pick.id],
    surface: PROMOTION_SURFACE,
    mutation: "last_training",
    model: pg.model,
    train,
    lastTraining: true,
    ...(time.atOnce && { seedsAtOnce: true }),
    // A continued training goes on from its own kept weights (continuation).
    ...(pick.proposed?.initWeights && { initWeights: { runId: state.runId, trialId: pick.id } }),
  };
}

/**
 * The run's tail (swarm/budget.ts tailSeconds): its best long training continued from its kept
 * weights for the time left before the reserve, which fits no other long training. Each seed goes
 * on from its own kept weights with the same model and recipe at a constant SWA_LR_SCALE of its
 * learning rate, the mean of its weights at each epoch's end evaluated (continuedTrain, as a warm
 * run's continued training): a converged model's weights averaged, where a restart would have too
 * little time to anneal. Judged like any trial, it replaces the best only if it outranks it.
 */
export function tailTraining(input: PlanInput): Proposal | undefined {
  const { state } = input;
  const trainS = tailSeconds(state, input.nowMs ?? Date.now());
  const best = bestTrial(state);
  const pg = best && genomeOf(best);
  const train = pg && parseTrainConfig(pg.train);
  if (trainS === undefined || !best || !pg || !train?.ok) return undefined;
  return {
    rung: rungs(input).length - 1,
    hypothesis: `continue ${best.id} for ${trainS} s from its kept weights, averaging them`,
    rationale: `the time left before the reserve fits no other long training, but at least ${TAIL_EPOCHS} more epochs of the run's best (${scoreText(best)}): each of its seeds goes on from its kept weights at a constant ${Math.round(SWA_LR_SCALE * 100)}% of its learning rate, the mean of its weights at each epoch's end evaluated (stochastic weight averaging); it replaces ${best.id} only if it ranks above it`,
    parentIds: [best.id],
    surface: PROMOTION_SURFACE,
    mutation: "tail",
    model: pg.model,
    train: continuedTrain(train.value, trainS, lastEpochsOf(state.settings)),
    lastTraining: true,
    ...(best.proposed?.seedsAtOnce && { seedsAtOnce: true }),
    initWeights: { runId: state.runId, trialId: best.id },
  };
}

/** `promotion.trial`'s config at `fidelity`, when it fits the budgets (time-model.ts overBudget). */
function promotionAt(input: PlanInput, promotion: Promotion, fidelity: Fidelity, atOnceWhenIdle = false): Proposal | undefined {
  const parent = promotion.trial;
  const pg = genomeOf(parent);
  if (!pg) return undefined;
  const g: Genome = { model: pg.model, train: atRung(pg.train, fidelity, imageSide(input.info)) };
  const seeds = seedsAtRung(fidelity);
  const count = seedsOf(input, { seeds });
  // Timed as it will train: its seeds at once where rounds would leave a slot idle (seedsAtOnce), if asked.
  const rounds = timing(input, g, count, parent);
  const atOnce = atOnceWhenIdle && rounds.seedS !== undefined && seedsAtOnce(input, count, rounds.seedS);
  const { over, wallS } = atOnce ? timing(input, g, count, parent, true) : rounds;
  if (over || wallS === undefined) return undefined;
  const data = fidelity.subset ? `${fidelity.subset} examples` : "the full training split";
  return {
    rung: promotion.rung,
    seeds,
    hypothesis: `promote ${parent.id} to rung ${promotion.rung}: ${data}, ${fidelity.epochs} epochs`,
    rationale: `${promotion.reason ? `${promotion.reason}; ` : ""}the same model and recipe trained longer${g.train.schedule !== pg.train.schedule ? ` with a ${g.train.schedule} schedule` : ""}${addsCrops(pg.train, g.train) ? " and random crops" : ""}; predicted ${wallS.toFixed(0)} s`,
    parentIds: [parent.id],
    surface: PROMOTION_SURFACE,
    mutation: "promotion",
    model: g.model,
    train: g.train,
    ...(atOnce && { seedsAtOnce: true }),
  };
}
