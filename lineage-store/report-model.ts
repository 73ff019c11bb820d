/**
 * The best model as its user gets it, in the report and on the dashboard: what it costs to run on
 * the device it trained on, and its kept weights with how to feed them.
 */
import { labelName } from "../core/failure.js";
import type { EvalResult, InferenceTiming } from "../proto/gen/research/v1/runner_pb.js";
import type { InferenceSpec } from "./inference-spec.js";
import type { WeightsExport } from "./weights.js";

/** Milliseconds per forward pass of a batch: the median over seeds of each seed's median, the largest 90th percentile; on a GPU the largest allocator peak (MiB), else null. */
export interface InferenceTimingJson {
  batch: number;
  median_ms: number;
  p90_ms: number;
  /** The largest allocator peak over the seeds, weights included (MiB); null on a CPU. */
  peak_memory_mb: number | null;
  seeds: number;
}

/** What a model costs to run on the device it trained on (gpu-runner's measure_inference), in the report and the dashboard. */
export interface InferenceCostJson {
  /** Where it was timed: "cpu", "cuda". */
  device: string;
  batch_1: InferenceTimingJson | null;
  batch_eval: InferenceTimingJson | null;
  /** A model that trained on a GPU: one example on the host's CPU; null otherwise. */
  host_cpu_batch_1: InferenceTimingJson | null;
  /** One example's forward pass: 2 x the multiply-accumulates of its conv, linear and attention layers. */
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

/** The best trial's kept weights, and how to feed it (lineage-store/inference-spec.ts), when its evaluation said. */
export function weightsJson(w: WeightsExport | undefined, spec: InferenceSpec | undefined) {
  if (!w) return null;
  const failure = w.failure ? { label: labelName(w.failure.label), message: w.failure.message } : null;
  return { class_name: w.className, init_kwargs: w.initKwargs, files: w.files, failure, seconds: w.seconds, inference: spec ?? null };
}
