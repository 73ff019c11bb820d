/**
 * The run's one rule for "best", and the words for it. Every part that names a best trial (the
 * judge, the planner, the console, the report, the dashboard) and the runner that decides which
 * trials' weights to keep rank with `outranks`, and every sentence that explains a pick comes
 * from `whyBest` over the same numbers, so what is said and what was done cannot drift apart.
 */
import type { EvalResult } from "../proto/gen/research/v1/runner_pb.js";
import { ACCURACY, formatMetric, pessimisticBound, utility, type Objective } from "./objective.js";

/** What ranking looks at in one evaluated trial. */
export interface Standing {
  /** Seeds evaluated. */
  seeds: number;
  /**
   * The pessimistic end of the 95% interval of the validation metric, as a utility (higher is
   * better): the lower bound of accuracy; minus the upper bound of a metric to minimise.
   */
  ciLow: number;
  /** Validation examples each seed was scored on (0 when unknown). */
  valExamples: number;
}

/** The rule in words, for the run's metric: "the accepted trial with the highest 95% CI lower bound on validation accuracy, ...". */
export function bestRule(o: Objective = ACCURACY): string {
  const bound = o.higherIsBetter ? "highest 95% CI lower bound" : "lowest 95% CI upper bound";
  return (
    `the accepted trial with the ${bound} on validation ${o.label}, among trials evaluated with at least 2 seeds ` +
    "(a one-seed probe's interval cannot see the spread between seeds, so one counts only while no accepted trial has two)"
  );
}

/** Whether a trial counts among the multi-seed ones, which outrank every one-seed probe. */
export const multiSeed = (s: Standing) => s.seeds >= 2;

/** Whether `a` ranks above `b` by the rule: multi-seed first, then the higher CI lower bound. */
export function outranks(a: Standing, b: Standing | undefined): boolean {
  if (b === undefined) return true;
  if (multiSeed(a) !== multiSeed(b)) return multiSeed(a);
  return a.ciLow > b.ciLow;
}

export function standingOf(result: EvalResult | undefined, goal: Objective = ACCURACY): Standing | undefined {
  const stats = result?.aggregated[goal.key];
  if (!result || !stats) return undefined;
  return { seeds: stats.n || result.seedResults.length, ciLow: utility(goal, pessimisticBound(goal, stats)), valExamples: result.seedResults[0]?.valExamples ?? 0 };
}

/** What an interval is made of: "3 seeds x 6,000 validation examples". */
export function intervalBasis(s: Pick<Standing, "seeds" | "valExamples">): string {
  const seeds = `${s.seeds} seed${s.seeds === 1 ? "" : "s"}`;
  return s.valExamples > 0 ? `${seeds} x ${s.valExamples.toLocaleString("en-US")} validation examples` : seeds;
}

/**
 * Why `best` is the best, in one sentence, from the rule and the runner-up it beat (the next
 * trial by the same rule). Says when the two were scored on validation sets of different sizes
 * (a probe on a slice of the training split carves its validation set out of that slice).
 */
export function whyBest(
  best: { id: string; standing: Standing },
  runnerUp: { id: string; standing: Standing } | undefined,
  accepted: number,
  o: Objective = ACCURACY,
): string {
  const pool = multiSeed(best.standing) ? "accepted trials with at least 2 seeds" : "accepted trials (none has 2 seeds or more, so one-seed probes count)";
  // A standing's bound is a utility: negated back into the metric's units for people.
  const bound = (s: Standing) => formatMetric(o, utility(o, s.ciLow));
  const rule = o.higherIsBetter ? `the highest 95% CI lower bound` : `the lowest 95% CI upper bound of ${o.label}`;
  const own = `${bound(best.standing)} (${intervalBasis(best.standing)})`;
  if (!runnerUp) return `Best by the run's rule, ${rule} of the ${pool}: ${own}, the only such trial of ${accepted} accepted.`;
  const other = runnerUp.standing;
  const below = multiSeed(best.standing) && !multiSeed(other) ? "; the runner-up is a one-seed probe, which ranks below every multi-seed trial whatever its bound" : "";
  const sets = best.standing.valExamples && other.valExamples && best.standing.valExamples !== other.valExamples ? "; the two were scored on different validation sets" : "";
  return `Best by the run's rule, ${rule} of the ${pool}: ${own} against ${bound(other)} (${intervalBasis(other)}) for the runner-up \`${runnerUp.id}\`${below}${sets}.`;
}

/** Whether an edit's hypothesis held, apart from whether the trial ran and was accepted. */
export type HypothesisOutcome = "supported" | "refuted" | "inconclusive";

/**
 * The run's one rule for a hypothesis: the change of the validation mean from the trial's parent,
 * both trained at the same fidelity (training examples and epochs), with a 95% interval taken
 * from the two trials' own intervals as independent estimates (half-width sqrt(a^2 + b^2), each a
 * seed spread and the validation set's sampling error). Supported when the whole interval is a
 * gain, refuted when it is a loss, inconclusive otherwise; `change` is a utility (+ is better).
 * `detectable` is the interval's half-width: the smallest change the two trials could resolve
 * (a one-seed probe on 1,000 examples resolves about 2.5 pp, nothing finer).
 */
export function hypothesisOutcome(
  child: { mean: number; ci95: readonly number[] },
  parent: { mean: number; ci95: readonly number[] },
  o: Objective = ACCURACY,
): { outcome: HypothesisOutcome; change: number; ci95: [number, number]; detectable: number } {
  const half = (s: { ci95: readonly number[] }) => (s.ci95.length === 2 ? (s.ci95[1]! - s.ci95[0]!) / 2 : 0);
  const change = utility(o, child.mean) - utility(o, parent.mean);
  const h = Math.hypot(half(child), half(parent));
  const ci95: [number, number] = [change - h, change + h];
  return { outcome: ci95[0] > 0 ? "supported" : ci95[1] < 0 ? "refuted" : "inconclusive", change, ci95, detectable: h };
}
