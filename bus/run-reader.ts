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
  /**
   * Resolves once every event stored before the call has been passed on: one
   * round trip to the server, however long the run, so a follower can be
   * asked "are you current?" before each decision.
   */
  sync(): Promise<void>;
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
  let delivered = 0;
  let progressed: () => void = () => undefined;
  let progress = new Promise<void>((resolve) => (progressed = resolve));
  let stopped = false;
  let markCaughtUp!: (n: number) => void;
  const caughtUp = new Promise<number>((resolve) => (markCaughtUp = resolve));
  const sync = async (): Promise<void> => {
    for (;;) {
      if (stopped) return;
      const seen = progress;
      const info = await consumer.info();
      // Delivered but not yet passed on: wait for the reader, then ask again
      // when the server still had more for this run.
      // By consumer sequence: the stream sequence in `delivered` runs ahead
      // over other runs' events that the filter skipped.
      while (delivered < info.delivered.consumer_seq && !stopped) await Promise.race([progress, stoppedSignal]);
      if (info.num_pending === 0) return;
      if (progress === seen) await Promise.race([progress, stoppedSignal]);
    }
  };
  let signalStopped!: () => void;
  const stoppedSignal = new Promise<void>((resolve) => (signalStopped = resolve));

  if (stored === 0) {
    markCaughtUp(0);
    if (!follow) {
      await consumer.delete().catch(() => undefined);
      return { caughtUp, sync: async () => undefined, stop: async () => undefined };
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
        delivered = m.info.deliverySequence;
        const wake = progressed;
        progress = new Promise<void>((resolve) => (progressed = resolve));
        wake();
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
      stopped = true;
      signalStopped();
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
  return { caughtUp, sync, stop };
}
