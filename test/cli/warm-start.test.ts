/**
 * Research that remembers (issue 37): three short digits runs in one workspace, as a user
 * launches them. The second starts from the first run's strongest configs, evaluated again here
 * (its first proposals are warm starts naming the past trials they came from, and the report
 * and the dashboard's trial page say so); with --no-warm-start a run starts from the templates
 * as a first run does.
 */
import { describe, expect, it } from "vitest";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { run } from "../helpers/run.js";
import { summaryOf } from "../helpers/report.js";
import { storedEvents } from "../../cli/workspace.js";
import { foldRun, valMetricOf, type RunState, type TrialState } from "../../swarm/run-state.js";
import { fingerprint, genomeOf } from "../../agents/planner/identity.js";
import { emptyView, runDetail, trialDetail } from "../../dashboard/views.js";
import { Mutation } from "../../proto/gen/research/v1/common_pb.js";
import { Verdict } from "../../proto/gen/research/v1/events_pb.js";

const { NODE_CHANNEL_FD: _ipc, ...inherited } = process.env;
const env = { ...inherited, LOG_LEVEL: "warn", EMBEDDER: "hashing" };

describe("a run in a workspace with past runs on its dataset", () => {
  it("first re-evaluates the strongest past configs, says which, and starts cold with --no-warm-start", async () => {
    const workspace = mkdtempSync(join(tmpdir(), "warm-start-"));
    try {
      const launch = async (...flags: string[]): Promise<{ state: RunState; report: string }> => {
        // Open-ended (a goal with a target does not start from past configs): each run ends on its
        // trial budget, its probes at the same fidelity.
        const args = ["launch", "--goal", "digits: maximise accuracy", "--max-trials", "2", "--parallel", "2", "--time-budget", "2m", "--no-research", "--workspace", workspace, "--json", ...flags];
        const r = await run("./research-agent", args, { env, timeout: 240_000 });
        expect([0, 3], r.stderr.slice(-2000)).toContain(r.status);
        const summary = summaryOf(r.stdout);
        return { state: foldRun(summary.run_id, await storedEvents(workspace, summary.run_id)), report: readFileSync(summary.report, "utf8") };
      };
      const firsts = (s: RunState) => s.order.slice(0, 2).map((id) => s.trials.get(id)!.proposed!);

      const cold = await launch();
      const accepted = [...cold.state.trials.values()].filter((t) => t.judged?.verdict === Verdict.ACCEPT && (t.proposed?.rung ?? 0) === 0);
      expect(accepted.length, "the first run accepted a probe to learn from").toBeGreaterThan(0);
      expect(firsts(cold.state).map((p) => p.mutation)).toEqual([Mutation.TEMPLATE, Mutation.TEMPLATE]);

      const warm = await launch();
      const [first] = firsts(warm.state);
      expect(first!.mutation).toBe(Mutation.WARM_START);
      // It names a trial of the first run, and carries that trial's configs, trained again here.
      const from = cold.state.trials.get(first!.informedBy[0]!);
      expect(from?.judged?.verdict).toBe(Verdict.ACCEPT);
      const same = (t: TrialState) => {
        const g = genomeOf(t)!;
        return fingerprint(g.model, g.train);
      };
      expect(same(warm.state.trials.get(warm.state.order[0]!)!)).toBe(same(from!));
      expect(warm.state.trials.get(warm.state.order[0]!)?.evaluated, "evaluated in this run").toBeDefined();
      expect(warm.report).toContain("## Warm start");
      expect(warm.report).toContain(`\`${from!.id}\``);
      // The dashboard's trial page says what the trial started from.
      expect(trialDetail(emptyView(warm.state), warm.state.order[0]!)?.informed_by).toEqual([from!.id]);
      // And its run page, what the run started from, with how each past config did here.
      const started = runDetail(emptyView(warm.state)).warm_start;
      expect(started[0]).toMatchObject({ trial_id: warm.state.order[0], past: [{ run_id: cold.state.runId, trial_id: from!.id }] });
      expect(started[0]!.val?.mean, "its score here").toBe(valMetricOf(warm.state.trials.get(warm.state.order[0]!)!)!.mean);

      const off = await launch("--no-warm-start");
      expect(firsts(off.state).map((p) => p.mutation)).toEqual([Mutation.TEMPLATE, Mutation.TEMPLATE]);
      expect(off.report).not.toContain("## Warm start");
      expect(runDetail(emptyView(off.state)).warm_start).toEqual([]);
    } finally {
      rmSync(workspace, { recursive: true, force: true });
    }
  }, 600_000);
});
