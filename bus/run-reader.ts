import { JetStreamError, type JetStreamClient } from "@nats-io/jetstream";
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
   * Resolves once every event stored before the call, and the run's events up
   * to stream sequence `atLeastSeq` (the one a handler holds), have been passed
   * on: one round trip to the server, however long the run, so a follower can
   * be asked "are you current?" before each decision.
   */
  sync(atLeastSeq?: number): Promise<void>;
}

/** How often a live follower checks that its consumer still exists. */
const CHECK_MS = 10_000;
/**
 * How long a follower waits for an event that a durable consumer has already
 * delivered. In a cluster the two consumers can read different replicas of the
 * stream, and a replica outside the write quorum may not hold it yet: the
 * chaos test once saw a judge's follower report nothing pending while it held
 * that very event, and the judge dropped the trial as not yet evaluated.
 */
const LAG_WAIT_MS = 10_000;
const LAG_POLL_MS = 50;

/**
 * Reads a run's events (every run's for "*") in stream order through an
 * ordered consumer: the stored history first and then, with `follow`, live
 * events, with no gap or duplicate between the two.
 *
 * An ordered consumer lives on one NATS node. When that node is lost the
 * consumer stays "offline", so a follower that finds it gone (asked to sync,
 * or on its periodic check) opens a new one at the stream sequence after the
 * last event it passed on: no gap, no event twice.
 */
export async function readRun(
  js: JetStreamClient,
  logger: Logger,
  runId: string,
  onEvent: EventListener,
  follow: boolean,
): Promise<RunWatch> {
  let lastSeq = 0;
  const open = () =>
    js.consumers.get(STREAM, { filter_subjects: runFilter(runId), ...(lastSeq > 0 && { opt_start_seq: lastSeq + 1 }) });
  let consumer = await open();
  const stored = (await consumer.info(true)).num_pending;
  let count = 0;
  // By consumer sequence, which starts again at 1 on a new consumer.
  let delivered = 0;
  let progressed: () => void = () => undefined;
  let progress = new Promise<void>((resolve) => (progressed = resolve));
  let stopped = false;
  let markCaughtUp!: (n: number) => void;
  const caughtUp = new Promise<number>((resolve) => (markCaughtUp = resolve));
  let signalStopped!: () => void;
  const stoppedSignal = new Promise<void>((resolve) => (signalStopped = resolve));

  if (stored === 0) {
    markCaughtUp(0);
    if (!follow) {
      await consumer.delete().catch(() => undefined);
      return { caughtUp, sync: async () => undefined, stop: async () => undefined };
    }
  }
  let messages = await consumer.consume();
  // Set while a gone consumer is being replaced; `replaced` resolves it once the next one reads.
  let reopened: Promise<void> | undefined;
  let replaced: (() => void) | undefined;
  /** The consumer is gone: end its iterator; the reading loop opens the next one. */
  const replace = (err: unknown): Promise<void> => {
    if (!reopened) {
      logger.warn({ err, run_id: runId, last_seq: lastSeq }, "the run's consumer is gone; reading on from the last event");
      reopened = new Promise<void>((resolve) => (replaced = resolve));
      messages.stop();
    }
    return reopened;
  };

  const info = async () => {
    for (let attempt = 0; ; attempt++) {
      try {
        return await consumer.info();
      } catch (err) {
        if (stopped || attempt >= 3) throw err;
        await replace(err);
      }
    }
  };
  const sync = async (atLeastSeq = 0): Promise<void> => {
    const deadline = Date.now() + LAG_WAIT_MS;
    for (;;) {
      if (stopped) return;
      const seen = progress;
      const i = await info();
      // Delivered but not yet passed on: wait for the reader, then ask again
      // when the server still had more for this run.
      while (delivered < i.delivered.consumer_seq && !stopped) await Promise.race([progress, stoppedSignal]);
      if (i.num_pending === 0 && lastSeq >= atLeastSeq) return;
      if (i.num_pending === 0) {
        if (Date.now() > deadline) throw new JetStreamError(`the run's consumer has not reached stream sequence ${atLeastSeq} (it is at ${lastSeq}) in ${LAG_WAIT_MS / 1000} s`);
        await Promise.race([progress, stoppedSignal, new Promise((r) => setTimeout(r, LAG_POLL_MS))]);
      } else if (progress === seen) await Promise.race([progress, stoppedSignal]);
    }
  };
  const check = follow
    ? setInterval(() => {
        consumer.info().catch((err: unknown) => {
          if (!stopped) void replace(err);
        });
      }, CHECK_MS)
    : undefined;
  check?.unref();

  const done = (async () => {
    try {
      for (;;) {
        try {
          for await (const m of messages) {
            try {
              await onEvent(decodeEvent(m.data));
            } catch (err) {
              logger.warn({ err, subject: m.subject, seq: m.seq, bytes: m.data.length }, "event skipped");
            }
            count++;
            lastSeq = m.seq;
            delivered = m.info.deliverySequence;
            const wake = progressed;
            progress = new Promise<void>((resolve) => (progressed = resolve));
            wake();
            if (m.info.pending === 0) {
              markCaughtUp(count);
              if (!follow) return;
            }
          }
        } catch (err) {
          if (stopped) return;
          void replace(err);
        }
        if (!reopened) return; // stopped
        for (;;) {
          try {
            consumer = await open();
            messages = await consumer.consume();
            break;
          } catch (err) {
            if (stopped) return;
            logger.warn({ err, run_id: runId }, "cannot open the run's consumer yet; trying again");
            await new Promise((r) => setTimeout(r, 1_000));
          }
        }
        delivered = 0;
        reopened = undefined;
        replaced?.();
      }
    } catch (err) {
      logger.error({ err, run_id: runId }, "reading the run's events failed");
    } finally {
      // Stopped or failed before the end of history: awaiters get what was read.
      markCaughtUp(count);
      stopped = true;
      signalStopped();
      replaced?.();
    }
  })();
  const stop = async () => {
    stopped = true;
    clearInterval(check);
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
