/**
 * Search benchmark: the built-in brain, the random planner and an Optuna
 * TPE + median-pruning baseline (bench/optuna_baseline.py), run one after
 * another on this machine with the same goal, data split and time budget.
 *
 * Per run: best validation accuracy (mean and 95% CI for the swarm's best
 * trial, one seed for Optuna), the best model's test accuracy measured once
 * after the search (the judge's RunFinished.testResult; Optuna evaluates its
 * best trial's weights), trials, pruned trials, seconds from the run's start
 * to the first finished trial with validation mean >= 0.90, total seconds and
 * any overrun of the budget, and the load average before and after. Per
 * method: mean and 95% Student-t interval of test accuracy across repeats,
 * median time to 90%.
 *
 *   npx tsx bench/search-bench.ts [--methods builtin,random,optuna] [--repeats 3]
 *       [--budget-min 30] [--goal "fashion-mnist: maximise accuracy"]
 *       [--max-trials 1000] [--grace-s 120] [--trial-budget-s 0]
 *       [--out bench/results/search-<host>.json] [--resume]
 *
 * Methods run in the order given, repeat by repeat (builtin#0, random#0,
 * optuna#0, builtin#1, ...), so a drift in the machine's load spreads over
 * all of them. The output file is rewritten after every run.
 */
import { execFileSync, spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, hostname, loadavg, tmpdir, totalmem } from "node:os";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { RUN_STATUS } from "../core/enums.js";
import { pct } from "../core/format.js";
import { parseGoal } from "../core/goal.js";
import { createLogger } from "../core/logger.js";
import { runGoal, startSwarm } from "../deploy/swarm.js";
import { runSettings } from "../deploy/settings.js";
import { describe } from "../gpu-runner/stats.js";
import { FailureLabel } from "../proto/gen/research/v1/common_pb.js";
import { type Event } from "../proto/gen/research/v1/events_pb.js";
import { bestTrial } from "../swarm/run-state.js";

const TARGET = 0.9;

const { values: a } = parseArgs({
  options: {
    methods: { type: "string", default: "builtin,random,optuna" },
    repeats: { type: "string", default: "3" },
    "budget-min": { type: "string", default: "30" },
    goal: { type: "string", default: "fashion-mnist: maximise accuracy" },
    "max-trials": { type: "string", default: "1000" },
    "grace-s": { type: "string", default: "120" },
    // The swarm's per-trial wall-clock limit; default (0): the swarm's own, a quarter of the budget within 60-600 s.
    "trial-budget-s": { type: "string", default: "0" },
    python: { type: "string", default: "/usr/bin/python3" },
    out: { type: "string", default: `bench/results/search-${hostname()}.json` },
    resume: { type: "boolean", default: false },
  },
});
const budgetS = Number(a["budget-min"]) * 60;
const graceS = Number(a["grace-s"]);
const methods = a.methods.split(",").map((m) => m.trim());
for (const m of methods) if (!["builtin", "random", "optuna"].includes(m)) throw new Error(`unknown method ${m}`);
const parsed = parseGoal(a.goal, { timeBudgetS: budgetS });
if (!parsed.ok) throw new Error(parsed.error);
const goal = parsed.goal;
const log = createLogger("search-bench");
log.level = "warn";

interface RunRecord {
  method: string;
  repeat: number;
  /** The tree's commit when the run started (with "+" when it had uncommitted changes). */
  commit?: string;
  status: string;
  reason: string;
  /** Validation accuracy of the best model: the judge's best trial (by CI lower bound) / Optuna's best complete trial. */
  bestValMean: number | null;
  bestValCi95: number[] | null;
  /** Highest validation mean of any finished trial (may differ from the judge's pick by CI). */
  maxValMean: number | null;
  testAccuracy: number | null;
  testCi95: number[] | null;
  /** The judge's best trial's seeds as one model (mean of their probabilities) on the test split; none for Optuna. */
  ensembleTestAccuracy?: number | null;
  /** Seeds behind the test accuracy (the judge retrains the best trial; Optuna: 1, its saved weights). */
  testSeeds: number;
  trials: number;
  pruned: number;
  failed: number;
  /** From the run's start: the first finished (not pruned) trial whose validation mean reached 0.90. */
  secondsTo90: number | null;
  /** Optuna only: the first epoch of any trial whose validation accuracy reached 0.90. */
  secondsTo90Epoch?: number | null;
  /** Start-up before the budget's clock (swarm: nats, runner, agents); Optuna counts its start-up inside the budget. */
  startupS: number;
  /** Wall seconds of the run itself (swarm: RunStarted to RunFinished incl. test confirmation; Optuna: the whole process). */
  seconds: number;
  overrunS: number;
  loadBefore: number[];
  loadAfter: number[];
  extra?: Record<string, unknown>;
}

function treeCommit(): string {
  const git = (args: string[]) => execFileSync("git", args, { encoding: "utf8" }).trim();
  try {
    return `${git(["rev-parse", "--short", "HEAD"])}${git(["status", "--porcelain", "--untracked-files=no"]) ? "+" : ""}`;
  } catch {
    return "unknown";
  }
}

const round = (x: number | null | undefined, d = 4) => (x === null || x === undefined ? null : Number(x.toFixed(d)));

/** Why the judge's test confirmation gave no result, from its log (the workspace is removed after the run). */
function judgeTestFailure(workspace: string): string | null {
  try {
    const lines = readFileSync(join(workspace, "logs", "judge.log"), "utf8").split("\n");
    return lines.filter((l) => /test confirmation .*(failed|skipped)/.test(l)).pop()?.slice(0, 500) ?? "no test confirmation in the judge's log";
  } catch {
    return null;
  }
}

/** The run's report, copied next to the results (the workspace is removed): what a reader checks a number against. */
function keepReport(reportPath: string, method: string, repeat: number): string | null {
  if (!reportPath || !existsSync(reportPath)) return null;
  const out = a.out!.replace(/\.json$/, "");
  const file = `${out}-reports/${method}-${repeat}.md`;
  mkdirSync(dirname(file), { recursive: true });
  copyFileSync(reportPath, file);
  return file;
}

async function swarmRun(planner: string, repeat: number): Promise<RunRecord> {
  const workspace = mkdtempSync(join(tmpdir(), `search-bench-${planner}-`));
  const loadBefore = loadavg();
  const s0 = Date.now();
  const swarm = await startSwarm({ workspace, logger: log });
  // Stopped from outside (Ctrl-C, kill), the harness takes its swarm and nats-server with it.
  const onSignal = (sig: NodeJS.Signals) => void swarm.stop().finally(() => process.exit(sig === "SIGINT" ? 130 : 143));
  process.once("SIGINT", onSignal).once("SIGTERM", onSignal);
  const startupS = (Date.now() - s0) / 1000;
  const events: Event[] = [];
  const t0 = Date.now();
  try {
    const outcome = await runGoal(swarm, {
      start: { goal, settings: runSettings(goal, { planner, maxTrials: Number(a["max-trials"]), rngSeed: repeat + 1, trialTimeBudgetS: Number(a["trial-budget-s"]) }, workspace, swarm.runnerHealth) },
      log,
      onEvent: (e) => {
        if (e.body.case === "trialProgress") return;
        events.push(e);
        if (e.body.case === "trialJudged") {
          const sec = ((Number(e.emittedAtMs) - t0) / 1000).toFixed(0);
          process.stderr.write(`${planner}#${repeat} [${sec}s] ${e.trialId.slice(-4)} ${e.body.value.reason.slice(0, 90)}\n`);
        }
      },
    });
    const seconds = (Date.now() - t0) / 1000;
    const runStart = outcome.state.startedAtMs || t0;
    const evaluated = events.filter((e) => e.body.case === "trialEvaluated");
    const valOf = (e: Event) => (e.body.case === "trialEvaluated" ? e.body.value.result?.aggregated.val_accuracy : undefined);
    const ok = evaluated.filter((e) => e.body.case === "trialEvaluated" && !e.body.value.failure && valOf(e));
    const pruned = evaluated.filter((e) => e.body.case === "trialEvaluated" && e.body.value.failure?.label === FailureLabel.PRUNED).length;
    const hit = ok.find((e) => (valOf(e)?.mean ?? 0) >= TARGET);
    const best = bestTrial(outcome.state);
    const bestVal = best?.evaluated?.result?.aggregated.val_accuracy;
    const test = outcome.finished.testResult?.aggregated.test_accuracy;
    const ensemble = outcome.finished.testResult?.aggregated.ensemble_test_accuracy;
    return {
      method: planner,
      repeat,
      status: RUN_STATUS.name(outcome.finished.status) ?? String(outcome.finished.status),
      reason: outcome.finished.reason,
      bestValMean: round(bestVal?.mean),
      bestValCi95: bestVal ? bestVal.ci95.map((x) => round(x)!) : null,
      maxValMean: ok.length ? round(Math.max(...ok.map((e) => valOf(e)!.mean))) : null,
      testAccuracy: round(test?.mean),
      testCi95: test ? test.ci95.map((x) => round(x)!) : null,
      ensembleTestAccuracy: round(ensemble?.mean),
      testSeeds: test?.n ?? 0,
      trials: outcome.state.judgedCount,
      pruned,
      failed: evaluated.length - ok.length - pruned,
      secondsTo90: hit ? round((Number(hit.emittedAtMs) - runStart) / 1000, 1) : null,
      startupS: round(startupS, 1)!,
      seconds: round(seconds, 1)!,
      overrunS: round(Math.max(0, seconds - budgetS), 1)!,
      loadBefore,
      loadAfter: loadavg(),
      extra: {
        testFailure: test ? null : judgeTestFailure(workspace),
        trialTimeBudgetS: outcome.state.settings?.trialTimeBudgetS,
        bestTrialId: best?.id ?? null,
        bestRung: best?.proposed?.rung ?? null,
        bestModel: (best?.model as { name?: string } | undefined)?.name ?? null,
        bestParams: Number(best?.evaluated?.result?.params ?? 0) || null,
        bestTrain: best?.train ?? null,
        runSeconds: outcome.finished.seconds,
        report: keepReport(outcome.finished.reportPath, planner, repeat),
      },
    };
  } finally {
    process.off("SIGINT", onSignal).off("SIGTERM", onSignal);
    await swarm.stop();
    rmSync(workspace, { recursive: true, force: true });
  }
}

async function optunaRun(repeat: number): Promise<RunRecord> {
  const dir = mkdtempSync(join(tmpdir(), "search-bench-optuna-"));
  const out = join(dir, "result.json");
  const loadBefore = loadavg();
  const t0 = Date.now();
  const child = spawn(a.python, ["bench/optuna_baseline.py", "--budget-s", String(budgetS), "--seed", String(repeat), "--out", out], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderrTail = "";
  child.stderr.on("data", (d: Buffer) => {
    const text = d.toString();
    stderrTail = (stderrTail + text).slice(-4000);
    for (const line of text.split("\n")) if (line.startsWith("[")) process.stderr.write(`optuna#${repeat} ${line}\n`);
  });
  // Like the swarm's launcher, a run past its budget plus a grace period is ended from outside.
  const killer = setTimeout(() => child.kill("SIGKILL"), (budgetS + graceS) * 1000);
  // A stopped bench stops its baseline too, as it stops a swarm.
  const onSignal = (sig: NodeJS.Signals) => {
    child.kill("SIGKILL");
    process.exit(sig === "SIGINT" ? 130 : 143);
  };
  process.once("SIGINT", onSignal).once("SIGTERM", onSignal);
  const code = await new Promise<number | null>((resolve) => child.on("close", (c) => resolve(c)));
  process.off("SIGINT", onSignal).off("SIGTERM", onSignal);
  clearTimeout(killer);
  const seconds = (Date.now() - t0) / 1000;
  try {
    let r: Record<string, any>;
    try {
      r = JSON.parse(readFileSync(out, "utf8")) as Record<string, any>;
    } catch {
      throw new Error(`optuna run ${repeat} wrote no result (exit ${code}):\n${stderrTail}`);
    }
    return {
      method: "optuna",
      repeat,
      status: code === 0 ? "completed" : `exit_${code}`,
      reason: `${r.completed} complete, ${r.pruned} pruned, ${r.cut} cut at the budget`,
      bestValMean: round(r.best_val_accuracy),
      bestValCi95: null,
      maxValMean: round(r.best_val_accuracy),
      testAccuracy: round(r.test_accuracy),
      testCi95: r.test_ci95 ? (r.test_ci95 as number[]).map((x) => round(x)!) : null,
      testSeeds: r.test_accuracy === null ? 0 : 1,
      trials: r.trials,
      pruned: r.pruned,
      failed: r.failed,
      secondsTo90: round(r.seconds_to_90_val_trial, 1),
      secondsTo90Epoch: round(r.seconds_to_90_val_epoch, 1),
      startupS: 0,
      seconds: round(seconds, 1)!,
      overrunS: round(Math.max(0, seconds - budgetS), 1)!,
      loadBefore,
      loadAfter: loadavg(),
      extra: { cut: r.cut, completed: r.completed, dataLoadS: r.data_load_s, bestParams: r.best_params, history: r.history },
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((p, q) => p - q);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

interface MethodSummary {
  method: string;
  runs: number;
  testMean: number | null;
  testCi95: number[] | null;
  ensembleTestMean: number | null;
  bestValMean: number | null;
  /** Median over runs; a run that never reached 90% counts as never (Infinity), printed as "not reached". */
  medianSecondsTo90: number | null;
  reached90: number;
  meanTrials: number;
  meanPruned: number;
  maxOverrunS: number;
}

function summarise(records: RunRecord[]): MethodSummary[] {
  return methods.map((method) => {
    const rs = records.filter((r) => r.method === method);
    const tests = rs.map((r) => r.testAccuracy).filter((x): x is number => x !== null);
    const vals = rs.map((r) => r.bestValMean).filter((x): x is number => x !== null);
    const ensembles = rs.map((r) => r.ensembleTestAccuracy ?? null).filter((x): x is number => x !== null);
    const t = tests.length ? describe(tests) : undefined;
    const to90 = rs.map((r) => r.secondsTo90 ?? Infinity);
    const med = rs.length ? median(to90) : Infinity;
    const mean = (xs: number[]) => (xs.length ? xs.reduce((p, q) => p + q, 0) / xs.length : 0);
    return {
      method,
      runs: rs.length,
      testMean: t ? round(t.mean) : null,
      // One run gives no interval (describe() collapses it to the point).
      testCi95: t && t.n > 1 ? t.ci95.map((x) => round(x)!) : null,
      ensembleTestMean: ensembles.length ? round(mean(ensembles)) : null,
      bestValMean: vals.length ? round(mean(vals)) : null,
      medianSecondsTo90: Number.isFinite(med) ? round(med, 1) : null,
      reached90: rs.filter((r) => r.secondsTo90 !== null).length,
      meanTrials: round(mean(rs.map((r) => r.trials)), 1)!,
      meanPruned: round(mean(rs.map((r) => r.pruned)), 1)!,
      maxOverrunS: Math.max(0, ...rs.map((r) => r.overrunS)),
    };
  });
}

const pctOrDash = (x: number | null) => (x === null ? "–" : pct(x));

function table(records: RunRecord[], summary: MethodSummary[]): string {
  const lines = [
    `| method | runs | test accuracy, mean (95% t-CI across repeats) | seed ensemble test, mean | best val (mean of runs) | median s to 90% val (runs reaching) | trials (pruned), mean | max overrun |`,
    `|---|---|---|---|---|---|---|---|`,
  ];
  for (const s of summary) {
    const ci = s.testCi95 ? ` (${pct(s.testCi95[0]!)}–${pct(s.testCi95[1]!)})` : "";
    const to90 = s.medianSecondsTo90 === null ? "not reached" : `${s.medianSecondsTo90.toFixed(0)} s`;
    lines.push(
      `| ${s.method} | ${s.runs} | ${pctOrDash(s.testMean)}${ci} | ${pctOrDash(s.ensembleTestMean)} | ${pctOrDash(s.bestValMean)} | ${to90} (${s.reached90}/${s.runs}) | ${s.meanTrials} (${s.meanPruned}) | ${s.maxOverrunS.toFixed(0)} s |`,
    );
  }
  lines.push("", `| run | status | best val (95% CI) | test | ensemble test | trials | pruned | s to 90% | seconds | overrun | load before → after |`, `|---|---|---|---|---|---|---|---|---|---|---|`);
  for (const r of records) {
    const ci = r.bestValCi95 ? ` (${pct(r.bestValCi95[0]!)}–${pct(r.bestValCi95[1]!)})` : "";
    lines.push(
      `| ${r.method}#${r.repeat} | ${r.status} | ${pctOrDash(r.bestValMean)}${ci} | ${pctOrDash(r.testAccuracy)} | ${pctOrDash(r.ensembleTestAccuracy ?? null)} | ${r.trials} | ${r.pruned} | ${r.secondsTo90 ?? "–"} | ${r.seconds.toFixed(0)} | ${r.overrunS.toFixed(0)} | ${r.loadBefore[0]!.toFixed(1)} → ${r.loadAfter[0]!.toFixed(1)} |`,
    );
  }
  return lines.join("\n");
}

// --resume keeps the runs already in the output file and runs only the missing (method, repeat) pairs,
// so a series longer than one sitting can be finished later on the same machine.
const previous = a.resume && existsSync(a.out) ? (JSON.parse(readFileSync(a.out, "utf8")) as { started: string; records: RunRecord[] }) : undefined;
const started = previous?.started ?? new Date().toISOString();
// Runs of other methods (or of an earlier version, renamed) stay in the file; the summary covers `methods`.
const records: RunRecord[] = previous?.records ?? [];
const machine = { host: hostname(), cpus: cpus().length, cpuModel: cpus()[0]?.model ?? "", memGiB: round(totalmem() / 2 ** 30, 1) };
function save(): MethodSummary[] {
  const summary = summarise(records);
  mkdirSync(dirname(a.out), { recursive: true });
  writeFileSync(
    a.out,
    `${JSON.stringify({ started, updated: new Date().toISOString(), goal: a.goal, budgetS, repeats: Number(a.repeats), methods, maxTrials: Number(a["max-trials"]), machine, summary, records }, null, 2)}\n`,
  );
  return summary;
}

for (let r = 0; r < Number(a.repeats); r++) {
  for (const method of methods) {
    if (records.some((x) => x.method === method && x.repeat === r)) continue;
    process.stderr.write(`--- ${method}#${r}: ${budgetS} s budget, load ${loadavg()[0]!.toFixed(1)}\n`);
    const commit = treeCommit();
    const rec = { commit, ...(method === "optuna" ? await optunaRun(r) : await swarmRun(method, r)) };
    records.push(rec);
    const { extra: _, ...brief } = rec;
    console.log(JSON.stringify(brief));
    save();
  }
}
console.log(`\n${table(records, save())}\n\nresults written to ${a.out}`);
