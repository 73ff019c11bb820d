import type { Bus, Stoppable } from "../bus/index.js";
import { answer, decodeResponse, encodeRequest, type SimilarTrialsInit, type TrialSummary } from "./query.js";
import type { LineageStore } from "./store.js";

/**
 * Similarity queries between processes, over the bus's request/reply (core NATS, a queue
 * group, so one store instance answers each request): research.v1.SimilarTrialsRequest in,
 * SimilarTrialsResponse out (see query.ts).
 */
export const QUERY_SUBJECT = "lineage.query.similar";

/**
 * Asks the lineage-store service for trials similar to a text or a trial. Throws on a request
 * that fails checkRequest (before sending) and with the service's error text when it refuses.
 */
export async function request(bus: Pick<Bus, "request">, init: SimilarTrialsInit, timeoutMs?: number): Promise<TrialSummary[]> {
  const res = decodeResponse(await bus.request(QUERY_SUBJECT, encodeRequest(init), timeoutMs));
  if (res.error) throw new Error(`lineage query failed: ${res.error}`);
  return res.trials;
}

/** The service side: answers every query from `store` until stopped. */
export function serveQueries(bus: Pick<Bus, "serve">, store: LineageStore): Stoppable {
  return bus.serve(QUERY_SUBJECT, (bytes) => answer(store, bytes));
}
