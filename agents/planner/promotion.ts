/**
 * The scheduler's moves on a run (scheduler.ts has the ladder and ASHA's
 * choice): a promotion when a finished trial has earned the next rung, the
 * run's last long training when the budget gets tight, and the exploit phase,
 * which trains the best config found for what the run has left. Every move
 * is checked against the time model (time-model.ts).
 */
import { Verdict } from "../../proto/gen/research/v1/events_pb.js";
import { bestTrial, isClaimingPromotion, isPromotion, patienceOf, plateau, rungOf, scoreOf, scoreText, type RunState, type TrialState } from "../../swarm/run-state.js";
import { genomeOf } from "./identity.js";
import { imageSide, type Genome } from "./mutations.js";
import { probeFidelity, type PlanInput, type Proposal } from "./policy.js";
import { atRung, ladder, nextPromotion, promotedIds, PROMOTION_SURFACE, seedsAtRung, type Fidelity, type Promotion } from "./scheduler.js";
import {
  explorationSpent,
  LAST_EPOCHS,
  lastTrainingSeeds,
  lastTrainingTime,
  nowOrNever,
  overBudget,
  predictedSeconds,
  seedsOf,
  tightRungSeconds,
  wallOf,
  type Timed,
} from "./time-model.js";

function rungs(input: PlanInput): Fidelity[] {
  return ladder(input.info, probeFidelity(input));
}

/**
 * The scheduler's move, whichever brain authors new configs: ASHA's promotion
 * when a finished trial has earned the next rung, or else the exploit phase's,
 * and only when it fits the budget. "wait": nothing should start now (the
 * exploit phase waits for a long training to end; see `exploring`).
 */
export function promote(input: PlanInput): Proposal | "wait" | undefined {
  const ladderNow = rungs(input);
  if (!exploring(input)) return promotionInFlight(input.state) ? "wait" : (exploit(input, ladderNow) ?? "wait");
  const promotion = nextPromotion(input.state, ladderNow.length - 1);
  const asha = promotion && promotionAt(input, promotion, ladderNow);
  if (!asha) return exploit(input, ladderNow);
  const last = lastLongTraining(input, promotion, asha, ladderNow);
  return last === "wait" ? undefined : (last ?? asha.proposal);
}

/**
 * Whether the run still explores: before its exploration share of the budget
 * (EXPLORE_SHARE), or later while its best config could not yet train longer
 * than it did (exploit has nothing to propose). After that the exploit phase
 * owns the runner: its long training of the best config goes first, and
 * nothing else starts while a long training runs, since on a shared device
 * (a GPU's memory and cores, two CPU cores) every probe beside it slows the
 * training that decides the run, and no probe could change its result.
 */
function exploring(input: PlanInput): boolean {
  const { state } = input;
  if (!explorationSpent(input) || state.judgedCount < patienceOf(state)) return true;
  if (promotionInFlight(state)) return false;
  return exploit(input, rungs(input)) === undefined;
}

/**
 * A promotion still training: the exploit phase waits for it before choosing what to train
 * last, since it may become the best (on an H200 a ResNet-9 still at rung 1 was passed over
 * for a 137k-parameter CNN's last training, and then beat it, 93.8% to 93.1%).
 */
function promotionInFlight(state: RunState): boolean {
  for (const t of state.trials.values()) if (isPromotion(t) && !t.judged) return true;
  return false;
}

/**
 * A promotion to a rung on the full split below the top, when the budget is
 * tight: after its training, no training twice as long would fit. Then it
 * is the run's last long training, and trains for the time left now (timedTop)
 * instead of the rung's few epochs; and it waits while another long training
 * runs, as the two would share the slots that each was planned to have. On two
 * CPU cores a 30-minute Fashion-MNIST run's one 54k x 5 x 3-seed training took
 * 886 s, and nothing longer fitted after it. Undefined: the budget is not
 * tight (or has no clock); ASHA's promotion stands.
 */
function lastLongTraining(input: PlanInput, promotion: Promotion, asha: Timed, ladderNow: Fidelity[]): Proposal | "wait" | undefined {
  const { state } = input;
  const top = ladderNow.length - 1;
  const rung = ladderNow[promotion.rung]!;
  if (promotion.rung >= top || rung.subset !== 0 || !((state.goal?.timeBudgetS ?? 0) > 0)) return undefined;
  const rungS = tightRungSeconds(input, promotion.trial, asha, rung.epochs);
  // A training twice as long still fits after this rung's: ASHA's ladder stands.
  if (rungS === undefined) return undefined;
  if ([...state.trials.values()].some((t) => isClaimingPromotion(t) && !t.judged)) return "wait";
  const timed = timedTop(input, promotion.trial, ladderNow);
  if (!timed) return undefined;
  return {
    ...timed.proposal,
    rationale: `${promotion.reason}; the run's last long training: after rung ${promotion.rung}'s ${rung.epochs} epochs (predicted ${rungS.toFixed(0)} s) no longer training would fit, so it trains for the time that is left now; ${timed.proposal.rationale}`,
  };
}

/**
 * The exploit phase: ASHA fills a high rung only with ETA finished trials
 * below it, which a short budget never has. The best config not yet trained
 * at the top rung (by CI lower bound: the run's best first, then the
 * runners-up) goes directly to the top rung, never before the run has
 * judged a patience's worth of trials:
 *
 * - when the whole top rung fits, it starts once that is now or never
 *   (after another training of that length, one would not fit before the
 *   reserve) or once exploration has gone flat for half the judge's patience;
 * - when it no longer fits, the top rung is shortened to the most epochs
 *   that still fit (at least two more than the rung below), started once the
 *   run has spent its exploration share of the budget, or earlier when
 *   flat: on two CPU cores a 30-minute run never fits 54k x 15 epochs x 3
 *   seeds, and its best config (found by then) gained most from training
 *   longer, not from more probes;
 * - with no time left for that, the highest lower rung that fits, now or never.
 *
 * The budget's long trainings are spent on the best configs found, and a
 * plateau is answered by training them longer.
 */
function exploit(input: PlanInput, ladderNow: Fidelity[]): Proposal | undefined {
  const { state } = input;
  // Exploitation follows exploration: before the judge's patience worth of
  // trials there is no best config to speak of (a 30-minute run once sent its
  // first probe to the top rung, as its "now or never" was already true).
  if (state.judgedCount < patienceOf(state)) return undefined;
  const top = ladderNow.length - 1;
  const trials = [...state.trials.values()];
  const promoted = promotedIds(state);
  const pick = trials
    .filter((t) => t.judged?.verdict === Verdict.ACCEPT && rungOf(t) < top && !promoted.has(t.id))
    .sort((a, b) => (scoreOf(b) ?? 0) - (scoreOf(a) ?? 0))[0];
  if (!pick) return undefined;
  const from = rungOf(pick);
  // One long training at a time.
  if (trials.some((t) => isPromotion(t) && !t.judged && rungOf(t) > from)) return undefined;
  const since = plateau(state).since;
  const flat = since >= patienceOf(state) / 2;
  const who = pick === bestTrial(state) ? "the run's best" : "the best config not yet trained this long";
  const exploitAt = (candidate: Timed, rung: number, why: string, lastTraining: boolean): Proposal => ({
    ...candidate.proposal,
    rationale: `exploit: ${who} (${scoreText(pick)}) trains at rung ${rung} now, since ${why}${lastTraining ? "; the run's last long training" : ""}; ${candidate.proposal.rationale}`,
    lastTraining,
  });
  const flatWhy = `the best CI low has not risen in the last ${since} judged trials`;
  const full = promotionAt(input, { trial: pick, rung: top, reason: "" }, ladderNow);
  if (!full) {
    const timed = timedTop(input, pick, ladderNow);
    if (timed) {
      const explored = explorationSpent(input);
      if (!flat && !explored) return undefined;
      return exploitAt(
        timed,
        top,
        flat || !explored
          ? flatWhy
          : `the run has spent ${Math.round((100 * explored.spentS) / explored.budgetS)}% of its budget exploring, and the whole top rung (${ladderNow[top]!.epochs} epochs) no longer fits before the reserve`,
        true,
      );
    }
  }
  for (let rung = top; rung > from; rung--) {
    const candidate = rung === top ? full : promotionAt(input, { trial: pick, rung, reason: "" }, ladderNow);
    if (!candidate) continue;
    const wall = wallOf(input, pick, candidate);
    const left = nowOrNever(input, wall);
    if (left === undefined && !flat) return undefined;
    return exploitAt(candidate, rung, left !== undefined ? `its predicted ${wall.toFixed(0)} s still fit the ${left.toFixed(0)} s left before the reserve` : flatWhy, left !== undefined);
  }
  return undefined;
}

/**
 * The run's last long training when the whole top rung no longer fits: `pick`
 * on the top rung's data for the time the run has (time-model.ts
 * lastTrainingTime), with the long-training habits (atRung) for the epochs
 * it should reach at its measured pace.
 */
function timedTop(input: PlanInput, pick: TrialState, ladderNow: Fidelity[]): Timed | undefined {
  const pg = genomeOf(pick);
  if (!pg) return undefined;
  const seeds = lastTrainingSeeds(input);
  const time = lastTrainingTime(input, pick, pg, seeds);
  if (!time) return undefined;
  const { trainS, epochs: pace } = time;
  const train = { ...atRung(pg.train, { subset: 0, epochs: pace }, imageSide(input.info)), epochs: LAST_EPOCHS, train_seconds: trainS };
  const proposal: Proposal = {
    rung: ladderNow.length - 1,
    seeds,
    hypothesis: `train ${pick.id} for ${trainS} s on the full training split (about ${pace} epochs at its measured pace)`,
    rationale: `the same model and recipe, trained for the time the run has left, its schedule annealed over that time${train.augment?.cutout && !pg.train.augment?.cutout ? ", with cutout" : ""}`,
    parentIds: [pick.id],
    surface: PROMOTION_SURFACE,
    mutation: "last_training",
    model: pg.model,
    train,
    lastTraining: true,
  };
  return { proposal, predictedS: time.predictedS };
}

function promotionAt(input: PlanInput, promotion: Promotion, ladderNow: Fidelity[], fidelity: Fidelity = ladderNow[promotion.rung]!): Timed | undefined {
  const parent = promotion.trial;
  const pg = genomeOf(parent);
  if (!pg) return undefined;
  const g: Genome = { model: pg.model, train: atRung(pg.train, fidelity, imageSide(input.info)) };
  const predictedS = predictedSeconds(input, parent, g, pg);
  const seeds = seedsAtRung(fidelity);
  if (predictedS === undefined || overBudget(input, parent, predictedS, seedsOf(input, { seeds }))) return undefined;
  const data = fidelity.subset ? `${fidelity.subset} examples` : "the full training split";
  const proposal: Proposal = {
    rung: promotion.rung,
    seeds,
    hypothesis: `promote ${parent.id} to rung ${promotion.rung}: ${data}, ${fidelity.epochs} epochs`,
    rationale: `${promotion.reason ? `${promotion.reason}; ` : ""}the same model and recipe trained longer${g.train.schedule !== pg.train.schedule ? ` with a ${g.train.schedule} schedule` : ""}${g.train.augment?.crop_padding && !pg.train.augment?.crop_padding ? " and random crops" : ""}`,
    parentIds: [parent.id],
    surface: PROMOTION_SURFACE,
    mutation: "promotion",
    model: g.model,
    train: g.train,
  };
  return { proposal, predictedS };
}
