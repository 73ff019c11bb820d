/**
 * Orchestration per trial: the swarm's own cost (bus hops, run-state folds,
 * lineage writes and queries, planning, assembling, judging) with training
 * taken out. A real swarm (nats-server, lineage store, the five agent
 * processes) runs one goal whose target cannot be reached against a fake
 * runner that answers at once (bench/fake-runner.ts), one trial in flight,
 * so consecutive judgements are apart by one trial's whole pipeline:
 * planner proposal (with its lineage query) -> coder -> analyst -> judge.
 *
 * Reports judged-to-judged intervals in windows of trials (median, p90,
 * mean; the first trial, which also waits for the agents to come up, apart),
 * where each stage's time goes (from the events' emitted_at), and how far
 * the lineage store lags once the run has finished.
 *
 *   npx tsx bench/orchestration-bench.ts [--trials 500] [--seeds 3] [--window 50]
 *       [--research] [--keep] [--stall-s 120] [--profile] [--out bench/results/orchestration-<host>.json]
 *
 * --profile also times, at every 10th proposal, a run-state sync (the round
 * trip each agent makes per message) and the planner's lineage query, from
 * this process while the coder works (so it loads the swarm a little), and
 * after the run the built-in planner's policy on the run's state as it grew.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, hostname, loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { RUN_STATUS } from "../core/enums.js";
import { parseGoal } from "../core/goal.js";
import { createLogger } from "../core/logger.js";
import { runGoal, startSwarm } from "../deploy/swarm.js";
import { runSettings } from "../deploy/settings.js";
import { lineageEmbedder } from "../lineage-store/embedder.js";
import { LineageStore } from "../lineage-store/store.js";
import type { Event } from "../proto/gen/research/v1/events_pb.js";
import { paramsCounter } from "../agents/planner/params.js";
import { mulberry32 } from "../agents/planner/proposals.js";
import { POLICIES } from "../agents/planner/policies/index.js";
import type { PlanInput } from "../agents/planner/types.js";
import { TrialStatus } from "../proto/gen/research/v1/common_pb.js";
import { decodeResponse, encodeRequest, QUERY_SUBJECT } from "../swarm/lineage-query.js";
import { applyToRunState, emptyRunState, type RunState } from "../swarm/run-state.js";
import { DIGITS, startFakeRunner } from "./fake-runner.js";

const { values: a } = parseArgs({
  options: {
    trials: { type: "string", default: "500" },
    seeds: { type: "string", default: "3" },
    window: { type: "string", default: "50" },
    research: { type: "boolean", default: false },
    keep: { type: "boolean", default: false },
    "stall-s": { type: "string", default: "120" },
    profile: { type: "boolean", default: false },
    out: { type: "string", default: `bench/results/orchestration-${hostname()}.json` },
  },
});
const TRIALS = Number(a.trials);
const WINDOW = Number(a.window);
// The fake runner tops out near 96%: the goal is never met, so only the trial budget ends the run.
const GOAL_TEXT = "digits: reach 99.9% validation accuracy in 24 hours";
const log = createLogger("orchestration-bench");
log.level = "warn";

const STAGES = ["proposed", "assembled", "evaluated", "judged"] as const;
type Stage = (typeof STAGES)[number];
const STAGE_OF: Partial<Record<NonNullable<Event["body"]["case"]>, Stage>> = {
  trialProposed: "proposed",
  trialAssembled: "assembled",
  trialEvaluated: "evaluated",
  trialJudged: "judged",
};

const round = (x: number) => Math.round(x * 10) / 10;
function quantile(xs: number[], q: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((p, r) => p - r);
  const i = (s.length - 1) * q;
  const lo = Math.floor(i);
  return s[lo]! + (s[Math.min(lo + 1, s.length - 1)]! - s[lo]!) * (i - lo);
}
const mean = (xs: number[]) => (xs.length ? xs.reduce((p, q) => p + q, 0) / xs.length : NaN);
const summary = (xs: number[]) => ({ medianMs: round(quantile(xs, 0.5)), p90Ms: round(quantile(xs, 0.9)), meanMs: round(mean(xs)) });

const git = (...args: string[]) => {
  try {
    return execFileSync("git", args, { encoding: "utf8" }).trim();
  } catch {
    return "";
  }
};

const parsed = parseGoal(GOAL_TEXT);
if (!parsed.ok) throw new Error(parsed.error);
const goal = parsed.goal;
const loadBefore = loadavg();
const fake = await startFakeRunner();
const workspace = mkdtempSync(join(tmpdir(), "orchestration-bench-"));
const swarm = await startSwarm({ workspace, runnerAddress: fake.address, logger: log });
const settings = runSettings(goal, { maxTrials: TRIALS, parallel: 1, patience: TRIALS, seeds: Number(a.seeds), research: a.research }, workspace);

/** emitted_at of each trial's stage events, and when the launcher saw each judgement. */
const stamps = new Map<string, Partial<Record<Stage, number>>>();
const judged: { trialId: string; emittedMs: number; seenMs: number }[] = [];
const durable: Event[] = [];
const probes: { trial: number; syncMs: number; queryMs: number; storeMs: number }[] = [];
// Imported only here, so the benchmark also runs on trees from before the per-run follower.
const follower = a.profile ? new (await import("../swarm/run-states.js")).RunStates(swarm.bus, log) : undefined;

/** What each agent does per message (sync its run's state) and what the planner asks the store per proposal. */
async function probe(runId: string, trial: number): Promise<void> {
  let t = performance.now();
  await follower!.get(runId);
  const syncMs = performance.now() - t;
  t = performance.now();
  const res = decodeResponse(await swarm.bus.request(QUERY_SUBJECT, encodeRequest({ text: `${goal.dataset} ${goal.rawText}`, k: 50, status: TrialStatus.FAILED })));
  probes.push({ trial, syncMs: round(syncMs), queryMs: round(performance.now() - t), storeMs: round(res.tookMs) });
}

/** The built-in planner's policy (and its random fallback) on the run's state after every window of trials. */
function policyTimes(runId: string): { trials: number; nextMs: number; randomMs: number }[] {
  const state: RunState = emptyRunState(runId);
  const out: { trials: number; nextMs: number; randomMs: number }[] = [];
  const params = paramsCounter(state, DIGITS);
  const time = (f: () => unknown) => {
    const runs = Array.from({ length: 5 }, () => {
      const t = performance.now();
      try {
        f();
      } catch {
        // Timing only: a policy that throws costs what it cost until then (the planner would dead-letter).
      }
      return performance.now() - t;
    });
    return round(quantile(runs, 0.5));
  };
  for (const e of durable) {
    applyToRunState(state, e);
    if (e.body.case !== "trialJudged" || state.judgedCount % WINDOW !== 0) continue;
    const input = (): PlanInput => ({ state, info: DIGITS, rng: mulberry32(state.judgedCount), params, failedElsewhere: new Set() });
    out.push({ trials: state.judgedCount, nextMs: time(() => POLICIES.builtin.next(input(), state.judgedCount + 1)), randomMs: time(() => POLICIES.random.next(input(), state.judgedCount + 1)) });
  }
  return out;
}

let startedMs = 0;
let randomDraws = 0;
let finishedSeenMs = 0;
let reader: Promise<LineageStore | undefined> | undefined;
let lag: Promise<{ rowFinishedMs: number | null; reportMs: number | null }> | undefined;

/** A reader of the store's tables (with the embedder they were built with), once the store process has created them. */
async function openReader(): Promise<LineageStore | undefined> {
  const dir = join(workspace, "lineage");
  let error = "";
  for (let attempt = 0; attempt < 120; attempt++) {
    try {
      return await LineageStore.open(dir, { readOnly: true, embedder: await lineageEmbedder(dir), logger: log });
    } catch (err) {
      error = (err as Error).message;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  process.stderr.write(`cannot read the lineage store (${error}); its lag is not measured\n`);
  return undefined;
}

/** Polls until the store's runs row says finished and the report file exists. */
async function lineageLag(runId: string, report: string, since: number) {
  const store = await reader;
  let rowFinishedMs: number | null = null;
  let reportMs: number | null = null;
  while (((store && rowFinishedMs === null) || reportMs === null) && Date.now() - since < 120_000) {
    if (reportMs === null && report && existsSync(report)) reportMs = Date.now() - since;
    if (rowFinishedMs === null && store) {
      const row = await store.getRun(runId);
      if (row && row.status !== "running" && row.status !== "") rowFinishedMs = Date.now() - since;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  return { rowFinishedMs, reportMs };
}

// Ctrl-C or a stalled run: stop the swarm (its nats-server outlives this process otherwise).
let stopping: Promise<void> | undefined;
const shutDown = (why: string, code: number, keep = a.keep) => {
  stopping ??= (async () => {
    process.stderr.write(`${why}; stopping the swarm${keep ? `, workspace kept: ${workspace}` : ""}\n`);
    await swarm.stop().catch(() => undefined);
    await fake.close().catch(() => undefined);
    if (!keep) rmSync(workspace, { recursive: true, force: true });
    process.exit(code);
  })();
};
process.once("SIGINT", () => shutDown("interrupted", 130));
process.once("SIGTERM", () => shutDown("terminated", 143));
process.once("uncaughtException", (err) => shutDown(`failed: ${err.stack ?? err.message}`, 1));
process.once("unhandledRejection", (err) => shutDown(`failed: ${(err as Error)?.stack ?? String(err)}`, 1));
let lastProgressMs = Date.now();
const watchdog = setInterval(() => {
  if (Date.now() - lastProgressMs > Number(a["stall-s"]) * 1000) {
    shutDown(`no event for ${a["stall-s"]} s: the run stalled (a dead-lettered handler? see ${workspace}/logs)`, 2, true);
  }
}, 1000);

const t0 = Date.now();
let outcome: Awaited<ReturnType<typeof runGoal>>;
try {
  outcome = await runGoal(swarm, {
    start: { goal, settings },
    log,
    onEvent: (e) => {
      const now = Date.now();
      const c = e.body.case;
      if (c !== "trialProgress") {
        lastProgressMs = now;
        if (a.profile) durable.push(e);
      }
      // The built-in planner falls back to random draws once every edit of the good trials is spent.
      if (c === "trialProposed" && e.body.value.hypothesis.startsWith("random draw")) randomDraws++;
      if (follower && c === "trialProposed" && e.body.value.index % 10 === 0) void probe(e.runId, e.body.value.index + 1).catch(() => undefined);
      if (c === "runStarted") startedMs = Number(e.emittedAtMs);
      const stage = c ? STAGE_OF[c] : undefined;
      if (stage && e.trialId) {
        const s = stamps.get(e.trialId) ?? {};
        s[stage] ??= Number(e.emittedAtMs);
        stamps.set(e.trialId, s);
      }
      if (c === "trialJudged") {
        judged.push({ trialId: e.trialId, emittedMs: Number(e.emittedAtMs), seenMs: now });
        // Opened well before the run ends, so the lag measurement does not include it.
        reader ??= openReader();
        if (judged.length % WINDOW === 0) {
          const recent = judged.slice(-WINDOW);
          const per = (recent.at(-1)!.emittedMs - (judged[judged.length - WINDOW - 1]?.emittedMs ?? startedMs)) / recent.length;
          process.stderr.write(`${judged.length} trials judged, ${per.toFixed(0)} ms/trial over the last ${WINDOW}, load ${loadavg()[0]!.toFixed(2)}\n`);
        }
      }
      if (c === "runFinished") {
        finishedSeenMs = now;
        lag = lineageLag(e.runId, e.body.value.reportPath, now);
      }
    },
  });
} catch (err) {
  shutDown(`the run failed: ${(err as Error).stack ?? String(err)}`, 1);
  await stopping;
  throw err;
}
clearInterval(watchdog);
const totalS = (Date.now() - t0) / 1000;
const storeLag = (await lag) ?? { rowFinishedMs: null, reportMs: null };
const loadAfter = loadavg();
await (await reader)?.close();
await follower?.close();
await swarm.stop();
await fake.close();
if (!a.keep) rmSync(workspace, { recursive: true, force: true });

// Interval k: from the previous judgement (or the run's start) to trial k's judgement.
const intervals = judged.map((j, k) => j.emittedMs - (k === 0 ? startedMs : judged[k - 1]!.emittedMs));
const stageMs = judged.map((j, k) => {
  const s = stamps.get(j.trialId) ?? {};
  const prev = k === 0 ? startedMs : judged[k - 1]!.emittedMs;
  return {
    // Judgement seen by the planner -> proposal stored: fold sync, lineage query, planning.
    propose: (s.proposed ?? NaN) - prev,
    // Proposal -> assembled: delivery, fold sync, compile, Summarize on the runner.
    assemble: (s.assembled ?? NaN) - (s.proposed ?? NaN),
    // Assembled -> evaluated: delivery, fold sync, the (instant) Evaluate stream, progress, analysis.
    evaluate: (s.evaluated ?? NaN) - (s.assembled ?? NaN),
    // Evaluated -> judged: delivery, fold sync, the rules.
    judge: (s.judged ?? NaN) - (s.evaluated ?? NaN),
  };
});
// Trial 1's interval also holds the agents' start-up (connecting, opening consumers): reported apart.
const firstTrialMs = intervals[0] ?? null;
const windows = [];
for (let w = 0; w * WINDOW < intervals.length; w++) {
  const lo = Math.max(1, w * WINDOW);
  const hi = Math.min(intervals.length, w * WINDOW + WINDOW);
  if (lo >= hi) break;
  const part = stageMs.slice(lo, hi);
  windows.push({
    trials: [lo + 1, hi] as [number, number],
    ...summary(intervals.slice(lo, hi)),
    stagesMedianMs: Object.fromEntries((["propose", "assemble", "evaluate", "judge"] as const).map((k) => [k, round(quantile(part.map((p) => p[k]).filter(Number.isFinite), 0.5))])),
  });
}
const first = windows[0];
const last = windows.at(-1);
const result = {
  date: new Date().toISOString(),
  command: `npx tsx bench/orchestration-bench.ts ${process.argv.slice(2).join(" ")}`.trim(),
  // The code measured: its commit and the tracked files changed on top of it.
  commit: git("rev-parse", "--short", "HEAD"),
  modified: git("diff", "--name-only", "HEAD").split("\n").filter(Boolean),
  host: hostname(),
  cpus: cpus().length,
  loadavgBefore: loadBefore.map(round),
  loadavgAfter: loadAfter.map((x) => Math.round(x * 100) / 100),
  goal: GOAL_TEXT,
  settings: { maxTrials: settings.maxTrials, seeds: settings.seeds, parallel: settings.parallel, patience: settings.patience, research: settings.research, planner: settings.planner },
  status: RUN_STATUS.name(outcome.finished.status) ?? "",
  reason: outcome.finished.reason,
  trials: judged.length,
  randomDraws,
  totalS: round(totalS),
  runS: round(((judged.at(-1)?.emittedMs ?? startedMs) - startedMs) / 1000),
  firstTrialMs,
  perTrialMs: summary(intervals.slice(1)),
  firstWindow: first,
  lastWindow: last,
  lastOverFirstMedian: first && last ? Math.round((last.medianMs / first.medianMs) * 100) / 100 : null,
  windows,
  // From the launcher seeing RunFinished (after the judge's test confirmation) to the store's row / the report file.
  lineageLagAfterFinishMs: storeLag,
  ...(a.profile ? { probes, policy: policyTimes(outcome.runId) } : {}),
  launcherSawJudgedAfterEmitMs: summary(judged.map((j) => j.seenMs - j.emittedMs)),
  finishedSeenAfterLastJudgedMs: finishedSeenMs && judged.length ? finishedSeenMs - judged.at(-1)!.seenMs : null,
};
mkdirSync(dirname(a.out), { recursive: true });
writeFileSync(a.out, `${JSON.stringify(result, null, 2)}\n`);

const pad = (x: unknown, n: number) => String(x).padStart(n);
console.log(`\n${result.trials} trials (${result.status}: ${result.reason}), ${result.totalS} s in all, load ${result.loadavgBefore.join("/")} before, ${result.loadavgAfter.join("/")} after`);
console.log(`trials      median    p90   mean   | stage medians: propose assemble evaluate judge (ms)`);
for (const w of windows) {
  const s = w.stagesMedianMs;
  console.log(`${pad(`${w.trials[0]}-${w.trials[1]}`, 9)} ${pad(w.medianMs, 8)} ${pad(w.p90Ms, 6)} ${pad(w.meanMs, 6)}   | ${pad(s.propose, 14)} ${pad(s.assemble, 8)} ${pad(s.evaluate, 8)} ${pad(s.judge, 5)}`);
}
console.log(`all but the first (${firstTrialMs} ms, with the agents' start-up)`);
console.log(`          ${pad(result.perTrialMs.medianMs, 8)} ${pad(result.perTrialMs.p90Ms, 6)} ${pad(result.perTrialMs.meanMs, 6)}`);
if (first && last) console.log(`first window median ${first.medianMs} ms, last ${last.medianMs} ms (x${result.lastOverFirstMedian})`);
console.log(`lineage store after RunFinished: runs row finished ${storeLag.rowFinishedMs ?? "never"} ms, report ${storeLag.reportMs ?? "never"} ms`);
if (a.profile) {
  console.log(`\nprofile (every 10th proposal): trial, run-state sync ms, lineage query ms (store's own ms)`);
  console.log(probes.sort((p, q) => p.trial - q.trial).map((p) => `${p.trial}: ${p.syncMs} / ${p.queryMs} (${p.storeMs})`).join("  "));
  console.log(`built-in policy on the run's state (median of 5): trials, next() ms, random fallback ms`);
  console.log(result.policy!.map((p) => `${p.trials}: ${p.nextMs} / ${p.randomMs}`).join("  "));
}
console.log(`results written to ${a.out}`);
process.exit(0);
