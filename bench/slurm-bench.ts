/**
 * Runners as Slurm jobs, on a private real Slurm on this host (test/helpers/slurm.ts: slurmctld,
 * slurmd and munge of its own, the node told 4 CPUs). The whole swarm is submitted as a job
 * (deploy/slurm/research-swarm.sbatch), its runners as jobs it submits, one slot each, all in
 * one sitting:
 * - time from `sbatch` to the run's first trial proposed, trained (its first epoch) and judged;
 * - trials judged per minute over the run's first `--window-s` seconds (or all of it, when it
 *   ended sooner) with 1 runner job and with 3, the same digits goal and seed (the ratio is what a sitting compares: three runners
 *   on two real cores share them);
 * - chaos: with 2 jobs, one `scancel`led while it trains a trial of several seeds: trials lost
 *   (proposed, never judged), trainings the cancelled job cut short and trained again once
 *   elsewhere, trainings started more often than that (duplicates), and the seconds until the
 *   one it was cancelled under trains again.
 *
 *   npx tsx bench/slurm-bench.ts [--budget-s 180] [--window-s 120] [--out FILE]
 *
 * Writes bench/results/slurm-<commit>.json unless --out says where. Run it alone: it is timing.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, release, tmpdir, totalmem } from "node:os";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { runnerJobLog, startSlurm, type SlurmCluster } from "../test/helpers/slurm.js";

const { values } = parseArgs({ options: { "budget-s": { type: "string", default: "180" }, "window-s": { type: "string", default: "120" }, out: { type: "string" } } });
const budgetS = Number(values["budget-s"]);
const windowS = Number(values["window-s"]);
const commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
const out = values.out ?? `bench/results/slurm-${commit}.json`;
const say = (s: string) => process.stderr.write(`slurm-bench: ${s}\n`);
const GOAL = "digits: reach 99.9% validation accuracy";

const loads: number[] = [];
const loadTimer = setInterval(() => loads.push(loadavg()[0]!), 5_000);

/**
 * One launch as a Slurm job: its console, the bench clock's seconds from `sbatch` to its first
 * trial's milestones, and the run's judged trials with their seconds from the run's start.
 */
async function sitting(cluster: SlurmCluster, jobs: number, chaos: boolean) {
  const root = mkdtempSync(join(tmpdir(), "slurm-bench-"));
  const workspace = join(root, "workspace");
  const env = { ...process.env, ...cluster.env, LOG_LEVEL: "info", EMBEDDER: "hashing" };
  const flags = ["--goal", GOAL, "--time-budget", `${budgetS}s`, "--slurm-jobs", String(jobs), "--slurm-cpus", "1", "--slots", "1", "--no-research", "--seed", "0", "--workspace", workspace];
  const t0 = Date.now();
  const id = execFileSync("sbatch", ["--parsable", "--cpus-per-task=1", "--mem=4000", `--time=${Math.ceil(budgetS / 60) + 20}`, `--output=${join(root, "swarm.log")}`, "deploy/slurm/research-swarm.sbatch", ...flags], { env, encoding: "utf8" }).trim();
  const firstAt: Record<string, number> = {};
  const milestones: [string, RegExp][] = [["proposed", /\bt000 proposed/], ["training", /\bt00\d epoch 1\//], ["judged", /\bt00\d (accept|reject) ->/]];
  let cancelled: { job: string; key: string; at: number } | undefined;
  while (cluster.squeue().includes(id)) {
    const console = existsSync(join(root, "swarm.log")) ? readFileSync(join(root, "swarm.log"), "utf8") : "";
    for (const [name, re] of milestones) if (firstAt[name] === undefined && re.test(console)) firstAt[name] = (Date.now() - t0) / 1000;
    const started = chaos && !cancelled ? runnerJobLog(join(workspace, "slurm")).find((l) => l.training && l.msg === "started" && l.seeds > 1) : undefined;
    if (started) {
      execFileSync("scancel", [started.job], { env });
      cancelled = { job: started.job, key: started.key, at: Date.now() };
      say(`cancelled job ${started.job} under ${started.key}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const console = readFileSync(join(root, "swarm.log"), "utf8");
  const runId = /run (r[\w-]+) started/.exec(console)?.[1];
  const report = runId ? (JSON.parse(readFileSync(join(workspace, "runs", runId, "report.json"), "utf8")) as { outcome: { status: string; reason: string; seconds: number }; trials: { trial_id: string; verdict: string | null; failure_label: string | null }[]; timeline?: unknown }) : undefined;
  // A judged trial's time: its console line's seconds since the launcher started, less the run's start line's.
  const at = (line: string) => Number(/^\[\s*(\d+)s\]/.exec(line)?.[1]);
  const lines = console.split("\n");
  const startS = at(lines.find((l) => / run r[\w-]+ started:/.test(l)) ?? "");
  const judgedS = lines.filter((l) => /\bt\d{3} (accept|reject) ->/.test(l)).map((l) => at(l) - startS);
  const log = runnerJobLog(join(workspace, "slurm"));
  const trainings = log.filter((l) => l.training && l.msg === "started");
  const keys = [...new Set(trainings.map((l) => l.key))];
  // A training the cancelled job cut short (it held it and did not finish it) is owed one more start, on another job.
  const cutShort = keys.filter((k) => cancelled && trainings.some((l) => l.key === k && l.job === cancelled.job) && !log.some((l) => l.key === k && l.job === cancelled.job && l.msg === "finished"));
  const duplicates = keys.filter((k) => {
    const s = trainings.filter((l) => l.key === k).sort((a, b) => a.time - b.time);
    return cutShort.includes(k) ? s.length !== 2 || s[1]!.job === cancelled!.job : s.length > 1;
  });
  const again = cancelled && trainings.filter((l) => l.key === cancelled!.key && l.job !== cancelled!.job).sort((a, b) => a.time - b.time)[0];
  const proposed = new Set(console.match(/\bt\d{3}(?= proposed)/g));
  const result = {
    runner_jobs: jobs,
    status: report?.outcome.status ?? null,
    reason: report?.outcome.reason ?? null,
    run_seconds: report?.outcome.seconds ?? null,
    seconds_from_sbatch: firstAt,
    trials_judged: judgedS.length,
    /** Over the run's first `window_s` seconds, or all of it when it ended sooner. */
    trials_judged_per_minute: (judgedS.filter((s) => s <= windowS).length * 60) / Math.min(windowS, report?.outcome.seconds ?? windowS),
    jobs_that_trained: new Set(trainings.map((l) => l.job)).size,
    runner_job_logs: readdirSync(join(workspace, "slurm")).filter((f) => /^runner-\d+\.log$/.test(f)).length,
    ...(chaos && {
      chaos: {
        cancelled_job: cancelled?.job ?? null,
        cancelled_key: cancelled?.key ?? null,
        trained_again_on_job: again ? again.job : null,
        seconds_to_train_again: again && cancelled ? (again.time - cancelled.at) / 1000 : null,
        trials_proposed: proposed.size,
        trials_lost: report ? proposed.size - report.trials.filter((t) => t.verdict ?? t.failure_label).length : null,
        trainings_cut_short: cutShort.length,
        cut_short_trained_again_elsewhere: cutShort.filter((k) => !duplicates.includes(k) && trainings.filter((l) => l.key === k).length === 2).length,
        duplicate_trainings: duplicates.length,
      },
    }),
    jobs_left_in_queue: cluster.squeue().length,
  };
  say(JSON.stringify(result));
  rmSync(root, { recursive: true, force: true });
  return result;
}

const cluster = await startSlurm({ gpus: 0, cpus: 4 });
let sittings;
try {
  sittings = [await sitting(cluster, 1, false), await sitting(cluster, 3, false), await sitting(cluster, 2, true)];
} finally {
  await cluster.stop();
  clearInterval(loadTimer);
}
const per = (s: (typeof sittings)[number]) => s.trials_judged_per_minute;
const result = {
  bench: "slurm",
  commit,
  command: `npx tsx bench/slurm-bench.ts --budget-s ${budgetS} --window-s ${windowS}`,
  machine: { cpu: cpus()[0]?.model, cores: cpus().length, memory_gib: Math.round(totalmem() / 2 ** 30), kernel: release() },
  load_1min: { mean: loads.reduce((a, b) => a + b, 0) / Math.max(1, loads.length), max: Math.max(...loads) },
  goal: GOAL,
  budget_s: budgetS,
  window_s: windowS,
  sittings,
  ratio_3_to_1_jobs: per(sittings[1]!) / per(sittings[0]!),
};
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
say(`wrote ${out}: ${per(sittings[0]!).toFixed(1)} -> ${per(sittings[1]!).toFixed(1)} trials a minute with 1 -> 3 jobs`);
