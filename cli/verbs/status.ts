/**
 * status: the swarm at a glance: its live runs with their trials by state (from the
 * workspace's lineage), the runners with their slots (Health), and the agents
 * (heartbeats).
 */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import { cliConfig } from "../../core/config.js";
import { watchRunners } from "../../bus/index.js";
import { TRIAL_STATUS } from "../../core/enums.js";
import { jobsText } from "../../core/format.js";
import { formatMetric } from "../../core/objective.js";
import { workspaceSecrets } from "../../deploy/swarm.js";
import { connectRunner } from "../../gpu-runner/client.js";
import { EventSchema } from "../../proto/gen/research/v1/events_pb.js";
import { bestTrial, foldRun } from "../../swarm/run-state.js";
import { trialStatus } from "../../swarm/trial-state.js";
import { args, EXIT, fail } from "../args.js";
import { connectOrFail, openLineage, swarmFile } from "../workspace.js";

interface LiveRun {
  run_id: string;
  goal: string;
  /** running, paused, or stopping (a stop was asked for, by `stopping_by`). */
  state: string;
  stopping_by?: string;
  /** Its runner jobs as last recorded (launch --runners slurm): "1 of 2 up, 1 pending (Resources)". */
  runner_jobs?: string;
  /** Trials by status (trial_status names). */
  trials: Record<string, number>;
  /** The best trial's validation 95% CI, and as text in the metric's units (a percentage or a number). */
  best: { trial_id: string; val_ci95: [number, number]; val_ci95_text: string } | null;
}

async function liveRuns(workspace: string): Promise<LiveRun[]> {
  if (!existsSync(join(resolve(workspace), "lineage"))) return [];
  const store = await openLineage(workspace);
  try {
    const out: LiveRun[] = [];
    for (const r of (await store.listRuns()).filter((x) => x.status === "running")) {
      const state = foldRun(r.run_id, (await store.eventsOf(r.run_id)).map((row) => fromBinary(EventSchema, row.payload)));
      const trials: Record<string, number> = {};
      for (const t of state.trials.values()) trials[trialStatus(t)] = (trials[trialStatus(t)] ?? 0) + 1;
      const best = bestTrial(state);
      const ci = best && state.objective && best.evaluated?.result?.aggregated[state.objective.key]?.ci95;
      out.push({
        run_id: r.run_id,
        goal: r.goal,
        state: state.stopRequested ? "stopping" : state.paused ? "paused" : "running",
        ...(state.stopRequested && { stopping_by: state.stopRequested.who }),
        ...(state.runnerJobs && { runner_jobs: jobsText(state.runnerJobs) }),
        trials,
        best: best && ci ? { trial_id: best.id, val_ci95: [ci[0]!, ci[1]!], val_ci95_text: `${formatMetric(state.objective, ci[0]!)}–${formatMetric(state.objective, ci[1]!)}` } : null,
      });
    }
    return out;
  } finally {
    await store.close();
  }
}

function runLine(r: LiveRun): string {
  const trials = TRIAL_STATUS.names.filter((n) => n in r.trials).map((n) => `${r.trials[n]} ${n}`).join(", ") || "none yet";
  const held = r.state === "stopping" ? ` (stopping: ${r.stopping_by})` : r.state === "paused" ? " (paused)" : "";
  const best = r.best ? `; best ${r.best.trial_id} ${r.best.val_ci95_text}` : "";
  return `  ${r.run_id}${held}  trials: ${trials}${best}${r.runner_jobs ? `; runner jobs: ${r.runner_jobs}` : ""}  ${r.goal}`;
}

interface RunnerJson {
  address: string;
  health?: { slots: number; free_slots: number; queue_depth: number; workers_ready: number; device: string; sandboxed: boolean; evaluations_started: number; evaluations_joined: number };
  error?: string;
}

/** `announced`: the runners that joined over the bus (Slurm jobs, bus/runner-registry.ts) besides the swarm's own. */
async function runnerHealth(workspace: string, announced: Iterable<string>): Promise<RunnerJson[]> {
  const addresses = [...new Set([...(swarmFile(workspace)?.runner_address.split(",") ?? []), ...announced])];
  return Promise.all(
    addresses.map(async (address) => {
      const client = connectRunner(address, workspaceSecrets(workspace, cliConfig().secretsDir));
      try {
        const h = await client.health({}, { timeoutMs: 3000 });
        const d = h.device;
        return { address, health: { slots: h.slots, free_slots: h.freeSlots, queue_depth: h.queueDepth, workers_ready: h.workersReady, device: `${d?.kind ?? "?"} ${d?.name ?? ""}`.trim(), sandboxed: !!d?.sandboxed, evaluations_started: Number(h.evaluationsStarted), evaluations_joined: Number(h.evaluationsJoined) } };
      } catch (err) {
        return { address, error: (err as Error).message };
      } finally {
        client.close();
      }
    }),
  );
}

function runnerLine({ address, health: h, error }: RunnerJson): string {
  if (!h) return `  ${address}  not answering: ${error}`;
  return `  ${address}  ${h.slots} slots, ${h.free_slots} free, ${h.queue_depth} queued, ${h.workers_ready} workers up; ${h.device}${h.sandboxed ? ", sandboxed" : ", NOT sandboxed"}; ${h.evaluations_started} evaluations, ${h.evaluations_joined} duplicate requests joined one`;
}

export default async function status(argv: string[]): Promise<void> {
  const { values: a } = args(argv, {});
  const bus = (await connectOrFail(a.workspace, a.nats)) ?? fail("no swarm is running for this workspace (give --nats URL or --workspace DIR)", EXIT.cannotRun);
  const agents = new Map<string, { in_flight: number; handled: number; up_s: number }>();
  const sub = bus.watchHeartbeats((beat) => {
    agents.set(`${beat.role}/${beat.instance}`, { in_flight: beat.inFlight, handled: Number(beat.handled), up_s: Math.round((Date.now() - Number(beat.startedAtMs)) / 1000) });
  });
  const announced = new Set<string>();
  const registry = await watchRunners(bus, (address, entry) => (entry ? announced.add(address) : announced.delete(address)), cliConfig().streamReplicas);
  // Heartbeats come every 5 s; the registry's entries at once.
  const [runs] = await Promise.all([liveRuns(a.workspace), new Promise((r) => setTimeout(r, 6000))]);
  const runners = await runnerHealth(a.workspace, announced);
  registry.stop();
  await sub.stop();
  await bus.close();
  const sorted = [...agents.entries()].sort(([x], [y]) => x.localeCompare(y));
  if (agents.size === 0) process.exitCode = EXIT.cannotRun;
  if (a.json) return void process.stdout.write(`${JSON.stringify({ runs, runners, agents: sorted.map(([agent, beat]) => ({ agent, ...beat })) })}\n`);
  const lines = ["runs:", ...(runs.length ? runs.map(runLine) : ["  none running"]), "runners:", ...runners.map(runnerLine), "agents:"];
  lines.push(...(agents.size ? sorted.map(([who, b]) => `  ${who.padEnd(38)} in flight ${b.in_flight}, handled ${b.handled}, up ${b.up_s} s`) : ["  no heartbeats in 6 s"]));
  process.stdout.write(`${lines.join("\n")}\n`);
}
