/**
 * status: the swarm at a glance: its live runs with their trials by state (from the
 * workspace's lineage), the runners with their slots (Health), and the agents
 * (heartbeats).
 */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import { cliConfig } from "../../core/config.js";
import { TRIAL_STATUS } from "../../core/enums.js";
import { pct } from "../../core/format.js";
import { workspaceSecrets } from "../../deploy/swarm.js";
import { connectRunner } from "../../gpu-runner/client.js";
import { EventSchema } from "../../proto/gen/research/v1/events_pb.js";
import { bestTrial, foldRun, trialStatus } from "../../swarm/run-state.js";
import { args, fail } from "../args.js";
import { connectOrFail, openLineage, swarmFile } from "../workspace.js";

async function liveRuns(workspace: string): Promise<string[]> {
  if (!existsSync(join(resolve(workspace), "lineage"))) return [];
  const store = await openLineage(workspace);
  try {
    const out: string[] = [];
    for (const r of (await store.listRuns()).filter((x) => x.status === "running")) {
      const state = foldRun(r.run_id, (await store.eventsOf(r.run_id)).map((row) => fromBinary(EventSchema, row.payload)));
      const counts = new Map<string, number>();
      for (const t of state.trials.values()) counts.set(trialStatus(t), (counts.get(trialStatus(t)) ?? 0) + 1);
      const trials = TRIAL_STATUS.names.filter((n) => counts.has(n)).map((n) => `${counts.get(n)} ${n}`).join(", ") || "none yet";
      const best = bestTrial(state);
      const ci = best?.evaluated?.result?.aggregated.val_accuracy?.ci95;
      const held = state.stopRequested ? ` (stopping: ${state.stopRequested.who})` : state.paused ? " (paused)" : "";
      out.push(`  ${r.run_id}${held}  trials: ${trials}${best && ci ? `; best ${best.id} ${pct(ci[0]!)}–${pct(ci[1]!)}` : ""}  ${r.goal}`);
    }
    return out;
  } finally {
    await store.close();
  }
}

async function runnerHealth(workspace: string): Promise<string[]> {
  const addresses = swarmFile(workspace)?.runner_address.split(",") ?? [];
  return Promise.all(
    addresses.map(async (address) => {
      const client = connectRunner(address, workspaceSecrets(workspace, cliConfig().secretsDir));
      try {
        const h = await client.health({}, { timeoutMs: 3000 });
        const d = h.device;
        return `  ${address}  ${h.slots} slots, ${h.freeSlots} free, ${h.queueDepth} queued, ${h.workersReady} workers up; ${d?.kind ?? "?"} ${d?.name ?? ""}${d?.sandboxed ? ", sandboxed" : ", NOT sandboxed"}`;
      } catch (err) {
        return `  ${address}  not answering: ${(err as Error).message}`;
      } finally {
        client.close();
      }
    }),
  );
}

export default async function status(argv: string[]): Promise<void> {
  const { values: a } = args(argv, {});
  const bus = (await connectOrFail(a.workspace, a.nats)) ?? fail("no swarm is running for this workspace (give --nats URL or --workspace DIR)");
  const agents = new Map<string, string>();
  const sub = bus.watchHeartbeats((beat) => {
    agents.set(`${beat.role}/${beat.instance}`, `in flight ${beat.inFlight}, handled ${beat.handled}, up ${((Date.now() - Number(beat.startedAtMs)) / 1000).toFixed(0)} s`);
  });
  const [runLines, runnerLines] = await Promise.all([liveRuns(a.workspace), runnerHealth(a.workspace), new Promise((r) => setTimeout(r, 6000))]); // heartbeats come every 5 s
  await sub.stop();
  await bus.close();
  const lines = ["runs:", ...(runLines.length ? runLines : ["  none running"]), "runners:", ...runnerLines, "agents:"];
  lines.push(...(agents.size ? [...agents.entries()].sort().map(([who, what]) => `  ${who.padEnd(38)} ${what}`) : ["  no heartbeats in 6 s"]));
  process.stdout.write(`${lines.join("\n")}\n`);
  if (agents.size === 0) process.exitCode = 1;
}
