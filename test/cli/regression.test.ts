/**
 * Regression through the whole swarm: a goal on a numeric target ranks, prunes, promotes, stops
 * and reports with lower RMSE as better, and a goal that does not fit its dataset is one line
 * and exit status 2 before anything trains.
 */
import { describe, expect, it } from "vitest";
import { EXIT } from "../../cli/args.js";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { reportOf, summaryOf } from "../helpers/report.js";
import { run } from "../helpers/run.js";
import { unwrapped } from "../helpers/markdown.js";

const { NODE_CHANNEL_FD: _ipc, ...inherited } = process.env;
// These runs test direction, not similarity: the hashing embedder (EMBEDDER=hashing) spares each launch MiniLM's start.
const env = { ...inherited, LOG_LEVEL: "warn", EMBEDDER: "hashing" };
const launch = (args: string[]) => run("./research-agent", ["launch", ...args], { env, timeout: 300_000 });

const dir = mkdtempSync(join(tmpdir(), "regression-test-"));
// y = 3 x1 - 2 x2 + x3 / 2 + noise (sd 0.5): predicting the mean scores an RMSE near 3.7, a linear model near 0.5.
const house = join(dir, "house.csv");
let seed = 7;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 2 - 1;
writeFileSync(
  house,
  "x1,x2,x3,kind,price\n" +
    Array.from({ length: 600 }, () => {
      const [a, b, c] = [rand(), rand(), rand()];
      return `${a.toFixed(4)},${b.toFixed(4)},${c.toFixed(4)},${a > 0 ? "big" : "small"},${(3 * a - 2 * b + c / 2 + 0.5 * rand()).toFixed(4)}\n`;
    }).join(""),
);

/** What a trial's results.json holds of its seeds, as the lineage store writes it (proto JSON, snake_case). */
interface ResultsFile {
  seed_results: { kept_epoch: number; epochs_completed: number; metrics: Record<string, number>; learning_curve: { val_metric: number[] } }[];
}

describe("a regression goal", () => {
  it.concurrent("reaches an RMSE target on a CSV's numeric column, met on the interval's upper end", async () => {
    const ws = mkdtempSync(join(tmpdir(), "regression-ws-"));
    const r = await launch(["--goal", `csv:${house} target=price: rmse below 1.5`, "--time-budget", "90s", "--seeds-per-trial", "2", "--no-research", "--workspace", ws, "--json"]);
    expect(r.status, r.stderr).toBe(0);
    const s = summaryOf(r.stdout);
    expect([s.status, s.metric]).toEqual(["goal_achieved", "val_rmse"]);
    const best = reportOf(s).trials.find((t) => t.best)!;
    // Met by the stated rule: the upper bound of its validation RMSE, over 2 seeds, at or below the target.
    expect(best.num_seeds).toBe(2);
    expect(best.val_rmse!.ci_95![1]).toBeLessThanOrEqual(1.5);
    expect(s.best_trial!.val_rmse).toBe(best.val_rmse!.mean);
    expect(s.best_trial!.test_rmse).toBeLessThan(1.5);
  }, 400_000);

  it.concurrent("names the best as the lowest upper bound of RMSE among accepted multi-seed trials, and the report says it in the metric's units", async () => {
    const ws = mkdtempSync(join(tmpdir(), "regression-ws-"));
    // Bounded by its work (12 trials, a last training of 20 epochs); the time budget only bounds it.
    const r = await launch(["--goal", "diabetes: minimise rmse", "--time-budget", "120s", "--max-trials", "12", "--last-epochs", "20", "--seeds-per-trial", "2", "--no-research", "--workspace", ws, "--json"]);
    expect(r.status, r.stderr).toBe(0);
    const s = summaryOf(r.stdout);
    expect([s.status, s.metric]).toEqual(["completed", "val_rmse"]);
    const report = reportOf(s);
    expect(report.outcome.best_rule).toMatch(/^the accepted trial with the lowest 95% CI upper bound on validation RMSE/);
    const ranked = report.trials.filter((t) => t.verdict === "accept" && (t.num_seeds ?? 0) >= 2 && t.val_rmse?.ci_95);
    expect(ranked.length).toBeGreaterThan(0);
    const lowest = Math.min(...ranked.map((t) => t.val_rmse!.ci_95![1]));
    expect(ranked.find((t) => t.best)!.val_rmse!.ci_95![1]).toBe(lowest);
    // Predicting the mean scores diabetes' spread, about 77: the best beats it clearly.
    expect(s.best_trial!.val_rmse as number).toBeLessThan(65);
    const markdown = unwrapped(readFileSync(s.report, "utf8"));
    expect(markdown).toMatch(/- Validation RMSE: \d+(\.\d+)? \(95% CI \d+(\.\d+)? – \d+(\.\d+)?\)/);
    expect(markdown).toMatch(/- Held-out test RMSE \(one-time confirmation/);
    expect(markdown).not.toMatch(/\d{3,}\.\d\d%/);
    // The plots speak in RMSE too: no percentage ticks, and the best trial's curves drawn, one per seed.
    const plot = (name: string) => readFileSync(join(s.report, "..", "plots", name), "utf8");
    expect(plot("scores.svg")).toMatch(/Validation RMSE per trial \(mean, 95% CI; lower is better\)/);
    expect(plot("scores.svg")).not.toMatch(/>\d+(\.\d+)?%</);
    expect(plot("learning_curves.svg").match(/>seed \d<\/text>/g)).toEqual([">seed 0</text>", ">seed 1</text>"]);
    // The search's own words name the upper bound of the parent it builds on.
    expect(r.stdout + r.stderr).not.toMatch(/label smoothing/);
    // Every seed that trained ended at its best validation epoch (trainer.py _BestEpoch): its kept
    // epoch is one it trained, and its validation RMSE that epoch's on its curve.
    const seeds = ranked.flatMap((t) => (JSON.parse(readFileSync(join(s.report, "..", "experiments", t.trial_id, "results.json"), "utf8")) as ResultsFile).seed_results);
    for (const seed of seeds) {
      expect(seed.kept_epoch).toBeGreaterThanOrEqual(1);
      expect(seed.kept_epoch).toBeLessThanOrEqual(seed.epochs_completed);
      expect(seed.metrics.val_rmse).toBeCloseTo(Math.min(...seed.learning_curve.val_metric), 6);
    }
  }, 400_000);

  it.concurrent("that does not fit its dataset is one line with exit status 2, bad input, whether the goal's words or a dataset the runner cannot train as asked", async () => {
    const words = join(dir, "words.csv");
    writeFileSync(words, "x,label\n" + Array.from({ length: 40 }, (_, i) => `${i},${i % 2 ? "cheap" : "dear"}\n`).join(""));
    // A goal that cannot be read and a dataset the runner cannot train on as asked are both the user's input to fix (EXIT.badInput).
    const cases: [string[], number, RegExp][] = [
      [["--goal", "mnist: rmse below 0.3"], EXIT.badInput, /mnist is a classification dataset: rmse needs a numeric target.*Write e\.g\. "mnist: reach 90% validation accuracy"/],
      [["--goal", "diabetes: reach 90% accuracy"], EXIT.badInput, /a rmse target is in the metric's own units/],
      [["--goal", `csv:${house} target=price: reach 90% accuracy`], EXIT.badInput, /the target looks continuous, not a class; for regression, name a regression metric/],
      [["--goal", `csv:${words} target=label: minimise rmse`], EXIT.badInput, /a regression target must be numeric, and 'label' holds '(cheap|dear)'/],
    ];
    for (const [args, status, message] of cases) {
      const r = await launch([...args, "--time-budget", "30s", "--no-research", "--workspace", mkdtempSync(join(tmpdir(), "regression-bad-"))]);
      expect(r.status, `${args.join(" ")}: ${r.stderr}`).toBe(status);
      expect(r.stderr.trim().split("\n"), r.stderr).toHaveLength(1);
      expect(r.stderr).toMatch(message);
    }
  }, 400_000);
});
