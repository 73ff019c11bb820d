/**
 * The best model against the run's starting point (launch --from), by one
 * rule (BASELINE_RULE): what the report says about "how much better than what
 * I had, and why", drawn from the folded run only.
 */
import { MUTATION } from "../core/enums.js";
import { argumentChanges } from "../core/model-config.js";
import { unifiedDiff } from "../core/diff.js";
import { pairedTTest } from "../core/stats.js";
import type { EvalResult, SeedResult } from "../proto/gen/research/v1/runner_pb.js";
import { baselineTrial, type RunState } from "../swarm/run-state.js";
import { meanOf, rungOf, type TrialState } from "../swarm/trial-state.js";

export const BASELINE_RULE =
  "trial 0 is the starting point trained on its own recipe with the run's seeds, and scored once on the test split with that training; the best trial (the rule above) is compared with it seed by seed, since every trial of a run trains with the same seeds: the gain is the mean of the per-seed differences, with Student's t 95% interval and two-sided p over them; validation from the two trials' evaluations, test from trial 0's and the best's one-time confirmation";

/** Per-seed values of `metric`, by seed. */
function bySeed(seeds: SeedResult[] | undefined, metric: string): Map<number, number> {
  const out = new Map<number, number>();
  for (const s of seeds ?? []) {
    const v = s.metrics[metric];
    if (v !== undefined) out.set(s.seed, v);
  }
  return out;
}

/** best - baseline over the seeds both have, in the metric's units (negative is better for a loss); null below two pairs. */
function paired(base: Map<number, number>, best: Map<number, number>) {
  const seeds = [...base.keys()].filter((s) => best.has(s)).sort((a, b) => a - b);
  if (seeds.length < 2) return null;
  const t = pairedTTest(seeds.map((s) => base.get(s)!), seeds.map((s) => best.get(s)!));
  const mean = (m: Map<number, number>) => seeds.reduce((sum, s) => sum + m.get(s)!, 0) / seeds.length;
  return { seeds, baseline_mean: mean(base), best_mean: mean(best), gain: t.meanDiff, ci_95: t.ci95, p: t.p };
}

type Flat = Record<string, unknown>;
function flatten(x: object, prefix = "", out: Flat = {}): Flat {
  for (const [k, v] of Object.entries(x)) {
    if (v && typeof v === "object" && !Array.isArray(v)) flatten(v, `${prefix}${k}.`, out);
    else out[`${prefix}${k}`] = v;
  }
  return out;
}

/** The recipe fields the best trial trains with differently, defaults filled on both sides. */
function recipeChanges(base: TrialState, best: TrialState) {
  const a = flatten(base.train ?? {});
  const b = flatten(best.train ?? {});
  return [...new Set([...Object.keys(a), ...Object.keys(b)])]
    .filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k]))
    .sort()
    .map((field) => ({ field, from: a[field] ?? null, to: b[field] ?? null }));
}

/** The best trial's line of first parents, oldest first: back to trial 0, or to the trial it started from. */
function ancestry(state: RunState, best: TrialState, base: TrialState): TrialState[] {
  const chain: TrialState[] = [];
  for (let t: TrialState | undefined = best; t && chain.length <= state.trials.size; t = t.proposed?.parentIds[0] ? state.trials.get(t.proposed.parentIds[0]) : undefined) {
    chain.unshift(t);
    if (t === base) break;
  }
  return chain;
}

/** The best trial's ancestry back to trial 0, each step with its measured change; null when it does not descend from trial 0. */
function pathTo(chain: TrialState[], base: TrialState) {
  if (chain[0] !== base) return null;
  return chain.map((t, i) => {
    const mean = meanOf(t);
    const parent = i > 0 ? meanOf(chain[i - 1]!) : undefined;
    return {
      trial_id: t.id,
      mutation: MUTATION.name(t.proposed?.mutation ?? 0) ?? "",
      hypothesis: t.proposed?.hypothesis ?? "",
      rung: rungOf(t),
      seeds: t.evaluated?.result?.seedResults.length ?? 0,
      val_mean: mean ?? null,
      // Between fidelities (a probe, a promotion) the change is the fidelity's as much as the edit's.
      change: mean !== undefined && parent !== undefined ? mean - parent : null,
      same_fidelity: i > 0 && rungOf(t) === rungOf(chain[i - 1]!),
    };
  });
}

export function baselineComparison(state: RunState, best: TrialState | undefined, bestTest: EvalResult | undefined) {
  const base = baselineTrial(state);
  if (!base) return null;
  const baseResult = base.evaluated?.result;
  const other = best && best !== base ? best : undefined;
  const chain = other && ancestry(state, other, base);
  // The run's metric, whichever way it is better: the gains are best - trial 0 in its units.
  const { key: val, metric } = state.objective;
  const test = `test_${metric}`;
  return {
    origin: state.start?.origin ?? "",
    rule: BASELINE_RULE,
    baseline_trial_id: base.id,
    baseline_val_mean: meanOf(base) ?? null,
    baseline_test_mean: baseResult?.aggregated[test]?.mean ?? null,
    best_trial_id: best?.id ?? null,
    val: other && baseResult ? paired(bySeed(baseResult.seedResults, val), bySeed(other.evaluated?.result?.seedResults, val)) : null,
    test: other && baseResult ? paired(bySeed(baseResult.seedResults, test), bySeed(bestTest?.seedResults, test)) : null,
    recipe_changes: other ? recipeChanges(base, other) : [],
    // A model in Python: the constructor arguments the best builds it with, against trial 0's.
    argument_changes: other && base.model && other.model ? argumentChanges(base.model, other.model, state.start?.code?.arguments ?? []) : [],
    model_diff: other && base.assembled?.code && other.assembled?.code ? unifiedDiff(base.assembled.code, other.assembled.code, `${base.id}/model_code.py`, `${other.id}/model_code.py`) : "",
    path: chain ? pathTo(chain, base) : null,
    // Where the best trial's line starts when not at trial 0 (a template after the starting point's edits fell behind).
    best_root: chain && chain[0] !== base ? { trial_id: chain[0]!.id, mutation: MUTATION.name(chain[0]!.proposed?.mutation ?? 0) ?? "" } : null,
  };
}
