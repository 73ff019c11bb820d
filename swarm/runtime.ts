/**
 * What every agent process shares: connect to the bus, consume its kinds as
 * a member of its role, rebuild run state by replay, publish with
 * deterministic event ids, heartbeat, and drain on SIGTERM. A role is then
 * a handler function and nothing else.
 */
import { connectBus, instanceId, onShutdown, type Bus, type EventInit } from "../bus/index.js";
import type { EventKind } from "../bus/subjects.js";
import { createLogger, type Logger } from "../core/logger.js";
import { exitWithParent } from "../core/process.js";
import type { Event } from "../proto/gen/research/v1/events_pb.js";
import { connectRunner, type RunnerClient } from "../gpu-runner/client.js";
import { foldRun, type RunState } from "./run-state.js";

export interface AgentContext {
  bus: Bus;
  log: Logger;
  /** The run's state from its full stored trajectory. */
  runState(runId: string): Promise<RunState>;
  /** Publishes an event whose id is derived from `key`, so a redelivered message republishes the same id. */
  emit(key: string, init: EventInit): Promise<void>;
  runner(): RunnerClient;
}

export type AgentHandler = (event: Event, ctx: AgentContext) => Promise<void>;

export interface AgentOptions {
  role: string;
  kinds: readonly EventKind[];
  handle: AgentHandler;
  /** Redelivery deadline; long handlers (evaluations) are kept alive by the bus. */
  ackWaitMs?: number;
  /** After the last delivery attempt: publish a failure so the run does not wait forever. */
  onDeadLetter?: (event: Event, error: unknown, ctx: AgentContext) => Promise<void>;
  /** Messages handled at once by this process (AGENT_CONCURRENCY overrides); default 1. */
  concurrency?: number;
  /** Extra wiring on the connected bus (a request/reply service, say). */
  setup?: (bus: Bus) => void;
}

export function natsServers(): string[] {
  return (process.env.NATS_URL ?? "nats://127.0.0.1:4222").split(",").map((s) => s.trim());
}

/** Round robin over the runners in RUNNER_ADDRESS (comma-separated host:port). */
function runnerPicker(): () => RunnerClient {
  const addresses = (process.env.RUNNER_ADDRESS ?? "127.0.0.1:50051").split(",").map((s) => s.trim());
  const clients: RunnerClient[] = [];
  let next = 0;
  return () => {
    const i = next++ % addresses.length;
    clients[i] ??= connectRunner(addresses[i]!);
    return clients[i]!;
  };
}

export async function replayRun(bus: Bus, runId: string): Promise<RunState> {
  const events: Event[] = [];
  await bus.replay(runId, (e) => void events.push(e));
  return foldRun(runId, events);
}

export async function runAgent(opts: AgentOptions): Promise<void> {
  const instance = process.env.INSTANCE_ID ?? instanceId();
  const log = createLogger(opts.role, { instance });
  const bus = await connectBus({
    servers: natsServers(),
    name: `${opts.role}@${instance}`,
    logger: log,
    replicas: Number(process.env.NATS_STREAM_REPLICAS ?? 1),
  });
  const runner = runnerPicker();
  const ctx = (event: Event): AgentContext => ({
    bus,
    log: log.child({ run_id: event.runId, ...(event.trialId ? { trial_id: event.trialId } : {}) }),
    runState: (runId) => replayRun(bus, runId),
    emit: async (key, init) => {
      await bus.publish({ ...init, eventId: `${init.runId}/${key}` });
    },
    runner,
  });

  // Each consumption holds one message at a time; several on the same durables
  // let one process work on several trials (evaluations wait on the runner, not the CPU here).
  const concurrency = Number(process.env.AGENT_CONCURRENCY ?? opts.concurrency ?? 1);
  const consume = () => bus.consume(
    opts.role,
    opts.kinds,
    // A runner_unavailable failure is retried by the bus (ResearchError.retryable); anything else is the handler's to label.
    (event) => opts.handle(event, ctx(event)),
    {
      ackWaitMs: opts.ackWaitMs,
      onDeadLetter: async (event, err) => {
        log.error({ run_id: event.runId, trial_id: event.trialId, err: (err as Error).message }, "event dead-lettered");
        await opts.onDeadLetter?.(event, err, ctx(event));
      },
    },
  );
  const consumptions = await Promise.all(Array.from({ length: Math.max(1, concurrency) }, consume));
  const sum = (f: (c: (typeof consumptions)[number]) => number) => () => consumptions.reduce((a, c) => a + f(c), 0);
  opts.setup?.(bus);
  bus.startHeartbeat({ role: opts.role, instance, inFlight: sum((c) => c.inFlight()), handled: sum((c) => c.handled()) });
  log.info({ kinds: opts.kinds }, "agent ready");
  onShutdown(async () => {
    log.info("draining");
    await bus.close();
  });
  exitWithParent();
}
