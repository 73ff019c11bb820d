import type { JetStreamClient } from "@nats-io/jetstream";
import type { Logger } from "pino";
import type { Event } from "../proto/gen/research/v1/events_pb.js";
import { decodeEvent } from "./codec.js";
import { runFilter, STREAM } from "./subjects.js";
import type { Stoppable } from "./subscription.js";

export type EventListener = (event: Event) => void | Promise<void>;

export interface RunWatch extends Stoppable {
  /** Resolves with the number of stored events once they have all been passed on. */
  caughtUp: Promise<number>;
}

/**
 * Reads a run's events (every run's for "*") in stream order through an
 * ordered consumer: the stored history first and then, with `follow`, live
 * events, with no gap or duplicate between the two.
 */
export async function readRun(
  js: JetStreamClient,
  logger: Logger,
  runId: string,
  onEvent: EventListener,
  follow: boolean,
): Promise<RunWatch> {
  const consumer = await js.consumers.get(STREAM, { filter_subjects: runFilter(runId) });
  const stored = (await consumer.info(true)).num_pending;
  let count = 0;
  let markCaughtUp!: (n: number) => void;
  const caughtUp = new Promise<number>((resolve) => (markCaughtUp = resolve));
  if (stored === 0) {
    markCaughtUp(0);
    if (!follow) {
      await consumer.delete().catch(() => undefined);
      return { caughtUp, stop: async () => undefined };
    }
  }
  const messages = await consumer.consume();
  const done = (async () => {
    try {
      for await (const m of messages) {
        try {
          await onEvent(decodeEvent(m.data));
        } catch (err) {
          logger.warn({ err, subject: m.subject, seq: m.seq, bytes: m.data.length }, "event skipped");
        }
        count++;
        if (m.info.pending === 0) {
          markCaughtUp(count);
          if (!follow) break;
        }
      }
    } catch (err) {
      logger.error({ err, run_id: runId }, "reading the run's events failed");
    } finally {
      // Stopped or failed before the end of history: awaiters get what was read.
      markCaughtUp(count);
    }
  })();
  const stop = async () => {
    messages.stop();
    await done;
    // Ordered consumers are ephemeral; deleting spares the server its inactivity timeout.
    await consumer.delete().catch(() => undefined);
  };
  if (!follow) {
    await done;
    await stop();
  }
  return { caughtUp, stop };
}
