/**
 * The run and trial pages in a real browser (headless Chromium, the real
 * bundle and server) over lineages written by the store, no swarm: what a
 * finished run's pages say about how it ended and what its best trial scored.
 */
import { create } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rmSync } from "node:fs";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { createLogger } from "../../core/logger.js";
import { buildWeb } from "../../dashboard/build.js";
import { startDashboard, type Dashboard } from "../../dashboard/server.js";
import { Decision, EventSchema, GoalSchema, RunEnd, RunnerJobsSchema, RunStatus, StartingPointSchema, Verdict, type Event } from "../../proto/gen/research/v1/events_pb.js";
import { ArgumentKind, EvalResultSchema, Metric, MetricStatsSchema, SeedResultSchema } from "../../proto/gen/research/v1/runner_pb.js";
import { Cost, Mutation } from "../../proto/gen/research/v1/common_pb.js";
import { failure } from "../../core/failure.js";
import { pairedTTest } from "../../core/stats.js";
import { runEvents, TRIALS, type TrialSpec } from "../lineage-store/fixtures.js";
import type { RunDetail } from "../../dashboard/api.js";
import { workspaceWith } from "./helpers.js";
import { modelSpec, trainSpec } from "../../core/config-wire.js";
import type { TrainConfigInput } from "../../core/model-config.js";

const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const OPEN = "r-open";
const START = "r-start";
const TARGETED = "r-target";
const REGRESSION = "r-rmse";
const PARETO = "r-pareto";
const STOPPED = "cancelled: the run's time budget reached its reserve for the test confirmation and the report";

/** Twelve knobs that differ between trials, as in a long run: the parallel chart's every axis. */
const knobs = (i: number) => ({
  lr: 0.0009 + i * 0.0001, batch_size: 64 + (i % 3) * 32, epochs: 2 + (i % 4), subset: (i % 3) * 10_000, weight_decay: (i % 2) * 5e-4,
  label_smoothing: (i % 3) * 0.05, momentum: 0.8 + (i % 2) * 0.1, warmup_epochs: i % 2, grad_clip: (i % 2) * 1.5, ema_decay: 0.99 + (i % 2) * 0.009,
});

/**
 * An open-ended run ended as the judge ends one: the last trial is stopped at the
 * time budget (budget_overrun), its judgement stops the run, and the run, which
 * found a model, completed; the best trial confirmed once on the test split.
 */
function openEndedRun(): Event[] {
  const trials: TrialSpec[] = TRIALS.map((t, i) => ({ ...t, train: knobs(i) }));
  trials[11] = { ...trials[10]!, hypothesis: "one more probe as the budget runs out", fails: { label: "budget_overrun", at: "evaluated" } };
  const events = runEvents(OPEN, trials);
  // Its runners were Slurm jobs, one of them still queued when last recorded.
  const started = events.findIndex((e) => e.body.case === "runStarted");
  const { emittedAtMs, producer } = events[started]!;
  const jobs = create(RunnerJobsSchema, { requested: 2, up: 1, pending: 1, waiting: "Resources" });
  events.splice(started + 1, 0, create(EventSchema, { runId: OPEN, eventId: `${OPEN}-jobs`, emittedAtMs, producer, body: { case: "runnerJobs", value: jobs } }));
  const verdict = `failed: budget_overrun: ${STOPPED}`;
  const reason = "time budget of 1200 s spent";
  for (const e of events) {
    const b = e.body;
    if (b.case === "runStarted") Object.assign(b.value.goal!, { rawText: "fashion-mnist: best model you can in 20 minutes", openEnded: true, target: 0 });
    if (b.case === "trialJudged" && e.trialId === `${OPEN}-t011`) Object.assign(b.value, { decision: Decision.STOP, reason: verdict, runEnd: RunEnd.TIME_BUDGET, runReason: reason, failure: { ...b.value.failure!, message: STOPPED } });
    if (b.case === "trialEvaluated" && e.trialId === `${OPEN}-t011`) b.value.failure!.message = STOPPED;
    if (b.case === "runFinished") {
      Object.assign(b.value, {
        status: RunStatus.COMPLETED,
        reason,
        testResult: create(EvalResultSchema, {
          numSeeds: 3,
          aggregated: {
            test_accuracy: { mean: 0.9123, std: 0.002, ci95: [0.9071, 0.9175], min: 0.91, max: 0.9145, n: 3 },
            ensemble_test_accuracy: { mean: 0.9188, std: 0, ci95: [0.9133, 0.924], min: 0.9188, max: 0.9188, n: 1 },
          },
          seedResults: [0, 1, 2].map((seed) => ({
            seed,
            metrics: { test_accuracy: 0.91 + seed * 0.00225 },
            inference: { batch1: { batch: 1, medianMs: 0.4 + seed * 0.1, p90Ms: 0.9, repeats: 30 }, batchEval: { batch: 512, medianMs: 21 + seed, p90Ms: 25, repeats: 30 }, flopsPerSample: 4_560_000n },
          })),
          device: { kind: "cpu" },
        }),
      });
    }
  }
  return events;
}

const NET = { name: "Net", class_name: "Net", init_kwargs: {} };
const BASE_VAL = [0.87, 0.88, 0.89];
const BASE_TEST = [0.86, 0.87, 0.88];
const BEST_VAL = [0.9, 0.915, 0.92];
const BEST_TEST = [0.895, 0.9, 0.91];

/**
 * A run from a model in Python: trial 0 on its own recipe (3 seeds, scored on test), its anchor,
 * an argument edit of the anchor, and that edit promoted to the full training: the best,
 * confirmed on test.
 */
function startedRun(): Event[] {
  const trials: TrialSpec[] = [
    { hypothesis: "the starting point, Net from net.py, on its own recipe", surface: "architecture", model: NET, train: { optimizer: "sgd", lr: 0.05, epochs: 1 }, score: 0.88 },
    { hypothesis: "Net at the search's probe fidelity", surface: "architecture", model: NET, train: { optimizer: "sgd", lr: 0.05, epochs: 3, subset: 10_000 }, score: 0.85, parent: 0 },
    { hypothesis: "set width 16 -> 24 on top of t001", surface: "architecture", model: { ...NET, init_kwargs: { width: 24 } }, train: { optimizer: "sgd", lr: 0.05, epochs: 3, subset: 10_000 }, score: 0.87, parent: 1 },
    { hypothesis: "promote t002 to rung 3", surface: "data", model: { ...NET, init_kwargs: { width: 24 } }, train: { optimizer: "sgd", lr: 0.05, epochs: 12 }, score: 0.912, parent: 2 },
  ];
  const moves = [
    { mutation: Mutation.BASELINE, rung: 3 },
    { mutation: Mutation.BASELINE, rung: 0 },
    { mutation: Mutation.ARGUMENT, rung: 0 },
    { mutation: Mutation.PROMOTION, rung: 3 },
  ];
  const seeds = (val: number[], test?: number[]) => val.map((v, seed) => ({ seed, metrics: { val_accuracy: v, ...(test && { test_accuracy: test[seed]! }) } }));
  const events = runEvents(START, trials);
  for (const e of events) {
    const b = e.body;
    const k = Number(e.trialId.slice(-3));
    if (b.case === "runStarted") {
      b.value.start = create(StartingPointSchema, { origin: "net.py", model: modelSpec(NET), train: trainSpec(trials[0]!.train as TrainConfigInput), modelCode: "class Net: ...", params: 1210n, arguments: [{ name: "width", kind: ArgumentKind.INT, defaultValue: 16 }] });
    }
    if (b.case === "trialProposed") Object.assign(b.value, moves[k]);
    if (b.case === "trialEvaluated" && k === 0) {
      b.value.result!.seedResults = seeds(BASE_VAL, BASE_TEST).map((r) => create(SeedResultSchema, r));
      b.value.result!.aggregated.test_accuracy = create(MetricStatsSchema, { mean: 0.87, std: 0.01, ci95: [0.85, 0.89], min: 0.86, max: 0.88, n: 3 });
    }
    if (b.case === "trialEvaluated" && k === 3) b.value.result!.seedResults = seeds(BEST_VAL).map((r) => create(SeedResultSchema, r));
    if (b.case === "runFinished") b.value.testResult = create(EvalResultSchema, { numSeeds: 3, seedResults: seeds([0, 0, 0], BEST_TEST) });
  }
  return events;
}

/** Validation RMSE of each trial over 2 seeds: mean and the half-width of its 95% interval. */
const RMSE = [
  { hypothesis: "linear model on the standardised features", mean: 62, half: 2 },
  // The best by the rule: the lowest upper bound, 56.9.
  { hypothesis: "two hidden layers of 64 units with relu", mean: 55.4, half: 1.5 },
  // The lowest mean, but so wide an interval that its upper bound (62.2) is not the lowest.
  { hypothesis: "one wide hidden layer of 512 units", mean: 54.2, half: 8 },
  // The highest: what a rule for accuracy would pick.
  { hypothesis: "dropout between the hidden layers", mean: 71, half: 1 },
];

/**
 * A finished regression run on diabetes, as test/cli/regression.test.ts's runs end: the goal's
 * metric RMSE, every result and curve in it, the judge's best confirmed once on the test split.
 */
function regressionRun(): Event[] {
  const trials: TrialSpec[] = RMSE.map((t, i) => ({ hypothesis: t.hypothesis, surface: "architecture", model: { name: `mlp-${i}`, layers: [] }, train: { lr: 0.001 * (i + 1), batch_size: 32 * (i + 1) }, score: t.mean, parent: i ? 0 : undefined }));
  const events = runEvents(REGRESSION, trials);
  const stats = (mean: number, half: number, n: number) => ({ mean, std: half / 2, ci95: [mean - half, mean + half], min: mean - half / 2, max: mean + half / 2, n });
  for (const e of events) {
    const b = e.body;
    const k = Number(e.trialId.slice(-3));
    if (b.case === "runStarted") {
      b.value.goal = create(GoalSchema, { rawText: "diabetes: rmse below 50", dataset: "diabetes", target: 50, objective: Metric.RMSE, timeBudgetS: 600 });
      b.value.settings!.seeds = 2;
    }
    if (b.case === "trialProgress") Object.assign(b.value.progress!, { valAccuracy: 0, valMetric: RMSE[k]!.mean + 10 / b.value.progress!.epoch });
    if (b.case === "trialEvaluated" && b.value.result) {
      const { mean, half } = RMSE[k]!;
      b.value.result = create(EvalResultSchema, {
        numSeeds: 2,
        target: 50,
        aggregated: { val_rmse: stats(mean, half, 2) },
        seedResults: [0, 1].map((seed) => ({ seed, metrics: { val_rmse: mean + (seed ? 1 : -1) }, learningCurve: { trainLoss: [1.2, 0.6], valLoss: [1.1, 0.7], valMetric: [mean + 12, mean + (seed ? 1 : -1)] } })),
      });
      b.value.analysis = undefined;
    }
    if (b.case === "runFinished") {
      Object.assign(b.value, {
        bestTrialId: `${REGRESSION}-t001`,
        testResult: create(EvalResultSchema, {
          numSeeds: 2,
          aggregated: { test_rmse: stats(56.7, 1.5, 2), ensemble_test_rmse: stats(55.9, 1.9, 1) },
          seedResults: [0, 1].map((seed) => ({ seed, metrics: { test_rmse: 56.1 + seed * 1.2 } })),
        }),
      });
    }
  }
  return events;
}

/** Each probe's latency per example (ms, every seed's median; its 90th percentile 10% above). */
const LATENCY = [0.5, 1.8, 0.9, 2.5];

/**
 * A Pareto goal under a latency limit: t000 small and fast, t001 accurate and larger, t002
 * dominated by t000, t003 the most accurate but over the limit (over_limit, rejected). The
 * fixture's parameters grow with the index: 40,000, 49,000, 58,000, 67,000.
 */
function paretoRun(): Event[] {
  const trials: TrialSpec[] = [0.85, 0.9, 0.8, 0.93].map((score, i) => ({ hypothesis: `probe ${i}`, surface: "architecture", model: { name: `cnn-${i}`, layers: [{ type: "flatten" as const }] }, score }));
  const events = runEvents(PARETO, trials);
  for (const e of events) {
    const b = e.body;
    const k = Number(e.trialId.slice(-3));
    if (b.case === "runStarted") {
      b.value.goal = create(GoalSchema, {
        rawText: "fashion-mnist: pareto: accuracy vs parameters vs latency, under 2 ms per image",
        dataset: "fashion-mnist",
        openEnded: true,
        tradeOffs: [Cost.PARAMS, Cost.LATENCY],
        maxLatencyMs: 2,
        timeBudgetS: 1200,
      });
    }
    if (b.case === "trialEvaluated" && b.value.result) {
      b.value.result.seedResults = [0, 1, 2].map((seed) => create(SeedResultSchema, { seed, metrics: { val_accuracy: trials[k]!.score! }, inference: { batch1: { batch: 1, medianMs: LATENCY[k]!, p90Ms: LATENCY[k]! * 1.1, repeats: 30 } } }));
    }
    if (b.case === "trialJudged" && k === 3) Object.assign(b.value, { verdict: Verdict.REJECT, reason: "failed: over_limit", failure: failure("over_limit", "2.50 ms per example, over the goal's limit of 2 ms") });
    if (b.case === "trialJudged" && k === 3) b.value.bestTrialId = `${PARETO}-t001`;
    if (b.case === "runFinished") Object.assign(b.value, { status: RunStatus.COMPLETED, bestTrialId: `${PARETO}-t001`, reason: "time budget spent" });
  }
  return events;
}

let workspace: string;
let dashboard: Dashboard;
let browser: Browser;
let page: Page;

const sel = (testid: string) => `[data-testid="${testid}"]`;
const text = (testid: string) => page.$eval(sel(testid), (e) => e.textContent ?? "");
const titles = () => page.$$eval(".card h2", (hs) => hs.map((h) => h.textContent ?? ""));

async function open(path: string, waitFor: string): Promise<void> {
  await page.goto(new URL(path, dashboard.url).href, { waitUntil: "domcontentloaded" });
  await page.waitForSelector(waitFor);
}

beforeAll(async () => {
  workspace = await workspaceWith({ [OPEN]: openEndedRun(), [TARGETED]: runEvents(TARGETED), [START]: startedRun(), [REGRESSION]: regressionRun(), [PARETO]: paretoRun() });
  const logger = createLogger("dashboard-pages-test");
  logger.level = "warn";
  dashboard = await startDashboard({ workspace, assets: await buildWeb(), logger, port: 0 });
  browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-dev-shm-usage"], defaultViewport: { width: 1280, height: 900 } });
  page = await browser.newPage();
}, 120_000);

afterAll(async () => {
  await browser?.close().catch(() => undefined);
  await dashboard?.close().catch(() => undefined);
  if (workspace) rmSync(workspace, { recursive: true, force: true });
});

describe("a finished run's page", () => {
  it("says the run completed and why, and gives the last trial's budget stop to that trial", async () => {
    await open(`/runs/${OPEN}`, sel("run-reason"));
    expect(await text("status-badge")).toBe("completed");
    expect(await text("run-reason")).toBe("time budget of 1200 s spent");
    // Every interval says what it counts (the fixture's results carry no validation sizes: seeds only).
    expect(await text("run-best")).toMatch(/\d+\.\d\d% \[[\d.]+%, [\d.]+%\] \(3 seeds\)$/);
    const ended = await text("run-ended-by");
    expect(ended).toContain("t011");
    expect(ended).toContain("budget overrun");
    expect(ended).toContain(STOPPED);
  });

  it("lists what the run found and the experiment each finding suggests, as its API gives them, and nothing where it found nothing", async () => {
    let shown = 0;
    for (const id of [OPEN, TARGETED, START, REGRESSION, PARETO]) {
      const detail = (await (await fetch(new URL(`/api/runs/${id}`, dashboard.url))).json()) as RunDetail;
      await open(`/runs/${id}`, sel("run-reason"));
      if (!detail.findings.length) {
        expect(await page.$(sel("findings")), id).toBeNull();
        continue;
      }
      const items = await page.$$eval(`${sel("findings")} li`, (ls) => ls.map((l) => l.textContent ?? ""));
      expect(items, id).toEqual(detail.findings.map((f) => `${f.finding.replaceAll(`${id}-`, "")}: ${f.next}`));
      shown++;
    }
    expect(shown, "runs with findings").toBeGreaterThan(0);
  });

  it("tells the runner jobs of a run whose runners were Slurm jobs, and none for another", async () => {
    await open(`/runs/${OPEN}`, sel("runner-jobs"));
    expect(await text("runner-jobs")).toBe("1 of 2 up, 1 pending (Resources)");
    await open(`/runs/${START}`, sel("run-reason"));
    expect(await page.$(sel("runner-jobs"))).toBeNull();
  });

  it("shows intervals against a target only where the goal has one", async () => {
    await open(`/runs/${OPEN}`, `${sel("intervals-chart")} svg`);
    expect(await titles()).not.toContain("Intervals against the target");
    expect(await page.$$eval(`${sel("intervals-chart")} svg text`, (ts) => ts.map((t) => t.textContent ?? ""))).not.toContainEqual(expect.stringMatching(/target/));
    await open(`/runs/${TARGETED}`, `${sel("intervals-chart")} svg`);
    expect(await titles()).toContain("Intervals against the target");
  });

  it("draws the features chart with whole axis names and no labels on top of each other", async () => {
    await open(`/runs/${OPEN}`, `${sel("parallel-chart")} svg text`);
    // Past the entry animation.
    await new Promise((r) => setTimeout(r, 800));
    const boxes = await page.$$eval(`${sel("parallel-chart")} svg text`, (ts) =>
      ts.map((t) => {
        const r = t.getBoundingClientRect();
        return { text: t.textContent ?? "", x0: r.left, x1: r.right, y0: r.top, y1: r.bottom };
      }),
    );
    const names = boxes.map((b) => b.text);
    for (const name of ["lr", "batch size", "weight decay", "label smoothing", "warmup epochs", "grad clip", "ema decay", "params", "val acc"]) expect(names).toContain(name);
    expect(names.filter((n) => /\.\.\.|…/.test(n))).toEqual([]);
    const overlaps = boxes.flatMap((a, i) => boxes.slice(i + 1).filter((b) => a.x0 < b.x1 - 1 && b.x0 < a.x1 - 1 && a.y0 < b.y1 - 1 && b.y0 < a.y1 - 1).map((b) => `${a.text} / ${b.text}`));
    expect(overlaps).toEqual([]);
  });
});

describe("the best trial's page", () => {
  it("shows its held-out test accuracy per seed with the 95% interval, and its seeds' ensemble", async () => {
    await open(`/runs/${OPEN}/trials/${OPEN}-t009`, sel("trial-hypothesis"));
    expect(await text("test-per-seed")).toContain("91.23% [90.7%, 91.8%] (3 seeds)");
    expect(await text("test-ensemble")).toMatch(/ensemble of its 3 seeds.*91\.88% \[91\.3%, 92\.4%\]/);
    // The median of the seeds' medians: 0.5 ms and 22 ms.
    expect(await text("test-inference")).toMatch(/inference on the cpu it trained on \(median of its seeds\)\s*0\.50 ms for one example · 22\.0 ms for a batch of 512 · 4\.56 MFLOPs an example/);
  });

  it("shows none on a trial the run did not confirm", async () => {
    await open(`/runs/${OPEN}/trials/${OPEN}-t003`, sel("trial-hypothesis"));
    expect(await page.$(sel("test-per-seed"))).toBeNull();
  });
});

describe("a run started from a person's model", () => {
  it("shows the best model against trial 0 seed by seed, what changed, and the path from trial 0", async () => {
    await open(`/runs/${START}`, sel("against-start"));
    expect(await text("against-start")).toContain("Trial 0, t000, is net.py on its own recipe: validation 88.00%, test 87.00%.");
    const pp = (x: number) => `${x >= 0 ? "+" : "−"}${Math.abs(x * 100).toFixed(2)} pp`;
    const val = pairedTTest(BASE_VAL, BEST_VAL);
    expect(await text("gain-validation")).toBe(`validation88.00%91.17%${pp(val.meanDiff)} [${pp(val.ci95[0])}, ${pp(val.ci95[1])}]${val.p.toPrecision(2)}3`);
    const test = pairedTTest(BASE_TEST, BEST_TEST);
    expect(await text("gain-test")).toContain(`${pp(test.meanDiff)} [${pp(test.ci95[0])}, ${pp(test.ci95[1])}]`);
    const changes = await page.$$eval(`${sel("start-changes")} tbody tr`, (rs) => rs.map((r) => [...r.querySelectorAll("td")].map((d) => d.textContent ?? "").join(" | ")));
    expect(changes).toEqual(["epochs | 1 | 12", "width (constructor) | 16 | 24"]);
    const path = await page.$$eval(`${sel("start-path")} tbody tr`, (rs) => rs.map((r) => [...r.querySelectorAll("td")].slice(0, 2).map((d) => d.textContent ?? "").join(" ")));
    expect(path).toEqual(["t000 baseline", "t001 baseline", "t002 argument", "t003 promotion"]);
  });

  it("has no such panel for a run from the swarm's templates", async () => {
    await open(`/runs/${OPEN}`, sel("run-reason"));
    expect(await page.$(sel("against-start"))).toBeNull();
  });
});

describe("a regression run's pages", () => {
  const svgTexts = (testid: string) => page.$$eval(`${sel(testid)} svg text`, (ts) => ts.map((t) => t.textContent ?? ""));
  // What the page shows, charts included (the folded settings are not), less the name of its intervals.
  const shown = async () => (await page.evaluate(() => document.body.innerText)).replaceAll("95% CI", "");

  it("lists the run with its best and test RMSE", async () => {
    await open("/runs", `${sel("run-row")}[data-run="${REGRESSION}"]`);
    const cells = await page.$eval(`${sel("run-row")}[data-run="${REGRESSION}"]`, (r) => [...r.querySelectorAll("td.num")].slice(0, 2).map((d) => d.textContent ?? ""));
    expect(cells).toEqual(["RMSE 55.4 [53.9, 56.9] (2 seeds)", "RMSE 56.7"]);
  });

  it("names the lowest upper bound of RMSE the best, in RMSE, with no percentage or accuracy anywhere", async () => {
    await open(`/runs/${REGRESSION}`, `${sel("intervals-chart")} svg text`);
    expect(await text("run-best")).toBe("t001: RMSE 55.4 [53.9, 56.9] (2 seeds)");
    expect(await text("run-test")).toBe("RMSE 56.7");
    expect(await text("run-metric")).toBe("RMSE, lower is better");
    expect(await page.$eval(`${sel("trial-row")}.best`, (r) => r.getAttribute("data-trial"))).toBe(`${REGRESSION}-t001`);
    expect(await titles()).toContain("Best so far (CI upper bound) over time");
    await page.waitForSelector(`${sel("parallel-chart")} svg text`);
    expect(await svgTexts("parallel-chart")).toContain("val RMSE");
    const ticks = await svgTexts("intervals-chart");
    expect(ticks).toContain("target RMSE 50");
    expect(ticks.join(" ")).not.toMatch(/%/);
    expect(await shown()).not.toMatch(/%|accuracy|\bacc\b/i);
    // The best-so-far line is the best's upper bound, in RMSE, and its trial the run state's best.
    const d = (await page.evaluate(`fetch("/api/runs/${REGRESSION}").then((r) => r.json())`)) as RunDetail;
    expect(d.objective).toEqual({ metric: "rmse", label: "RMSE", higher_is_better: false, proportion: false });
    expect(d.best_so_far.at(-1)).toMatchObject({ best_trial_id: `${REGRESSION}-t001`, best_ci_high: 56.9 });
    expect(d.best_so_far.at(-1)).not.toHaveProperty("best_ci_low");
  });

  it("shows the best trial's held-out test RMSE, its RMSE per epoch, and no classes", async () => {
    await open(`/runs/${REGRESSION}/trials/${REGRESSION}-t001`, `${sel("curves-rmse")} svg text`);
    expect(await text("test-per-seed")).toContain("RMSE 56.7 [55.2, 58.2] (2 seeds)");
    expect(await text("test-ensemble")).toContain("RMSE 55.9 [54, 57.8]");
    expect(await titles()).toContain("RMSE per epoch");
    expect(await page.$(sel("confusion"))).toBeNull();
    const ticks = await svgTexts("curves-rmse");
    expect(ticks.filter((t) => Number(t) >= 40)).not.toEqual([]);
    expect(ticks.join(" ")).not.toMatch(/%/);
    expect(await shown()).not.toMatch(/%|accuracy/i);
  });

  it("compares two trials' validation RMSE", async () => {
    await open(`/runs/${REGRESSION}/compare/${REGRESSION}-t001/${REGRESSION}-t002`, `${sel("overlay-rmse")} svg text`);
    expect(await titles()).toContain("Validation RMSE (seed means)");
    expect(await shown()).not.toMatch(/%|accuracy/i);
  });

  it("finds its trials with their validation RMSE", async () => {
    await open(`/search?q=${encodeURIComponent(RMSE[1]!.hypothesis)}`, `${sel("search-results")} tbody tr`);
    const row = await page.$$eval(`${sel("search-results")} tbody tr`, (rs, id) => rs.find((r) => r.querySelector(`a[href$="/trials/${id}"]`))?.querySelector("td:nth-child(4)")?.textContent, `${REGRESSION}-t001`);
    expect(row).toBe("RMSE 55.4");
  });
});

describe("a Pareto run's page", () => {
  it("shows the front as points with their intervals and the knee, a table of every objective, the latency limit's outcome and each trial's latency", async () => {
    await open(`/runs/${PARETO}`, `${sel("front-chart")} svg text`);
    expect(await titles()).toContain("Pareto front: accuracy vs parameters vs latency per example");
    expect(await text("run-trade-offs")).toBe("parameters, latency per example");
    expect(await text("run-max-latency")).toBe("2 ms per example");
    expect(await text("limits-line")).toBe("3 within the limit of 2 ms, 1 over it (over_limit); the best within every limit: t001, held to 1.80 ms (the fastest timing of its model).");
    // Best metric first; t002 is dominated by t000, t003 was not accepted.
    const rows = await page.$$eval(`${sel("front-row")}`, (rs) => rs.map((r) => [r.getAttribute("data-trial"), ...[...r.querySelectorAll("td")].map((d) => d.textContent ?? "")]));
    expect(rows).toEqual([
      [`${PARETO}-t001`, "t001", "90.00% [89.0%, 91.0%]", "49,000", "1.8 ms [1.8, 1.98]", "extreme"],
      [`${PARETO}-t000`, "t000 knee", "85.00% [84.0%, 86.0%]", "40,000", "0.5 ms [0.5, 0.55]", "extreme"],
    ]);
    expect(await text("front-knee")).toBe("The knee, the balanced trade-off: t000.");
    const svg = await page.$$eval(`${sel("front-chart")} svg text`, (ts) => ts.map((t) => t.textContent ?? ""));
    // Accuracy against the first cost the goal trades off, on a log axis.
    expect(svg).toEqual(expect.arrayContaining(["knee", "parameters", "accuracy", "10k", "100k"]));
    expect(await page.$$eval(sel("latency-cell"), (cs) => cs.map((c) => c.textContent))).toEqual(["0.5", "1.8", "0.9", "2.5"]);
  });

  it("opens a front point's trial on a click", async () => {
    await open(`/runs/${PARETO}`, `${sel("front-chart")} svg text`);
    // Past the entry animation: the knee's label sits to the right of its diamond.
    await new Promise((r) => setTimeout(r, 800));
    const at = await page.$$eval(`${sel("front-chart")} svg text`, (ts) => {
      const r = ts.find((t) => t.textContent === "knee")!.getBoundingClientRect();
      return { x: r.left - 12, y: r.top + r.height / 2 };
    });
    await page.mouse.click(at.x, at.y);
    await page.waitForSelector(sel("trial-hypothesis"));
    expect(new URL(page.url()).pathname).toBe(`/runs/${PARETO}/trials/${PARETO}-t000`);
  });

  it("has no front on a run of one metric", async () => {
    await open(`/runs/${OPEN}`, sel("run-reason"));
    expect(await page.$(sel("front"))).toBeNull();
    expect(await page.$(sel("latency-cell"))).toBeNull();
  });
});

describe("browsing", () => {
  it("keeps loading pages one after another: a page left in the back-forward cache holds no event stream", async () => {
    // Chromium allows six connections to a host; each page that kept its stream held one of them.
    for (let i = 0; i < 8; i++) await open(i % 2 ? `/runs/${OPEN}` : `/runs/${START}`, i % 2 ? sel("run-reason") : sel("against-start"));
  });
});
