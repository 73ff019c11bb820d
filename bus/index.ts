export { Bus, connectBus, type BusOptions, type EventInit } from "./bus.js";
export { decodeEvent, encodeEvent } from "./codec.js";
export type { ConsumeOptions, Consumption, DeadLetterHook, EventHandler, HandlerContext } from "./consumer.js";
export { instanceId, type HeartbeatOptions } from "./heartbeat.js";
export { freePort, startNatsServer, type NatsServer, type NatsServerOptions } from "./nats-server.js";
export type { ServiceHandler } from "./request-reply.js";
export type { EventListener, RunWatch } from "./run-reader.js";
export { onShutdown } from "./shutdown.js";
export {
  consumerName,
  EVENT_KINDS,
  filterFor,
  heartbeatSubject,
  runFilter,
  STREAM,
  subjectFor,
  type BodyCase,
  type EventKind,
} from "./subjects.js";
export type { Stoppable } from "./subscription.js";
export type { Event, Heartbeat } from "../proto/gen/research/v1/events_pb.js";
