/**
 * What the run learned and where it stands, in the report and on the dashboard: the best trial's
 * classes, the findings by fixed rules over the lineage, and the next steps for whoever picks the
 * run up. report-json.ts puts them in report.json's document.
 */
import type { HypothesisOutcome } from "../core/ranking.js";
import { formatChange, formatHalfWidth } from "../core/objective.js";
import { int, points, pp } from "../core/format.js";
import { MUTATION, RUN_STATUS } from "../core/enums.js";
import { Mutation } from "../proto/gen/research/v1/common_pb.js";
import type { RunFinished } from "../proto/gen/research/v1/events_pb.js";
import type { RunState } from "../swarm/run-state.js";
import { confusionOf, perClassOf, trialStatus, valMetricOf, type TrialState } from "../swarm/trial-state.js";
import type { WeightsExport } from "./weights.js";

/** The best trial's confusion matrix: written only when it has one (a classification run). */
export const CONFUSION_PLOT = "plots/confusion.svg";

/** What the findings read of a trials-table row (report-json.ts trialRow): the edit and its outcome. */
export interface EditRow {
  trial_id: string;
  hypothesis_outcome: { outcome: HypothesisOutcome; change: number; detectable: number } | null;
}

/**
 * The best trial's classes on validation, weakest recall first: precision, recall and F1 (the
 * mean of its seeds') and the class each is most often taken for, from the confusion counts its
 * seeds summed; null for a run without classes (regression, text).
 */
export function classesJson(t: TrialState) {
  const names = t.evaluated?.result?.classNames ?? [];
  const counts = confusionOf(t);
  const scores = perClassOf(t);
  if (!scores.length || !counts.length) return null;
  const name = (i: number) => names[i] ?? String(i);
  const rows = scores.map((c) => {
    const row = counts[c.class_index] ?? [];
    const total = row.reduce((a, b) => a + b, 0);
    let other = -1;
    row.forEach((n, j) => {
      if (j !== c.class_index && n > 0 && (other < 0 || n > row[other]!)) other = j;
    });
    return {
      name: name(c.class_index),
      precision: c.precision,
      recall: c.recall,
      f1: c.f1,
      support: c.support,
      // The share of this class's examples (over every seed) predicted as that class.
      taken_for: other >= 0 && total > 0 ? { name: name(other), share: row[other]! / total } : null,
    };
  });
  return {
    split: "validation" as const,
    seeds: t.evaluated?.result?.seedResults.length ?? 0,
    rows: rows.sort((a, b) => a.recall - b.recall || a.name.localeCompare(b.name)),
    class_names: counts.map((_, i) => name(i)),
    confusion: counts,
    plot: CONFUSION_PLOT,
  };
}

/**
 * Where the run stands for whoever picks it up: the budget left, trials proposed and not judged,
 * what the best still needs, its weights, and the command that goes on from here.
 */
export function nextSteps(state: RunState, finished: RunFinished, rows: readonly EditRow[], best: TrialState | undefined, weights: WeightsExport | undefined) {
  const budget = state.goal?.timeBudgetS || 0;
  const workspace = state.settings?.workspace || "./workspace";
  const status = RUN_STATUS.name(finished.status) ?? "";
  const bestStats = best && valMetricOf(best);
  const seeds = bestStats?.n ?? 0;
  const runSeeds = state.settings?.seeds || 0;
  const tested = Boolean(finished.testResult?.aggregated[`test_${state.objective.metric}`]);
  const confirmation = !best
    ? "no model was accepted, so there is nothing to confirm"
    : seeds < 2
      ? `the best has ${seeds} seed: a claim needs it trained again with the run's ${runSeeds || "several"} seeds on the whole training split`
      : tested
        ? "confirmed: the best was measured once on the test split"
        : status === "running" || status === "interrupted"
          ? "the best has not been measured on the test split yet: the run's end does that once"
          : `the best was not measured on the test split: ${finished.testSkipped || "no confirmation was recorded"}`;
  const goalText = state.goal?.rawText ?? "";
  const command =
    status === "interrupted" || status === "running"
      ? `research-agent launch --resume ${state.runId} --workspace ${workspace}`
      : best
        ? `research-agent launch --from ${state.runId}/${best.id.slice(state.runId.length + 1)} --goal ${JSON.stringify(goalText)} --workspace ${workspace}`
        : `research-agent launch --goal ${JSON.stringify(goalText)} --workspace ${workspace}`;
  return {
    findings: findingsOf(state, rows, best),
    budget_left_s: budget ? Math.max(0, budget - finished.seconds) : null,
    pending: [...state.trials.values()].filter((t) => !t.judged && trialStatus(t) !== "failed").map((t) => ({ trial_id: t.id, hypothesis: t.proposed?.hypothesis ?? "" })),
    confirmation,
    weights: !best
      ? "none: no best model"
      : weights?.files.length
        ? `saved: ${weights.files.map((f) => f.path).join(", ")}${weights.failure ? ` (some seeds not: ${weights.failure.message})` : ""}`
        : weights?.failure
          ? `not saved: ${weights.failure.message}`
          : status === "running" || status === "interrupted"
            ? "not saved yet: the best trial's weights are fetched from the runner when the run ends"
            : "none recorded with this report",
    command,
  };
}

/** One finding: what it is about (the best trial's training, its classes, or the run's edits), what was found, and what to try next. */
export interface Finding {
  kind: "still_improving" | "overfitting" | "weak_class" | "held" | "hurt" | "unresolved";
  finding: string;
  next: string;
}

/** Edits named in one finding; the trials table has every one. */
const EDITS_NAMED = 3;

/**
 * What the run found and the experiment each finding suggests, by fixed rules over the lineage:
 * the best trial's convergence and train-validation gap as its evaluation read them
 * (gpu-runner/stats.ts), its weakest class (`classesJson`), and the edits whose hypotheses held,
 * hurt, or gained by less than their trials could resolve (`outcomeOf`, core/ranking.ts), with the
 * factor of seeds times examples that would resolve that gain (an interval narrows with the square
 * root of what it counts).
 */
export function findingsOf(state: RunState, rows: readonly EditRow[], best: TrialState | undefined): Finding[] {
  const o = state.objective;
  const out: Finding[] = [];
  const r = best?.evaluated?.result;
  if (best && r) {
    const epochs = best.train?.epochs ?? 0;
    if (r.convergence?.state === "improving") {
      out.push({
        kind: "still_improving",
        finding: `the best's validation ${o.label} still improved at its last epoch${epochs ? ` (its best epoch was ${r.convergence.bestEpoch} of ${epochs})` : ""}`,
        next: "train it longer: more epochs on the whole split (launch --from it with a larger --last-epochs)",
      });
    }
    const severity = r.overfitting?.severity ?? "none";
    if (severity === "moderate" || severity === "severe") {
      out.push({
        kind: "overfitting",
        finding: `the best fits its training data ${pp(r.overfitting!.gap)} better than validation (${severity})`,
        next: "regularise it: weight decay, dropout or augmentation",
      });
    }
    const weakest = classesJson(best)?.rows[0];
    if (weakest?.taken_for) {
      out.push({
        kind: "weak_class",
        finding: `${weakest.name} is the best's weakest class: recall ${points(weakest.recall, 1)}%, taken for ${weakest.taken_for.name} in ${points(weakest.taken_for.share, 1)}% of its examples`,
        next: `what tells ${weakest.name} from ${weakest.taken_for.name}: more of their examples, or augmentation that keeps their difference`,
      });
    }
  }
  const edits = rows.flatMap((row) => (row.hypothesis_outcome ? [{ row, h: row.hypothesis_outcome }] : []));
  // An edit by its trial and its kind (the trials table has its hypothesis in full).
  const edit = (id: string) => {
    const kind = MUTATION.name(state.trials.get(id)?.proposed?.mutation ?? Mutation.UNSPECIFIED);
    return kind ? `${id} (${kind.replaceAll("_", " ")})` : id;
  };
  const named = (xs: typeof edits) =>
    xs
      .slice(0, EDITS_NAMED)
      .map(({ row, h }) => `${edit(row.trial_id)} ${formatChange(o, h.change)}`)
      .join(", ") + (xs.length > EDITS_NAMED ? ` and ${xs.length - EDITS_NAMED} more` : "");
  const byGain = (a: (typeof edits)[number], b: (typeof edits)[number]) => b.h.change - a.h.change;
  const held = edits.filter((e) => e.h.outcome === "supported").sort(byGain);
  if (held.length) out.push({ kind: "held", finding: `edits that held: ${named(held)}`, next: "keep them: start the next run from a trial that has them" });
  const hurt = edits.filter((e) => e.h.outcome === "refuted").sort((a, b) => a.h.change - b.h.change);
  if (hurt.length) out.push({ kind: "hurt", finding: `edits that hurt: ${named(hurt)}`, next: "leave them out of what follows" });
  // Worth a second look: a gain at least a quarter of what its trials could resolve, which about
  // 16 times the seeds times examples would then resolve; a smaller one is not worth chasing here.
  const unresolved = edits.filter((e) => e.h.outcome === "inconclusive" && e.h.change > 0 && e.h.change >= e.h.detectable / 4).sort(byGain);
  if (unresolved.length) {
    const { h } = unresolved[0]!;
    const factor = Math.ceil((h.detectable / h.change) ** 2);
    out.push({
      kind: "unresolved",
      finding: `gains too small for their trials to resolve: ${named(unresolved)}`,
      next: `test the largest again where its interval can resolve it: about ${int(factor)} times the seeds times validation examples (its trials could resolve ±${formatHalfWidth(o, h.detectable)})`,
    });
  }
  return out;
}
