/**
 * A finished run's stored events as a recording for the planner's replays
 * (test/fixtures/runs, test/agents/replay.test.ts): one protobuf-JSON Event per line, in stream
 * order, with the workspace's path replaced by WORKSPACE.
 *
 *   npx tsx bench/record-run.ts WORKSPACE RUN_ID OUT.jsonl
 */
import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { toJsonString } from "@bufbuild/protobuf";
import { storedEvents } from "../cli/workspace.js";
import { EventSchema } from "../proto/gen/research/v1/events_pb.js";

const [workspace, run, out] = process.argv.slice(2);
if (!workspace || !run || !out) {
  process.stderr.write("usage: npx tsx bench/record-run.ts WORKSPACE RUN_ID OUT.jsonl\n");
  process.exit(1);
}
const events = await storedEvents(workspace, run);
if (!events.length) {
  process.stderr.write(`record-run: no events of run ${run} in ${workspace}\n`);
  process.exit(1);
}
const root = resolve(workspace);
writeFileSync(out, events.map((e) => toJsonString(EventSchema, e).split(root).join("WORKSPACE")).join("\n") + "\n");
process.stderr.write(`record-run: ${events.length} events of ${run} to ${out}\n`);
