import { create, fromJsonString } from "@bufbuild/protobuf";
import { DatasetInfoSchema, EvalResultSchema } from "../proto/gen/research/v1/runner_pb.js";
import { latencyOfResult } from "../swarm/front.js";
import type { Bus, Stoppable } from "../bus/index.js";
import { TrialSummarySchema } from "../proto/gen/research/v1/lineage_pb.js";
import {
  checkRequest,
  decodeRequest,
  DEFAULT_K,
  encodeResponse,
  QUERY_SUBJECT,
  type SimilarTrialsRequest,
  type TrialSummary,
} from "../swarm/lineage-query.js";
import { SURFACE, TRIAL_STATUS, VERDICT } from "../core/enums.js";
import { FAILURE_LABEL } from "../core/failure.js";
import type { LineageStore, SimilarTrialsQuery, TrialHit } from "./store.js";
import { modelSpec, trainSpec } from "../core/config-wire.js";
import { authoredTrainConfig, authoredTrialModel } from "../core/model-config.js";
import type { ModelSpec, TrainSpec } from "../proto/gen/research/v1/model_pb.js";

/** The store's side of the similarity query (the wire and the client are in swarm/lineage-query.ts). */

/** The store's query for a checked request (unset and unspecified fields mean no filter, but for failure_label). */
export function storeQuery(req: SimilarTrialsRequest): SimilarTrialsQuery {
  return {
    text: req.text || undefined,
    trialId: req.trialId || undefined,
    k: req.k || DEFAULT_K,
    runId: req.runId || undefined,
    dataset: req.dataset || undefined,
    // Set but unspecified asks for the trials without a failure, stored as "".
    failureLabel: req.failureLabel === undefined ? undefined : (FAILURE_LABEL.name(req.failureLabel) ?? ""),
    minScore: req.minScore,
    maxScore: req.maxScore,
    status: TRIAL_STATUS.name(req.status),
    surface: SURFACE.name(req.surface),
  };
}

/** A stored model column as it travels, checked where it leaves storage; unset when it does not validate. */
function storedModel(text: string): ModelSpec | undefined {
  const m = authoredTrialModel(text);
  return m.ok ? modelSpec(m.value) : undefined;
}

function storedTrain(text: string): TrainSpec | undefined {
  const t = authoredTrainConfig(text || "{}");
  return t.ok ? trainSpec(t.value) : undefined;
}

/** The part of a store hit that travels: no code, diff or full result. */
export function summaryOf(hit: TrialHit): TrialSummary {
  return create(TrialSummarySchema, {
    trialId: hit.trial_id,
    runId: hit.run_id,
    index: hit.index,
    status: TRIAL_STATUS.value(hit.status),
    surface: SURFACE.value(hit.surface),
    hypothesis: hit.hypothesis,
    parentIds: hit.parent_ids,
    model: storedModel(hit.model_config_json),
    train: storedTrain(hit.train_config_json),
    params: hit.params ?? undefined,
    latencyMs: hit.result_json ? latencyOfResult(fromJsonString(EvalResultSchema, hit.result_json, { ignoreUnknownFields: true }))?.mean : undefined,
    valAccuracy: hit.val_accuracy ?? undefined,
    ciLow: hit.ci_low ?? undefined,
    ciHigh: hit.ci_high ?? undefined,
    failureLabel: FAILURE_LABEL.value(hit.failure_label),
    failureMessage: hit.failure_message,
    verdict: VERDICT.value(hit.verdict),
    distance: hit.distance,
    // A run from before descriptions were recorded: its dataset's name alone.
    dataset: hit.run_dataset_json ? fromJsonString(DatasetInfoSchema, hit.run_dataset_json, { ignoreUnknownFields: true }) : create(DatasetInfoSchema, { name: hit.run_dataset }),
  });
}

/** The store side of a request: never throws, so a bad query becomes an answer, not a dead responder. */
export async function answer(store: LineageStore, bytes: Uint8Array): Promise<Uint8Array> {
  const started = performance.now();
  const failed = (error: string) => encodeResponse({ error, tookMs: performance.now() - started });
  let req: SimilarTrialsRequest;
  try {
    req = decodeRequest(bytes);
  } catch (err) {
    return failed(`not a SimilarTrialsRequest: ${err instanceof Error ? err.message : String(err)}`);
  }
  const problems = checkRequest(req);
  if (problems.length > 0) return failed(problems.join("; "));
  try {
    const hits = await store.similarTrials(storeQuery(req));
    return encodeResponse({ trials: hits.map(summaryOf), tookMs: performance.now() - started });
  } catch (err) {
    return failed(err instanceof Error ? err.message : String(err));
  }
}

/** The service side: answers every query from `store` until stopped. */
export function serveQueries(bus: Pick<Bus, "serve">, store: LineageStore): Stoppable {
  return bus.serve(QUERY_SUBJECT, (bytes) => answer(store, bytes));
}
