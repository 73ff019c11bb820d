import { headers, type NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { forEachMessage, type Stoppable } from "./subscription.js";

/** Carries a service handler's error message back to the requester. */
const ERROR_HEADER = "Research-Error";

/** The service answered, but with an error instead of a reply. */
export class ServiceError extends Error {
  override name = "ServiceError";
}

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
      const h = headers();
      h.set(ERROR_HEADER, err instanceof Error ? err.message : String(err));
      msg.respond(new Uint8Array(), { headers: h });
    }
  });
}

export async function request(
  nc: NatsConnection,
  subject: string,
  payload: Uint8Array,
  timeoutMs = 5_000,
): Promise<Uint8Array> {
  const reply = await nc.request(subject, payload, { timeout: timeoutMs });
  const error = reply.headers?.get(ERROR_HEADER);
  if (error) throw new ServiceError(`${subject}: ${error}`);
  return reply.data;
}
