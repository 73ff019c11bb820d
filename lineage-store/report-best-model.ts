/**
 * report.md's best trial: its path, its scores against the target and on the test split, what it
 * costs to run, its weights with how to load and feed them, a sample, and its classes.
 */
import { int, points, pp } from "../core/format.js";
import { formatMetric, reaches, type Objective } from "../core/objective.js";
import { intervalBasis } from "../core/ranking.js";
import type { RunFinished } from "../proto/gen/research/v1/events_pb.js";
import { INFERENCE_FILE, type InferenceSpec } from "./inference-spec.js";
import { PLOT_FILES, type ReportJson } from "./report-json.js";
import type { InferenceTimingJson, weightsJson } from "./report-model.js";
import { cell, inline, meanWithCi, table } from "./report-text.js";

/** The GPU memory a batch's passes held at most (weights included); nothing on a CPU, which counts none. */
function peakText(t: InferenceTimingJson): string {
  return t.peak_memory_mb === null ? "" : `; at most ${t.peak_memory_mb.toPrecision(3)} MiB of GPU memory for the batch, weights included`;
}

/** A language model's sample as a fenced block; the fence outruns any backticks the model wrote. */
function sampleLines(text: string, seed: number | null): string[] {
  const fence = "`".repeat(Math.max(3, ...[...text.matchAll(/`+/g)].map((m) => m[0].length + 1)));
  return ["", `Text the best model wrote (seed ${seed}), continuing the first row of the test split:`, "", `${fence}text`, text, fence];
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
    "per_position" in spec.output
      ? "  def predict(x):  # a batch of byte strings as int64 ids, e.g. torch.tensor([list(b\"In the beginning\")])"
      : "  def predict(x):  # a batch of raw inputs, e.g. an image's pixels 0-255 as read",
    "      with torch.no_grad():",
    `          z = ${x}`,
    `          out = ${out}${spec.test_time_flip_averaging ? "  # test-time flip averaging, as the run scored it" : ""}`,
    "per_position" in spec.output
      ? "      return out.softmax(-1)  # at every position, the next byte's probabilities"
      : "classes" in spec.output
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

type BestTrialJson = NonNullable<ReportJson["outcome"]["best_trial"]>;

/** The best trial: its path, interval against the target, parameters, latency, test and ensemble scores, inference cost, weights and a sample. */
export function bestTrialLines(b: BestTrialJson, finished: RunFinished, j: ReportJson, o: Objective): string[] {
  const show = (v: number) => formatMetric(o, v);
  const out = [`**Best trial:** \`${b.trial_id}\`: ${inline(b.what)}`, ""];
  const acc = b.val;
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
    // Timed as it was scored: a flip-averaged model makes two passes a prediction.
    const passes = b.flip_averaged ? ", each prediction flip-averaged over two passes as the run scored it" : "";
    out.push(
      `- Inference on the ${cost.device || "device"} it trained on (median of its seeds, each timed warm beside the others${passes}): ${cost.batch_1.median_ms.toPrecision(2)} ms for one example; ${cost.batch_eval.median_ms.toPrecision(3)} ms for a batch of ${cost.batch_eval.batch} (${per(cost.batch_eval)}); ${(cost.flops_per_sample / 1e6).toPrecision(3)} MFLOPs an example${peakText(cost.batch_eval)}${cost.host_cpu_batch_1 ? `; ${cost.host_cpu_batch_1.median_ms.toPrecision(2)} ms for one example on the host's CPU` : ""}`,
    );
  }
  if (b.weights) out.push(...weightsLines(b.weights));
  if (b.test?.sample) out.push(...sampleLines(b.test.sample, b.test.sample_seed));
  out.push("", `![learning curves of the best trial](${PLOT_FILES.learningCurves})`, "");
  if (b.classes) out.push(...classLines(b.classes));
  return out;
}

/** Classes shown in the table; the rest are in report.json. */
const CLASS_ROWS = 12;

/** The best trial's classes, weakest recall first, and its confusion matrix. */
function classLines(c: NonNullable<BestTrialJson["classes"]>): string[] {
  const shown = c.rows.slice(0, CLASS_ROWS);
  const rest = c.rows.length - shown.length;
  const share = (x: number) => `${points(x, 1)}%`;
  return [
    `Per class on validation (the mean of its ${c.seeds} seed${c.seeds === 1 ? "" : "s"}), weakest recall first${rest > 0 ? `; the ${rest} strongest are in report.json` : ""}:`,
    "",
    ...table(
      ["class", "recall", "precision", "F1", "examples", "most often taken for"],
      shown.map((r) => [cell(r.name), share(r.recall), share(r.precision), share(r.f1), int(r.support), r.taken_for ? `${cell(r.taken_for.name)} (${share(r.taken_for.share)})` : "—"]),
    ),
    "",
    `![confusion matrix of the best trial](${c.plot})`,
    "",
  ];
}
