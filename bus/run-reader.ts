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
export async function readRun(js: JetStreamClient, logger: Logger, runId: string, onEvent: EventListener, follow: boolean): Promise<RunWatch> {
  const reader = new RunReader(js, logger, runId, onEvent, follow);
  const consumer = await reader.openConsumer();
  const stored = (await consumer.info(true)).num_pending;
  if (stored === 0) {
    reader.markCaughtUp(0);
    if (!follow) {
      await consumer.delete().catch(() => undefined);
      return { caughtUp: reader.caughtUp, sync: async () => undefined, stop: async () => undefined };
    }
  }
  await reader.start(consumer);
  if (!follow) {
    await reader.done;
    await reader.stop();
  }
  return { caughtUp: reader.caughtUp, sync: (atLeastSeq) => reader.sync(atLeastSeq), stop: () => reader.stop() };
}

type Consumer = Awaited<ReturnType<JetStreamClient["consumers"]["get"]>>;
type Messages = Awaited<ReturnType<Consumer["consume"]>>;

/** readRun's reading: its consumer (replaced when gone), the events passed on, and who waits on them. */
class RunReader {
  /** The stream sequence of the last event passed on. */
  private lastSeq = 0;
  private consumer!: Consumer;
  private messages!: Messages;
  private count = 0;
  /** By consumer sequence, which starts again at 1 on a new consumer. */
  private delivered = 0;
  private progressed: () => void = () => undefined;
  private progress = new Promise<void>((resolve) => (this.progressed = resolve));
  private stopped = false;
  markCaughtUp!: (n: number) => void;
  readonly caughtUp = new Promise<number>((resolve) => (this.markCaughtUp = resolve));
  private signalStopped!: () => void;
  private readonly stoppedSignal = new Promise<void>((resolve) => (this.signalStopped = resolve));
  /** Set while a gone consumer is being replaced; `replaced` resolves it once the next one reads. */
  private reopened: Promise<void> | undefined;
  private replaced: (() => void) | undefined;
  private check: NodeJS.Timeout | undefined;
  done: Promise<void> = Promise.resolve();

  constructor(
    private readonly js: JetStreamClient,
    private readonly logger: Logger,
    private readonly runId: string,
    private readonly onEvent: EventListener,
    private readonly follow: boolean,
  ) {}

  /** An ordered consumer of the run's events after the last one passed on. */
  openConsumer(): Promise<Consumer> {
    return this.js.consumers.get(STREAM, { filter_subjects: runFilter(this.runId), ...(this.lastSeq > 0 && { opt_start_seq: this.lastSeq + 1 }) });
  }

  async start(consumer: Consumer): Promise<void> {
    this.consumer = consumer;
    this.messages = await consumer.consume();
    if (this.follow) {
      this.check = setInterval(() => {
        this.consumer.info().catch((err: unknown) => {
          if (!this.stopped) void this.replace(err);
        });
      }, CHECK_MS);
      this.check.unref();
    }
    this.done = this.read();
  }

  /** The consumer is gone: end its iterator; the reading loop opens the next one. */
  private replace(err: unknown): Promise<void> {
    if (!this.reopened) {
      this.logger.warn({ err, run_id: this.runId, last_seq: this.lastSeq }, "the run's consumer is gone; reading on from the last event");
      this.reopened = new Promise<void>((resolve) => (this.replaced = resolve));
      this.messages.stop();
    }
    return this.reopened;
  }

  private async info() {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.consumer.info();
      } catch (err) {
        if (this.stopped || attempt >= 3) throw err;
        await this.replace(err);
      }
    }
  }

  async sync(atLeastSeq = 0): Promise<void> {
    const deadline = Date.now() + LAG_WAIT_MS;
    for (;;) {
      if (this.stopped) return;
      const seen = this.progress;
      const i = await this.info();
      // Delivered but not yet passed on: wait for the reader, then ask again
      // when the server still had more for this run.
      while (this.delivered < i.delivered.consumer_seq && !this.stopped) await Promise.race([this.progress, this.stoppedSignal]);
      if (i.num_pending === 0 && this.lastSeq >= atLeastSeq) return;
      if (i.num_pending === 0) {
        if (Date.now() > deadline) throw new JetStreamError(`the run's consumer has not reached stream sequence ${atLeastSeq} (it is at ${this.lastSeq}) in ${LAG_WAIT_MS / 1000} s`);
        await Promise.race([this.progress, this.stoppedSignal, new Promise((r) => setTimeout(r, LAG_POLL_MS))]);
      } else if (this.progress === seen) await Promise.race([this.progress, this.stoppedSignal]);
    }
  }

  /** One message passed on: the listener's, then the counts and whoever waits on progress. Whether reading ends (all read and not following). */
  private async pass(m: Messages extends AsyncIterable<infer M> ? M : never): Promise<boolean> {
    try {
      await this.onEvent(decodeEvent(m.data));
    } catch (err) {
      this.logger.warn({ err, subject: m.subject, seq: m.seq, bytes: m.data.length }, "event skipped");
    }
    this.count++;
    this.lastSeq = m.seq;
    this.delivered = m.info.deliverySequence;
    const wake = this.progressed;
    this.progress = new Promise<void>((resolve) => (this.progressed = resolve));
    wake();
    if (m.info.pending !== 0) return false;
    this.markCaughtUp(this.count);
    return !this.follow;
  }

  /** A consumer in place of the gone one, tried every second until one opens or the reading stops. */
  private async reopen(): Promise<boolean> {
    for (;;) {
      try {
        this.consumer = await this.openConsumer();
        this.messages = await this.consumer.consume();
        return true;
      } catch (err) {
        if (this.stopped) return false;
        this.logger.warn({ err, run_id: this.runId }, "cannot open the run's consumer yet; trying again");
        await new Promise((r) => setTimeout(r, 1_000));
      }
    }
  }

  private async read(): Promise<void> {
    try {
      for (;;) {
        try {
          for await (const m of this.messages) if (await this.pass(m)) return;
        } catch (err) {
          if (this.stopped) return;
          void this.replace(err);
        }
        if (!this.reopened) return; // stopped
        if (!(await this.reopen())) return;
        this.delivered = 0;
        this.reopened = undefined;
        this.replaced?.();
      }
    } catch (err) {
      this.logger.error({ err, run_id: this.runId }, "reading the run's events failed");
    } finally {
      // Stopped or failed before the end of history: awaiters get what was read.
      this.markCaughtUp(this.count);
      this.stopped = true;
      this.signalStopped();
      this.replaced?.();
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.check);
    this.messages.stop();
    await this.done;
    // Ordered consumers are ephemeral; deleting spares the server its inactivity timeout.
    await this.consumer.delete().catch(() => undefined);
  }
}
