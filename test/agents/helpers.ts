/** Run states built from real events, for the agents' pure rules. */
import { create } from "@bufbuild/protobuf";
import { Surface } from "../../proto/gen/research/v1/common_pb.js";
import { EventSchema, type Event } from "../../proto/gen/research/v1/events_pb.js";
import { EvalResultSchema } from "../../proto/gen/research/v1/runner_pb.js";
import { foldRun } from "../../swarm/run-state.js";
import type { EventInit } from "../../bus/index.js";
import { modelSpec, trainSpec } from "../../core/config-wire.js";
import { parseTrainConfig, type TrainConfig, type TrainConfigInput } from "../../core/model-config.js";

export const RUN = "r1";

export function started(settings: Record<string, unknown> = {}, goal: Record<string, unknown> = {}): EventInit {
  return {
    runId: RUN,
    emittedAtMs: 1000n,
    body: {
      case: "runStarted",
      value: { goal: { dataset: "digits", target: 0.95, ...goal }, settings: { maxTrials: 10, seeds: 3, patience: 4, trialTimeBudgetS: 60, research: true, ...settings } },
    },
  };
}

export function proposed(id: string, surface = Surface.ARCHITECTURE, parentIds: string[] = []): EventInit {
  return {
    runId: RUN,
    trialId: id,
    body: {
      case: "trialProposed",
      value: { surface, parentIds, hypothesis: `h ${id}`, model: modelSpec({ name: id, layers: [{ type: "flatten" }] }), train: trainSpec({}) },
    },
  };
}

/**
 * An evaluation result; `latencyMs`: each seed's median latency per example at batch 1 (its 90th
 * percentile 10% above); `seedSeconds`: each seed's training time (what the budget's reserve reads).
 */
export function result(mean: number, halfWidth: number, extra: { params?: bigint; seconds?: number; n?: number; latencyMs?: number[]; seedSeconds?: number[] } = {}) {
  const latency = extra.latencyMs ?? [];
  const seconds = extra.seedSeconds ?? [];
  return create(EvalResultSchema, {
    aggregated: { val_accuracy: { mean, std: halfWidth / 2, ci95: [mean - halfWidth, mean + halfWidth], n: extra.n ?? 3, min: mean, max: mean } },
    seedResults: Array.from({ length: Math.max(latency.length, seconds.length) }, (_, seed) => ({
      seed,
      ...(seconds[seed] !== undefined && { seconds: seconds[seed] }),
      ...(latency[seed] !== undefined && { inference: { batch1: { batch: 1, medianMs: latency[seed], p90Ms: latency[seed] * 1.1, repeats: 30 } } }),
    })),
    params: extra.params ?? 1000n,
    seconds: extra.seconds ?? 10,
    numClasses: 10,
  });
}

export function evaluated(id: string, mean: number, halfWidth = 0.01, extra: Parameters<typeof result>[2] = {}): EventInit {
  return { runId: RUN, trialId: id, body: { case: "trialEvaluated", value: { result: result(mean, halfWidth, extra) } } };
}

export function state(events: EventInit[]) {
  return foldRun(RUN, events.map((e) => create(EventSchema, e) as Event));
}

/** A train config as the lineage's rows reach the planner (past-runs.ts rowConfigs): validated, defaults filled. */
export function validated(t: TrainConfigInput): TrainConfig {
  const r = parseTrainConfig(t);
  if (!r.ok) throw new Error(r.error);
  return r.value;
}
