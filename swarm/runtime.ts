/**
 * What every agent process shares: connect to the bus, consume its kinds as
 * a member of its role, keep the state of the runs it works on current,
 * publish with deterministic event ids, heartbeat, and drain on SIGTERM. A
 * role is then a handler function and nothing else.
 */
import { connectBus, onShutdown, watchRunners, type Bus, type EventInit } from "../bus/index.js";
import { agentConfig } from "../core/config.js";
import type { EventKind } from "../bus/subjects.js";
import { createLogger, setLogLevel, type Logger } from "../core/logger.js";
import { exitWithParent } from "../core/process.js";
import { loadSecrets } from "../core/secrets.js";
import type { Event } from "../proto/gen/research/v1/events_pb.js";
import type { RunnerClient } from "../gpu-runner/client.js";
import { RunnerLeases } from "./runner-leases.js";
import { Runners } from "./runners.js";
import type { RunState } from "./run-state.js";
import { RunStates } from "./run-states.js";

export interface AgentContext {
  bus: Bus;
  log: Logger;
  /** The run's state, current with every event stored before the call, the handled one included (shared: read, don't write). */
  runState(runId: string): Promise<RunState>;
  /** Publishes an event whose id is derived from `key`, so a redelivered message republishes the same id. */
  emit(key: string, init: EventInit): Promise<void>;
  /** The runner for the next call, by health (swarm/runners.ts). */
  runner(): RunnerClient;
  /** Every runner, those answering first: for what only one of them holds (a trial's kept weights). */
  runners(): RunnerClient[];
  /**
   * The runner that evaluates `key` (an idempotency key): the one a request with that key went
   * to before, else one picked by health and claimed for the key (swarm/runner-leases.ts), and
   * the runner process the lease names ("" when unknown: EvaluateRequest.runner_instance).
   * `release()` gives it up when that runner failed the evaluation, so a retry picks again.
   */
  runnerFor(key: string): Promise<{ client: RunnerClient; instance: string; release(): Promise<void> }>;
}

export type AgentHandler = (event: Event, ctx: AgentContext) => Promise<void>;

export interface AgentOptions {
  role: string;
  kinds: readonly EventKind[];
  handle: AgentHandler;
  /** Redelivery deadline (AGENT_ACK_WAIT_S overrides); long handlers (evaluations) are kept alive by the bus. */
  ackWaitMs?: number;
  /** After the last delivery attempt: publish a failure so the run does not wait forever. */
  onDeadLetter?: (event: Event, error: unknown, ctx: AgentContext) => Promise<void>;
  /** Messages handled at once by this process (AGENT_CONCURRENCY overrides); default 1. */
  concurrency?: number;
  /** Extra wiring on the connected bus (a request/reply service, say). */
  setup?: (bus: Bus) => void;
  /** Messages of one kind handled at once by one consumption; short handlers only (see ConsumeOptions). */
  maxInFlight?: number;
}

/**
 * The runner that holds an evaluation key (swarm/runner-leases.ts), a run's calls for it going
 * there, and the release of the key when that runner failed it. The leases' bucket is opened by
 * the first agent that asks (the analyst): the others never need it.
 */
function leasedRunners(bus: Bus, runners: Runners, replicas: number | undefined, log: Logger) {
  let leases: Promise<RunnerLeases> | undefined;
  return async (run: string, key: string) => {
    leases ??= RunnerLeases.open(bus, replicas).catch((err: unknown) => {
      leases = undefined;
      throw err;
    });
    const held = await leases;
    const holder = await held.holder(key, () => runners.pickHolder(run));
    log.info({ key, runner: holder.address, instance: holder.instance }, "evaluation key held by runner");
    return {
      client: runners.at(holder.address, run),
      instance: holder.instance,
      release: async () => {
        log.info({ key, runner: holder.address, instance: holder.instance }, "evaluation key released: its runner failed it");
        await held.release(key, holder);
      },
    };
  };
}

export async function runAgent(opts: AgentOptions): Promise<void> {
  exitWithParent();
  const config = agentConfig();
  setLogLevel(config.logLevel);
  const instance = config.instance;
  const log = createLogger(opts.role, { instance });
  const secrets = config.secretsDir ? loadSecrets(config.secretsDir) : undefined;
  const bus = await connectBus({
    servers: config.natsServers,
    name: `${opts.role}@${instance}`,
    logger: log,
    replicas: config.streamReplicas,
    secrets,
  });
  const runners = new Runners(config.runnerAddresses, secrets, log);
  // Runners that join over the bus (Slurm jobs) beside RUNNER_ADDRESS's.
  const registry = await watchRunners(bus, (address, entry) => (entry ? runners.add(address, entry.run) : runners.remove(address)), config.streamReplicas);
  const runs = new RunStates(bus, log);
  const runnerFor = leasedRunners(bus, runners, config.streamReplicas, log);
  /** `seq`: the handled event's stream sequence, which its run's state must have applied. */
  const ctx = (event: Event, seq = 0): AgentContext => ({
    bus,
    log: log.child({ run_id: event.runId, ...(event.trialId ? { trial_id: event.trialId } : {}) }),
    runState: (runId) => runs.get(runId, runId === event.runId ? seq : 0),
    emit: async (key, init) => {
      await bus.publish({ ...init, eventId: `${init.runId}/${key}` });
    },
    runner: () => runners.pick(event.runId),
    runners: () => runners.all(event.runId),
    runnerFor: (key) => runnerFor(event.runId, key),
  });

  // Each consumption holds one message at a time; several on the same durables
  // let one process work on several trials (evaluations wait on the runner, not the CPU here).
  const concurrency = config.concurrency ?? opts.concurrency ?? 1;
  const consume = () => bus.consume(
    opts.role,
    opts.kinds,
    // A runner_unavailable failure is retried by the bus (ResearchError.retryable); anything else is the handler's to label.
    (event, handled) => opts.handle(event, ctx(event, handled.seq)),
    {
      ackWaitMs: config.ackWaitS !== undefined ? config.ackWaitS * 1000 : opts.ackWaitMs,
      maxInFlight: opts.maxInFlight,
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
    // Closing the bus waits for handlers in flight, which may still read run states.
    await bus.close();
    await runs.close();
    registry.stop();
    runners.close();
  });
}
