/**
 * The lineage-store process: the only writer of the workspace's LanceDB
 * tables and run folders. It records every research event (acknowledging
 * only after the write, so a killed store loses nothing JetStream
 * delivered), keeps each run's artifact folder current, and answers
 * similarity queries over NATS request/reply.
 */
import { join } from "node:path";
import { runAgent, replayRun } from "../swarm/runtime.js";
import { EVENT_KINDS } from "../bus/subjects.js";
import { createLogger } from "../core/logger.js";
import { writeArtifacts } from "./artifacts.js";
import { serveQueries } from "./query.js";
import { LineageStore } from "./store.js";

const workspace = process.env.WORKSPACE ?? "./workspace";
const store = await LineageStore.open(join(workspace, "lineage"), { logger: createLogger("lineage-store") });

await runAgent({
  role: "lineage-store",
  kinds: EVENT_KINDS,
  handle: async (event, ctx) => {
    await store.applyEvent(event);
    // Progress ticks are many and change no artifact.
    if (event.body.case === "trialProgress") return;
    const state = await replayRun(ctx.bus, event.runId);
    await writeArtifacts(join(workspace, "runs", event.runId), state, event);
  },
  setup: (bus) => void serveQueries(bus, store),
});
