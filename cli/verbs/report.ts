/** report: a run's report, or for a run still going, the report so far. */
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import { buildReport } from "../../lineage-store/report.js";
import { EventSchema, RunStatus } from "../../proto/gen/research/v1/events_pb.js";
import { foldRun, runSoFar } from "../../swarm/run-state.js";
import { args, fail } from "../args.js";
import { openLineage } from "../workspace.js";

export default async function report(argv: string[]): Promise<void> {
  const { values: a, positionals } = args(argv, {});
  const run = positionals[0] ?? fail("report needs a RUN id");
  const path = join(resolve(a.workspace), "runs", run, "report.md");
  if (existsSync(path)) return void process.stdout.write(readFileSync(path, "utf8"));
  // A run still going has no report yet: render one from what the workspace has stored so far.
  const store = await openLineage(a.workspace);
  const rows = await store.eventsOf(run);
  await store.close();
  if (rows.length === 0) fail(`no run ${run} in this workspace (research-agent runs lists them)`);
  const state = foldRun(run, rows.map((row) => fromBinary(EventSchema, row.payload)));
  const sofar = runSoFar(state, RunStatus.RUNNING, `still running: the report so far, after ${state.judgedCount} judged trials`);
  process.stdout.write(buildReport(state, sofar).markdown);
}
