/** watch: a run's events as they happen, or a stored run replayed when no swarm is up. */
import { fromBinary } from "@bufbuild/protobuf";
import { progressSubject } from "../../bus/index.js";
import { EventSchema, type Event } from "../../proto/gen/research/v1/events_pb.js";
import { applyToRunState, emptyRunState, type RunState } from "../../swarm/run-state.js";
import { args, fail } from "../args.js";
import { connectOrFail, openLineage } from "../workspace.js";
import { describeEvent } from "../event-line.js";

export default async function watch(argv: string[]): Promise<void> {
  const { values: a, positionals } = args(argv, {}, { positionals: ["RUN"], noJson: "it prints events as they come, a line each; report RUN --json gives a run as one document" });
  const states = new Map<string, RunState>();
  const stateOf = (runId: string) => states.get(runId) ?? states.set(runId, emptyRunState(runId)).get(runId)!;
  const print = (e: Event, s: RunState) => {
    const line = describeEvent(e, s);
    if (line) process.stdout.write(`${new Date(Number(e.emittedAtMs)).toISOString()} ${e.runId} ${line}\n`);
  };
  const bus = await connectOrFail(a.workspace, a.nats);
  if (!bus) {
    // No swarm: the run as the workspace stored it, start to end.
    const runId = positionals[0] ?? fail("no swarm is running for this workspace: watch RUN replays a stored run (research-agent runs lists them)");
    const store = await openLineage(a.workspace);
    const rows = await store.eventsOf(runId);
    await store.close();
    if (rows.length === 0) fail(`no run ${runId} in this workspace's lineage`);
    for (const row of rows) {
      const e = fromBinary(EventSchema, row.payload);
      print(e, applyToRunState(stateOf(e.runId), e));
    }
    return;
  }
  const run = positionals[0] ?? "*";
  await bus.watch(run, (e) => print(e, applyToRunState(stateOf(e.runId), e)));
  // Progress is live only: what is running now, never the history.
  bus.subscribe(progressSubject(run), (e) => print(e, stateOf(e.runId)));
  process.once("SIGINT", () => void bus.close().then(() => process.exit(0)));
}
