/**
 * A verb's way to the workspace: its swarm, if one is up, and its lineage. The bus and
 * LanceDB are imported when first used, so a verb checks its flags before it pays for them.
 */
import { existsSync } from "node:fs";
import { hostname } from "node:os";
import { join, resolve } from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import { z } from "zod";
import { readJsonFile } from "../core/json.js";
import type { Bus } from "../bus/index.js";
import { cliConfig } from "../core/config.js";
import { alive } from "../core/process.js";
import { createLogger } from "../core/logger.js";
import type { LineageStore } from "../lineage-store/store.js";
import { INFERENCE_FILE } from "../lineage-store/inference-spec.js";
import { EventSchema, type Event } from "../proto/gen/research/v1/events_pb.js";
import { fail } from "./args.js";

/**
 * What the launcher of the swarm in `workspace` wrote about it (deploy/swarm.ts), while that
 * launcher lives: the file outlives it, and a verb that tried its NATS address waited its whole
 * connect timeout (3 s) to learn that no swarm is up. The swarm's processes end with their launcher.
 * A launcher on another host (a workspace on a shared file system) is taken as alive.
 */
export function swarmFile(workspace: string): { nats_url: string; runner_address: string } | undefined {
  const file = readJsonFile(join(resolve(workspace), "swarm.json"), z.object({ nats_url: z.string(), runner_address: z.string(), pid: z.number().optional(), host: z.string().optional() }));
  const gone = file?.pid !== undefined && (file.host ?? hostname()) === hostname() && !alive(file.pid);
  return file && !gone ? file : undefined;
}

/** The workspace's swarm (or the one at `nats`), or undefined when none answers within 3 s. */
export async function connectOrFail(workspace: string, nats?: string): Promise<Bus | undefined> {
  const url = nats ?? swarmFile(workspace)?.nats_url;
  if (!url) return undefined;
  const [{ connectBus }, { workspaceSecrets }] = await Promise.all([import("../bus/index.js"), import("../deploy/swarm.js")]);
  try {
    return await Promise.race([
      connectBus({ servers: url, name: "cli", ensureStream: false, logger: quietLogger(), secrets: workspaceSecrets(workspace, cliConfig().secretsDir) }),
      new Promise<undefined>((r) => setTimeout(r, 3000)),
    ]);
  } catch {
    return undefined;
  }
}

/** `file`: where a launcher's logs go, since its console is for the person who launched it. */
export function quietLogger(file?: string) {
  const log = createLogger("research-agent", {}, file);
  log.level = cliConfig().logLevel;
  return log;
}

/** The workspace's lineage, read-only (the store process may be writing it). */
export async function openLineage(workspace: string): Promise<LineageStore> {
  const dir = join(resolve(workspace), "lineage");
  if (!existsSync(dir)) fail(`no lineage in ${dir} (is --workspace right?)`);
  const [{ LineageStore }, { lineageEmbedder }] = await Promise.all([import("../lineage-store/store.js"), import("../lineage-store/embedder.js")]);
  return LineageStore.open(dir, { readOnly: true, embedder: await lineageEmbedder(dir, {}, quietLogger()), logger: quietLogger() });
}

/** A run's events as the lineage stored them, in stream order: none for a run it does not have. */
export async function storedEvents(workspace: string, run: string): Promise<Event[]> {
  return (await storedRuns(workspace, [run])).get(run) ?? [];
}

/**
 * Each run's stored events through one opening of the lineage: the runs named, or every run of
 * the workspace (newest first) when `runs` is undefined. A named run the lineage lacks is absent.
 */
export async function storedRuns(workspace: string, runs?: readonly string[]): Promise<Map<string, Event[]>> {
  const store = await openLineage(workspace);
  try {
    const ids = runs ?? (await store.listRuns()).map((r) => r.run_id);
    const out = new Map<string, Event[]>();
    for (const id of ids) {
      const events = (await store.eventsOf(id)).map((row) => fromBinary(EventSchema, row.payload));
      if (events.length) out.set(id, events);
    }
    return out;
  } finally {
    await store.close();
  }
}

/**
 * The folder of a finished run whose best model can be fed outside it (export --format, predict):
 * one with its inference spec; and the seed flag checked. Either refused in one line.
 */
export function bestModelRun(workspace: string, runId: string, seed: string | undefined): { runDir: string; seedArgs: string[] } {
  const runDir = join(resolve(workspace), "runs", runId);
  if (!existsSync(join(runDir, INFERENCE_FILE))) fail(`${runId} has no ${INFERENCE_FILE} (a run finished before the runner reported its preprocessing, or with no best model)`);
  if (seed !== undefined && !/^\d+$/.test(seed)) fail(`--seed must be a seed of the run's best trial, got "${seed}"`);
  return { runDir, seedArgs: seed === undefined ? [] : ["--seed", seed] };
}
