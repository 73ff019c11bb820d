/**
 * The run's one rule for "best", and the words for it. Every part that names a best trial (the
 * judge, the planner, the console, the report, the dashboard) and the runner that decides which
 * trials' weights to keep rank with `outranks`, and every sentence that explains a pick comes
 * from `whyBest` over the same numbers, so what is said and what was done cannot drift apart.
 */
import type { EvalResult, SeedResult } from "../proto/gen/research/v1/runner_pb.js";
import { tInterval, Z975 } from "./stats.js";
import { int } from "./format.js";
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
  return s.valExamples > 0 ? `${seeds} x ${int(s.valExamples)} validation examples` : seeds;
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

/** One trial's validation metric as the hypothesis rule reads it: its seeds' mean and interval, and the seeds themselves. */
export interface Evaluation {
  mean: number;
  ci95: readonly number[];
  seedResults?: readonly Pick<SeedResult, "metrics" | "valExamples" | "valCorrect">[];
}

export interface HypothesisTest {
  outcome: HypothesisOutcome;
  /** The change of the validation mean from the parent, as a utility (+ is better). */
  change: number;
  ci95: [number, number];
  /** The interval's half-width: the smallest change the two trials could resolve. */
  detectable: number;
  /** Validation examples the two were compared on example by example (0: compared by their intervals alone). */
  pairedExamples: number;
}

/**
 * The run's one rule for a hypothesis: the change of the validation mean from the trial's parent,
 * both trained at the same fidelity (training examples and epochs), with a 95% interval; supported
 * when the whole interval is a gain, refuted when it is a loss, inconclusive otherwise.
 *
 * Where both scored the same validation examples and every seed says which it got right (a
 * classifier's accuracy: SeedResult.val_correct), the two are compared example by example, as
 * McNemar's test does: the examples both get right or both get wrong carry no information about
 * the change, so its sampling error is the spread of the per-example differences d_j (each
 * trial's share of its seeds right on example j, child minus parent) over the N examples,
 * Z * sd(d) / sqrt(N), plus 1/N of continuity correction: with one seed each, b examples gained
 * and c lost are supported about when McNemar's corrected test, (b - c - 1)^2 / (b + c) > 3.84,
 * rejects at 5%. Each trial's seed spread (Student's t over its seeds, none with one seed) adds
 * in quadrature. Otherwise each trial's own interval counts as an independent estimate
 * (half-width sqrt(a^2 + b^2), each a seed spread and the validation set's sampling error),
 * which counts the error of the examples the two share twice.
 */
export function hypothesisOutcome(child: Evaluation, parent: Evaluation, o: Objective = ACCURACY): HypothesisTest {
  const change = utility(o, child.mean) - utility(o, parent.mean);
  const paired = o.metric === "accuracy" ? pairedSampling(child, parent) : undefined;
  const half = paired
    ? Math.hypot(seedHalf(child, o), seedHalf(parent, o), paired.half)
    : Math.hypot(halfWidth(child), halfWidth(parent));
  const ci95: [number, number] = [change - half, change + half];
  return { outcome: ci95[0] > 0 ? "supported" : ci95[1] < 0 ? "refuted" : "inconclusive", change, ci95, detectable: half, pairedExamples: paired?.examples ?? 0 };
}

const halfWidth = (s: { ci95: readonly number[] }) => (s.ci95.length === 2 ? (s.ci95[1]! - s.ci95[0]!) / 2 : 0);

/** The seed part of a trial's interval: Student's t over its seeds' values (none with one seed). */
const seedHalf = (e: Evaluation, o: Objective) => tInterval((e.seedResults ?? []).map((r) => r.metrics[o.key] ?? 0)).half;

/** The sampling half-width of the change, example by example, when both trials' seeds scored the same examples and say which they got right. */
function pairedSampling(child: Evaluation, parent: Evaluation): { half: number; examples: number } | undefined {
  const seeds = [...(child.seedResults ?? []), ...(parent.seedResults ?? [])];
  const n = seeds[0]?.valExamples ?? 0;
  const complete = (e: Evaluation) => (e.seedResults?.length ?? 0) > 0;
  if (!complete(child) || !complete(parent) || n < 2 || seeds.some((r) => r.valExamples !== n || r.valCorrect.length !== Math.ceil(n / 8))) return undefined;
  const share = (e: Evaluation) => {
    const out = new Float64Array(n);
    for (const r of e.seedResults!) for (let j = 0; j < n; j++) out[j]! += ((r.valCorrect[j >> 3]! >> (j & 7)) & 1) / e.seedResults!.length;
    return out;
  };
  const [c, p] = [share(child), share(parent)];
  const { sd } = tInterval(c.map((x, j) => x - p[j]!));
  return { half: (Z975 * sd) / Math.sqrt(n) + 1 / n, examples: n };
}
