import { create, fromBinary, toBinary, type JsonObject, type MessageInitShape } from "@bufbuild/protobuf";
import { protoJson } from "../core/proto-json.js";
import { SURFACE, TRIAL_STATUS, VERDICT } from "../core/enums.js";
import { FAILURE_LABEL } from "../core/failure.js";
import { FailureLabel } from "../proto/gen/research/v1/common_pb.js";
import {
  SimilarTrialsRequestSchema,
  SimilarTrialsResponseSchema,
  TrialSummarySchema,
  type SimilarTrialsRequest,
  type SimilarTrialsResponse,
  type TrialSummary,
} from "../proto/gen/research/v1/lineage_pb.js";
import type { Bus } from "../bus/index.js";
import { ResearchError } from "../core/failure.js";

/**
 * The lineage store's similarity query as it travels between processes (CLI or agent ->
 * lineage-store), over the bus's request/reply (core NATS, a queue group, so one store
 * instance answers each request):
 * research.v1.SimilarTrialsRequest / SimilarTrialsResponse (proto/research/v1/lineage.proto).
 * Both ends check a request with checkRequest; the store answers every request, a bad one
 * with `error` set.
 */
export type SimilarTrialsInit = MessageInitShape<typeof SimilarTrialsRequestSchema>;
export type { SimilarTrialsRequest, SimilarTrialsResponse, TrialSummary };

export const DEFAULT_K = 10;
export const MAX_K = 200;
export const MAX_TEXT = 4000;

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
  // A peer built from a newer proto may send numbers this build cannot name.
  if (req.failureLabel !== undefined && req.failureLabel !== FailureLabel.UNSPECIFIED && !FAILURE_LABEL.name(req.failureLabel)) {
    problems.push(`failure_label must be unspecified (no failure) or one of ${FAILURE_LABEL.names.join(", ")}, got ${req.failureLabel}`);
  }
  const unknown = (field: string, names: readonly string[], value: number) => problems.push(`${field} must be one of ${names.join(", ")}, got ${value}`);
  if (req.status !== 0 && !TRIAL_STATUS.name(req.status)) unknown("status", TRIAL_STATUS.names, req.status);
  if (req.surface !== 0 && !SURFACE.name(req.surface)) unknown("surface", SURFACE.names, req.surface);
  return problems;
}

/** Encodes a request, throwing on what checkRequest finds: a caller's mistake fails at the caller. */
export function encodeRequest(init: SimilarTrialsInit): Uint8Array {
  const req = create(SimilarTrialsRequestSchema, init);
  const problems = checkRequest(req);
  if (problems.length > 0) throw new ResearchError("invalid_config", `bad lineage query: ${problems.join("; ")}`);
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

/** A summary for people and scripts: proto field names, and closed sets by their snake_case names ("" when unset). */
export function summaryJson(t: TrialSummary): JsonObject {
  return {
    ...protoJson(TrialSummarySchema, t),
    status: TRIAL_STATUS.name(t.status) ?? "",
    surface: SURFACE.name(t.surface) ?? "",
    failure_label: FAILURE_LABEL.name(t.failureLabel) ?? "",
    verdict: VERDICT.name(t.verdict) ?? "",
  };
}

export const QUERY_SUBJECT = "lineage.query.similar";

/**
 * Asks the lineage-store service for trials similar to a text or a trial. Throws on a request
 * that fails checkRequest (before sending) and with the service's error text when it refuses.
 */
export async function request(bus: Pick<Bus, "request">, init: SimilarTrialsInit, timeoutMs?: number): Promise<TrialSummary[]> {
  const res = decodeResponse(await bus.request(QUERY_SUBJECT, encodeRequest(init), timeoutMs));
  if (res.error) throw new ResearchError("invalid_config", `lineage query failed: ${res.error}`);
  return res.trials;
}
