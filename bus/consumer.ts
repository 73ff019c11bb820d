import {
  AckPolicy,
  DeliverPolicy,
  JetStreamApiError,
  JetStreamError,
  type Consumer,
  type ConsumerConfig,
  type ConsumerMessages,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
} from "@nats-io/jetstream";
import { ConnectionError, NoRespondersError, RequestError, TimeoutError, nanos, type NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import type { Event } from "../proto/gen/research/v1/events_pb.js";
import { decodeEvent } from "./codec.js";
import { consumerName, filterFor, STREAM, type EventKind } from "./subjects.js";
import { forEachMessage, type Stoppable } from "./subscription.js";
import { ResearchError } from "../core/failure.js";

export interface HandlerContext {
  subject: string;
  /** Stream sequence: the event's position in the trajectory. */
  seq: number;
  /** 1 on the first delivery. */
  deliveryCount: number;
}

export type EventHandler = (event: Event, ctx: HandlerContext) => Promise<void>;

/** Called once for an event that will never be handled, so the caller can publish a failure event. */
export type DeadLetterHook = (event: Event, error: unknown) => Promise<void> | void;

export interface ConsumeOptions {
  /** Redelivery deadline of an unacknowledged message; the handler is kept alive with working(). */
  ackWaitMs?: number;
  /** Deliveries before an event goes to the dead letter hook. */
  maxDeliver?: number;
  /** First redelivery delay after a retryable failure; doubles with every delivery. */
  retryDelayMs?: number;
  onDeadLetter?: DeadLetterHook;
  /** Lifetime of one pull request; a lost pull is noticed after half of it (idle heartbeats). */
  pullExpiresMs?: number;
  /**
   * Messages of one kind handled at once (default 1). Only for short handlers:
   * the server sends this many ahead and a message waiting for a free handler
   * gets no progress acks. Long handlers scale with more consumptions instead.
   */
  maxInFlight?: number;
}

export interface Consumption extends Stoppable {
  inFlight(): number;
  handled(): number;
}

interface Deps {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  logger: Logger;
}

const MAX_DELAY_MS = 5 * 60_000;
/** JSConsumerNameExistErr and JSConsumerAlreadyExists. */
const CONSUMER_EXISTS = [10013, 10148];

/**
 * One durable pull consumer per (role, kind): nats-server 2.9 allows a single
 * filter subject per consumer. Every instance of a role binds to the same
 * durables, so the server hands each message to exactly one of them.
 */
export async function startConsumption(
  deps: Deps,
  role: string,
  kinds: readonly EventKind[],
  handler: EventHandler,
  options: ConsumeOptions = {},
): Promise<Consumption> {
  if (kinds.length === 0) throw new ResearchError("invalid_config", `role ${role} consumes no event kinds`);
  const settings = {
    ackWaitMs: options.ackWaitMs ?? 30_000,
    maxDeliver: options.maxDeliver ?? 5,
    retryDelayMs: options.retryDelayMs ?? 1_000,
    pullExpiresMs: options.pullExpiresMs ?? 30_000,
    maxInFlight: options.maxInFlight ?? 1,
    onDeadLetter: options.onDeadLetter,
  };
  if (settings.maxDeliver < 1) throw new ResearchError("invalid_config", "maxDeliver must be at least 1");
  if (!(Number.isInteger(settings.maxInFlight) && settings.maxInFlight >= 1)) throw new ResearchError("invalid_config", "maxInFlight must be a positive integer");
  const counters = { inFlight: 0, handled: 0 };
  const workers: Stoppable[] = [];
  try {
    for (const kind of kinds) {
      workers.push(await startWorker(deps, consumerName(role, kind), kind, handler, settings, counters));
    }
  } catch (err) {
    await Promise.all(workers.map((w) => w.stop()));
    throw err;
  }
  return {
    inFlight: () => counters.inFlight,
    handled: () => counters.handled,
    stop: async () => {
      await Promise.all(workers.map((w) => w.stop()));
    },
  };
}

type Settings = Required<Omit<ConsumeOptions, "onDeadLetter">> & Pick<ConsumeOptions, "onDeadLetter">;

async function startWorker(
  deps: Deps,
  name: string,
  kind: EventKind,
  handler: EventHandler,
  settings: Settings,
  counters: { inFlight: number; handled: number },
): Promise<Stoppable> {
  const worker = new KindWorker(deps, name, kind, handler, settings, counters, await ensureConsumer(deps, name, kind, settings));
  return worker.start();
}

/** One (role, kind) durable's messages, handled as they come, up to maxInFlight at once. */
class KindWorker {
  private readonly logger: Logger;
  private stopping = false;
  private messages: ConsumerMessages | undefined;
  private wake: (() => void) | undefined;
  private readonly running = new Set<Promise<void>>();

  constructor(
    private readonly deps: Deps,
    private readonly name: string,
    private readonly kind: EventKind,
    private readonly handler: EventHandler,
    private readonly settings: Settings,
    private readonly counters: { inFlight: number; handled: number },
    private consumer: Consumer | undefined,
  ) {
    this.logger = deps.logger.child({ consumer: name });
  }

  start(): Stoppable {
    const loop = this.loop();
    const advisories = watchMaxDeliveries(this.deps, this.name, this.logger, (event, error) => this.deadLetter(event, error));
    return {
      stop: async () => {
        this.stopping = true;
        // Cancelling an idle pull can strand a message the server was already
        // sending; it is redelivered after ack_wait, so nothing is lost.
        this.messages?.stop();
        this.wake?.();
        await loop;
        await advisories.stop();
      },
    };
  }

  /** Whether the dead-letter hook took the event (none set: taken). */
  private async deadLetter(event: Event, error: unknown): Promise<boolean> {
    if (!this.settings.onDeadLetter) return true;
    try {
      await this.settings.onDeadLetter(event, error);
      return true;
    } catch (err) {
      this.logger.error({ err, event_id: event.eventId }, "dead letter hook failed");
      return false;
    }
  }

  private async handle(m: JsMsg): Promise<void> {
    const { settings, counters } = this;
    let event: Event;
    try {
      event = decodeEvent(m.data);
      if (event.body.case !== this.kind) throw new ResearchError("invalid_config", `a ${event.body.case} event on a ${this.kind} subject`);
    } catch (err) {
      this.logger.error({ err, subject: m.subject, bytes: m.data.length, seq: m.seq }, "poison message terminated");
      // No reason text: nats-server 2.9 ignores "+TERM <reason>" and would redeliver.
      m.term();
      return;
    }
    const ctx: HandlerContext = { subject: m.subject, seq: m.seq, deliveryCount: m.info.deliveryCount };
    const log = this.logger.child({ run_id: event.runId, trial_id: event.trialId, event_id: event.eventId });
    counters.inFlight++;
    // Without progress acks a handler longer than ack_wait would be redelivered
    // to another instance while it is still running.
    const keepAlive = setInterval(() => m.working(), Math.max(100, settings.ackWaitMs / 2));
    try {
      await this.handler(event, ctx);
      clearInterval(keepAlive);
      counters.handled++;
      // A lost ack only means a redelivery, which idempotent handlers absorb.
      await m.ackAck().catch((err: unknown) => log.warn({ err }, "ack not confirmed; the event may be redelivered"));
    } catch (err) {
      clearInterval(keepAlive);
      const lastTry = ctx.deliveryCount >= settings.maxDeliver;
      if ((ResearchError.from(err).retryable || busTrouble(err)) && !lastTry) {
        const delay = Math.min(settings.retryDelayMs * 2 ** (ctx.deliveryCount - 1), MAX_DELAY_MS);
        log.warn({ err, delivery: ctx.deliveryCount, retry_in_ms: delay }, "transient failure; will retry");
        m.nak(delay);
        return;
      }
      log.error({ err, delivery: ctx.deliveryCount }, "event cannot be handled; dead-lettered");
      // When the hook cannot run (e.g. the bus is down) the event stays in play:
      // a later delivery or the max-deliveries advisory tries again.
      if (await this.deadLetter(event, err)) m.term();
      else m.nak(settings.retryDelayMs);
    } finally {
      counters.inFlight--;
    }
  }

  /**
   * consume() with max_messages 1 pulls the next message only when the loop asks for it (the pull
   * is queued behind the message in the iterator), so a busy instance holds one message and the
   * rest go to idle instances. It also re-pulls by itself after reconnects and missed heartbeats.
   * With maxInFlight N the loop asks for the next message while up to N run.
   */
  private async loop(): Promise<void> {
    const { settings, deps } = this;
    let failures = 0;
    while (!this.stopping && !deps.nc.isClosed()) {
      try {
        this.consumer ??= await ensureConsumer(deps, this.name, this.kind, settings);
        // Abort when the durable is gone (a wiped server) so it is recreated below.
        this.messages = await this.consumer.consume({
          max_messages: settings.maxInFlight,
          expires: settings.pullExpiresMs,
          abort_on_missing_resource: true,
        });
        for await (const m of this.messages) {
          const p = this.handle(m)
            .catch((err: unknown) => this.logger.error({ err, seq: m.seq }, "acknowledging the event failed"))
            .finally(() => this.running.delete(p));
          this.running.add(p);
          while (this.running.size >= settings.maxInFlight) await Promise.race(this.running);
          failures = 0;
          // Leave before the iterator sends its queued pull: a message the
          // server sent to it now would wait ack_wait for redelivery.
          if (this.stopping) break;
        }
      } catch (err) {
        if (this.stopping) break;
        failures++;
        this.consumer = undefined;
        const delay = Math.min(250 * 2 ** failures, 5_000);
        this.logger.warn({ err, retry_in_ms: delay }, "consumer failed; recreating it");
        await new Promise<void>((resolve) => {
          this.wake = resolve;
          setTimeout(resolve, delay);
        });
      }
    }
    await Promise.all(this.running);
  }
}

/**
 * A message whose deliveries all timed out (its handler hung, or killed the
 * process) is dropped by the server with an advisory and never reaches a
 * handler again. One instance of the role (a queue group) logs it and turns
 * it into a dead letter. Advisories are core NATS: one sent while no instance is
 * connected is lost.
 */
function watchMaxDeliveries(
  deps: Deps,
  name: string,
  logger: Logger,
  deadLetter: (event: Event, error: unknown) => Promise<boolean>,
): Stoppable {
  const subject = `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${STREAM}.${name}`;
  return forEachMessage(deps.nc.subscribe(subject, { queue: name }), logger, async (msg) => {
    const advisory = JSON.parse(new TextDecoder().decode(msg.data)) as { stream_seq: number; deliveries: number };
    const stored = await deps.jsm.streams.getMessage(STREAM, { seq: advisory.stream_seq });
    if (!stored) return;
    let event: Event;
    try {
      event = decodeEvent(stored.data);
    } catch {
      return;
    }
    const error = new Error(`not acknowledged after ${advisory.deliveries} deliveries (handler hung or its process died)`);
    logger.error({ event_id: event.eventId, seq: advisory.stream_seq }, error.message);
    await deadLetter(event, error);
  });
}

async function ensureConsumer(deps: Deps, name: string, kind: EventKind, s: Settings): Promise<Consumer> {
  const tunables: Partial<ConsumerConfig> = {
    ack_wait: nanos(s.ackWaitMs),
    max_deliver: s.maxDeliver,
    // No `backoff`: with one, the server adds backoff[n] - backoff[0] to every delayed nak
    // (nats-server consumer.go, processNak backdates by ack_wait, checkPending measures against
    // the backoff), so the fourth retry of an unreachable runner came 3 minutes late, not 8 s.
    // A timeout's redelivery (an instance that died) waits one ack_wait each time.
    backoff: [],
  };
  try {
    const info = await deps.jsm.consumers.add(STREAM, {
      durable_name: name,
      filter_subject: filterFor(kind),
      ack_policy: AckPolicy.Explicit,
      // A role's durable sees history from the start: events published before
      // its first instance ever ran (run.started from the launcher) still count.
      deliver_policy: DeliverPolicy.All,
      ...tunables,
    });
    return deps.js.consumers.getConsumerFromInfo(info);
  } catch (err) {
    // nats-server 2.9 updates an existing durable on create; 2.10+ refuses
    // ("consumer already exists") and wants an explicit update.
    if (!(err instanceof JetStreamApiError && CONSUMER_EXISTS.includes(err.code))) throw err;
    const info = await deps.jsm.consumers.update(STREAM, name, tunables);
    return deps.js.consumers.getConsumerFromInfo(info);
  }
}

/**
 * The bus itself failing under a handler: a node lost, a stream or consumer
 * leader being elected ("consumer is offline"), a request timing out. Worth a
 * redelivery, like an unreachable runner; a handler's own error is not.
 */
function busTrouble(err: unknown): boolean {
  return [TimeoutError, NoRespondersError, RequestError, ConnectionError, JetStreamError, JetStreamApiError].some((c) => err instanceof c);
}
