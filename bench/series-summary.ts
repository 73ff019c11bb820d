/**
 * The series of bench/search-series.sh as one document: every run's command, seed, load and
 * outcome, read from its launch line and its stored events (the best trial by the run's rule,
 * when its last long training was proposed and how long it trained, when a target was met, the
 * planner's whole-run promises), then mean, min and max per kind of run, and the targets of
 * docs/BENCHMARKS.md held against them.
 *
 *   npx tsx bench/series-summary.ts bench/out/series-<commit> bench/results/search-series-<commit>.json
 */
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { runFacts } from "./run-facts.js";
import { machineFingerprint } from "./machine.js";
import { pairedTTest } from "../core/stats.js";
import { hypervolume, type Axis } from "../core/pareto.js";

const [dir, out] = process.argv.slice(2);
if (!dir || !out) throw new Error("usage: npx tsx bench/series-summary.ts SERIES_DIR OUT.json");

interface Kept {
  name: string;
  kind: "swarm" | "optuna" | "handwritten";
  seed: number;
  command: string;
  exit?: number;
  wall_s: number;
  load_before: string;
  load_after: string;
  workspace?: string;
  launch?: { run_id: string; status: string; seconds: number; trials: number; report?: string; best_trial?: { trial_id: string; params?: number; test_accuracy?: number; ensemble_test_accuracy?: number }; limits?: { best_latency_ms: number | null } } | null;
  result?: Record<string, unknown> & { test_accuracy: number | null; best_val_accuracy: number | null };
}

const kept: Kept[] = readdirSync(dir)
  .filter((f) => /^(open|readme|warm|openwarm|digitscold|digitswarm|csvcold|csvlure|csvwarm|optuna|handwritten|pareto|optunapareto|latency|optunalatency)-\d+\.json$/.test(f))
  .sort()
  .map((f) => JSON.parse(readFileSync(join(dir, f), "utf8")));

async function swarmRun(k: Kept) {
  const l = k.launch;
  const { workspace, ...rest } = k;
  if (!l) return { ...rest, outcome: "no launch line (see the run's log)" };
  const facts = await runFacts(workspace!, l.run_id);
  return {
    ...rest,
    status: l.status,
    run_seconds: l.seconds,
    trials: l.trials,
    ...facts,
    best: facts.best && { ...facts.best, params: l.best_trial?.params, test_per_seed: l.best_trial?.test_accuracy, test_ensemble: l.best_trial?.ensemble_test_accuracy },
  };
}

const stat = (xs: number[]) => (xs.length ? { n: xs.length, mean: xs.reduce((a, b) => a + b, 0) / xs.length, min: Math.min(...xs), max: Math.max(...xs) } : null);
const runs: (Awaited<ReturnType<typeof swarmRun>> | Kept)[] = [];
for (const k of kept) runs.push(k.kind === "swarm" ? await swarmRun(k) : k);
type Run = Awaited<ReturnType<typeof swarmRun>> & Partial<Kept>;
const open = runs.filter((r) => r.name.startsWith("open-")) as Run[];
const readme = runs.filter((r) => r.name.startsWith("readme-")) as Run[];
const optuna = runs.filter((r) => r.name.startsWith("optuna-")) as Kept[];
const nums = (xs: (number | null | undefined)[]) => xs.filter((x): x is number => typeof x === "number");
const openEnsemble = stat(nums(open.map((r) => ("best" in r ? r.best?.test_ensemble : undefined))));
const openPerSeed = stat(nums(open.map((r) => ("best" in r ? r.best?.test_per_seed : undefined))));
const optunaTest = stat(nums(optuna.map((r) => r.result?.test_accuracy)));
// The open runs' edits by the report's rule (run-facts.ts editOutcomes), summed over the series: issue 63's measure.
const editCounts = open.flatMap((r) => ("edits" in r && r.edits ? [r.edits] : []));
const openEdits = editCounts.length
  ? Object.fromEntries((["judged", "supported", "refuted", "inconclusive", "paired", "above_probes"] as const).map((k) => [k, editCounts.reduce((a, e) => a + e[k], 0)]))
  : null;
const handwrittenTest = stat(nums((runs.filter((r) => r.name.startsWith("handwritten-")) as Kept[]).map((r) => r.result?.test_accuracy)));
const toGoal = stat(nums(readme.map((r) => ("goal_met_at_s" in r ? r.goal_met_at_s : undefined))));
// A warm start (issue 37) against the cold run whose workspace it started in, same --seed: seconds to the goal, cold minus warm.
const metAt = (r: Run | undefined) => (r && "goal_met_at_s" in r && typeof r.goal_met_at_s === "number" ? r.goal_met_at_s : undefined);
const warm = runs.filter((r) => r.name.startsWith("warm-")) as Run[];
const pairs = warm.map((w) => ({ seed: w.seed, cold_s: metAt(readme.find((r) => r.seed === w.seed)) ?? null, warm_s: metAt(w) ?? null }));
const saved = stat(nums(pairs.map((p) => (p.cold_s !== null && p.warm_s !== null ? p.cold_s - p.warm_s : undefined))));
// The open-ended pair (issue 37): the cold run's best (by the run's rule) against the warm run in its workspace, same --seed:
// when the warm run first confirmed (accepted, two seeds or more) a validation mean at least the cold best's, and where each ended.
const openWarm = runs.filter((r) => r.name.startsWith("openwarm-")) as Run[];
const bestOf = (r: Run | undefined) => (r && "best" in r ? r.best : undefined);
const openPairs = openWarm.map((w) => {
  const cold = open.find((r) => r.seed === w.seed);
  const coldVal = bestOf(cold)?.val_mean;
  const firstAtLeast = (r: Run | undefined) => (coldVal === undefined || !r || !("confirmed" in r) ? undefined : r.confirmed.find((c) => c.val_mean >= coldVal));
  const [coldAt, warmAt] = [firstAtLeast(cold)?.at_s, firstAtLeast(w)?.at_s];
  const warmVal = bestOf(w)?.val_mean;
  return {
    seed: w.seed,
    cold_best_val: coldVal ?? null,
    cold_run_s: cold && "run_seconds" in cold ? cold.run_seconds : null,
    // The targets: the cold best reached in at most a third of the time the cold run took to it, and a higher end.
    cold_reached_best_at_s: coldAt ?? null,
    warm_reached_cold_best_at_s: warmAt ?? null,
    within_a_third: coldAt !== undefined && warmAt !== undefined ? warmAt <= coldAt / 3 : false,
    ends_higher: coldVal !== undefined && warmVal !== undefined && warmVal > coldVal,
    warm_best_val: warmVal ?? null,
    cold_test_per_seed: bestOf(cold)?.test_per_seed ?? null,
    warm_test_per_seed: bestOf(w)?.test_per_seed ?? null,
    cold_test_ensemble: bestOf(cold)?.test_ensemble ?? null,
    warm_test_ensemble: bestOf(w)?.test_ensemble ?? null,
  };
});
// Other data (issue 37): a digits run cold against the same run in a README run's workspace (Fashion-MNIST its only past), same --seed.
const coldWarm = (coldPrefix: string, warmPrefix: string) =>
  (runs.filter((r) => r.name.startsWith(warmPrefix)) as Run[]).map((w) => {
    const cold = runs.find((r) => r.name === `${coldPrefix}${w.seed}`) as Run | undefined;
    return { seed: w.seed, cold_best_val: bestOf(cold)?.val_mean ?? null, warm_best_val: bestOf(w)?.val_mean ?? null, cold_test_per_seed: bestOf(cold)?.test_per_seed ?? null, warm_test_per_seed: bestOf(w)?.test_per_seed ?? null };
  });
/** Test per seed, warm minus cold, over the pairs with both: a paired t interval. */
const pairedTest = (pairs: { cold_test_per_seed: number | null; warm_test_per_seed: number | null }[]) => {
  const both = pairs.filter((p) => p.cold_test_per_seed !== null && p.warm_test_per_seed !== null);
  return both.length >= 2 ? pairedTTest(both.map((p) => p.cold_test_per_seed!), both.map((p) => p.warm_test_per_seed!)) : null;
};
const digitsPairs = coldWarm("digitscold-", "digitswarm-");
const digitsPaired = pairedTest(digitsPairs);
// The misleading past (issue 37): a CSV run cold against the same run in a workspace whose only past is a lookalike
// with shuffled labels, same --seed; test accuracy per seed of each run's best, warm minus cold, with its paired interval.
const csvPairs = coldWarm("csvcold-", "csvwarm-").map((p) => ({ ...p, lure_best_val: bestOf(runs.find((r) => r.name === `csvlure-${p.seed}`) as Run | undefined)?.val_mean ?? null }));
const csvPaired = pairedTest(csvPairs);
// Issue 39: each side's front of (test accuracy, parameters, latency per example) and the volume it
// dominates. The swarm's are its front trials trained long on the full split (report.json
// front.trained_long, each evaluated once on the test split); Optuna's, every trial of its study's
// front (study.best_trials), each evaluated once on the test split. Parameters and latency span
// orders of magnitude, so they count on a log scale; the reference is the corner of 80% test
// accuracy, 2M parameters and 20 ms per example, worse than any model either side keeps.
const HV_AXES: Axis[] = [
  { name: "test accuracy", higherIsBetter: true },
  { name: "log10 parameters", higherIsBetter: false },
  { name: "log10 ms per example", higherIsBetter: false },
];
const HV_REFERENCE = [0.8, Math.log10(2e6), Math.log10(20)];
interface FrontPoint {
  test: number;
  params: number;
  latency_ms: number;
}
const hv = (pts: FrontPoint[]) =>
  hypervolume(
    pts.map((p, i) => ({ id: String(i), values: [p.test, Math.log10(p.params), Math.log10(p.latency_ms)].map((v) => ({ mean: v, low: v, high: v })) })),
    HV_AXES,
    HV_REFERENCE,
  );
// Each side times its models as it goes, the swarm beside another slot's training, Optuna alone:
// bench/retime.py times every claimed model again in one harness, alike, into retimed.json, and
// the hypervolume on those latencies is the fair one (null where the folder has none).
const retimed = existsSync(join(dir, "retimed.json"))
  ? (JSON.parse(readFileSync(join(dir, "retimed.json"), "utf8")) as { harness: Record<string, unknown>; runs: Record<string, Record<string, { latency_ms: number }>> })
  : undefined;
type Claimed = FrontPoint & { key: string };
const swarmFront = (r: Run | undefined): Claimed[] => {
  const report = r?.launch?.report && JSON.parse(readFileSync(r.launch.report.replace(/\.md$/, ".json"), "utf8"));
  const long = (report?.front?.trained_long ?? []) as { trial_id: string; test: { mean: number } | null; params: number | null; latency_ms: number | null }[];
  return long.flatMap((l) => (l.test && l.params && l.latency_ms ? [{ key: l.trial_id, test: l.test.mean, params: l.params, latency_ms: l.latency_ms }] : []));
};
const optunaFront = (r: Kept | undefined): Claimed[] =>
  ((r?.result?.front ?? []) as { number: number; test_accuracy: number; params: number; latency_ms: number }[]).map((p) => ({ key: String(p.number), test: p.test_accuracy, params: p.params, latency_ms: p.latency_ms }));
/** A run's claimed points with the latencies retime.py measured, or null where it did not measure them all. */
const retimedFront = (name: string, pts: Claimed[]): FrontPoint[] | null => {
  const times = retimed?.runs[name];
  return times && pts.every((p) => times[p.key]) ? pts.map((p) => ({ ...p, latency_ms: times[p.key]!.latency_ms })) : null;
};
const paretoPairs = (runs.filter((r) => /^pareto-\d+$/.test(r.name)) as Run[]).map((r) => {
  const peer = runs.find((o) => o.name === `optunapareto-${r.seed}`) as Kept | undefined;
  const [mine, theirs] = [swarmFront(r), optunaFront(peer)];
  const [mineAgain, theirsAgain] = [retimedFront(r.name, mine), peer ? retimedFront(peer.name, theirs) : null];
  return {
    seed: r.seed,
    swarm_hypervolume: hv(mine),
    optuna_hypervolume: peer ? hv(theirs) : null,
    swarm_hypervolume_retimed: mineAgain && hv(mineAgain),
    optuna_hypervolume_retimed: theirsAgain && hv(theirsAgain),
    swarm_front: mineAgain ?? mine,
    optuna_front: theirsAgain ?? theirs,
  };
});
// Issue 39's constrained goal: each side's best model within the latency limit, by its own timing
// (the swarm's judge rejects a trial timed over it; Optuna's study stops a model timed over it
// before it trains), and that model's test accuracy (the swarm's: the mean of its seeds).
const latencyPairs = (runs.filter((r) => /^latency-\d+$/.test(r.name)) as Run[]).map((r) => {
  const peer = runs.find((o) => o.name === `optunalatency-${r.seed}`) as Kept | undefined;
  const best = r.launch?.best_trial as { test_accuracy?: number; latency_ms?: number; params?: number } | undefined;
  const theirs = peer?.result as { test_accuracy?: number | null; best_latency_ms?: number | null; max_latency_ms?: number } | undefined;
  return {
    seed: r.seed,
    max_latency_ms: theirs?.max_latency_ms ?? null,
    swarm_test: best?.test_accuracy ?? null,
    swarm_latency_ms: best?.latency_ms ?? null,
    // What the judge held it to: the fastest timing of its model in the run (swarm/front.ts limitLatencyMs); launches before 2026-11-30 did not say.
    swarm_limit_latency_ms: r.launch?.limits?.best_latency_ms ?? null,
    swarm_params: best?.params ?? null,
    optuna_test: theirs?.test_accuracy ?? null,
    optuna_latency_ms: theirs?.best_latency_ms ?? null,
  };
});

const summary = {
  open_ended_test_ensemble: openEnsemble,
  open_ended_test_per_seed: openPerSeed,
  ...(openEdits && { open_ended_edits: openEdits }),
  optuna_test: optunaTest,
  ...(handwrittenTest && { handwritten_test: handwrittenTest }),
  readme_goal_met: `${readme.filter((r) => "goal_met_at_s" in r && r.goal_met_at_s !== null).length} of ${readme.length}`,
  readme_seconds_to_goal: toGoal,
  ...(openWarm.length && { open_warm_pairs: openPairs }),
  ...(digitsPairs.length && { other_data_pairs: digitsPairs, other_data_test_warm_minus_cold: digitsPaired }),
  ...(csvPairs.length && { misleading_past_pairs: csvPairs, misleading_past_test_warm_minus_cold: csvPaired }),
  ...(paretoPairs.length && {
    pareto_pairs: paretoPairs,
    pareto_hypervolume_rule: `dominated hypervolume of (test accuracy, log10 parameters, log10 ms per example) against the reference (${HV_REFERENCE.map((x) => x.toFixed(3)).join(", ")})`,
    swarm_hypervolume: stat(paretoPairs.map((p) => p.swarm_hypervolume)),
    optuna_hypervolume: stat(nums(paretoPairs.map((p) => p.optuna_hypervolume))),
    ...(retimed && {
      retime_harness: retimed.harness,
      swarm_hypervolume_retimed: stat(nums(paretoPairs.map((p) => p.swarm_hypervolume_retimed))),
      optuna_hypervolume_retimed: stat(nums(paretoPairs.map((p) => p.optuna_hypervolume_retimed))),
    }),
  }),
  ...(latencyPairs.length && {
    latency_pairs: latencyPairs,
    latency_swarm_test: stat(nums(latencyPairs.map((p) => p.swarm_test))),
    latency_optuna_test: stat(nums(latencyPairs.map((p) => p.optuna_test))),
  }),
  ...(warm.length && { warm_start_pairs: pairs, warm_start_seconds_saved: saved, warm_goal_met: `${pairs.filter((p) => p.warm_s !== null).length} of ${pairs.length}` }),
  targets: {
    "open-ended ensemble test mean >= 93.0%": openEnsemble ? openEnsemble.mean >= 0.93 : null,
    "every open-ended run >= 92.5% (ensemble)": openEnsemble ? openEnsemble.min >= 0.925 : null,
    "every open-ended run above the Optuna run (ensemble)": openEnsemble && optunaTest ? openEnsemble.min > optunaTest.max : null,
    "every open-ended run above the Optuna run (per seed)": openPerSeed && optunaTest ? openPerSeed.min > optunaTest.max : null,
    "open-ended test per seed above the hand-written script's, mean over the series": openPerSeed && handwrittenTest ? openPerSeed.mean > handwrittenTest.mean : null,
    "warm open run reaches the cold run's best confirmed val in <= 1/3 of the cold run's time, every pair": openPairs.length
      ? openPairs.every((p) => p.warm_reached_cold_best_at_s !== null && p.cold_run_s !== null && p.warm_reached_cold_best_at_s <= p.cold_run_s / 3)
      : null,
    "warm open run ends higher than the cold run (best val), every pair": openPairs.length
      ? openPairs.every((p) => p.warm_best_val !== null && p.cold_best_val !== null && p.warm_best_val > p.cold_best_val)
      : null,
    "a digits run whose past is Fashion-MNIST is no worse than cold beyond the paired 95% interval (test per seed)": digitsPaired ? digitsPaired.ci95[1] >= 0 : null,
    "a run whose past is misleading is no worse than cold beyond the paired 95% interval (test per seed)": csvPaired ? csvPaired.ci95[1] >= 0 : null,
    "a Pareto run's front dominates a larger hypervolume than Optuna's multi-objective study, every pair": paretoPairs.length
      ? paretoPairs.every((p) => p.optuna_hypervolume !== null && p.swarm_hypervolume > p.optuna_hypervolume)
      : null,
    "the same, with every model's latency re-timed alike in one harness (bench/retime.py)": paretoPairs.length && retimed
      ? paretoPairs.every((p) => p.swarm_hypervolume_retimed !== null && p.optuna_hypervolume_retimed !== null && p.swarm_hypervolume_retimed > p.optuna_hypervolume_retimed)
      : null,
    "a latency-constrained goal's best has a higher test accuracy than the constrained Optuna study's, every pair": latencyPairs.length
      ? latencyPairs.every((p) => p.swarm_test !== null && (p.optuna_test === null || p.swarm_test > p.optuna_test))
      : null,
    "README goal confirmed in <= 600 s in every run": readme.length ? readme.every((r) => "goal_met_at_s" in r && r.goal_met_at_s !== null && r.goal_met_at_s <= 600) : null,
  },
  promises_broken: runs.flatMap((r) => ("promises_broken" in r ? (r.promises_broken as string[]).map((b) => `${r.name}: ${b}`) : [])),
};
const git = (args: string[]) => execFileSync("git", args, { encoding: "utf8" }).trim();
const doc = {
  // The commit the runs ran at is the series folder's (bench/search-series.sh names it so); the
  // checkout may have moved on by the time the last run ends.
  commit: /^series-([0-9a-f]{7,})$/.exec(basename(dir))?.[1] ?? git(["rev-parse", "--short", "HEAD"]),
  summarised_at: git(["rev-parse", "--short", "HEAD"]),
  date: new Date().toISOString(),
  machine: machineFingerprint(),
  command: "bash bench/search-series.sh",
  summary,
  runs,
};
writeFileSync(out, `${JSON.stringify(doc, null, 2)}\n`);
console.log(JSON.stringify(summary, null, 2));
console.log(`wrote ${out}`);
