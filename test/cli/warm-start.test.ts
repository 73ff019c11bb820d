/**
 * Research that remembers (issue 37): three short digits runs in one workspace, as a user
 * launches them. The second starts from the first run's strongest configs, evaluated again here
 * (its first proposals are warm starts naming the past trials they came from, and the report
 * and the dashboard's trial page say so); with --no-warm-start a run starts from the templates
 * as a first run does. A run after one that trained a config long continues that training from
 * the weights the runner kept, on the full split with its seeds. Then two CSVs that look alike (same columns, classes and size), one with
 * its labels shuffled: a run on the second starts from the first's config, scores it on its own
 * data, and no past score becomes its own.
 */
import { describe, expect, it } from "vitest";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { run } from "../helpers/run.js";
import { summaryOf, trialLines } from "../helpers/report.js";
import { storedEvents } from "../../cli/workspace.js";
import { foldRun, type RunState } from "../../swarm/run-state.js";
import { valMetricOf, type TrialState } from "../../swarm/trial-state.js";
import { fingerprint, genomeOf } from "../../agents/planner/identity.js";
import { emptyView, runDetail, trialDetail } from "../../dashboard/views.js";
import { FailureLabel, Mutation } from "../../proto/gen/research/v1/common_pb.js";
import { Verdict } from "../../proto/gen/research/v1/events_pb.js";
import { unwrapped } from "../helpers/markdown.js";

/** A model config as the lineage compares them. */
const modelText = (model: unknown) => JSON.stringify(model);

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
        return { state: foldRun(summary.run_id, await storedEvents(workspace, summary.run_id)), report: unwrapped(readFileSync(summary.report, "utf8")) };
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
      // The same dataset, described the same: distance 0, so half a result of this run's own.
      expect(started[0]).toMatchObject({ trial_id: warm.state.order[0], past: [{ run_id: cold.state.runId, trial_id: from!.id, weight: 0.5 }], takes: "config" });
      expect(warm.report).toContain(`\`${from!.id}\` (weight 0.50)`);
      // The first run's judged probes were in the surrogate's prior, each at that weight.
      const prior = runDetail(emptyView(warm.state)).past_prior;
      expect(prior?.observations, "past results in the prior").toBeGreaterThan(0);
      expect(prior?.weight).toBeCloseTo(prior!.observations * 0.5, 6);
      expect(warm.report).toContain(`The surrogate held up to ${prior!.observations} past results as prior observations`);
      expect(started[0]!.val?.mean, "its score here").toBe(valMetricOf(warm.state.trials.get(warm.state.order[0]!)!)!.mean);

      const off = await launch("--no-warm-start");
      expect(firsts(off.state).map((p) => p.mutation)).toEqual([Mutation.TEMPLATE, Mutation.TEMPLATE]);
      expect(off.report).not.toContain("## Warm start");
      expect(runDetail(emptyView(off.state)).warm_start).toEqual([]);
      expect(runDetail(emptyView(off.state)).past_prior).toBeNull();
    } finally {
      rmSync(workspace, { recursive: true, force: true });
    }
  }, 600_000);

  it("continues a past run's long training from the weights the runner kept", async () => {
    const workspace = mkdtempSync(join(tmpdir(), "warm-continue-"));
    try {
      // Runs bounded by their work: a trial budget, and long trainings of 20 epochs (launch
      // --last-epochs), which end before their time does; the time budgets only bound them.
      const launch = async (maxTrials: number, budget: string): Promise<{ state: RunState; report: string }> => {
        const args = ["launch", "--goal", "digits: maximise accuracy", "--max-trials", String(maxTrials), "--parallel", "2", "--time-budget", budget, "--last-epochs", "20", "--no-research", "--workspace", workspace, "--json"];
        const r = await run("./research-agent", args, { env, timeout: 240_000 });
        expect([0, 3], r.stderr.slice(-2000)).toContain(r.status);
        const summary = summaryOf(r.stdout);
        return { state: foldRun(summary.run_id, await storedEvents(workspace, summary.run_id)), report: unwrapped(readFileSync(summary.report, "utf8")) };
      };
      // Two probes, then the last long training: the full split, 20 epochs.
      const cold = await launch(3, "75s");
      const long = [...cold.state.trials.values()].find((t) => t.proposed?.lastTraining);
      expect(long?.judged?.verdict, `the first run trained a config long\n${trialLines(cold.state)}`).toBe(Verdict.ACCEPT);

      // One trial: the past training continued (its chain to a last long training is decide.test.ts's),
      // for 20 epochs. Its time is a quarter of the budget (time-model.ts continuationTime): with 60 s
      // its seeds' start-ups beside the suite's other swarms ran into the reserve (CI, 2026-12-03).
      const warm = await launch(1, "120s");
      expect(warm.state.order).toHaveLength(1);
      const first = warm.state.trials.get(warm.state.order[0]!)!;
      // The same model and recipe, each seed from the runner's kept weights of a seed of that training.
      expect(first.proposed).toMatchObject({ mutation: Mutation.WARM_START, informedBy: [long!.id], initWeights: { runId: cold.state.runId, trialId: long!.id } });
      expect(first.proposed!.train?.subset, "the full split").toBe(0);
      expect(first.train?.epochs, "launch --last-epochs").toBe(20);
      expect(long!.train?.epochs, "launch --last-epochs").toBe(20);
      expect(modelText(first.model), "the past model").toBe(modelText(long!.model));
      expect(first.assembled?.request?.initWeights).toMatchObject({ runId: cold.state.runId, trialId: long!.id });
      expect(first.evaluated?.result?.seedResults.length, first.evaluated?.failure?.message).toBe(3);
      expect(first.judged?.verdict, trialLines(warm.state)).toBe(Verdict.ACCEPT);
      // This run's trial by its number in the run, the past run's by its whole id.
      expect(warm.report).toMatch(new RegExp(`\\| \`${first.id.slice(warm.state.runId.length + 1)}\` \\| \`${long!.id}\` \\(weight 0\\.50\\) \\| trained weights \\|`));
      // The dashboard's run page says the same.
      expect(runDetail(emptyView(warm.state)).warm_start).toMatchObject([{ trial_id: first.id, past: [{ run_id: cold.state.runId, trial_id: long!.id }], takes: "weights" }]);

      // With the runner's kept weights gone, the continuation fails as invalid_config and the run
      // opens as a cold one does, in the slots the continuation held: two different probes.
      rmSync(join(workspace, "runner-state", "weights"), { recursive: true, force: true });
      const gone = await launch(3, "45s");
      const [failed, ...opened] = gone.state.order.map((id) => gone.state.trials.get(id)!);
      expect([first.id, long!.id]).toContain(failed!.proposed?.initWeights?.trialId);
      expect(failed!.evaluated?.failure?.label).toBe(FailureLabel.INVALID_CONFIG);
      expect(opened.map((t) => t.proposed?.initWeights)).toEqual([undefined, undefined]);
      expect(opened.map((t) => t.proposed?.rung)).toEqual([0, 0]);
      expect(new Set(opened.map((t) => modelText(t.model))).size, "two different probes").toBe(2);
    } finally {
      rmSync(workspace, { recursive: true, force: true });
    }
  }, 600_000);

  it("starts from a CSV that looks the same, and scores its config on this run's data: a misleading past costs only evaluations", async () => {
    const workspace = mkdtempSync(join(tmpdir(), "warm-start-csv-"));
    try {
      // 3,000 rows, 6 features, the class a threshold on two of them; the copy has the same rows with shuffled labels.
      let seed = 7;
      const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 2 - 1;
      const rows = Array.from({ length: 3000 }, () => Array.from({ length: 6 }, rand));
      const labels = rows.map((r) => (r[0]! + r[1]! > 0 ? 1 : 0));
      const shuffled = labels.map((_, i) => labels[(i * 277) % labels.length]!);
      const csv = (y: number[]) => ["a,b,c,d,e,f,label", ...rows.map((r, i) => `${r.map((v) => v.toFixed(4)).join(",")},${y[i]}`)].join("\n") + "\n";
      writeFileSync(join(workspace, "real.csv"), csv(labels));
      writeFileSync(join(workspace, "shuffled.csv"), csv(shuffled));
      const launch = async (file: string): Promise<RunState> => {
        const goal = `csv:${join(workspace, file)} target=label: maximise accuracy`;
        const args = ["launch", "--goal", goal, "--max-trials", "2", "--parallel", "2", "--time-budget", "2m", "--no-research", "--workspace", workspace, "--json"];
        const r = await run("./research-agent", args, { env, timeout: 240_000 });
        expect([0, 3], r.stderr.slice(-2000)).toContain(r.status);
        const summary = summaryOf(r.stdout);
        return foldRun(summary.run_id, await storedEvents(workspace, summary.run_id));
      };
      const real = await launch("real.csv");
      expect(real.dataset?.nTrain, "the run recorded its data's description").toBeGreaterThan(0);
      const misled = await launch("shuffled.csv");
      const first = misled.trials.get(misled.order[0]!)!;
      expect(first.proposed?.mutation).toBe(Mutation.WARM_START);
      const from = real.trials.get(first.proposed!.informedBy[0]!)!;
      // The same config, scored on the shuffled labels here: near chance, not its score on the real ones.
      expect(valMetricOf(from)!.mean).toBeGreaterThan(0.8);
      expect(valMetricOf(first)!.mean).toBeLessThan(0.7);
      // The real data again, after that misleading past: its configs scored near chance there (a
      // gate miss, a score, not a fault of the config), which bars none of them here.
      const again = await launch("real.csv");
      const firstAgain = again.trials.get(again.order[0]!)!;
      expect(firstAgain.proposed?.mutation).toBe(Mutation.WARM_START);
      expect(valMetricOf(firstAgain)!.mean).toBeGreaterThan(0.8);
    } finally {
      rmSync(workspace, { recursive: true, force: true });
    }
  }, 600_000);
});
