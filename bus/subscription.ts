import type { Msg, Subscription } from "@nats-io/transport-node";
import type { Logger } from "pino";

export interface Stoppable {
  stop(): Promise<void>;
}

/**
 * Runs an async handler for each message of a core subscription, one at a
 * time (NATS callbacks must not await). A throwing handler is logged and the
 * loop goes on. stop() drains the subscription and waits for the handler to
 * finish the messages already received.
 */
export function forEachMessage(sub: Subscription, logger: Logger, handle: (msg: Msg) => Promise<void>): Stoppable {
  const done = (async () => {
    try {
      for await (const msg of sub) {
        try {
          await handle(msg);
        } catch (err) {
          logger.error({ err, subject: msg.subject }, "message handler failed");
        }
      }
    } catch (err) {
      logger.error({ err, subject: sub.getSubject() }, "subscription ended with an error");
    }
  })();
  return {
    stop: async () => {
      if (!sub.isClosed() && !sub.isDraining()) await sub.drain().catch(() => undefined);
      await done;
    },
  };
}
