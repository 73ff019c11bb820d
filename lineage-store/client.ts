import type { z } from "zod";
import type { Bus, Stoppable } from "../bus/index.js";
import { answer, decodeResponse, encodeRequest, type SimilarTrialsRequest, type TrialSummary } from "./query.js";
import type { LineageStore } from "./store.js";

/**
 * Similarity queries between processes, over the bus's request/reply (core NATS, a queue
 * group, so one store instance answers each request). Provisional: JSON bytes from query.ts
 * until the transport is settled.
 */
export const QUERY_SUBJECT = "lineage.query.similar";

/** Asks the lineage-store service for trials similar to a text or a trial. */
export async function request(
  bus: Pick<Bus, "request">,
  req: z.input<typeof SimilarTrialsRequest>,
  timeoutMs?: number,
): Promise<TrialSummary[]> {
  const res = decodeResponse(await bus.request(QUERY_SUBJECT, encodeRequest(req), timeoutMs));
  if (!res.ok) throw new Error(`lineage query failed: ${res.error}`);
  return res.trials;
}

/** The service side: answers every query from `store` until stopped. */
export function serveQueries(bus: Pick<Bus, "serve">, store: LineageStore): Stoppable {
  return bus.serve(QUERY_SUBJECT, (bytes) => answer(store, bytes));
}
