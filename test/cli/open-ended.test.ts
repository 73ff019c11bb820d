/**
 * An open-ended run on real data, launched as a user launches it: the first 15,000 training images
 * of Fashion-MNIST, "the best model you can in 80 seconds" (probes on a 3,000-image slice of the
 * 13,500 the runner trains on, so the full split is where claims are made, as on the whole set). Read back from the run's stored events
 * (the lineage on disk): the run trained its last long training on the full training split with
 * the run's seeds, started by the end of exploration, and the report's best is that multi-seed
 * trial; the planner's whole-run promises hold (agents/planner/promises.ts).
 */
import { describe, expect, it } from "vitest";
import { mkdirSync, mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { run } from "../helpers/run.js";
import { fashionSlice } from "../helpers/fixtures.js";
import { reportOf, summaryOf, trialLines } from "../helpers/report.js";
import { storedEvents } from "../../cli/workspace.js";
import { foldRun } from "../../swarm/run-state.js";
import { runPromiseBreaks } from "../../agents/planner/promises.js";

const { NODE_CHANNEL_FD: _ipc, ...inherited } = process.env;
const env = { ...inherited, LOG_LEVEL: "warn", EMBEDDER: "hashing" };
// The one launch of the suite bounded by its clock, as an open-ended run is, and kept short: it
// trains on both cores for all of it. 80 s, probes on 3,000 images: beside three busy processes on
// 2 cores its ten probes were judged by 33 s and its last long training ended at 69 s (2026-12-06);
// on the CPU's default 10k slice a 2-minute run's first judgement could come so late under the
// suite's load that no last training fit (2026-11-28). The test also takes that case, as the
// planner's promise states it (below).
const BUDGET_S = 80;

describe("an open-ended run on a slice of Fashion-MNIST", () => {
  it("ends with its best config trained last, on the full split with the run's seeds, and reports that trial as its best", async () => {
    const workspace = mkdtempSync(join(tmpdir(), "open-ended-"));
    // The launch's own TMPDIR: a swarm that has ended leaves nothing there (LanceDB keeps a
    // directory in it per connection, which outlives a process that exits: core/process.ts
    // privateTmpdir; the runner's scratch goes with the runner).
    const tmp = join(workspace, "tmp");
    mkdirSync(tmp);
    const data = fashionSlice(15_000, 2000);
    const r = await run("./research-agent", ["launch", "--goal", "fashion-mnist: best model you can in 80 seconds", "--subset", "3000", "--data-dir", data, "--workspace", workspace, "--json"], { env: { ...env, TMPDIR: tmp }, timeout: 400_000 });
    const summary = summaryOf(r.stdout);
    const state = foldRun(summary.run_id, await storedEvents(workspace, summary.run_id));
    expect(r.status, `${trialLines(state)}\n${r.stderr.slice(-2000)}`).toBe(0);
    expect(readdirSync(tmp)).toEqual([]);
    expect(summary.status).toBe("completed");
    expect(state.goal?.timeBudgetS).toBe(BUDGET_S);

    const last = [...state.trials.values()].find((t) => t.proposed?.lastTraining);
    if (!last) {
      // The promise is a last long training when one fits once it is due (promises.ts
      // runPromiseBreaks). On a machine loaded enough that none could (a starting template still
      // training until the reserve, at a fifth of its pace beside two other swarms on a slow CPU,
      // 2026-12-03), every promise must still be kept, and the run must end for its time: the
      // planner's "no last long training fits", or the judge's "time budget ... spent" when the
      // last probe's judgement came after nothing fitted any more.
      expect(runPromiseBreaks(state, 0.05 * BUDGET_S)).toEqual([]);
      expect(state.runFinished?.reason).toMatch(/no last long training fits the time left|^time budget of 80 s (nearly )?spent/);
      console.log(`open-ended: no last long training fit (${state.judgedCount} trials judged): ${state.runFinished?.reason}`);
      return;
    }
    expect(last!.train?.subset).toBe(0);
    expect(last!.train?.train_seconds).toBeGreaterThan(0);
    expect(last!.evaluated?.result?.seedResults.length).toBeGreaterThanOrEqual(3);
    // Proposed by the end of exploration's share of the budget or, where a starting template still
    // probed then, when the last of them was judged (promises.ts lastTrainingDueS), give or take a
    // decision's round trip; and every other whole-run promise kept.
    expect(runPromiseBreaks(state, 0.05 * BUDGET_S)).toEqual([]);

    const report = reportOf(summary);
    const best = report.trials.find((t) => t.best)!;
    expect(best.trial_id).toBe(last!.id);
    expect(best.num_seeds).toBeGreaterThanOrEqual(3);
    expect(summary.best_trial?.trial_id).toBe(last!.id);
    expect(summary.best_trial?.test_accuracy).toBeGreaterThan(0.7);
  }, 420_000);
});
