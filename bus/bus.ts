import { create, type MessageInitShape } from "@bufbuild/protobuf";
import {
  DiscardPolicy,
  JetStreamApiError,
  jetstream,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type JetStreamClient,
  type JetStreamManager,
  type PubAck,
  type StreamConfig,
  type StreamInfo,
} from "@nats-io/jetstream";
import {
  ClosedConnectionError,
  connect,
  DrainingConnectionError,
  nanos,
  type NatsConnection,
  type TlsOptions,
} from "@nats-io/transport-node";
import { createLogger, type Logger } from "../core/logger.js";
import { loopbackServerName, type Secrets } from "../core/secrets.js";
import { EventSchema, type Event, type Heartbeat } from "../proto/gen/research/v1/events_pb.js";
import { decodeEvent, encodeEvent } from "./codec.js";
import { startConsumption, type ConsumeOptions, type Consumption, type EventHandler } from "./consumer.js";
import { startHeartbeat, watchHeartbeats, type HeartbeatOptions } from "./heartbeat.js";
import { request, serve, type ServiceHandler } from "./request-reply.js";
import { readRun, type EventListener, type RunWatch } from "./run-reader.js";
import { consumerName, isLive, STREAM, STREAM_SUBJECTS, subjectFor, type EventKind } from "./subjects.js";
import { forEachMessage, type Stoppable } from "./subscription.js";

export type EventInit = MessageInitShape<typeof EventSchema>;

/** How long close() waits for the server to take what was published before it closes. */
const FLUSH_TIMEOUT_MS = 3_000;

export interface BusOptions {
  servers: string | string[];
  /** Connection name and default `producer` of published events, e.g. "coder@host-123". */
  name: string;
  logger?: Logger;
  /** Create or update the stream on connect (default true), so any process can come up first. */
  ensureStream?: boolean;
  /** Stream replicas on a NATS cluster; 1 on a single server. */
  replicas?: number;
  /** Wait between reconnect attempts; there is no limit on their number. */
  reconnectTimeWaitMs?: number;
  /** The deployment's credentials: its user and password, over TLS trusting only its CA. */
  secrets?: Secrets;
}

/** Attempts and per-attempt timeout: together they ride out about 25 s of outage. */
const PUBLISH_ATTEMPTS = 8;
/**
 * nats.js discards what was published while disconnected when it reconnects,
 * so a publish made during an outage only ever ends in a timeout: keep that
 * short. A retry of a slow publish that was stored is a duplicate the stream drops.
 */
const PUBLISH_TIMEOUT_MS = 2_000;

export async function connectBus(opts: BusOptions): Promise<Bus> {
  const logger = opts.logger ?? createLogger("bus", { name: opts.name });
  const nc = await connect({
    servers: opts.servers,
    name: opts.name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: opts.reconnectTimeWaitMs ?? 1_000,
    ...(opts.secrets && { user: opts.secrets.nats.user, pass: opts.secrets.nats.password, tls: tlsOptions(opts.servers, opts.secrets) }),
  });
  const bus = new Bus(nc, await jetstreamManager(nc), opts.name, logger);
  try {
    if (opts.ensureStream ?? true) await bus.ensureStream(opts.replicas);
  } catch (err) {
    await nc.close();
    throw err;
  }
  return bus;
}

function tlsOptions(servers: string | string[], secrets: Secrets): TlsOptions {
  const servername = loopbackServerName([servers].flat());
  return { caFile: secrets.files.ca, ...(servername && { servername }) } as TlsOptions;
}

/**
 * The swarm's bus: durable research events on JetStream, live watching,
 * request/reply services and heartbeats on core NATS. Every payload is protobuf.
 */
export class Bus {
  private readonly js: JetStreamClient;
  private readonly handles = new Set<Stoppable>();
  private readonly statusLog: Promise<void>;

  constructor(
    /** The raw connection, for what the bus does not wrap (KV leases, say). */
    readonly nc: NatsConnection,
    private readonly jsm: JetStreamManager,
    readonly name: string,
    private readonly logger: Logger,
  ) {
    this.js = jetstream(nc);
    this.statusLog = this.logStatus();
  }

  /** The RESEARCH stream: every research event, kept for replay; idempotent. */
  async ensureStream(replicas = 1): Promise<StreamInfo> {
    const config: Partial<StreamConfig> & { name: string } = {
      name: STREAM,
      subjects: [STREAM_SUBJECTS],
      storage: StorageType.File,
      retention: RetentionPolicy.Limits,
      discard: DiscardPolicy.Old,
      max_msgs: -1,
      max_bytes: -1,
      max_age: 0,
      // Publishers retry with the same msgID; two minutes covers a server restart.
      duplicate_window: nanos(120_000),
      num_replicas: replicas,
    };
    try {
      return await this.jsm.streams.add(config);
    } catch (err) {
      if (!(err instanceof JetStreamApiError && err.code === STREAM_NAME_IN_USE)) throw err;
      return await this.jsm.streams.update(STREAM, config);
    }
  }

  /**
   * Stores one event. event_id doubles as the JetStream msgID, so retries
   * (here or by the caller, with the same id) store it once.
   */
  async publish(init: EventInit): Promise<PubAck> {
    const event = this.stamped(init);
    event.eventId ||= crypto.randomUUID();
    if (event.body.case === "heartbeat") throw new Error("heartbeats are not stored: use startHeartbeat()");
    if (event.body.case && isLive(event.body.case)) throw new Error(`${event.body.case} events are not stored: use publishLive()`);
    const subject = subjectFor(event);
    const data = encodeEvent(event);
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.js.publish(subject, data, { msgID: event.eventId, timeout: PUBLISH_TIMEOUT_MS });
      } catch (err) {
        if (attempt >= PUBLISH_ATTEMPTS || err instanceof ClosedConnectionError || err instanceof DrainingConnectionError) {
          throw err;
        }
        const delay = Math.min(250 * 2 ** (attempt - 1), 2_000);
        this.logger.warn({ err, subject, event_id: event.eventId, attempt, retry_in_ms: delay }, "publish failed; retrying");
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  }

  /**
   * Publishes a live event (per-epoch progress) on core NATS: seen by whoever
   * listens now (subscribe(progressSubject(run))), never stored or replayed.
   */
  publishLive(init: EventInit): void {
    const event = this.stamped(init);
    if (!event.body.case || !isLive(event.body.case)) throw new Error(`${event.body.case ?? "an empty"} event belongs on the stream: use publish()`);
    if (!this.nc.isClosed() && !this.nc.isDraining()) this.nc.publish(subjectFor(event), encodeEvent(event));
  }

  /**
   * Handles `kinds` as one member of `role`: each event goes to one instance
   * of the role. Handlers must be idempotent on trial_id, since an event is
   * redelivered when an instance dies before acknowledging it.
   */
  async consume(
    role: string,
    kinds: readonly EventKind[],
    handler: EventHandler,
    opts?: ConsumeOptions,
  ): Promise<Consumption> {
    const deps = { nc: this.nc, js: this.js, jsm: this.jsm, logger: this.logger.child({ role }) };
    return this.track(await startConsumption(deps, role, kinds, handler, opts));
  }

  /**
   * Stored events a role has not yet acknowledged, over its durables for `kinds`; Infinity
   * while a durable does not exist yet (the role has not started consuming).
   */
  async backlog(role: string, kinds: readonly EventKind[]): Promise<number> {
    let total = 0;
    for (const kind of kinds) {
      const info = await this.jsm.consumers.info(STREAM, consumerName(role, kind)).catch(() => undefined);
      if (!info) return Infinity;
      total += info.num_pending + info.num_ack_pending;
    }
    return total;
  }

  /** Live events on a subject filter (see subjects.ts), nothing stored: for monitors. */
  subscribe(filter: string, onEvent: (event: Event) => void | Promise<void>): Stoppable {
    return this.track(
      forEachMessage(this.nc.subscribe(filter), this.logger, async (msg) => {
        let event: Event;
        try {
          event = decodeEvent(msg.data);
        } catch (err) {
          this.logger.warn({ err, subject: msg.subject, bytes: msg.data.length }, "undecodable event skipped");
          return;
        }
        await onEvent(event);
      }),
    );
  }

  /** A run's stored events ("*": every run's) in order; resolves with their number. */
  async replay(runId: string, onEvent: EventListener): Promise<number> {
    return (await readRun(this.js, this.logger, runId, onEvent, false)).caughtUp;
  }

  /** A run's stored events in order, then live ones as they are published, until stop(). */
  async watch(runId: string, onEvent: EventListener): Promise<RunWatch> {
    const watch = await readRun(this.js, this.logger, runId, onEvent, true);
    this.track(watch);
    return watch;
  }

  serve(subject: string, handler: ServiceHandler, queue?: string): Stoppable {
    return this.track(serve(this.nc, this.logger, subject, handler, queue));
  }

  request(subject: string, payload: Uint8Array, timeoutMs?: number): Promise<Uint8Array> {
    return request(this.nc, subject, payload, timeoutMs);
  }

  startHeartbeat(opts: HeartbeatOptions): Stoppable {
    return this.track(startHeartbeat(this.nc, this.name, opts));
  }

  watchHeartbeats(onBeat: (beat: Heartbeat, event: Event) => void): Stoppable {
    return this.track(watchHeartbeats(this.nc, this.logger, onBeat));
  }

  /** Stops consumers (waiting for in-flight handlers), subscriptions and heartbeats, then drains. */
  async close(): Promise<void> {
    await Promise.all([...this.handles].map((h) => h.stop()));
    if (!this.nc.isClosed()) {
      // Flush, then close. Not a drain: with the server gone (a Ctrl-C reaches nats-server too) a
      // drain waits for a reconnect that never comes, a close cannot cut it short, and the
      // launcher hung at "stopping the swarm". The handles above have already stopped.
      const late = new Promise<void>((resolve) => setTimeout(resolve, FLUSH_TIMEOUT_MS).unref());
      await Promise.race([this.nc.flush().catch(() => undefined), late]);
      await this.nc.close().catch(() => undefined);
    }
    await this.statusLog;
  }

  /** The event with its time and producer filled in when the caller left them out. */
  private stamped(init: EventInit): Event {
    const event = create(EventSchema, init);
    event.emittedAtMs ||= BigInt(Date.now());
    event.producer ||= this.name;
    return event;
  }

  private track<T extends Stoppable>(handle: T): T {
    const stop = handle.stop.bind(handle);
    handle.stop = async () => {
      this.handles.delete(handle);
      await stop();
    };
    this.handles.add(handle);
    return handle;
  }

  private async logStatus(): Promise<void> {
    for await (const s of this.nc.status()) {
      if (s.type === "disconnect") this.logger.warn({ server: s.server }, "bus disconnected; reconnecting");
      else if (s.type === "reconnect") this.logger.info({ server: s.server }, "bus reconnected");
      else if (s.type === "error" || s.type === "slowConsumer") this.logger.error({ status: s }, "bus error");
    }
  }
}

/** JSStreamNameExistErr: the stream exists with another configuration. */
const STREAM_NAME_IN_USE = 10058;
