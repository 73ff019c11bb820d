/**
 * What an edit found: its config against its parent's, by the run's one hypothesis rule
 * (core/ranking.ts hypothesisOutcome), at the highest fidelity both reached. The report says it
 * (lineage-store/report-json.ts); the planner re-tests an edit it could not resolve
 * (agents/planner/promotion.ts retest).
 */
import { hypothesisOutcome, type HypothesisTest } from "../core/ranking.js";
import type { RunState } from "./run-state.js";
import { isPromotion, valMetricOf, type TrialState } from "./trial-state.js";

export interface EditFinding extends HypothesisTest {
  parent: TrialState;
  /** The pair compared: the edit's config, then its parent's, trained at the same fidelity. */
  pair: [TrialState, TrialState];
}

/**
 * The edit's finding: its config against its first parent's, the two trials or a promotion of
 * each (the same config trained again on more examples or epochs) trained at the same examples
 * and epochs, the pair whose interval is narrowest. ASHA often promotes both, and a promotion
 * validates on more examples: in the recorded Fashion-MNIST runs the 30,000-example rung resolves
 * about +-1.4 pp where the probes resolve +-2.8, compared by their intervals. None for a
 * promotion, a trial without an evaluated parent, or one trained at another fidelity than its
 * parent.
 */
export function editFinding(state: RunState, t: TrialState): EditFinding | undefined {
  const parent = state.trials.get(t.proposed?.parentIds[0] ?? "");
  if (isPromotion(t) || !parent || !valMetricOf(t) || !valMetricOf(parent) || !t.train || !parent.train) return undefined;
  if (fidelityOf(t) !== fidelityOf(parent)) return undefined;
  let best: EditFinding | undefined;
  for (const own of promotionsOf(state, t)) {
    for (const theirs of promotionsOf(state, parent)) {
      const [a, b] = [valMetricOf(own), valMetricOf(theirs)];
      if (!a || !b || fidelityOf(own) !== fidelityOf(theirs)) continue;
      const h = hypothesisOutcome({ ...a, seedResults: own.evaluated?.result?.seedResults }, { ...b, seedResults: theirs.evaluated?.result?.seedResults }, t.objective);
      if (!best || h.detectable < best.detectable) best = { ...h, parent, pair: [own, theirs] };
    }
  }
  return best;
}

/** What a trial trained on: examples, epochs and the seconds that bound them (0: none). */
function fidelityOf(t: TrialState): string {
  return t.train ? `${t.train.subset} x ${t.train.epochs} x ${t.train.train_seconds}` : "";
}

/** A trial and the promotions of its config, theirs in turn included. */
function promotionsOf(state: RunState, t: TrialState): TrialState[] {
  const out = [t];
  for (let i = 0; i < out.length; i++) {
    for (const u of state.trials.values()) if (isPromotion(u) && u.proposed?.parentIds[0] === out[i]!.id) out.push(u);
  }
  return out;
}
