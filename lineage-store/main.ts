/**
 * The lineage-store process: the only writer of the workspace's LanceDB
 * tables and run folders. It records every research event (acknowledging
 * only after the write, so a killed store loses nothing JetStream
 * delivered), keeps each run's artifact folder current, and answers
 * similarity queries over NATS request/reply.
 */
import { join } from "node:path";
import { EVENT_KINDS } from "../bus/subjects.js";
import { agentConfig } from "../core/config.js";
import { exitWithParent, privateTmpdir } from "../core/process.js";
import { createLogger, setLogLevel } from "../core/logger.js";
import { runAgent } from "../swarm/runtime.js";
import { writeArtifacts } from "./artifacts.js";
import { lineageEmbedder } from "./embedder.js";
import { serveQueries } from "./query.js";
import { LineageStore } from "./store.js";

// Before the slow part of starting (LanceDB, the embedding model): a launcher that dies meanwhile takes this process with it.
exitWithParent();
// Before the first LanceDB connection: what LanceDB leaves in TMPDIR goes with this process.
privateTmpdir("lineage-store");
const config = agentConfig();
// Set before the store's logger exists (runAgent would set it later).
setLogLevel(config.logLevel);
const workspace = config.workspace;
// Bound to the instance as runAgent binds its own logger, so every line names its process.
const log = createLogger("lineage-store", { instance: config.instance });
const store = await LineageStore.open(join(workspace, "lineage"), { embedder: await lineageEmbedder(join(workspace, "lineage"), config.embedder), logger: log });

/** Artifact writes of one run, one at a time: the registry is read, updated and replaced. */
const artifactChains = new Map<string, Promise<void>>();
function inOrder(runId: string, write: () => Promise<void>): Promise<void> {
  const next = (artifactChains.get(runId) ?? Promise.resolve()).then(write);
  const settled = next.catch(() => undefined);
  artifactChains.set(runId, settled);
  void settled.then(() => {
    if (artifactChains.get(runId) === settled) artifactChains.delete(runId);
  });
  return next;
}

await runAgent({
  role: "lineage-store",
  kinds: EVENT_KINDS,
  // Many events wait on one group commit at a time (LanceDB commits cost
  // milliseconds each; batches of hundreds cost about the same).
  maxInFlight: 256,
  handle: async (event, ctx) => {
    // The store's fold is the process's one fold of the run: the rows and the run folder are
    // both drawn from it. Recording waits on nothing else (waiting first for a follower of the
    // run to catch up kept a loaded store's first rows from the disk past an interrupt).
    await store.record(event);
    const state = await store.runState(event.runId);
    await inOrder(event.runId, () => writeArtifacts(join(workspace, "runs", event.runId), state, event, { runners: ctx.runners(), log: log.child({ run_id: event.runId }) }));
  },
  setup: (bus) => void serveQueries(bus, store),
});
