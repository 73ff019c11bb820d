import { create } from "@bufbuild/protobuf";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { EventSchema, type Event, type Heartbeat } from "../proto/gen/research/v1/events_pb.js";
import { decodeEvent, encodeEvent } from "./codec.js";
import { heartbeatSubject } from "./subjects.js";
import { forEachMessage, type Stoppable } from "./subscription.js";

export interface HeartbeatOptions {
  role: string;
  instance: string;
  inFlight: () => number;
  handled: () => number;
  intervalMs?: number;
}

/**
 * Beats on core NATS right away and then every interval. Beats sent while
 * disconnected are lost (nats.js drops its outbound buffer on reconnect);
 * watchers see the instance again at the next beat.
 */
export function startHeartbeat(nc: NatsConnection, producer: string, opts: HeartbeatOptions): Stoppable {
  const subject = heartbeatSubject(opts.role, opts.instance);
  const startedAtMs = BigInt(Date.now());
  const beat = () => {
    const event = create(EventSchema, {
      eventId: crypto.randomUUID(),
      emittedAtMs: BigInt(Date.now()),
      producer,
      body: {
        case: "heartbeat",
        value: {
          role: opts.role,
          instance: opts.instance,
          inFlight: opts.inFlight(),
          handled: opts.handled(),
          startedAtMs,
        },
      },
    });
    if (!nc.isClosed()) nc.publish(subject, encodeEvent(event));
  };
  beat();
  const timer = setInterval(beat, opts.intervalMs ?? 5_000);
  return {
    stop: async () => clearInterval(timer),
  };
}

export function watchHeartbeats(
  nc: NatsConnection,
  logger: Logger,
  onBeat: (beat: Heartbeat, event: Event) => void,
): Stoppable {
  return forEachMessage(nc.subscribe(heartbeatSubject()), logger, async (msg) => {
    let event: Event;
    try {
      event = decodeEvent(msg.data);
    } catch (err) {
      logger.warn({ subject: msg.subject, bytes: msg.data.length, err }, "undecodable heartbeat dropped");
      return;
    }
    if (event.body.case === "heartbeat") onBeat(event.body.value, event);
  });
}
