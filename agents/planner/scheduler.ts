/**
 * Multi-fidelity search in the style of ASHA (Li et al., "A System for
 * Massively Parallel Hyperparameter Tuning", 2020). Trials run side by side,
 * so promotions are decided asynchronously, each time a judgement arrives:
 *
 * - rung 0 is a cheap probe: a slice of the training split, a few epochs;
 * - each rung up costs ETA times the one below (more data first, then more
 *   epochs), so a config is trained long only after it beat its peers cheaply;
 * - a finished trial in the top 1/ETA of its rung is promoted: the same model
 *   and recipe at the next rung's fidelity, a new trial whose parent it is.
 *
 * New configs (the bandit's edits) always start at rung 0, where their
 * scores are comparable with their parent's. The moves on a run (promotion,
 * last long training, exploit phase) are promotion.ts's.
 */
import { PROBE_SEEDS } from "../../core/defaults.js";
import { cropPaddingFor } from "../../core/space.js";
import type { SurfaceName } from "../../core/enums.js";
import type { TrainConfigInput } from "../../core/model-config.js";
import { Verdict } from "../../proto/gen/research/v1/events_pb.js";
import type { DatasetInfo } from "../../proto/gen/research/v1/runner_pb.js";
import type { RunState } from "../../swarm/run-state.js";
import { isPromotion, rungOf, scoreOf, type TrialState } from "../../swarm/trial-state.js";
import { axesOf, pointOf, tradeOffsOf } from "../../swarm/front.js";
import { topK } from "../../core/pareto.js";

/**
 * Seeds a promotion at `rung` trains with (undefined: the run's). One on a
 * slice of the training split, which only ranks configs for the full split,
 * like the probe: a 30-minute Fashion-MNIST run spent 407 s on one
 * three-seed 30k x 3 promotion, time its best config then lacked at the top.
 */
export function seedsAtRung(rung: Fidelity): number | undefined {
  return rung.subset > 0 ? PROBE_SEEDS : undefined;
}

/** Promotion ratio: the top 1/ETA of a rung go up, at ETA times the cost. */
export const ETA = 3;
/** Rungs above the probe; the top one is the long, exploit-phase training. */
const MAX_RUNG = 3;
const MAX_EPOCHS = 60;
/** A rung whose training run is at least this long gets the long-training recipe. */
const LONG_EPOCHS = 5;

export interface Fidelity {
  /** Training examples (0: the whole training split). */
  subset: number;
  epochs: number;
}

/**
 * The fidelities of rungs 0..MAX_RUNG from the probe's: each costs ETA times
 * the previous in examples x epochs, growing the slice up to the full split
 * first, since more data beats more passes over the same slice.
 */
export function ladder(info: Pick<DatasetInfo, "nTrain">, probe: Fidelity): Fidelity[] {
  const full = info.nTrain;
  const size = (f: Fidelity) => (f.subset > 0 && f.subset < full ? f.subset : full);
  const out: Fidelity[] = [probe];
  for (let r = 1; r <= MAX_RUNG; r++) {
    const prev = out[r - 1]!;
    const cost = size(prev) * prev.epochs * ETA;
    const subset = Math.min(full, size(prev) * ETA);
    const epochs = Math.min(MAX_EPOCHS, Math.max(prev.epochs, Math.round(cost / subset)));
    const next = { subset: subset >= full ? 0 : subset, epochs };
    if (next.subset === prev.subset && next.epochs === prev.epochs) break;
    out.push(next);
  }
  return out;
}

/**
 * The recipe a config trains with at `rung`: its own, at the rung's fidelity, with a long
 * run's habits on long rungs. `imageSide` is the side of an image dataset's samples (0: not images).
 */
export function atRung(train: TrainConfigInput, rung: Fidelity, imageSide: number): TrainConfigInput {
  const image = imageSide > 0;
  const out: TrainConfigInput = { ...train, subset: rung.subset, epochs: rung.epochs };
  if (rung.epochs >= LONG_EPOCHS) {
    // Long runs gain from annealing the rate and from translation augmentation,
    // which short probes cannot show (nor pay for). Horizontal flips are left
    // to configs that chose them: they break digits and text-like images.
    // Not a weight average's (swa): it wants a constant rate (promotion.ts continuedTrain).
    if ((out.schedule ?? "none") === "none" && !out.swa) out.schedule = "cosine";
    if (image && !(out.augment?.crop_padding ?? 0)) out.augment = { ...out.augment, crop_padding: cropPaddingFor(imageSide) };
    if ((out.warmup_epochs ?? 0) >= rung.epochs) out.warmup_epochs = 0;
    // No cutout either: trained 20 epochs with crops, the 20k-parameter BN-CNN template lost 0.7 pp
    // of Fashion-MNIST validation accuracy with it (91.47% -> 90.77%, 2 seeds each,
    // bench/results/cutout-bn-cnn-20ep-c9250a1.json); the search's cutout edit may still try it.
    // No weight average (ema_decay) here: after a cosine anneal it measured no better
    // than the last weights (Fashion-MNIST 10k x 8 epochs, BN CNN, 3 seeds: 87.0% vs
    // 86.9% val); it pays only at a constant rate (85.4% -> 87.9%), which long rungs never keep.
  }
  return out;
}

export interface Promotion {
  trial: TrialState;
  rung: number;
  /** Why it goes up: its place among its rung's finished trials. */
  reason: string;
}

/** Trials that went up a rung already. */
export function promotedIds(state: RunState): Set<string> {
  const out = new Set<string>();
  for (const t of state.trials.values()) {
    const parent = t.proposed?.parentIds[0];
    if (parent && isPromotion(t)) out.add(parent);
  }
  return out;
}

/**
 * ASHA's choice: from the highest rung down, the best finished trial in the
 * top 1/ETA of its rung that has not gone up yet. Failed and rejected trials
 * count as finished (at the bottom), as they do in ASHA.
 */
export function nextPromotion(state: RunState, topRung: number): Promotion | undefined {
  const promoted = promotedIds(state);
  for (let r = topRung - 1; r >= 0; r--) {
    const finished = [...state.trials.values()].filter((t) => t.judged && rungOf(t) === r);
    const k = Math.floor(finished.length / ETA);
    if (k === 0) continue;
    const ranked = topOfRung(
      state,
      finished.filter((t) => t.judged!.verdict === Verdict.ACCEPT),
      k,
    );
    const pick = ranked.find((t) => !promoted.has(t.id));
    if (pick) {
      const place = ranked.indexOf(pick) + 1;
      const by = tradeOffsOf(state).length ? " by the front's rank and crowding" : "";
      return { trial: pick, rung: r + 1, reason: `#${place} of ${finished.length} finished at rung ${r} (top 1/${ETA}${by})` };
    }
  }
  return undefined;
}

/**
 * The best `k` of a rung's accepted trials, best first: by score; for a Pareto goal by the
 * front's rank, then crowding (NSGA-II's order, core/pareto.ts topK), so the configs that go up
 * spread along the front instead of crowding at its most accurate end.
 */
function topOfRung(state: RunState, accepted: TrialState[], k: number): TrialState[] {
  if (!tradeOffsOf(state).length) return accepted.sort((a, b) => (scoreOf(b) ?? 0) - (scoreOf(a) ?? 0)).slice(0, k);
  const points = accepted.flatMap((t) => pointOf(state, t) ?? []);
  const byId = new Map(accepted.map((t) => [t.id, t]));
  return topK(points, axesOf(state), Math.min(k, points.length)).map((p) => byId.get(p.id)!);
}

/** The surface a promotion is filed under: more data and epochs is the data surface's move. */
export const PROMOTION_SURFACE: SurfaceName = "data";
