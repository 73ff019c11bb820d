import { create, fromBinary, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { FAILURE_LABELS } from "../core/failure.js";
import {
  SimilarTrialsRequestSchema,
  SimilarTrialsResponseSchema,
  TrialSummarySchema,
  type SimilarTrialsRequest,
  type SimilarTrialsResponse,
  type TrialSummary,
} from "../proto/gen/research/v1/lineage_pb.js";
import { TRIAL_STAGES, type TrialStatus } from "./schema.js";
import type { LineageStore, SimilarTrialsQuery, TrialHit } from "./store.js";

/**
 * The similarity query as it travels between processes (CLI or agent -> lineage-store):
 * research.v1.SimilarTrialsRequest / SimilarTrialsResponse (proto/research/v1/lineage.proto).
 * Both ends check a request with checkRequest; the store answers every request, a bad one
 * with `error` set.
 */
export type SimilarTrialsInit = MessageInitShape<typeof SimilarTrialsRequestSchema>;
export type { SimilarTrialsRequest, SimilarTrialsResponse, TrialSummary };

export const DEFAULT_K = 10;
export const MAX_K = 200;
export const MAX_TEXT = 4000;
const FAILURES: ReadonlySet<string> = new Set<string>(FAILURE_LABELS);
const STATUSES: ReadonlySet<string> = new Set<string>([...TRIAL_STAGES, "failed"]);

/** Everything wrong with a request, one sentence each; empty when the store can answer it. */
export function checkRequest(req: SimilarTrialsRequest): string[] {
  const problems: string[] = [];
  if (req.text !== "" && req.trialId !== "") problems.push("give exactly one of text or trial_id, not both");
  else if (req.text === "" && req.trialId === "") problems.push("give exactly one of text or trial_id (neither was given)");
  else if (req.text !== "" && req.text.trim() === "") problems.push("text is only whitespace");
  if (req.text.length > MAX_TEXT) problems.push(`text has ${req.text.length} characters, at most ${MAX_TEXT} allowed`);
  if (!Number.isInteger(req.k) || req.k < 0 || req.k > MAX_K) {
    problems.push(`k must be an integer in 1..${MAX_K} (0 means ${DEFAULT_K}), got ${req.k}`);
  }
  for (const [name, v] of [["min_score", req.minScore], ["max_score", req.maxScore]] as const) {
    if (v !== undefined && !(v >= 0 && v <= 1)) problems.push(`${name} must be in [0, 1], got ${v}`);
  }
  if (req.failureLabel !== undefined && req.failureLabel !== "" && !FAILURES.has(req.failureLabel)) {
    problems.push(`failure_label must be "" or one of ${FAILURE_LABELS.join(", ")}, got ${JSON.stringify(req.failureLabel)}`);
  }
  if (req.status !== "" && !STATUSES.has(req.status)) {
    problems.push(`status must be one of ${[...STATUSES].join(", ")}, got ${JSON.stringify(req.status)}`);
  }
  return problems;
}

/** Encodes a request, throwing on what checkRequest finds: a caller's mistake fails at the caller. */
export function encodeRequest(init: SimilarTrialsInit): Uint8Array {
  const req = create(SimilarTrialsRequestSchema, init);
  const problems = checkRequest(req);
  if (problems.length > 0) throw new Error(`bad lineage query: ${problems.join("; ")}`);
  return toBinary(SimilarTrialsRequestSchema, req);
}

/** Decodes without checking (see checkRequest); throws on bytes that are not a request. */
export function decodeRequest(bytes: Uint8Array): SimilarTrialsRequest {
  return fromBinary(SimilarTrialsRequestSchema, bytes);
}

export function encodeResponse(res: MessageInitShape<typeof SimilarTrialsResponseSchema>): Uint8Array {
  return toBinary(SimilarTrialsResponseSchema, create(SimilarTrialsResponseSchema, res));
}

export function decodeResponse(bytes: Uint8Array): SimilarTrialsResponse {
  return fromBinary(SimilarTrialsResponseSchema, bytes);
}

/** The store's query for a checked request ("" and unset fields mean no filter). */
export function storeQuery(req: SimilarTrialsRequest): SimilarTrialsQuery {
  return {
    text: req.text || undefined,
    trialId: req.trialId || undefined,
    k: req.k || DEFAULT_K,
    runId: req.runId || undefined,
    failureLabel: req.failureLabel,
    minScore: req.minScore,
    maxScore: req.maxScore,
    status: (req.status || undefined) as TrialStatus | undefined,
    surface: req.surface || undefined,
  };
}

/** The part of a store hit that travels: no code, diff or full result. */
export function summaryOf(hit: TrialHit): TrialSummary {
  return create(TrialSummarySchema, {
    trialId: hit.trial_id,
    runId: hit.run_id,
    index: hit.index,
    status: hit.status,
    surface: hit.surface,
    hypothesis: hit.hypothesis,
    parentIds: hit.parent_ids,
    modelConfigJson: hit.model_config_json,
    trainConfigJson: hit.train_config_json,
    params: hit.params ?? undefined,
    valAccuracy: hit.val_accuracy ?? undefined,
    ciLow: hit.ci_low ?? undefined,
    ciHigh: hit.ci_high ?? undefined,
    failureLabel: hit.failure_label,
    failureMessage: hit.failure_message,
    verdict: hit.verdict,
    distance: hit.distance,
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
