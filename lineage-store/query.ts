import { z } from "zod";
import { FAILURE_LABELS } from "../core/failure.js";
import { TRIAL_STAGES } from "./schema.js";
import type { LineageStore } from "./store.js";

/**
 * The similarity query as it travels between processes (CLI or agent -> lineage-store).
 * Encoded as UTF-8 JSON until the transport is settled; both ends validate with these schemas.
 */
export const SimilarTrialsRequest = z
  .object({
    text: z.string().min(1).max(4000).optional(),
    trialId: z.string().min(1).optional(),
    k: z.number().int().min(1).max(200).default(10),
    runId: z.string().min(1).optional(),
    /** "" asks for trials without a failure. */
    failureLabel: z.union([z.enum(FAILURE_LABELS), z.literal("")]).optional(),
    minScore: z.number().min(0).max(1).optional(),
    maxScore: z.number().min(0).max(1).optional(),
    status: z.enum([...TRIAL_STAGES, "failed"]).optional(),
    surface: z.string().min(1).optional(),
  })
  .refine((q) => (q.text === undefined) !== (q.trialId === undefined), {
    message: "give exactly one of text or trialId",
  });
export type SimilarTrialsRequest = z.infer<typeof SimilarTrialsRequest>;

/** What a planner needs to learn from a past trial, without its code, diff or full result. */
export const TrialSummary = z.object({
  trial_id: z.string(),
  run_id: z.string(),
  index: z.number(),
  status: z.string(),
  surface: z.string(),
  hypothesis: z.string(),
  parent_ids: z.array(z.string()),
  model_config_json: z.string(),
  train_config_json: z.string(),
  params: z.number().nullable(),
  val_accuracy: z.number().nullable(),
  ci_low: z.number().nullable(),
  ci_high: z.number().nullable(),
  failure_label: z.string(),
  failure_message: z.string(),
  verdict: z.string(),
  distance: z.number(),
});
export type TrialSummary = z.infer<typeof TrialSummary>;

export const SimilarTrialsResponse = z.discriminatedUnion("ok", [
  z.object({ ok: z.literal(true), trials: z.array(TrialSummary), took_ms: z.number() }),
  z.object({ ok: z.literal(false), error: z.string() }),
]);
export type SimilarTrialsResponse = z.infer<typeof SimilarTrialsResponse>;

const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();

export function encodeRequest(req: z.input<typeof SimilarTrialsRequest>): Uint8Array {
  return utf8.encode(JSON.stringify(SimilarTrialsRequest.parse(req)));
}

export function decodeRequest(bytes: Uint8Array): SimilarTrialsRequest {
  return SimilarTrialsRequest.parse(JSON.parse(fromUtf8.decode(bytes)));
}

export function encodeResponse(res: SimilarTrialsResponse): Uint8Array {
  return utf8.encode(JSON.stringify(res));
}

export function decodeResponse(bytes: Uint8Array): SimilarTrialsResponse {
  return SimilarTrialsResponse.parse(JSON.parse(fromUtf8.decode(bytes)));
}

/** The store side of a request: never throws, so a bad query becomes an answer, not a dead responder. */
export async function answer(store: LineageStore, bytes: Uint8Array): Promise<Uint8Array> {
  const started = performance.now();
  let res: SimilarTrialsResponse;
  try {
    const req = decodeRequest(bytes);
    const hits = await store.similarTrials(req);
    res = { ok: true, trials: hits.map((h) => TrialSummary.parse(h)), took_ms: performance.now() - started };
  } catch (err) {
    res = { ok: false, error: err instanceof z.ZodError ? z.prettifyError(err) : String(err instanceof Error ? err.message : err) };
  }
  return encodeResponse(res);
}
