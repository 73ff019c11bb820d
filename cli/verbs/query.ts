/** query: the lineage's trials closest to a text. */
import { FAILURE_LABEL } from "../../core/failure.js";
import { TRIAL_STATUS } from "../../core/enums.js";
import { pct } from "../../core/format.js";
import { summaryOf } from "../../lineage-store/query.js";
import type { TrialSummary } from "../../proto/gen/research/v1/lineage_pb.js";
import { DEFAULT_K, MAX_K, request as queryLineage, summaryJson } from "../../swarm/lineage-query.js";
import { args, fail } from "../args.js";
import { connectOrFail, openLineage } from "../workspace.js";
import { parsePositiveInt } from "../format.js";

export default async function query(argv: string[]): Promise<void> {
  const { values: a } = args(argv, { similar: { type: "string" }, run: { type: "string" }, k: { type: "string" } });
  if (!a.similar) fail('query needs --similar "TEXT"');
  const k = a.k === undefined ? DEFAULT_K : (parsePositiveInt(a.k) ?? 0);
  if (!(k >= 1 && k <= MAX_K)) fail(`--k must be a whole number from 1 to ${MAX_K}, got "${a.k}"`);
  const bus = await connectOrFail(a.workspace, a.nats);
  let rows: TrialSummary[];
  if (bus) {
    rows = await queryLineage(bus, { text: a.similar, k, runId: a.run });
    await bus.close();
  } else {
    const store = await openLineage(a.workspace);
    rows = (await store.similarTrials({ text: a.similar, k, runId: a.run })).map(summaryOf);
    await store.close();
  }
  if (a.json) {
    const json = rows.map(summaryJson);
    return void process.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
  }
  if (rows.length === 0) return void process.stdout.write(`no trials${a.run ? ` in run ${a.run}` : ""} in this workspace's lineage\n`);
  const table = [
    ["distance", "trial", "val acc", "status", "hypothesis"],
    ...rows.map((r) => [
      r.distance.toFixed(3),
      r.trialId,
      r.valAccuracy !== undefined ? pct(r.valAccuracy) : "-",
      // A failed trial's label says more than its status.
      FAILURE_LABEL.name(r.failureLabel) ?? TRIAL_STATUS.name(r.status) ?? "?",
      r.hypothesis,
    ]),
  ];
  const widths = table[0]!.map((_, c) => Math.max(...table.map((row) => row[c]!.length)));
  const lines = table.map((row) => row.map((cell, c) => (c === row.length - 1 ? cell : cell.padEnd(widths[c]!))).join("  "));
  process.stdout.write(`closest first; distance: cosine distance to the text, 0 (same direction) to 2 (opposite): lower is closer\n${lines.join("\n")}\n`);
}
