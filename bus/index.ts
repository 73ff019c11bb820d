export { Bus, connectBus, type BusOptions, type EventInit } from "./bus.js";
export { decodeEvent, encodeEvent } from "./codec.js";
export { KvBucket, type KvEntry, type KvOptions } from "./kv.js";
export { announceRunner, watchRunners, type RunnerEntry } from "./runner-registry.js";
export type { ConsumeOptions, Consumption, DeadLetterHook, EventHandler, HandlerContext } from "./consumer.js";
export type { HeartbeatOptions } from "./heartbeat.js";
export { freePort, natsAuthConfig, startNatsServer, type NatsServer, type NatsServerOptions } from "./nats-server.js";
export type { ServiceHandler } from "./request-reply.js";
export type { EventListener, RunWatch } from "./run-reader.js";
export { onShutdown } from "./shutdown.js";
export {
  consumerName,
  EVENT_KINDS,
  filterFor,
  heartbeatSubject,
  isLive,
  progressSubject,
  runFilter,
  STREAM,
  subjectFor,
  type BodyCase,
  type EventKind,
  type LiveKind,
} from "./subjects.js";
export type { Stoppable } from "./subscription.js";
export type { Event, Heartbeat } from "../proto/gen/research/v1/events_pb.js";
