/**
 * The end-of-run report: one Markdown page for people, one JSON document for
 * tools, and SVG plots beside them. Built from the folded RunState only, so
 * a report can be regenerated at any time from the replayed trajectory.
 */
import { adoptedConcepts, blocksOf } from "../core/brief.js";
import { INFERENCE_FILE, inferenceSpec, type InferenceSpec } from "./inference-spec.js";
import { describeSpace, spaceOf } from "../core/space.js";
import { lastEpochsOf } from "../core/defaults.js";
import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { bestRule, hypothesisOutcome, intervalBasis, whyBest, type HypothesisOutcome } from "../core/ranking.js";
import { COSTS, formatChange, formatMetric, objective, reaches, type Objective } from "../core/objective.js";
import { FRONT_RULE, frontOf, latencyOf, limitLatencyMs, pointOf, tradeOffsOf } from "../swarm/front.js";
import { nondominatedFronts } from "../core/pareto.js";
import { bestTrial, failureLabelOf, isPromotion, metricCurves, paramsOf, pastPriorOf, rankedTrials, scoreOf, standing, surfaceOf, trialFailure, trialStatus, valMetricOf, type RunState, type TrialState } from "../swarm/run-state.js";
import { labelName } from "../core/failure.js";
import { jobsText, points, pp } from "../core/format.js";
import { protoJson } from "../core/proto-json.js";
import { DECISION, INTERVENTION_KIND, RUN_STATUS, VERDICT, type DecisionName, type VerdictName } from "../core/enums.js";
import { Decision, RunnerJobsSchema, Verdict, type RunFinished } from "../proto/gen/research/v1/events_pb.js";
import type { EvalResult, InferenceTiming, MetricStats } from "../proto/gen/research/v1/runner_pb.js";
import { failuresSvg, frontSvg, learningCurvesSvg, scoresSvg, type ScorePoint } from "./plots.js";
import type { WeightsExport } from "./weights.js";
import { baselineComparison } from "./baseline.js";

let tmpCounter = 0;

/** Readers (people, `research-agent report`, a web view) never see a half-written file. */
export async function writeFileAtomic(path: string, content: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.${tmpCounter++}.tmp`;
  try {
    await writeFile(tmp, content);
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

/** A judgement without a verdict accepted nothing. */
export function verdictName(v: Verdict): VerdictName {
  return VERDICT.name(v) ?? "reject";
}

/** A judgement without a decision let the run go on. */
export function decisionName(d: Decision): DecisionName {
  return DECISION.name(d) ?? "iterate";
}

/** When each trial was judged, from the events or the registry; the report's timeline needs it. */
export interface ReportTiming {
  judgedAtMs: ReadonlyMap<string, number>;
}

export const PLOT_FILES = {
  scores: "plots/scores.svg",
  learningCurves: "plots/learning_curves.svg",
  failures: "plots/failures.svg",
} as const;
/** A Pareto goal's front against its first cost: written only for such a goal. */
export const FRONT_PLOT = "plots/front.svg";

// ---------- formatting ----------

const int = (n: number): string => n.toLocaleString("en-US");

/** A run time as the report and `research-agent runs` write it. */
export function duration(s: number): string {
  if (s < 90) return `${s.toFixed(1)} s`;
  if (s < 5400) return `${(s / 60).toFixed(1)} min`;
  return `${(s / 3600).toFixed(2)} h`;
}

/**
 * Text from users and LLMs must not break the page: no raw HTML, no line breaks in cells. Only
 * what could start a tag or an entity is escaped, so "0.91 >= 0.9" reads as it is written.
 */
function inline(text: string): string {
  return text.replace(/\s+/g, " ").trim().replace(/&(?=#?\w+;)/g, "&amp;").replace(/<(?=[A-Za-z!/?])/g, "&lt;");
}

function cell(text: string): string {
  return inline(text).replace(/\|/g, "\\|");
}

/** A hypothesis's outcome in the trials table: the change, and the smallest change the trials could resolve. */
function heldText(h: { outcome: string; change: number; detectable: number }, o: Objective): string {
  return `${h.outcome} (${formatChange(o, h.change)}; ±${formatChange(o, h.detectable).replace(/^\+/, "")})`;
}

/** Text cut to `max` characters at a word's end (a word longer than that is cut where it must be). */
function short(text: string, max = 64): string {
  const t = text.replace(/\s+/g, " ").trim();
  if (t.length <= max) return t;
  const cut = t.slice(0, max - 1);
  const space = cut.lastIndexOf(" ");
  return `${(space > max / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

function ciPair(s: MetricStats): [number, number] | null {
  return s.ci95.length === 2 ? [s.ci95[0]!, s.ci95[1]!] : null;
}

interface StatsJson {
  mean: number;
  std: number;
  ci_95: [number, number] | null;
  min: number;
  max: number;
  n: number;
}

function meanWithCi(s: StatsJson, o: Objective): string {
  const f = (v: number) => formatMetric(o, v);
  return s.ci_95 ? `${f(s.mean)} (95% CI ${f(s.ci_95[0])} – ${f(s.ci_95[1])})` : f(s.mean);
}

/** "91.20% ± 0.85" (points) for accuracy, "54.3 ± 6.1" in a regression's units. */
function meanPlusMinus(s: StatsJson | null, o: Objective): string {
  if (!s) return "—";
  const half = s.ci_95 ? (s.ci_95[1] - s.ci_95[0]) / 2 : undefined;
  return half === undefined ? formatMetric(o, s.mean) : `${formatMetric(o, s.mean)} ± ${o.proportion ? points(half) : formatMetric(o, half)}`;
}

function table(header: string[], rows: string[][]): string[] {
  return [`| ${header.join(" | ")} |`, `|${header.map(() => "---").join("|")}|`, ...rows.map((r) => `| ${r.join(" | ")} |`)];
}

function statsJson(s: MetricStats | undefined): StatsJson | null {
  return s ? { mean: s.mean, std: s.std, ci_95: ciPair(s), min: s.min, max: s.max, n: s.n } : null;
}

// ---------- the report's parts, as data ----------

/**
 * The briefs' suggestions a trial's configs hold, by the planner's one rule (core/brief.ts
 * adoptedConcepts), read again from the configs: a run recorded under an older rule is reported
 * under today's.
 */
function adoptedOf(state: RunState, t: TrialState): string[] {
  if (!t.model || !t.train) return t.proposed?.adoptedConcepts ?? [];
  const parent = state.trials.get(t.proposed?.parentIds[0] ?? "");
  return adoptedConcepts(state.briefs, blocksOf(t.model, t.train), parent && blocksOf(parent.model, parent.train)).map((a) => a.name);
}

function trialRow(state: RunState, t: TrialState, position: number) {
  const acc = valMetricOf(t);
  const f = trialFailure(t);
  return {
    position,
    index: t.proposed?.index ?? position - 1,
    trial_id: t.id,
    surface: surfaceOf(t),
    hypothesis: t.proposed?.hypothesis ?? "",
    parents: t.proposed?.parentIds ?? [],
    proposer: t.proposed?.proposer ?? "",
    adopted_concepts: adoptedOf(state, t),
    // Past trials (of other runs) whose configs it starts from: a warm start, evaluated here.
    informed_by: t.proposed?.informedBy ?? [],
    // Each one's weight (1/2 x exp(-distance of its dataset)), in the same order; empty in runs recorded before weights were.
    informed_weights: t.proposed?.informedWeights ?? [],
    // The kept weights its seeds started from (a training continued from a past run's, or from this run's own); null: its model's initialisation.
    init_weights: t.proposed?.initWeights ? { run_id: t.proposed.initWeights.runId, trial_id: t.proposed.initWeights.trialId } : null,
    params: paramsOf(t) ?? null,
    // Milliseconds per example at batch 1 on the device it ran on (swarm/front.ts latencyOf); null: not timed.
    latency_ms: latencyOf(t)?.mean ?? null,
    val_accuracy: statsJson(acc),
    num_seeds: t.evaluated?.result?.numSeeds ?? null,
    // Seeds its runner trained in one process (gpu-runner --seeds): 1 a job each; null before runners said.
    seeds_together: Math.max(0, ...(t.evaluated?.result?.seedResults ?? []).map((r) => r.seedsTogether)) || null,
    // Why a runner that trains seeds together trained these apart (a model vmap cannot run), or null.
    seeds_apart: t.evaluated?.result?.seedsApart || null,
    // What the interval is made of, with num_seeds (core/ranking.ts intervalBasis).
    val_examples: standing(t)?.valExamples ?? null,
    score: scoreOf(t) ?? null,
    verdict: t.judged ? verdictName(t.judged.verdict) : null,
    decision: t.judged ? decisionName(t.judged.decision) : null,
    reason: t.judged?.reason ?? "",
    gain: t.judged?.gain ?? null,
    failure_label: f ? labelName(f.label) : null,
    failure_message: f?.message ?? null,
    eval_seconds: t.evaluated ? t.evaluated.evalSeconds || t.evaluated.result?.seconds || null : null,
    judged_position: t.judgedPosition ?? null,
    // The same config trained again on more data, epochs or seeds: no hypothesis of its own, and its change no edit's gain.
    promotion: isPromotion(t),
    hypothesis_outcome: null as ReturnType<typeof outcomeOf>,
    best: false,
  };
}

/**
 * Whether the trial's hypothesis held (core/ranking.ts hypothesisOutcome): against its first
 * parent, both evaluated at the same training examples and epochs. None for a promotion, a
 * trial without an evaluated parent, or one trained at another fidelity than its parent.
 */
function outcomeOf(state: RunState, t: TrialState): { outcome: HypothesisOutcome; parent_id: string; change: number; ci_95: [number, number]; detectable: number } | null {
  const parent = state.trials.get(t.proposed?.parentIds[0] ?? "");
  const [own, theirs] = [valMetricOf(t), parent && valMetricOf(parent)];
  if (isPromotion(t) || !parent || !own || !theirs || !t.train || !parent.train) return null;
  if (t.train.subset !== parent.train.subset || t.train.epochs !== parent.train.epochs) return null;
  const h = hypothesisOutcome(own, theirs, t.objective);
  return { outcome: h.outcome, parent_id: parent.id, change: h.change, ci_95: h.ci95, detectable: h.detectable };
}

/** What a trial is, for people: "vgg-cnn, 170,218 parameters, adam lr 0.002, cosine schedule, batch 128, 2 epochs on 12,000 examples". */
function whatItIs(t: TrialState): string {
  const m = t.model;
  const r = t.train;
  const params = paramsOf(t);
  const parts = [
    m ? ("class_name" in m && m.class_name ? `${m.class_name} (your code)` : m.name || "model") : t.assembled?.className || "model",
    params !== undefined ? `${int(params)} parameters` : "",
    r ? `${r.optimizer} lr ${r.lr}` : "",
    r && r.schedule !== "none" ? `${r.schedule} schedule` : "",
    r ? `batch ${r.batch_size}` : "",
    r?.tta_hflip ? "flip-averaged predictions" : "",
    r ? `${epochsOf(t, r)} on ${r.subset ? `${int(r.subset)} examples` : "the whole training split"}` : "",
    keptOf(t),
  ];
  return parts.filter(Boolean).join(", ");
}

/** "3 epochs"; a training the clock stopped (its epochs an upper bound): "16 epochs in 737 s", as its seeds trained. */
function epochsOf(t: TrialState, r: NonNullable<TrialState["train"]>): string {
  const plural = (n: number | string) => `${n} epoch${n === 1 ? "" : "s"}`;
  if (!(r.train_seconds > 0)) return plural(r.epochs);
  const done = (t.evaluated?.result?.seedResults ?? []).map((s) => s.epochsCompleted).filter((e) => e > 0);
  const lo = Math.min(...done);
  const hi = Math.max(...done);
  return `${done.length ? plural(lo === hi ? lo : `${lo}-${hi}`) : `up to ${plural(r.epochs)}`} in ${duration(r.train_seconds)}`;
}

/** "its seeds' best validation epochs kept (81-120)", when a seed ended at an earlier epoch than its last (trainer.py _BestEpoch). */
function keptOf(t: TrialState): string {
  const seeds = (t.evaluated?.result?.seedResults ?? []).filter((s) => s.keptEpoch > 0);
  if (!seeds.some((s) => s.keptEpoch < s.epochsCompleted)) return "";
  const kept = seeds.map((s) => s.keptEpoch);
  const [lo, hi] = [Math.min(...kept), Math.max(...kept)];
  return `its seeds' best validation epochs kept (${lo === hi ? lo : `${lo}-${hi}`})`;
}

/** The trial's first-parent line back to where the run started, oldest first, each step with how it was made. */
function pathTo(state: RunState, t: TrialState): { trial_id: string; step: string }[] {
  const path: { trial_id: string; step: string }[] = [];
  const seen = new Set<string>();
  for (let at: TrialState | undefined = t; at && !seen.has(at.id); at = state.trials.get(at.proposed?.parentIds[0] ?? "")) {
    seen.add(at.id);
    const step = at.proposed?.lastTraining
      ? "the run's last long training"
      : isPromotion(at)
        ? "promotion"
        : at.proposed?.parentIds.length
          ? short(at.proposed.hypothesis, 80)
          : `start: ${short(at.proposed?.hypothesis ?? "", 80)}`;
    path.unshift({ trial_id: at.id, step });
  }
  return path;
}

type TrialRow = ReturnType<typeof trialRow>;

function countFailures(rows: TrialRow[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of rows) if (r.failure_label) counts[r.failure_label] = (counts[r.failure_label] ?? 0) + 1;
  return Object.fromEntries(Object.entries(counts).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])));
}

function surfaceStats(rows: TrialRow[], o: Objective) {
  const by = new Map<string, TrialRow[]>();
  for (const r of rows) by.set(r.surface || "(none)", [...(by.get(r.surface || "(none)") ?? []), r]);
  return [...by.entries()].map(([surface, rs]) => {
    // Gain only means something for an edit that produced a score: a promotion's change is more data, epochs or seeds.
    const gains = rs.filter((r) => r.verdict && r.val_accuracy && !r.promotion).map((r) => r.gain ?? 0);
    const outcomes = rs.flatMap((r) => (r.hypothesis_outcome ? [r.hypothesis_outcome.outcome] : []));
    const means = rs.flatMap((r) => (r.val_accuracy ? [r.val_accuracy.mean] : []));
    return {
      surface,
      trials: rs.length,
      judged: rs.filter((r) => r.verdict).length,
      accepted: rs.filter((r) => r.verdict === "accept").length,
      promotions: rs.filter((r) => r.promotion).length,
      supported: outcomes.filter((x) => x === "supported").length,
      refuted: outcomes.filter((x) => x === "refuted").length,
      failed: rs.filter((r) => r.failure_label).length,
      mean_gain: gains.length ? gains.reduce((a, b) => a + b, 0) / gains.length : null,
      best_val_accuracy: means.length ? (o.higherIsBetter ? Math.max(...means) : Math.min(...means)) : null,
    };
  });
}

function timeline(state: RunState, finished: RunFinished, timing: ReportTiming | undefined) {
  const judged = [...state.trials.values()].filter((t) => t.judged).sort((a, b) => a.judgedPosition! - b.judgedPosition!);
  const at = (t: TrialState | undefined) => {
    if (!t) return null;
    const ms = timing?.judgedAtMs.get(t.id);
    return {
      trial_id: t.id,
      trials_judged: t.judgedPosition! + 1,
      seconds: ms !== undefined && state.startedAtMs > 0 ? (ms - state.startedAtMs) / 1000 : null,
    };
  };
  return {
    first_accepted: at(judged.find((t) => t.judged!.verdict === Verdict.ACCEPT)),
    goal_reached: at(judged.find((t) => t.judged!.decision === Decision.GOAL_ACHIEVED)),
    total_seconds: finished.seconds,
  };
}

function testStats(r: EvalResult | undefined) {
  if (!r) return null;
  const metrics = Object.fromEntries(
    Object.entries(r.aggregated)
      .filter(([k]) => k.startsWith("test_") || k.startsWith("ensemble_"))
      .map(([k, s]) => [k, statsJson(s)]),
  );
  // A language model's text, from the seed the evaluation names best.
  const sample = r.seedResults.find((x) => x.seed === r.bestSeed)?.sample || null;
  return { num_seeds: r.numSeeds, metrics, sample, sample_seed: sample ? r.bestSeed : null, inference: inferenceJson(r) };
}

/** Milliseconds per forward pass of a batch: the median over seeds of each seed's median, the largest 90th percentile; on a GPU the largest allocator peak (MiB), else null. */
export interface InferenceTimingJson {
  batch: number;
  median_ms: number;
  p90_ms: number;
  peak_memory_mb: number | null;
  seeds: number;
}

/** What a model costs to run on the device it trained on (gpu-runner's measure_inference), in the report and the dashboard. */
export interface InferenceCostJson {
  device: string;
  batch_1: InferenceTimingJson | null;
  batch_eval: InferenceTimingJson | null;
  /** A model that trained on a GPU: one example on the host's CPU; null otherwise. */
  host_cpu_batch_1: InferenceTimingJson | null;
  flops_per_sample: number;
}

/** The confirmation's inference cost over its seeds; null when it did not measure it (a run from before it did). */
export function inferenceJson(r: EvalResult): InferenceCostJson | null {
  const costs = r.seedResults.map((s) => s.inference).filter((c) => c !== undefined);
  if (!costs.length) return null;
  const timing = (pick: (c: (typeof costs)[number]) => InferenceTiming | undefined): InferenceTimingJson | null => {
    const ts = costs.map(pick).filter((t) => t !== undefined);
    if (!ts.length) return null;
    const medians = ts.map((t) => t.medianMs).sort((a, b) => a - b);
    const peaks = ts.map((t) => t.peakMemoryMb).filter((m) => m !== undefined);
    return {
      batch: ts[0]!.batch,
      median_ms: medians[Math.floor((medians.length - 1) / 2)]!,
      p90_ms: Math.max(...ts.map((t) => t.p90Ms)),
      peak_memory_mb: peaks.length ? Math.max(...peaks) : null,
      seeds: ts.length,
    };
  };
  return {
    device: r.device?.kind ?? "",
    batch_1: timing((c) => c.batch1),
    batch_eval: timing((c) => c.batchEval),
    host_cpu_batch_1: timing((c) => c.hostCpuBatch1),
    flops_per_sample: Number(costs[0]!.flopsPerSample),
  };
}

/** The GPU memory a batch's passes held at most (weights included); nothing on a CPU, which counts none. */
function peakText(t: InferenceTimingJson): string {
  return t.peak_memory_mb === null ? "" : `; at most ${t.peak_memory_mb.toPrecision(3)} MiB of GPU memory for the batch, weights included`;
}

/** A language model's sample as a fenced block; the fence outruns any backticks the model wrote. */
function sampleLines(text: string, seed: number | null): string[] {
  const fence = "`".repeat(Math.max(3, ...[...text.matchAll(/`+/g)].map((m) => m[0].length + 1)));
  return ["", `Text the best model wrote (seed ${seed}), continuing the first row of the test split:`, "", `${fence}text`, text, fence];
}

/** The best trial's kept weights, and how to feed it (lineage-store/inference-spec.ts), when its evaluation said. */
function weightsJson(w: WeightsExport | undefined, spec: InferenceSpec | undefined) {
  if (!w) return null;
  const failure = w.failure ? { label: labelName(w.failure.label), message: w.failure.message } : null;
  return { class_name: w.className, init_kwargs: w.initKwargs, files: w.files, failure, seconds: w.seconds, inference: spec ?? null };
}

/** The snippet's lines that feed the model as the run did and read its outputs, from its inference spec. */
function predictLines(spec: InferenceSpec): string[] {
  const x = spec.input.standardise ? "(x.float() - mean) / std" : "x";
  const out = spec.test_time_flip_averaging ? `(model(z) + model(z.flip(-1))) / 2` : "model(z)";
  return [
    `  # How the run fed it (${INFERENCE_FILE}): inputs in the units of the dataset's files, standardised.`,
    `  spec = json.load(open("${INFERENCE_FILE}"))`,
    ...(spec.input.standardise
      ? ['  shape = [1, -1] + [1] * (len(spec["input"]["shape"]) - 1)', '  mean, std = (torch.tensor(spec["input"]["standardise"][k]).view(shape) for k in ("mean", "std"))']
      : []),
    "  def predict(x):  # a batch of raw inputs, e.g. an image's pixels 0-255 as read",
    "      with torch.no_grad():",
    `          z = ${x}`,
    `          out = ${out}${spec.test_time_flip_averaging ? "  # test-time flip averaging, as the run scored it" : ""}`,
    spec.output.kind.startsWith("scores")
      ? '      return [spec["output"]["classes"][i] for i in out.argmax(1).tolist()]'
      : '      return out.squeeze(-1) * spec["output"]["std"] + spec["output"]["mean"]',
  ];
}

/** Where the best trial's weights are and how to load one, or why they are not there. */
function weightsLines(w: NonNullable<ReturnType<typeof weightsJson>>): string[] {
  const why = w.failure ? `${w.failure.label}: ${inline(w.failure.message)}` : "";
  if (!w.files.length) return [`- Trained weights: not in the run folder (${why})`];
  const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MB`;
  // As Python writes them: numbers as they are, booleans capitalised.
  const kwargs = Object.entries(w.init_kwargs).map(([k, v]) => `${k}=${typeof v === "boolean" ? (v ? "True" : "False") : v}`).join(", ");
  return [
    `- Trained weights, as evaluation saw them (a state_dict per seed, beside the code): ${w.files.map((f) => `\`${f.path}\` (${mb(f.bytes)})`).join(", ")}${why ? `; the other seeds' are missing (${why})` : ""}. From the run folder:`,
    "",
    "  ```python",
    `  import ${w.inference ? "json, " : ""}sys, torch`,
    "  sys.path.insert(0, \"src/models\")",
    `  from current_model import ${w.class_name}`,
    `  model = ${w.class_name}(${kwargs})`,
    `  model.load_state_dict(torch.load("${w.files[0]!.path}", map_location="cpu"))`,
    "  model.eval()",
    ...(w.inference ? predictLines(w.inference) : []),
    "  ```",
    "",
  ];
}

function briefUse(state: RunState, rows: TrialRow[]) {
  const adoptedBy = new Map<string, string[]>();
  for (const r of rows) for (const c of r.adopted_concepts) adoptedBy.set(c, [...(adoptedBy.get(c) ?? []), r.trial_id]);
  return {
    briefs: state.briefs.map((b) => ({
      title: b.summary_title,
      insights: b.insights,
      suggestions: b.architectural_suggestions.map((s) => ({ name: s.name, buildable: s.buildable ?? null, adopted_by: adoptedBy.get(s.name) ?? [] })),
      sources: b.sources,
    })),
    adopted_concepts: Object.fromEntries(adoptedBy),
  };
}

/** Each resume at the run's live time then (the downtime before it, and before earlier ones, not counted). */
function resumesOf(state: RunState) {
  let down = 0;
  return state.resumes.map((r) => {
    down += r.downtimeS;
    return { at_s: (r.atMs - state.startedAtMs) / 1000 - down, downtime_s: r.downtimeS, time_budget_s: r.timeBudgetS || null };
  });
}

/** The rule's sentence for the run's best, against the next trial by the same rule. */
function whyBestOf(state: RunState, best: TrialState): string | null {
  const ranked = rankedTrials(state);
  const own = standing(best);
  if (!own) return null;
  const next = ranked.find((t) => t !== best);
  const other = next && standing(next);
  return whyBest({ id: best.id, standing: own }, next && other ? { id: next.id, standing: other } : undefined, ranked.length, state.objective);
}

/**
 * Where the run stands for whoever picks it up: the budget left, trials proposed and not judged,
 * what the best still needs, its weights, and the command that goes on from here.
 */
function nextSteps(state: RunState, finished: RunFinished, best: TrialState | undefined, weights: WeightsExport | undefined) {
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

/** The run's best: the one it ended with, else the rule's pick so far (a live run). */
export function chosenBest(state: RunState, finished: RunFinished | undefined): TrialState | undefined {
  return (finished?.bestTrialId && state.trials.get(finished.bestTrialId)) || bestTrial(state);
}

function scorePoints(rows: TrialRow[]): ScorePoint[] {
  return rows.map((r) => ({
    trialId: r.trial_id,
    mean: r.val_accuracy?.mean,
    ci95: r.val_accuracy?.ci_95 ?? undefined,
    accepted: r.verdict === "accept",
    best: r.best,
    failure: r.failure_label ?? undefined,
  }));
}

function rowsOf(state: RunState, best: TrialState | undefined): TrialRow[] {
  return state.order.map((id, k) => {
    const t = state.trials.get(id)!;
    return { ...trialRow(state, t, k + 1), hypothesis_outcome: outcomeOf(state, t), best: id === best?.id };
  });
}

// ---------- public API ----------

export interface Report {
  markdown: string;
  json: ReturnType<typeof reportJson>;
}

/** Tokens, latency, cost and outcomes of LLM calls, per role. */
function llmUse(state: RunState) {
  const roles = new Map<string, { calls: number; requests: number; prompt_tokens: number; completion_tokens: number; latency_ms: number; cost_usd: number; repaired: number; fallbacks: number }>();
  for (const c of state.llmCalls) {
    const r = roles.get(c.role) ?? { calls: 0, requests: 0, prompt_tokens: 0, completion_tokens: 0, latency_ms: 0, cost_usd: 0, repaired: 0, fallbacks: 0 };
    r.calls++;
    r.requests += c.requests;
    r.prompt_tokens += c.promptTokens;
    r.completion_tokens += c.completionTokens;
    r.latency_ms += c.latencyMs;
    r.cost_usd += c.costUsd;
    if (c.outcome === "repaired") r.repaired++;
    if (c.outcome === "fallback") r.fallbacks++;
    roles.set(c.role, r);
  }
  return {
    per_role: Object.fromEntries(roles),
    fallbacks: state.llmCalls.filter((c) => c.outcome === "fallback").map((c) => ({ role: c.role, purpose: c.purpose, error: c.error })),
  };
}

/** What people did to the run, with the trial each queued proposal became. */
function interventionsOf(state: RunState) {
  const cancelled = new Map([...state.cancelled].map(([trialId, v]) => [v.interventionId, trialId]));
  return state.interventions.map((v) => ({
    kind: INTERVENTION_KIND.name(v.kind) ?? "",
    who: v.who,
    reason: v.reason,
    trial_id: cancelled.get(v.interventionId) ?? null,
    hypothesis: v.hypothesis || null,
    taken_by: state.proposalTrials.get(v.interventionId) ?? null,
  }));
}

function reportJson(state: RunState, finished: RunFinished, rows: TrialRow[], best: TrialState | undefined, timing: ReportTiming | undefined, weights: WeightsExport | undefined) {
  const g = state.goal;
  const s = state.settings;
  const bestRow = rows.find((r) => r.best);
  return {
    run_id: state.runId,
    goal: g
      ? {
          raw_text: g.rawText, description: g.description, dataset: g.dataset, metric: objective(g.objective).key, open_ended: g.openEnded,
          target: (!g.openEnded && g.target) || null, max_params: Number(g.maxParams) || null, time_budget_s: g.timeBudgetS || null,
          trade_offs: tradeOffsOf(state), max_latency_ms: g.maxLatencyMs || null,
        }
      : null,
    outcome: {
      status: RUN_STATUS.name(finished.status) ?? "",
      reason: finished.reason,
      trials: finished.trials || state.judgedCount,
      seconds: finished.seconds,
      best_trial: bestRow && best ? { ...bestRow, what: whatItIs(best), path: pathTo(state, best), test: testStats(finished.testResult), weights: weightsJson(weights, inferenceSpec(best)) } : null,
      best_trial_id: best?.id ?? null,
      test_skipped: finished.testSkipped || null,
      resumes: resumesOf(state),
      runner_jobs: state.runnerJobs ? { ...protoJson(RunnerJobsSchema, state.runnerJobs), text: jobsText(state.runnerJobs) } : null,
      best_rule: bestRule(state.objective),
      why_best: best ? whyBestOf(state, best) : null,
    },
    next_steps: nextSteps(state, finished, best, weights),
    baseline: baselineComparison(state, best, finished.testResult),
    trials: rows,
    failures: countFailures(rows),
    surfaces: surfaceStats(rows, state.objective),
    timeline: timeline(state, finished, timing),
    research: briefUse(state, rows),
    front: frontJson(state, finished),
    limits: limitsJson(state, best),
    // Past runs' results in the planner's surrogate as prior observations (null: none).
    past_prior: pastPriorOf(state) ?? null,
    llm: llmUse(state),
    interventions: interventionsOf(state),
    settings: s
      ? {
          max_trials: s.maxTrials, seeds: s.seeds, parallel: s.parallel, planner: s.planner, patience: s.patience, subset: s.subset,
          epochs: s.epochs, last_epochs: lastEpochsOf(s), trial_time_budget_s: s.trialTimeBudgetS, rng_seed: s.rngSeed, workspace: s.workspace, research: s.research,
          llm: s.llm || "none", warm_start: !s.noWarmStart, warm_start_from: s.warmStartFrom,
        }
      : null,
    // What a person narrowed the search to (launch --space), one phrase per dimension; [] for the built-in space.
    search_space: describeSpace(spaceOf(s?.space)),
    plots: PLOT_FILES,
  };
}

/** A Pareto goal's front by its rule (swarm/front.ts), each trial's objectives with their intervals; null for any other goal. */
export function frontJson(state: RunState, finished?: RunFinished) {
  const f = frontOf(state);
  if (!f) return null;
  const long = [...state.trials.values()].filter((t) => t.proposed?.lastTraining);
  // The claims' own front: the long trainings no other long training dominates (FRONT_RULE's dominance, on validation).
  const longPoints = long.flatMap((t) => pointOf(state, t) ?? []);
  const onFront = new Set((nondominatedFronts(longPoints, f.axes)[0] ?? []).map((p) => p.id));
  // Each one's one-time test evaluation: the best's is the run's test result, the others' the front's.
  const testOf = (t: TrialState) => (t.id === finished?.bestTrialId ? finished.testResult : finished?.frontTests.find((x) => x.trialId === t.id)?.result);
  return {
    rule: FRONT_RULE,
    axes: f.axes.map((a) => ({ name: a.name, higher_is_better: a.higherIsBetter })),
    trials: f.trials.map(({ t, p, crowding }) => ({
      trial_id: t.id,
      values: p.values.map((v) => ({ mean: v.mean, low: v.low, high: v.high })),
      // NSGA-II's crowding distance on the front; null for its extremes (infinite).
      crowding: Number.isFinite(crowding) ? crowding : null,
    })),
    knee: f.knee?.id ?? null,
    // The front's trials trained again on the full split with the run's seeds (the run's last long training).
    trained_long: long.map((t) => {
      const test = testOf(t);
      return {
        trial_id: t.id,
        from: t.proposed!.parentIds[0] ?? "",
        val: statsJson(valMetricOf(t)),
        test: statsJson(test?.aggregated[`test_${state.objective.metric}`]),
        params: paramsOf(t) ?? null,
        latency_ms: latencyOf(t)?.mean ?? null,
        on_front: onFront.has(t.id),
      };
    }),
    plot: FRONT_PLOT,
  };
}

/**
 * What the goal's latency limit did: the trials timed within it, those the judge labelled
 * over_limit (never accepted), and the best, which is therefore the best within every limit.
 * null for a goal without a latency limit.
 */
export function limitsJson(state: RunState, best: TrialState | undefined) {
  const limit = state.goal?.maxLatencyMs ?? 0;
  if (!(limit > 0)) return null;
  const trials = state.order.flatMap((id) => state.trials.get(id) ?? []);
  return {
    max_latency_ms: limit,
    max_params: Number(state.goal?.maxParams ?? 0n) || null,
    // A trial the judge labelled over_limit stays over, even if a later, quieter timing of its model is within.
    within: trials.filter((t) => failureLabelOf(t) !== "over_limit" && (limitLatencyMs(state, t) ?? Infinity) <= limit).map((t) => t.id),
    over: trials.filter((t) => failureLabelOf(t) === "over_limit").map((t) => t.id),
    best_within: best?.id ?? null,
    // The latency the limit held the best to (limitLatencyMs): below its own seeds' median when
    // those were timed beside seeds still training, as a last long training's are.
    best_latency_ms: best ? (limitLatencyMs(state, best) ?? null) : null,
  };
}

/** The best model against the run's starting point: the gain seed by seed, what changed, and the path that changed it. */
function baselineSection(c: NonNullable<Report["json"]["baseline"]>, o: Objective): string[] {
  const show = (v: number | null) => (v !== null ? formatMetric(o, v) : "not measured");
  const change = (x: number) => formatChange(o, x);
  const out = ["## Against the starting point", "", `Trial 0, \`${c.baseline_trial_id}\`, is ${inline(c.origin)} on its own recipe: validation ${show(c.baseline_val_mean)}, test ${show(c.baseline_test_mean)}.`, ""];
  if (!c.best_trial_id || c.best_trial_id === c.baseline_trial_id) {
    out.push(c.best_trial_id ? "No trial beat it: the starting point stays the best model." : "No trial was accepted.", "");
    return out;
  }
  const gain = (name: string, g: typeof c.val) =>
    g
      ? `- ${name}: ${show(g.baseline_mean)} -> ${show(g.best_mean)}, ${change(g.gain)} (95% CI ${change(g.ci_95[0])} to ${change(g.ci_95[1])}, p = ${g.p.toPrecision(2)}, ${g.seeds.length} seeds paired)`
      : `- ${name}: not compared (fewer than two seeds measured on both)`;
  out.push(`The best trial \`${c.best_trial_id}\` against it, seed by seed:`, "", gain(`validation ${o.label}`, c.val), gain(`test ${o.label}`, c.test), "");
  out.push(`Rule: ${inline(c.rule)}.`, "");
  if (c.recipe_changes.length) {
    out.push("What changed in the recipe:", "", ...table(["field", "trial 0", "best"], c.recipe_changes.map((r) => [cell(r.field), cell(JSON.stringify(r.from)), cell(JSON.stringify(r.to))])), "");
  } else out.push("The recipe is trial 0's.", "");
  if (c.argument_changes.length) {
    out.push("What changed in the model's constructor arguments:", "", ...table(["argument", "trial 0", "best"], c.argument_changes.map((r) => [cell(r.name), cell(JSON.stringify(r.from)), cell(JSON.stringify(r.to))])), "");
  }
  if (!c.path) out.push(`The best trial does not descend from trial 0: the search found it from ${c.best_root ? `\`${c.best_root.trial_id}\` (${cell(c.best_root.mutation)})` : "elsewhere"}, after the starting point's edits fell behind.`, "");
  else {
    out.push(
      "How it got there (each trial from its parent; a change between fidelities is the longer training's as much as the edit's):",
      "",
      ...table(
        ["trial", "move", "hypothesis", "rung", "seeds", o.proportion ? "val acc" : `val ${o.label}`, "change"],
        c.path.map((p) => [`\`${p.trial_id}\``, cell(p.mutation), cell(short(p.hypothesis, 90)), String(p.rung), String(p.seeds), p.val_mean !== null ? formatMetric(o, p.val_mean) : "—", p.change !== null ? `${change(p.change)}${p.same_fidelity ? "" : " (fidelity)"}` : "—"]),
      ),
      "",
    );
  }
  out.push(c.model_diff ? "The model's code against trial 0's:" : "The model's code is trial 0's.", "");
  if (c.model_diff) out.push("```diff", c.model_diff.trimEnd(), "```", "");
  return out;
}

function frontSection(f: NonNullable<Report["json"]["front"]>, o: Objective): string[] {
  // The metric in its units with its interval, a count as a count, a measured cost with its spread.
  const value = (v: { mean: number; low: number; high: number }, i: number) =>
    i === 0
      ? `${formatMetric(o, v.mean)} [${formatMetric(o, v.low)}, ${formatMetric(o, v.high)}]`
      : f.axes[i]!.name === COSTS.params.label
        ? int(Math.round(v.mean))
        : `${v.mean.toPrecision(3)} [${v.low.toPrecision(3)}, ${v.high.toPrecision(3)}]`;
  const out = ["## Pareto front", "", `The front: ${inline(f.rule)}.`, ""];
  if (!f.trials.length) return [...out, "No trial is on the front yet.", ""];
  out.push(
    ...table(
      ["trial", ...f.axes.map((a, i) => `${i === 0 ? `val ${o.label}` : a.name} (${a.higher_is_better ? "higher" : "lower"} is better)`), "crowding"],
      f.trials.map((t) => [`\`${t.trial_id}\`${t.trial_id === f.knee ? " (knee)" : ""}`, ...t.values.map(value), t.crowding === null ? "extreme" : t.crowding.toFixed(2)]),
    ),
    "",
  );
  if (f.knee) out.push(`The knee, the balanced trade-off (the front's point closest to the ideal once each objective is scaled to the front's range): \`${f.knee}\`.`, "");
  for (const l of f.trained_long) {
    const cost = [l.params !== null ? `${int(l.params)} parameters` : "", l.latency_ms !== null ? `${l.latency_ms.toPrecision(3)} ms per example` : ""].filter(Boolean).join(", ");
    const dominated = l.on_front ? "" : " (dominated by another long training)";
    out.push(`- \`${l.trial_id}\` trained \`${l.from}\` on the full training split with the run's seeds: validation ${meanPlusMinus(l.val, o)}, test ${l.test ? meanPlusMinus(l.test, o) : "not measured"}${cost ? `; ${cost}` : ""}${dominated}`);
  }
  if (f.trained_long.length) out.push("");
  out.push(`![Pareto front](${f.plot})`, "");
  return out;
}

function limitsSection(l: NonNullable<Report["json"]["limits"]>): string[] {
  const ids = (xs: string[]) => (xs.length ? xs.map((id) => `\`${id}\``).join(", ") : "none");
  return [
    "## Limits",
    "",
    `Latency at most ${l.max_latency_ms} ms per example (batch 1, warm, on the runner's device; a trial's latency is the fastest seed median the run timed for its model, since a slot training beside a timing only slows it). A trial over it is labelled over_limit and not accepted (by the runner before it trains when its untrained model is timed over the limit by more than 25%, else by the judge on its trained model's timing), so the best trial is the best within every limit.`,
    "",
    `- Within the limit: ${l.within.length} (${ids(l.within)})`,
    `- Over it: ${l.over.length} (${ids(l.over)})`,
    `- The best within every limit: ${l.best_within ? `\`${l.best_within}\`` : "none"}`,
    "",
  ];
}

type ReportJson = Report["json"];

function goalSection(j: ReportJson, o: Objective): string[] {
  const out = ["## Goal", ""];
  if (!j.goal) return [...out, "No run_started event was recorded.", ""];
  const show = (v: number) => formatMetric(o, v);
  if (j.goal.raw_text) out.push(`> ${inline(j.goal.raw_text)}`, "");
  if (j.goal.description) out.push(`Understood as: ${inline(j.goal.description)}.`, "");
  out.push(
    ...table(
      ["", ""],
      [
        ["dataset", cell(j.goal.dataset || "—")],
        ["metric", cell(j.goal.metric)],
        ["target", j.goal.target ? show(j.goal.target) : j.goal.open_ended ? "none (open-ended: the best model within the limits)" : "none"],
        ["max parameters", j.goal.max_params ? int(j.goal.max_params) : "no limit"],
        ["max latency", j.goal.max_latency_ms ? `${j.goal.max_latency_ms} ms per example (batch 1, on the runner's device)` : "no limit"],
        ...(j.goal.trade_offs.length ? [["Pareto objectives", `${o.label} vs ${j.goal.trade_offs.map((c) => COSTS[c].label).join(" vs ")}`]] : []),
        ["time budget", j.goal.time_budget_s ? duration(j.goal.time_budget_s) : "no limit"],
      ],
    ),
    "",
  );
  return out;
}

/** The outcome: the run's status and time, its runner jobs, an open-ended run's answer, then its best trial. */
function outcomeSection(state: RunState, finished: RunFinished, j: ReportJson): string[] {
  const o = state.objective;
  const out = ["## Outcome", "", `**Status:** ${cell(RUN_STATUS.name(finished.status) ?? "unknown")}${finished.reason ? `: ${inline(finished.reason)}` : ""}`, ""];
  out.push(`Trials judged: ${j.outcome.trials}; run time: ${duration(finished.seconds)}${state.resumes.length ? " live (the time between an interruption and its resume is not counted)" : ""}.`, "");
  for (const r of j.outcome.resumes) {
    out.push(`- Interrupted, then resumed at ${duration(r.at_s)} of live time after ${duration(r.downtime_s)} down${r.time_budget_s ? `; the time budget became ${duration(r.time_budget_s)}` : ""}.`);
  }
  if (j.outcome.resumes.length) out.push("");
  const jobs = state.runnerJobs;
  if (jobs) out.push(`Runners: Slurm jobs, ${jobsText(jobs)} when last recorded${jobs.ended ? " (a job that ended while the run had budget left was submitted again)" : ""}.`, "");
  const b = j.outcome.best_trial;
  if (j.goal?.open_ended) {
    // With no target, the run's answer is the best model itself; say so before the details.
    const found = b?.val_accuracy ? `the best model found is \`${b.trial_id}\`, validation ${o.label} ${meanWithCi(b.val_accuracy, o)}` : "no model was accepted";
    const test = b?.test?.metrics[`test_${o.metric}`];
    const ensemble = b?.test?.metrics[`ensemble_test_${o.metric}`];
    out.push(
      `No target was set, so there is no goal to meet or miss: ${found}${test ? `; test ${o.label}, measured once on the held-out test split: ${meanWithCi(test, o)}` : ""}${ensemble ? ` per seed, ${meanWithCi(ensemble, o)} for the ensemble of its ${b!.test!.num_seeds} seeds` : ""}.`,
      "",
    );
  }
  return [...out, ...(b ? bestTrialLines(b, finished, j, o) : ["No trial was accepted.", ""])];
}

type BestTrialJson = NonNullable<ReportJson["outcome"]["best_trial"]>;

/** The best trial: its path, interval against the target, parameters, latency, test and ensemble scores, inference cost, weights and a sample. */
function bestTrialLines(b: BestTrialJson, finished: RunFinished, j: ReportJson, o: Objective): string[] {
  const show = (v: number) => formatMetric(o, v);
  const out = [`**Best trial:** \`${b.trial_id}\`: ${inline(b.what)}`, ""];
  const acc = b.val_accuracy;
  out.push(`- Path: ${b.path.map((p) => `\`${p.trial_id}\` (${inline(p.step)})`).join(" → ")}`);
  if (acc) {
    const seeds = acc.n || b.num_seeds || 0;
    // A spread needs two seeds: one seed's interval is the validation set's sampling error alone.
    const spread = seeds >= 2 ? `, std ${o.proportion ? pp(acc.std) : show(acc.std)}` : "";
    out.push(`- Validation ${o.label}: ${meanWithCi(acc, o)}${spread}; the interval counts ${intervalBasis({ seeds, valExamples: b.val_examples ?? 0 })}`);
    if (j.outcome.why_best) out.push(`- ${inline(j.outcome.why_best)}`);
    const target = j.goal?.target;
    if (target && acc.ci_95) {
      const bound = o.higherIsBetter ? acc.ci_95[0] : acc.ci_95[1];
      out.push(
        seeds < 2
          ? `- The ${show(target)} target cannot be met by a one-seed trial: the goal needs the 95% CI ${o.higherIsBetter ? "lower" : "upper"} bound over 2 seeds or more (this trial's, over its one seed, is ${show(bound)})`
          : `- 95% CI ${o.higherIsBetter ? "lower" : "upper"} bound ${show(bound)} against the ${show(target)} target: ${reaches(o, bound, target) ? "met" : "not met"}`,
      );
    }
  }
  out.push(`- Parameters: ${b.params !== null ? int(b.params) : "unknown"}`);
  if (b.seeds_together && b.seeds_together > 1) out.push(`- Its seeds trained together, ${b.seeds_together} in one process (stacked and vmapped, each with its own initialisation and data order)`);
  if (b.seeds_apart) out.push(`- Its seeds trained a process each: ${inline(b.seeds_apart)}`);
  // One latency per example: the test confirmation's timing below when there is one, unless a
  // latency limit holds the best (whose rule reads the evaluations' fastest seed median).
  const confirmedTiming = !!b.test?.inference?.batch_1;
  if (b.latency_ms !== null && (!confirmedTiming || j.limits?.best_within === b.trial_id)) {
    const l = j.limits;
    const held = l?.best_within === b.trial_id && l.best_latency_ms !== null ? `; the goal's limit of ${l.max_latency_ms} ms holds it to ${l.best_latency_ms.toPrecision(3)} ms, the fastest seed median the run timed for its model (see Limits)` : "";
    out.push(`- Latency: ${b.latency_ms.toPrecision(3)} ms per example (batch 1, warm, on the device it ran on; median of its seeds)${held}`);
  }
  const test = b.test?.metrics[`test_${o.metric}`];
  out.push(
    test
      ? `- Held-out test ${o.label} (one-time confirmation on the test split, never used in search): ${meanWithCi(test, o)} over ${b.test!.num_seeds} seeds`
      : `- Held-out test ${o.label}: not measured: ${finished.testSkipped ? inline(finished.testSkipped) : "no confirmation on the test split was recorded"}`,
  );
  const ensemble = b.test?.metrics[`ensemble_test_${o.metric}`];
  const ensembleVal = b.test?.metrics[`ensemble_val_${o.metric}`];
  if (ensemble) {
    out.push(
      `- Ensemble of its ${b.test!.num_seeds} seeds (mean of their ${o.proportion ? "probabilities" : "predictions"}, no extra training): test ${meanWithCi(ensemble, o)}${ensembleVal ? `, validation ${show(ensembleVal.mean)}` : ""}`,
    );
  }
  const cost = b.test?.inference;
  if (cost?.batch_1 && cost.batch_eval) {
    const per = (t: { batch: number; median_ms: number }) => `${(t.median_ms / t.batch).toPrecision(2)} ms an example`;
    out.push(
      `- Inference on the ${cost.device || "device"} it trained on (median of its seeds, each timed warm beside the others): ${cost.batch_1.median_ms.toPrecision(2)} ms for one example; ${cost.batch_eval.median_ms.toPrecision(3)} ms for a batch of ${cost.batch_eval.batch} (${per(cost.batch_eval)}); ${(cost.flops_per_sample / 1e6).toPrecision(3)} MFLOPs an example${peakText(cost.batch_eval)}${cost.host_cpu_batch_1 ? `; ${cost.host_cpu_batch_1.median_ms.toPrecision(2)} ms for one example on the host's CPU` : ""}`,
    );
  }
  if (b.weights) out.push(...weightsLines(b.weights));
  if (b.test?.sample) out.push(...sampleLines(b.test.sample, b.test.sample_seed));
  out.push("", `![learning curves of the best trial](${PLOT_FILES.learningCurves})`, "");
  return out;
}

function trialsSection(state: RunState, j: ReportJson): string[] {
  const o = state.objective;
  return [
    "## Trials",
    "",
    `![score per trial](${PLOT_FILES.scores})`,
    "",
    ...table(
      ["#", "trial", "surface", "hypothesis", "params", o.proportion ? "val acc (mean ± 95% CI, pp)" : `val ${o.label} (mean ± 95% CI)`, "seeds x val examples", "held?", "verdict", "failure", "eval time"],
      j.trials.map((r) => [
        String(r.position),
        `\`${r.trial_id}\`${r.best ? " ★" : ""}`,
        cell(r.surface || "—"),
        cell(short(shortIds(r.hypothesis, state.runId)) || "—"),
        r.params !== null ? int(r.params) : "—",
        meanPlusMinus(r.val_accuracy, o),
        r.num_seeds ? `${r.num_seeds} x ${r.val_examples ? int(r.val_examples) : "?"}` : "—",
        r.promotion ? "promotion" : r.hypothesis_outcome ? heldText(r.hypothesis_outcome, o) : "—",
        // A trial that failed (cancelled at the run's end) is never judged: its failure says why.
        r.verdict ?? (r.failure_label ? "—" : "pending"),
        r.failure_label ?? "",
        r.eval_seconds !== null ? duration(r.eval_seconds) : "—",
      ]),
    ),
    "",
    `"held?" is whether the trial's hypothesis held (core/ranking.ts): the change of its validation mean from its first parent trained at the same examples and epochs, with a 95% interval from the two trials' intervals; supported when the interval is all gain, refuted when all loss, else inconclusive; after ± the smallest change the two trials could resolve (the interval's half-width), so an inconclusive edit smaller than it is one the trials were too small to see; a promotion trains the same config on more data, epochs or seeds and tests no hypothesis. "verdict" is the judge's: accept means the trial ran and its score counts towards the best, whether or not its change helped.`,
    "",
  ];
}

function failuresSection(j: ReportJson): string[] {
  const failures = Object.entries(j.failures);
  return [
    "## Failures by label",
    "",
    ...(failures.length ? [...table(["label", "trials"], failures.map(([label, n]) => [label, String(n)])), "", `![failures by label](${PLOT_FILES.failures})`, ""] : ["No trial failed.", ""]),
  ];
}

function surfacesSection(j: ReportJson, o: Objective): string[] {
  const show = (v: number) => formatMetric(o, v);
  return [
    "## Surfaces",
    "",
    ...table(
      ["surface", "trials", "promotions", "accepted", "supported", "refuted", "failed", o.proportion ? "mean gain of edits (pp)" : `mean gain of edits (${o.label}, + is better)`, o.proportion ? "best val acc" : `best val ${o.label}`],
      j.surfaces.map((s) => [
        cell(s.surface),
        String(s.trials),
        String(s.promotions),
        String(s.accepted),
        String(s.supported),
        String(s.refuted),
        String(s.failed),
        s.mean_gain !== null ? `${s.mean_gain >= 0 ? "+" : ""}${o.proportion ? points(s.mean_gain) : show(s.mean_gain)}` : "—",
        s.best_val_accuracy !== null ? show(s.best_val_accuracy) : "—",
      ]),
    ),
    "",
  ];
}

function timelineSection(j: ReportJson): string[] {
  const when = (m: ReturnType<typeof timeline>["first_accepted"]) =>
    m ? `\`${m.trial_id}\`, after ${m.trials_judged} judged trial${m.trials_judged === 1 ? "" : "s"}${m.seconds !== null ? ` and ${duration(m.seconds)}` : ""}` : "never";
  return [
    "## Timeline",
    "",
    `- First accepted trial: ${when(j.timeline.first_accepted)}`,
    ...(j.goal?.open_ended ? [] : [`- Goal reached: ${when(j.timeline.goal_reached)}`]),
    `- Run finished after ${duration(j.timeline.total_seconds)}`,
    "",
  ];
}

function briefsSection(j: ReportJson): string[] {
  const out = ["## Research briefs", ""];
  if (j.research.briefs.length) {
    for (const brief of j.research.briefs) {
      out.push(`### ${inline(brief.title)}`, "");
      for (const i of brief.insights) out.push(`- ${inline(i)}`);
      for (const s of brief.suggestions) {
        out.push(`- Suggestion **${inline(s.name)}**: ${s.adopted_by.length ? `adopted by ${s.adopted_by.map((id) => `\`${id}\``).join(", ")}` : "not adopted"}`);
      }
      if (brief.sources.length) out.push(`- Sources: ${brief.sources.map((src) => `[${inline(src.title).replace(/[[\]]/g, "")}](${encodeURI(src.url)})`).join("; ")}`);
      out.push("");
    }
  } else out.push("No research brief was used.", "");
  const adopted = Object.entries(j.research.adopted_concepts);
  if (adopted.length) {
    out.push(...table(["concept adopted", "trials"], adopted.map(([c, ids]) => [cell(c), ids.map((id) => `\`${id}\``).join(", ")])), "");
  }
  return out;
}

function warmStartSection(j: ReportJson, o: Objective): string[] {
  const warm = j.trials.filter((r) => r.informed_by.length);
  const prior = j.past_prior;
  if (!warm.length && !prior) return [];
  const out = ["## Warm start", ""];
  out.push("What this run took from past runs (launch --no-warm-start turns this off). A past result weighs 1/2 x exp(-d), d the distance between its dataset and this run's (0: the same description); each of this run's own results weighs 1. No past score counts as this run's.", "");
  if (prior) {
    out.push(`- The surrogate held up to ${prior.observations} past results as prior observations (summed weight ${prior.weight.toFixed(2)}) when it proposed ${prior.trials} of this run's trials.`, "");
  }
  if (warm.length) {
    const from = (r: (typeof warm)[number]) => r.informed_by.map((id, i) => `\`${id}\`${r.informed_weights[i] === undefined ? "" : ` (weight ${r.informed_weights[i]!.toFixed(2)})`}`).join(", ");
    out.push("Trials that start from a past run's config, or continue its training from the weights it kept, each evaluated here:", "");
    out.push(...table(["trial", "from past trials", "takes", "here: val (mean ± 95% CI)", "verdict"], warm.map((r) => [`\`${r.trial_id}\``, from(r), r.init_weights ? "trained weights" : "config", meanPlusMinus(r.val_accuracy, o), r.verdict ?? "—"])), "");
  }
  const chained = j.trials.filter((r) => r.init_weights && !r.informed_by.length);
  for (const r of chained) out.push(`- \`${r.trial_id}\` continues the training of \`${r.init_weights!.trial_id}\` from its kept weights.`);
  if (chained.length) out.push("");
  return out;
}

function llmSection(j: ReportJson): string[] {
  const llmRoles = Object.entries(j.llm.per_role);
  if (!llmRoles.length) return ["## LLM use", "", "No LLM was used: the built-in brain drove every role.", ""];
  return [
    "## LLM use",
    "",
    ...table(
      ["role", "calls", "HTTP requests", "prompt tokens", "completion tokens", "latency", "cost (USD)", "repaired", "fell back"],
      llmRoles.map(([role, r]) => [role, String(r.calls), String(r.requests), String(r.prompt_tokens), String(r.completion_tokens), `${(r.latency_ms / 1000).toFixed(1)} s`, r.cost_usd.toFixed(4), String(r.repaired), String(r.fallbacks)]),
    ),
    "",
    ...j.llm.fallbacks.map((f) => `- ${f.role}/${f.purpose} fell back to the built-in brain: ${inline(f.error)}`),
    "",
  ];
}

function interventionsSection(j: ReportJson): string[] {
  if (!j.interventions.length) return [];
  return [
    "## Interventions",
    "",
    ...table(
      ["what", "who", "trial", "reason or hypothesis"],
      j.interventions.map((v) => [v.kind, cell(v.who), v.trial_id ? `\`${v.trial_id}\`` : v.taken_by ? `became \`${v.taken_by}\`` : "", cell(v.hypothesis ?? v.reason)]),
    ),
    "",
  ];
}

function spaceAndSettingsSections(j: ReportJson): string[] {
  return [
    "## Search space",
    "",
    j.search_space.length
      ? `Narrowed with --space: ${j.search_space.map(inline).join("; ")}. Every other dimension kept the built-in table's range (core/space.ts); a proposal outside the space was never made.`
      : "The built-in space: every dimension of core/space.ts at the table's range, every template family for this data.",
    "",
    "## Settings",
    "",
    ...(j.settings ? [...table(["setting", "value"], Object.entries(j.settings).map(([k, v]) => [k, cell(String(v)) || "—"])), ""] : ["Not recorded.", ""]),
  ];
}

function nextStepsSection(state: RunState, j: ReportJson): string[] {
  const n = j.next_steps;
  return [
    "## Next steps",
    "",
    ...(n.budget_left_s !== null ? [`- Time budget left: ${duration(n.budget_left_s)}`] : []),
    `- Trials proposed and not judged: ${n.pending.length ? n.pending.map((p) => `\`${p.trial_id}\` (${inline(short(shortIds(p.hypothesis, state.runId), 60))})`).join(", ") : "none"}`,
    `- Confirmation: ${inline(n.confirmation)}`,
    `- Weights: ${inline(n.weights)}`,
    `- To go on: \`${n.command}\``,
    "",
  ];
}

/** The report as Markdown: a section per function above, in the order a reader wants them. */
function markdownOf(state: RunState, finished: RunFinished, j: ReportJson): string {
  const o = state.objective;
  return [
    `# Research report: ${inline(state.runId)}`,
    "",
    ...goalSection(j, o),
    ...outcomeSection(state, finished, j),
    ...(j.front ? frontSection(j.front, o) : []),
    ...(j.limits ? limitsSection(j.limits) : []),
    ...(j.baseline ? baselineSection(j.baseline, o) : []),
    ...trialsSection(state, j),
    ...failuresSection(j),
    ...surfacesSection(j, o),
    ...timelineSection(j),
    ...briefsSection(j),
    ...warmStartSection(j, o),
    ...llmSection(j),
    ...interventionsSection(j),
    ...spaceAndSettingsSections(j),
    ...nextStepsSection(state, j),
  ].join("\n");
}

export function buildReport(state: RunState, finished: RunFinished, timing?: ReportTiming, weights?: WeightsExport): Report {
  const best = chosenBest(state, finished);
  const rows = rowsOf(state, best);
  const json = reportJson(state, finished, rows, best, timing, weights);
  return { markdown: readable(markdownOf(state, finished, json), state.runId), json };
}

/** Trial ids of the run in `text` by their number alone (`t014`), as the report names them after its title. */
const shortIds = (text: string, runId: string) => text.replaceAll(`${runId}-t`, "t");

/** The longest line of prose the report writes; tables and code keep their lines. */
const LINE_WIDTH = 100;

/**
 * The report as a person reads it: each trial by its short id (`t014`) once the title has named
 * the run, and prose wrapped at LINE_WIDTH (a list item's or a quote's continuation indented as
 * Markdown keeps it in the item). Tables, code blocks and headings keep their lines.
 */
function readable(markdown: string, runId: string): string {
  const [title, ...rest] = markdown.split("\n");
  const body = shortIds(rest.join("\n"), runId);
  const out: string[] = [title!, "", `Trials are named by their number in the run: \`t003\` is \`${runId}-t003\`.`];
  let code = false;
  for (const line of body.split("\n")) {
    if (line.startsWith("```") || line.trimStart().startsWith("```")) code = !code;
    if (code || line.length <= LINE_WIDTH || /^\s*(\||#|!\[)/.test(line) || line.trimStart().startsWith("```")) {
      out.push(line);
      continue;
    }
    const lead = /^(\s*(?:[-*] |\d+\. |> )?)/.exec(line)![1]!;
    const indent = lead.startsWith(">") ? "> " : " ".repeat(lead.length);
    let current = lead;
    // A code span (a command, a path) is one word: wrapped inside, it would not paste.
    for (const word of line.slice(lead.length).match(/\S*`[^`]*`\S*|\S+/g) ?? []) {
      if (current.trim() && current.length + 1 + word.length > LINE_WIDTH) {
        out.push(current);
        current = indent + word;
      } else current += (current === lead || current === indent ? "" : " ") + word;
    }
    out.push(current);
  }
  return out.join("\n");
}

/** A Pareto goal's rung-0 trials on its metric against its first cost, the front marked; none for another goal. */
function frontPlot(state: RunState): Record<string, string> {
  const f = frontOf(state);
  const cost = tradeOffsOf(state)[0];
  if (!f || !cost) return {};
  const on = new Set(f.trials.map((x) => x.t.id));
  const points = f.points.map(({ t, p }) => ({ trialId: t.id, metric: p.values[0]!, cost: p.values[1]!, onFront: on.has(t.id), knee: t === f.knee }));
  return { [FRONT_PLOT]: frontSvg(points, COSTS[cost].label, state.objective) };
}

/** The plots, keyed by their path relative to the run folder. */
export function reportPlots(state: RunState, finished: RunFinished): Record<string, string> {
  const best = chosenBest(state, finished);
  const rows = rowsOf(state, best);
  const o = state.objective;
  const curves = (best?.evaluated?.result?.seedResults ?? []).map((s) => ({ seed: s.seed, ...metricCurves(o, s.learningCurve) }));
  return {
    [PLOT_FILES.scores]: scoresSvg(scorePoints(rows), state.goal?.target, o),
    [PLOT_FILES.learningCurves]: learningCurvesSvg(best?.id, curves, o),
    [PLOT_FILES.failures]: failuresSvg(countFailures(rows)),
    ...frontPlot(state),
  };
}

/**
 * Writes report.md, report.json and plots/*.svg into the run folder. Pass
 * `timing` (judged times from the events or from experiments/registry.json)
 * for the timeline to show durations; without it, it shows trial counts only.
 * `weights` is what became of the best trial's trained weights (weights.ts).
 */
export async function writeReport(runDir: string, state: RunState, finished: RunFinished, timing?: ReportTiming, weights?: WeightsExport): Promise<void> {
  const { markdown, json } = buildReport(state, finished, timing, weights);
  await Promise.all([
    writeFileAtomic(join(runDir, "report.md"), markdown),
    writeFileAtomic(join(runDir, "report.json"), `${JSON.stringify(json, null, 2)}\n`),
    ...Object.entries(reportPlots(state, finished)).map(([rel, svg]) => writeFileAtomic(join(runDir, rel), svg)),
  ]);
}
