/**
 * A run as the dashboard's API shows it (api.ts): pure functions of the run's
 * fold (swarm/run-state.ts) and what the fold does not keep, which the source
 * (source.ts) records beside it: when events happened and the live per-epoch
 * progress.
 */
import { INTERVENTION_KIND, RUN_STATUS } from "../core/enums.js";
import { labelName } from "../core/failure.js";
import { protoJson } from "../core/proto-json.js";
import { unifiedDiff } from "../core/diff.js";
import { jobsText } from "../core/format.js";
import { findingsOf } from "../lineage-store/report-findings.js";
import { runOfTrial } from "../core/ids.js";
import { isCodeModel } from "../core/model-config.js";
import { RunSettingsSchema, Verdict, type Event } from "../proto/gen/research/v1/events_pb.js";
import type { EpochProgress, MetricStats } from "../proto/gen/research/v1/runner_pb.js";
import { chosenBest, decisionName, frontJson, limitsJson, rowsOf, verdictName } from "../lineage-store/report-json.js";
import { inferenceJson } from "../lineage-store/report-model.js";
import { latencyOf, tradeOffsOf } from "../swarm/front.js";
import { baselineComparison } from "../lineage-store/baseline.js";
import type { Objective } from "../core/objective.js";
import { applyToRunState, inFlightCount, isTerminal, pastPriorOf, type RunState } from "../swarm/run-state.js";
import { boundOf, confusionOf, failureLabelOf, perClassOf, isBaseline, metricCurves, paramsOf, rungOf, scoreOf, standing, surfaceOf, trialFailure, trialStatus, valMetricOf, type TrialState } from "../swarm/trial-state.js";
import type { BestSoFarPoint, EpochJson, Fidelity, HeldOutTest, Interval, InterventionRow, LlmUse, ObjectiveJson, RunDetail, RunStatusText, RunSummary, SeedCurves, TrialDetail, TrialRow, WarmStartRow } from "./api.js";

/** One run as the source keeps it: the fold, and what the fold leaves out. */
export interface RunView {
  state: RunState;
  /** emitted_at of each trial's proposal and judgement, and of each intervention (with its event's trial). */
  proposedAt: Map<string, number>;
  judgedAt: Map<string, number>;
  interventions: Map<string, { at: number; trialId: string }>;
  /** Followed on the bus now. */
  live: boolean;
  /** Latest per-epoch progress of each trial still training, per seed; live only. */
  progress: Map<string, Map<number, EpochProgress>>;
}

export function emptyView(state: RunState): RunView {
  return { state, proposedAt: new Map(), judgedAt: new Map(), interventions: new Map(), live: false, progress: new Map() };
}

/** Applies one event to the run's fold and to what the view keeps beside it. */
export function applyToView(v: RunView, e: Event): RunView {
  applyToRunState(v.state, e);
  const at = Number(e.emittedAtMs);
  const b = e.body;
  switch (b.case) {
    case "trialProposed":
      if (!v.proposedAt.has(e.trialId)) v.proposedAt.set(e.trialId, at);
      break;
    case "trialEvaluated":
      // Its curves are in the result now; progress was only the view while it trained.
      v.progress.delete(e.trialId);
      break;
    case "trialJudged":
      if (!v.judgedAt.has(e.trialId)) v.judgedAt.set(e.trialId, at);
      v.progress.delete(e.trialId);
      break;
    case "runIntervention":
      v.interventions.set(b.value.interventionId, { at, trialId: e.trialId });
      break;
    default:
      break;
  }
  return v;
}

export function objectiveJson(o: Objective): ObjectiveJson {
  return { metric: o.metric, label: o.label, higher_is_better: o.higherIsBetter, proportion: o.proportion };
}

/** `{ [key]: value }`, typed as a number of the metric under its name (api.ts MetricNamed). */
export function named<K extends string, V>(key: K, value: V): Partial<Record<K, V>> {
  return { [key]: value } as Partial<Record<K, V>>;
}

/** `s` with what it counts: its seeds, and the examples each seed was scored on (0: unknown). */
function interval(s: MetricStats | undefined, examples = 0): Interval | null {
  return s ? { mean: s.mean, ci95: [s.ci95[0] ?? s.mean, s.ci95[1] ?? s.mean], n: s.n, examples } : null;
}

/** A trial's validation interval, with the validation examples each seed was scored on. */
function valInterval(t: TrialState): Interval | null {
  return interval(valMetricOf(t), standing(t)?.valExamples ?? 0);
}

/**
 * How the run stands. A run with no RunFinished that is not followed on the
 * bus has no swarm driving it: interrupted (`launch --resume` goes on), as
 * `research-agent runs` says.
 */
function statusOf(v: RunView): RunStatusText {
  if (v.state.runFinished) return (RUN_STATUS.name(v.state.runFinished.status) ?? "failed") as RunStatusText;
  if (!v.live) return "interrupted";
  if (v.state.stopRequested) return "stopping";
  return v.state.paused ? "paused" : "running";
}

/** The run's best: the one its RunFinished names (its test result belongs to it), else the fold's rule. */
export function runSummary(v: RunView, nowMs = Date.now()): RunSummary {
  const s = v.state;
  const g = s.goal;
  const best = chosenBest(v.state, v.state.runFinished);
  const bestVal = best && valInterval(best);
  const testKey = `test_${s.objective.metric}` as const;
  const test = best && best.id === v.state.runFinished?.bestTrialId ? v.state.runFinished.testResult?.aggregated[testKey]?.mean : undefined;
  const end = v.state.runFinished ? s.startedAtMs + v.state.runFinished.seconds * 1000 : v.live ? nowMs : v.state.lastEventMs;
  return {
    run_id: s.runId,
    goal: g?.description || g?.rawText || "",
    dataset: g?.dataset ?? "",
    target: g && !g.openEnded ? g.target : 0,
    open_ended: g?.openEnded ?? false,
    objective: objectiveJson(s.objective),
    status: statusOf(v),
    live: v.live,
    trials: s.order.length,
    judged: s.judgedCount,
    in_flight: inFlightCount(s),
    best: best && bestVal ? { trial_id: best.id, val: bestVal, ...named(testKey, test ?? null) } : null,
    started_at: s.startedAtMs,
    seconds: s.startedAtMs ? Math.max(0, (end - s.startedAtMs) / 1000) : 0,
    time_budget_s: g?.timeBudgetS ?? 0,
    trade_offs: tradeOffsOf(s),
    max_latency_ms: g?.maxLatencyMs || null,
  };
}

/** Fields of a layer that say how wide it is. */
const WIDTH_FIELDS = ["out_channels", "out_features", "dim"];

/** Numeric config values for parallel coordinates: the recipe's knobs, the model's depth and width, size and fidelity. */
function featuresOf(t: TrialState): Record<string, number> {
  const f: Record<string, number> = {};
  const train = t.train;
  if (train) {
    for (const k of ["lr", "batch_size", "epochs", "subset", "weight_decay", "label_smoothing", "momentum", "warmup_epochs", "grad_clip", "ema_decay"] as const) f[k] = train[k];
  }
  // A model in Python has no layers to read; its size is in params.
  const layers = t.model && !isCodeModel(t.model) ? t.model.layers : undefined;
  if (layers) {
    f.layers = layers.length;
    const widths = layers.flatMap((l) => WIDTH_FIELDS.map((k) => (l as Record<string, unknown>)[k]).filter((w): w is number => typeof w === "number"));
    if (widths.length) f.width = Math.max(...widths);
  }
  const params = paramsOf(t);
  if (params !== undefined) f.params = params;
  f.rung = rungOf(t);
  return f;
}

/** What the trial trains on: the EvaluateRequest the coder assembled, else its config with the defaults. */
function fidelityOf(t: TrialState, runSeeds: number): Fidelity {
  const req = t.assembled?.request;
  const train = t.train;
  return {
    rung: rungOf(t),
    subset: req?.dataset?.subset ?? train?.subset ?? 0,
    epochs: req?.recipe?.epochs || train?.epochs || 0,
    seeds: req?.seeds || t.proposed?.seeds || runSeeds,
  };
}

/** An epoch's progress as the API shows it; runners from before val_metric reported accuracy alone. */
export function epochJson(o: Objective, p: EpochProgress): EpochJson {
  return { epoch: p.epoch, epochs: p.epochs, ...named(o.key, p.valMetric || p.valAccuracy), seconds: p.seconds };
}

/** The lowest seed's latest epoch stands for the trial while it trains. */
function progressOf(v: RunView, t: TrialState): TrialRow["progress"] {
  const seeds = v.progress.get(t.id);
  if (!seeds?.size || t.evaluated) return null;
  return epochJson(t.objective, seeds.get(Math.min(...seeds.keys()))!);
}

export function trialRow(v: RunView, t: TrialState, position: number): TrialRow {
  const f = trialFailure(t);
  return {
    trial_id: t.id,
    index: position,
    parent_ids: t.proposed?.parentIds ?? [],
    surface: surfaceOf(t),
    baseline: isBaseline(t),
    hypothesis: t.proposed?.hypothesis ?? "",
    proposer: t.proposed?.proposer ?? "",
    params: paramsOf(t) ?? null,
    latency_ms: latencyOf(t)?.mean ?? null,
    fidelity: fidelityOf(t, v.state.settings?.seeds ?? 0),
    status: trialStatus(t),
    progress: progressOf(v, t),
    val: valInterval(t),
    verdict: t.judged ? verdictName(t.judged.verdict) : null,
    decision: t.judged ? decisionName(t.judged.decision) : null,
    failure_label: failureLabelOf(t) ?? null,
    failure_message: f?.message ?? null,
    proposed_at: v.proposedAt.get(t.id) ?? 0,
    judged_at: v.judgedAt.get(t.id) ?? null,
    features: featuresOf(t),
  };
}

/** The trials whose configs came from past runs (a warm start), with how each did here. */
function warmStartOf(s: RunState): WarmStartRow[] {
  return s.order.flatMap((id) => {
    const t = s.trials.get(id)!;
    const from = t.proposed?.informedBy ?? [];
    if (!from.length) return [];
    const weights = t.proposed!.informedWeights;
    const takes = t.proposed!.initWeights ? ("weights" as const) : ("config" as const);
    return [{ trial_id: id, past: from.map((p, i) => ({ run_id: runOfTrial(p), trial_id: p, weight: weights[i] ?? null })), takes, val: valInterval(t), verdict: t.judged ? verdictName(t.judged.verdict) : null }];
  });
}

/** After each judged trial, in judged order: the best accepted bound so far, in the metric's units (from the first accepted trial on). */
function bestSoFar(v: RunView): BestSoFarPoint[] {
  const judged = [...v.state.trials.values()].filter((t) => t.judged).sort((a, b) => a.judgedPosition! - b.judgedPosition!);
  const points: BestSoFarPoint[] = [];
  const boundKey = v.state.objective.higherIsBetter ? "best_ci_low" : "best_ci_high";
  let best: { score: number; trial: TrialState } | undefined;
  for (const t of judged) {
    // Scores are utilities (higher is better in either direction); the chart shows the bound itself.
    const score = t.judged!.verdict === Verdict.ACCEPT ? scoreOf(t) : undefined;
    if (score !== undefined && (!best || score > best.score)) best = { score, trial: t };
    if (!best) continue;
    const at = v.judgedAt.get(t.id);
    points.push({
      trial_id: t.id,
      judged: t.judgedPosition! + 1,
      t_s: at !== undefined && v.state.startedAtMs ? (at - v.state.startedAtMs) / 1000 : 0,
      ...named(boundKey, boundOf(best.trial)!),
      best_trial_id: best.trial.id,
    });
  }
  return points;
}

function failureCounts(state: RunState): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const t of state.trials.values()) {
    const label = failureLabelOf(t);
    if (label) counts[label] = (counts[label] ?? 0) + 1;
  }
  return counts;
}

function briefsOf(state: RunState): RunDetail["briefs"] {
  const adoptedBy = new Map<string, string[]>();
  for (const id of state.order) for (const c of state.trials.get(id)!.proposed?.adoptedConcepts ?? []) adoptedBy.set(c, [...(adoptedBy.get(c) ?? []), id]);
  return state.briefs.map((b, i) => ({
    title: b.summary_title,
    insights: b.insights,
    suggestions: b.architectural_suggestions.map((s) => ({ name: s.name, description: s.description, adopted_by: adoptedBy.get(s.name) ?? [] })),
    request_id: state.briefRequests[i] ?? "",
  }));
}

function llmOf(state: RunState): LlmUse[] {
  const roles = new Map<string, LlmUse>();
  for (const c of state.llmCalls) {
    const r = roles.get(c.role) ?? { role: c.role, calls: 0, prompt_tokens: 0, completion_tokens: 0, cost_usd: 0 };
    r.calls++;
    r.prompt_tokens += c.promptTokens;
    r.completion_tokens += c.completionTokens;
    r.cost_usd += c.costUsd;
    roles.set(c.role, r);
  }
  return [...roles.values()];
}

function interventionsOf(v: RunView): InterventionRow[] {
  return v.state.interventions.map((i) => {
    const meta = v.interventions.get(i.interventionId);
    return {
      intervention_id: i.interventionId,
      kind: INTERVENTION_KIND.name(i.kind) ?? "",
      who: i.who,
      reason: i.reason,
      trial_id: meta?.trialId ?? "",
      at: meta?.at ?? 0,
      hypothesis: i.hypothesis,
      taken_by: v.state.proposalTrials.get(i.interventionId) ?? null,
    };
  });
}

/** Why the run ended (the judge's words for it, RunFinished.reason) and the trial whose judgement ended it. */
function endingOf(v: RunView): Pick<RunDetail, "reason" | "ended_by"> {
  const reason = v.state.runFinished?.reason ?? "";
  const last = [...v.state.trials.values()].find((t) => t.judgedPosition === v.state.judgedCount - 1);
  return { reason, ended_by: last?.judged && isTerminal(last.judged.decision) ? last.id : null };
}

export function runDetail(v: RunView, nowMs = Date.now()): RunDetail {
  const s = v.state;
  const best = chosenBest(s, s.runFinished);
  return {
    ...runSummary(v, nowMs),
    settings: s.settings ? protoJson(RunSettingsSchema, s.settings) : {},
    paused: s.paused,
    runner_jobs: s.runnerJobs ? jobsText(s.runnerJobs) : null,
    trials_table: s.order.map((id, k) => trialRow(v, s.trials.get(id)!, k + 1)),
    best_so_far: bestSoFar(v),
    failures: failureCounts(s),
    briefs: briefsOf(s),
    llm: llmOf(s),
    interventions: interventionsOf(v),
    ...endingOf(v),
    report_path: v.state.runFinished?.reportPath || null,
    against_start: baselineComparison(s, best, s.runFinished?.testResult),
    warm_start: warmStartOf(s),
    past_prior: pastPriorOf(s) ?? null,
    front: frontJson(s, s.runFinished),
    limits: limitsJson(s, best),
    findings: findingsOf(s, rowsOf(s, best), best),
  };
}

/** The configs as one pretty JSON document, so a diff shows both. */
function configText(t: TrialState | undefined): string {
  return t ? `${JSON.stringify({ model_config: t.model ?? null, train_config: t.train ?? null }, null, 2)}\n` : "";
}

function seedCurves(t: TrialState): SeedCurves[] {
  return (t.evaluated?.result?.seedResults ?? []).map((r) => {
    const curves = metricCurves(t.objective, r.learningCurve);
    return {
      seed: r.seed,
      train_loss: r.learningCurve?.trainLoss ?? [],
      train_accuracy: r.learningCurve?.trainAccuracy ?? [],
      val_loss: r.learningCurve?.valLoss ?? [],
      val_accuracy: r.learningCurve?.valAccuracy ?? [],
      val_metric: curves.val,
      train_metric: curves.train,
      lr: r.learningCurve?.lr ?? [],
      metrics: { ...r.metrics },
      seconds: r.seconds,
    };
  });
}

/** The run's confirmation on the test split, which the judge makes for the best trial alone. */
function heldOutTest(v: RunView, t: TrialState): HeldOutTest | null {
  const r = v.state.runFinished?.bestTrialId === t.id ? v.state.runFinished.testResult : undefined;
  if (!r) return null;
  const metric = t.objective.metric;
  const key = `test_${metric}` as const;
  return {
    per_seed: interval(r.aggregated[key], r.seedResults[0]?.testExamples ?? 0),
    seeds: r.seedResults.flatMap((s) => {
      const value = s.metrics[key];
      return value === undefined ? [] : [{ seed: s.seed, ...named(metric, value) }];
    }),
    ensemble: interval(r.aggregated[`ensemble_${key}`]),
    inference: inferenceJson(r),
  };
}

export function trialDetail(v: RunView, trialId: string): TrialDetail | undefined {
  const s = v.state;
  const position = s.order.indexOf(trialId);
  const t = s.trials.get(trialId);
  if (!t || position < 0) return undefined;
  const parentId = t.proposed?.parentIds[0];
  const parent = parentId ? s.trials.get(parentId) : undefined;
  const summary = t.assembled?.summary;
  const analysis = t.evaluated?.analysis;
  const f = trialFailure(t);
  return {
    run_id: s.runId,
    objective: objectiveJson(t.objective),
    row: trialRow(v, t, position + 1),
    rationale: t.proposed?.rationale ?? "",
    adopted_concepts: t.proposed?.adoptedConcepts ?? [],
    informed_by: t.proposed?.informedBy ?? [],
    model_config: t.model ?? null,
    train_config: t.train ?? null,
    config_diff: parent ? unifiedDiff(configText(parent), configText(t), `${parent.id}/config.json`, `${t.id}/config.json`) : "",
    code: t.assembled?.code ?? "",
    code_diff: t.assembled?.diff ?? "",
    summary: summary
      ? {
          total_params: Number(summary.totalParams),
          flops: Number(summary.flops),
          size_mb: summary.sizeMb,
          layers: summary.layers.map((l) => ({ name: l.name, type: l.type, output_shape: l.outputShape.map(Number), params: Number(l.params) })),
        }
      : null,
    // The analyst's reading of the result; before there is one, the coder's prose about the model.
    narrative: analysis?.narrative || t.assembled?.summaryNarrative || "",
    seeds: seedCurves(t),
    class_names: t.evaluated?.result?.classNames ?? [],
    confusion_matrix: confusionOf(t),
    per_class: perClassOf(t),
    analysis: analysis ? { overfitting: analysis.overfitting, convergence: analysis.convergence, weak_classes: analysis.weakClasses, notes: analysis.notes } : null,
    judged_reason: t.judged?.reason ?? "",
    failure: f ? { label: labelName(f.label), message: f.message, traceback: f.traceback } : null,
    test: heldOutTest(v, t),
    children: s.order.filter((id) => s.trials.get(id)!.proposed?.parentIds.includes(trialId)),
  };
}
