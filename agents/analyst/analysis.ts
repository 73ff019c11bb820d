/**
 * Rule-based reading of an evaluation: what the numbers say the planner
 * should try next. The built-in brain's analyst; an LLM may narrate on top.
 */
import { create } from "@bufbuild/protobuf";
import { points } from "../../core/format.js";
import { AnalysisSchema, type Analysis } from "../../proto/gen/research/v1/events_pb.js";
import type { EvalResult } from "../../proto/gen/research/v1/runner_pb.js";

export function analyse(r: EvalResult): Analysis {
  const notes: string[] = [];
  const severity = r.overfitting?.severity ?? "none";
  const state = r.convergence?.state ?? "unknown";
  const acc = r.aggregated.val_accuracy;
  if (severity === "moderate" || severity === "severe") {
    notes.push(`train-val gap ${points(r.overfitting?.gap ?? 0, 1)} points: more regularisation (dropout, weight decay, augmentation) or more data`);
  }
  // Convergence reads the run's metric in its direction (gpu-runner/stats.ts): "improving" is a falling RMSE.
  if (state === "improving") notes.push("the validation metric was still improving at the last epoch: more epochs should pay");
  if (state === "diverging") notes.push("the validation metric got worse over the last epochs: lower the learning rate or add a schedule");
  if (state === "unstable") notes.push("seeds disagree strongly: lower the learning rate or add normalisation");
  if (state === "plateaued" && severity === "none") notes.push("plateaued without overfitting: capacity is the limit; a wider or deeper model should pay");
  if (acc && acc.n >= 2 && acc.ci95[1]! - acc.ci95[0]! > 0.03) {
    notes.push(`wide 95% CI (${points(acc.ci95[1]! - acc.ci95[0]!, 1)} points): more seeds or a larger validation split would tighten it`);
  }
  if (r.weakClasses.length) {
    notes.push(`weak classes: ${r.weakClasses.map((c) => r.classNames[c] ?? String(c)).join(", ")}`);
  }
  return create(AnalysisSchema, { overfitting: severity, convergence: state, weakClasses: r.weakClasses, notes });
}

/** The numbers a narrator may use: the aggregate statistics, not the raw per-seed documents. */
export function statsForNarrative(r: EvalResult) {
  const acc = r.aggregated.val_accuracy;
  return {
    val_accuracy: acc ? { mean: acc.mean, std: acc.std, ci_95: acc.ci95, n: acc.n } : undefined,
    train_val_gap: r.overfitting?.gap,
    overfitting: r.overfitting?.severity,
    convergence: r.convergence?.state,
    best_epoch: r.convergence?.bestEpoch,
    params: Number(r.params),
    seconds: r.seconds,
    weak_classes: r.weakClasses.map((c) => r.classNames[c] ?? String(c)),
    mean_val_accuracy_per_epoch: r.seedResults[0]?.learningCurve?.valAccuracy.map((_, e) => r.seedResults.reduce((a, s) => a + (s.learningCurve?.valAccuracy[e] ?? 0), 0) / r.seedResults.length),
  };
}
