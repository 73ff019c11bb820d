/** report: a run's report, or for a run still going, the report so far. */
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { buildReport } from "../../lineage-store/report.js";
import { reportText } from "../../lineage-store/report-json.js";
import { RunStatus, type Event } from "../../proto/gen/research/v1/events_pb.js";
import { foldRun, runSoFar } from "../../swarm/run-state.js";
import { args, fail } from "../args.js";
import { connectOrFail, storedEvents } from "../workspace.js";

export default async function report(argv: string[]): Promise<void> {
  const { values: a, positionals } = args(argv, {}, { positionals: ["RUN"] });
  const run = positionals[0] ?? fail("report needs a RUN id");
  // --json: report.json beside report.md, the same report as one document.
  const path = join(resolve(a.workspace), "runs", run, a.json ? "report.json" : "report.md");
  if (existsSync(path)) return void process.stdout.write(readFileSync(path, "utf8"));
  // A run still going has no report yet: render one from its events so far, read from the
  // swarm's stream while one is up (the lineage store commits in groups, so it may lag the run).
  const events = await liveEvents(a.workspace, run, a.nats) ?? (await storedEvents(a.workspace, run));
  if (events.length === 0) fail(`no run ${run} in this workspace (research-agent runs lists them)`);
  const state = foldRun(run, events);
  const sofar = runSoFar(state, RunStatus.RUNNING, `still running: the report so far, after ${state.judgedCount} judged trials`);
  const built = buildReport(state, sofar);
  process.stdout.write(a.json ? reportText(built.json, state.objective) : built.markdown);
}

/** The run's events from the bus: the workspace's swarm's, or `nats`'s (a swarm that another host started). */
async function liveEvents(workspace: string, run: string, nats: string | undefined): Promise<Event[] | undefined> {
  const bus = await connectOrFail(workspace, nats);
  if (!bus) return undefined;
  const events: Event[] = [];
  try {
    await bus.replay(run, (e) => void events.push(e));
  } finally {
    await bus.close();
  }
  return events;
}
