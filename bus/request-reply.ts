import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { headers, NoRespondersError, RequestError, type Msg, type NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { ResearchError } from "../core/failure.js";
import { FailureSchema } from "../proto/gen/research/v1/common_pb.js";
import { forEachMessage, type Stoppable } from "./subscription.js";

/**
 * Marks a reply whose body is a research.v1.Failure instead of the answer;
 * its value is the failure's message, for people reading the wire.
 */
const ERROR_HEADER = "Research-Error";

export type ServiceHandler = (request: Uint8Array) => Promise<Uint8Array>;

/**
 * Answers requests on `subject`. Instances share a queue group (the subject
 * by default), so each request is answered once however many are running.
 */
export function serve(
  nc: NatsConnection,
  logger: Logger,
  subject: string,
  handler: ServiceHandler,
  queue = subject,
): Stoppable {
  return forEachMessage(nc.subscribe(subject, { queue }), logger, async (msg) => {
    try {
      msg.respond(await handler(msg.data));
    } catch (err) {
      logger.warn({ err, subject }, "service handler failed");
      const failure = ResearchError.from(err).toProto();
      const h = headers();
      h.set(ERROR_HEADER, failure.message);
      msg.respond(toBinary(FailureSchema, failure), { headers: h });
    }
  });
}

/** How long a request waits before it asks again a service that has no responder yet. */
const NO_RESPONDER_RETRY_MS = 200;

const noResponders = (err: unknown) => err instanceof NoRespondersError || (err instanceof RequestError && err.isNoResponders());

/** The reply to `payload`, asking again while the subject has no responder and time is left before `deadline`. */
async function replyBy(nc: NatsConnection, subject: string, payload: Uint8Array, deadline: number): Promise<Msg> {
  for (;;) {
    try {
      return await nc.request(subject, payload, { timeout: Math.max(1, deadline - Date.now()) });
    } catch (err) {
      if (!noResponders(err) || Date.now() + NO_RESPONDER_RETRY_MS >= deadline) throw err;
      await new Promise((r) => setTimeout(r, NO_RESPONDER_RETRY_MS));
    }
  }
}

/**
 * One request and its reply. A service with no responder yet is asked again until the timeout:
 * a swarm's processes start in any order, and a planner's first question to the lineage store
 * (what past runs learned) came 0.9 s before the store subscribed, which left that run without
 * its warm start.
 */
export async function request(
  nc: NatsConnection,
  subject: string,
  payload: Uint8Array,
  timeoutMs = 5_000,
): Promise<Uint8Array> {
  const reply = await replyBy(nc, subject, payload, Date.now() + timeoutMs);
  if (reply.headers?.has(ERROR_HEADER)) {
    const failure = fromBinary(FailureSchema, reply.data);
    throw ResearchError.fromProto({ ...failure, message: `${subject}: ${failure.message}` });
  }
  return reply.data;
}
