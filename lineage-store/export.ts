/**
 * A run for other experiment trackers (`research-agent export`): one neutral document, drawn
 * from the folded RunState alone, that lineage-store/export_writer.py turns into TensorBoard
 * event files, an MLflow store or W&B offline runs. The rule of what goes in:
 *
 * - every proposed trial, failed ones too (their tags say why): an MLflow child or a W&B run
 *   each; a trial without an evaluation has no curves;
 * - per seed, the per-epoch curves the runner recorded (LearningCurve): train and validation
 *   loss, the run's metric on validation (and on training where the runner measures it there:
 *   accuracy), the learning rate; epoch k is step k, from 1;
 * - a trial's params: its model_config and train_config as validated by the fold (defaults
 *   filled), flattened to dotted keys ("train.lr", "model.layers.0.type"); the proposal's own
 *   JSON text when it does not validate;
 * - its score: the pessimistic end of the validation metric's 95% interval, in the metric's
 *   units (core/objective.ts), the number the run ranks by; and the aggregated means; beside
 *   its parameter count, its latency per example where the runner timed it (swarm/front.ts);
 * - the best trial's confusion matrix (validation, its seeds' counts added), where the run has
 *   one (classification);
 * - the run's report in Markdown, and the numbers of the best trial's one-time test confirmation.
 *
 * Nothing here is computed that the stored events do not hold: a writer maps names, never numbers.
 */
import { DECISION, MUTATION, RUN_STATUS, VERDICT } from "../core/enums.js";
import { labelName } from "../core/failure.js";
import type { MetricName } from "../core/enums.js";
import { Mutation } from "../proto/gen/research/v1/common_pb.js";
import type { RunState } from "../swarm/run-state.js";
import { boundOf, confusionOf, metricCurves, paramsOf, rungOf, surfaceOf, trialFailure, trialStatus, type TrialState } from "../swarm/trial-state.js";
import { hypothesisMarkdown } from "./artifacts.js";
import { chosenBest } from "./report-json.js";
import { latencyOf, tradeOffsOf } from "../swarm/front.js";
import { modelSent, trainSent } from "../core/config-wire.js";

export const EXPORT_FORMATS = ["tensorboard", "mlflow", "wandb"] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** A flat mapping every tracker takes as params, hparams or config. */
export type Flat = Record<string, string | number | boolean>;

export interface ExportSeed {
  seed: number;
  epochs_completed: number;
  /** Per-epoch values by name (train_loss, val_loss, val_<metric>, train_<metric>, lr); index k is epoch k + 1. Only names the runner recorded. */
  curves: Record<string, number[]>;
  /** The seed's final metrics as the runner scored them (val_accuracy, val_loss, ...). */
  metrics: Record<string, number>;
  seconds: number;
}

export interface ExportTrial {
  trial_id: string;
  /** Proposal order, from 0. */
  index: number;
  parent_ids: string[];
  hypothesis: string;
  /** The run folder's hypothesis.md for this trial. */
  hypothesis_markdown: string;
  surface: string;
  mutation: string;
  proposer: string;
  /** proposed, assembled, evaluated, judged, or failed (lineage's trialStatus). */
  status: string;
  verdict: string | null;
  decision: string | null;
  failure_label: string | null;
  failure_message: string | null;
  /** How much training the trial had: its rung, its recipe's epochs and training subset (0: the whole split), its seeds. */
  fidelity: { rung: number; epochs: number | null; subset: number | null; seeds: number | null };
  best: boolean;
  params: Flat;
  num_params: number | null;
  /** Milliseconds per example at batch 1 on the device it ran on, the median of its seeds' (swarm/front.ts latencyOf); null: not timed. */
  latency_ms: number | null;
  /** The pessimistic end of the validation metric's 95% interval, in its units: what the run ranks by. */
  score: number | null;
  /** Aggregated over seeds: the mean of each metric the evaluation reports (val_accuracy, val_loss, ...). */
  metrics: Record<string, number>;
  seeds: ExportSeed[];
  /** The best trial's only, and only for classification. */
  confusion: { split: "validation"; seeds: number; class_names: string[]; counts: number[][] } | null;
  code: string;
  started_at_ms: number | null;
  ended_at_ms: number | null;
}

export interface ExportRun {
  run_id: string;
  goal: string;
  dataset: string;
  metric: MetricName;
  higher_is_better: boolean;
  /** The RunFinished status (goal_achieved, budget_exhausted, ...), or "unfinished". */
  status: string;
  reason: string;
  best_trial_id: string | null;
  started_at_ms: number | null;
  ended_at_ms: number | null;
  params: Flat;
  /** The best trial's one-time test confirmation: each aggregated metric's mean (test_accuracy, ensemble_test_accuracy, ...). */
  test: Record<string, number>;
  report_markdown: string;
  trials: ExportTrial[];
}

export interface ExportDocument {
  kind: "research-swarm.export";
  version: 1;
  runs: ExportRun[];
}

/** Nested JSON as dotted keys; an empty list or object stays, as "[]" or "{}", so no key vanishes. */
export function flatten(value: unknown, prefix = "", out: Flat = {}): Flat {
  if (value === null || value === undefined) {
    if (prefix) out[prefix] = "null";
  } else if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") {
    out[prefix] = value;
  } else if (typeof value === "object") {
    const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
    if (!entries.length && prefix) out[prefix] = Array.isArray(value) ? "[]" : "{}";
    for (const [k, v] of entries) flatten(v, prefix ? `${prefix}.${k}` : k, out);
  } else out[prefix] = String(value);
  return out;
}

/** A config as the trial was sent it, when the fold could not validate it (kept rather than lost); text is an old event's that was not JSON. */
function asSent(value: unknown): unknown {
  return typeof value === "string" ? { unparsed: value } : (value ?? {});
}

function paramsOfTrial(t: TrialState): Flat {
  const model = t.model ?? asSent(t.proposed && modelSent(t.proposed));
  const train = t.train ?? asSent(t.proposed && trainSent(t.proposed));
  return { ...flatten(model, "model"), ...flatten(train, "train") };
}

function seedsOf(t: TrialState): ExportSeed[] {
  const key = t.objective.metric;
  return (t.evaluated?.result?.seedResults ?? []).map((s) => {
    const c = s.learningCurve;
    const { val, train } = metricCurves(t.objective, c);
    const named: [string, number[]][] = [
      ["train_loss", c?.trainLoss ?? []],
      ["val_loss", c?.valLoss ?? []],
      [`val_${key}`, val],
      [`train_${key}`, train],
      ["lr", c?.lr ?? []],
    ];
    return {
      seed: s.seed,
      epochs_completed: s.epochsCompleted,
      curves: Object.fromEntries(named.filter(([, v]) => v.length)),
      metrics: { ...s.metrics },
      seconds: s.seconds,
    };
  });
}

/** One trial's part of the document; `best` (the run's best, if it has one yet) alone gets the confusion matrix. */
export function exportTrial(state: RunState, t: TrialState, best: TrialState | undefined): ExportTrial {
  const p = t.proposed;
  const f = trialFailure(t);
  const result = t.evaluated?.result;
  const isBest = t === best;
  const counts = isBest ? confusionOf(t) : [];
  return {
    trial_id: t.id,
    index: p?.index ?? state.order.indexOf(t.id),
    parent_ids: p?.parentIds ?? [],
    hypothesis: p?.hypothesis ?? "",
    hypothesis_markdown: p ? hypothesisMarkdown(t) : "",
    surface: surfaceOf(t),
    mutation: MUTATION.name(p?.mutation ?? Mutation.UNSPECIFIED) ?? "",
    proposer: p?.proposer ?? "",
    status: trialStatus(t),
    verdict: t.judged ? (VERDICT.name(t.judged.verdict) ?? null) : null,
    decision: t.judged ? (DECISION.name(t.judged.decision) ?? null) : null,
    failure_label: f ? labelName(f.label) : null,
    failure_message: f?.message || null,
    fidelity: { rung: rungOf(t), epochs: t.train?.epochs ?? null, subset: t.train?.subset ?? null, seeds: result?.numSeeds || null },
    best: isBest,
    params: paramsOfTrial(t),
    num_params: paramsOf(t) ?? null,
    latency_ms: latencyOf(t)?.mean ?? null,
    score: boundOf(t) ?? null,
    metrics: Object.fromEntries(Object.entries(result?.aggregated ?? {}).map(([k, s]) => [k, s.mean])),
    seeds: seedsOf(t),
    confusion: counts.length ? { split: "validation", seeds: result?.seedResults.length ?? 0, class_names: result?.classNames ?? [], counts } : null,
    code: t.assembled?.code ?? "",
    started_at_ms: t.firstAtMs ?? null,
    ended_at_ms: t.judged || f ? (t.lastAtMs ?? null) : null,
  };
}

/** One run's part of the document; `reportMarkdown` is its report (the run folder's, or one built so far). */
export function exportRun(state: RunState, reportMarkdown: string): ExportRun {
  const finished = state.runFinished;
  const best = chosenBest(state, finished);
  const g = state.goal;
  return {
    run_id: state.runId,
    goal: g?.rawText ?? "",
    dataset: g?.dataset ?? "",
    metric: state.objective.metric,
    higher_is_better: state.objective.higherIsBetter,
    status: finished ? (RUN_STATUS.name(finished.status) ?? "unfinished") : "unfinished",
    reason: finished?.reason ?? "",
    best_trial_id: best?.id ?? null,
    started_at_ms: state.startedAtMs || null,
    ended_at_ms: state.finishedAtMs || null,
    params: {
      ...flatten(
        g
          ? {
              dataset: g.dataset, metric: state.objective.metric, target: g.openEnded ? null : g.target, max_params: Number(g.maxParams) || null, time_budget_s: g.timeBudgetS || null, open_ended: g.openEnded,
              // A Pareto goal's costs traded off against the metric ("goal.trade_offs.0": "params"; "[]" for any other goal), and a latency limit.
              trade_offs: tradeOffsOf(state), max_latency_ms: g.maxLatencyMs || null,
            }
          : {},
        "goal",
      ),
      ...flatten(
        state.settings
          ? { max_trials: state.settings.maxTrials, seeds: state.settings.seeds, parallel: state.settings.parallel, planner: state.settings.planner, patience: state.settings.patience, subset: state.settings.subset, epochs: state.settings.epochs, research: state.settings.research, llm: state.settings.llm || "none" }
          : {},
        "settings",
      ),
    },
    test: Object.fromEntries(Object.entries(finished?.testResult?.aggregated ?? {}).filter(([k]) => k.startsWith("test_") || k.startsWith("ensemble_")).map(([k, s]) => [k, s.mean])),
    report_markdown: reportMarkdown,
    trials: state.order.map((id) => exportTrial(state, state.trials.get(id)!, best)),
  };
}

/**
 * `launch --export`'s lines to the writer (export_writer.py --follow): a trial as soon as it is
 * judged, with what of the run it needs; at the end the whole run, which adds the report, the
 * best trial's confusion matrix and any trial not sent yet.
 */
export type FollowLine = { run: Pick<ExportRun, "run_id" | "metric" | "started_at_ms">; trial: ExportTrial } | { run: ExportRun };

export function judgedLine(state: RunState, t: TrialState): FollowLine {
  return { run: { run_id: state.runId, metric: state.objective.metric, started_at_ms: state.startedAtMs || null }, trial: exportTrial(state, t, undefined) };
}

export function exportDocument(runs: ExportRun[]): ExportDocument {
  return { kind: "research-swarm.export", version: 1, runs };
}
