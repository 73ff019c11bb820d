/**
 * The whole swarm under a real Slurm (test/helpers/slurm.ts), as deploy/slurm/research-swarm.sbatch
 * runs it: the launcher, agents, NATS and lineage store in one job, a short digits run's runners
 * as two more (launch --runners slurm, one GPU each as gres), one of which is cancelled
 * (`scancel`) while it trains a trial, as a cluster preempts one. The run must end with every trial
 * judged, its trials trained on both jobs, the trials of the cancelled job trained again exactly
 * once on another runner and no other trial twice (by the runners' own logs), a job submitted again in place of
 * the cancelled one, and no job left in the queue.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { execFileSync, spawn } from "node:child_process";
import { run, type Ran } from "../helpers/run.js";
import { createInterface } from "node:readline";
import { unwrapped } from "../helpers/markdown.js";
import { runnerJobLog, startSlurm, type SlurmCluster } from "../helpers/slurm.js";

let cluster: SlurmCluster;
const root = mkdtempSync(join(tmpdir(), "slurm-runners-test-"));
const workspace = join(root, "workspace");
const jobsDir = join(workspace, "slurm");

const runnerLog = () => runnerJobLog(jobsDir);

/** The swarm job's output: the launch's console. */
let stdout = "";
/** `status --json` while the run ran. */
let statusJson = "";
let cancelled: { job: string; key: string; at: number } | undefined;
let queueAfter: string[] = [];

beforeAll(async () => {
  // Four cores (two real ones, Slurm told four): the swarm's job, two runner jobs and one submitted
  // again. Two GPUs as gres, so the runner jobs' --gres request is real (each gets one,
  // CUDA_VISIBLE_DEVICES); their device files are /dev/null's twins, so the runners train on the CPU.
  cluster = await startSlurm({ gpus: 2, cpus: 4 });
  // LOG_LEVEL info: the jobs inherit it (sbatch exports the submitter's environment), and the runner jobs' logs are what this test reads.
  const env = { ...process.env, ...cluster.env, LOG_LEVEL: "info", EMBEDDER: "hashing" };
  const launchFlags = ["--goal", "digits: reach 99.9% validation accuracy", "--time-budget", "3m", "--slurm-jobs", "2", "--slurm-gres", "gpu:1", "--slurm-cpus", "1", "--slots", "1", "--max-trials", "5", "--last-epochs", "10", "--no-research", "--workspace", workspace];
  const swarmJob = execFileSync("sbatch", ["--parsable", "--cpus-per-task=1", "--mem=4000", "--time=20", `--output=${join(root, "swarm-%j.log")}`, "deploy/slurm/research-swarm.sbatch", ...launchFlags], { env, encoding: "utf8" }).trim();
  const swarmLog = join(root, `swarm-${swarmJob}.log`);
  const t0 = Date.now();
  // The first training of several seeds (on the full split: tens of seconds, where a probe on a
  // slice takes one or two): its job is cancelled under it, as a cluster preempts one.
  // `status` once the run has started: its runner jobs, and the runners that joined over the bus.
  let status: Promise<Ran> | undefined;
  while (cluster.squeue().includes(swarmJob) && Date.now() - t0 < 360_000) {
    if (!status && existsSync(swarmLog) && /run r[\w-]+ started/.test(readFileSync(swarmLog, "utf8"))) {
      status = run("./research-agent", ["status", "--json", "--workspace", workspace], { env, timeout: 120_000 });
    }
    const started = cancelled ? undefined : runnerLog().find((l) => l.training && l.msg === "started" && l.seeds > 1);
    if (started) {
      execFileSync("scancel", [started.job], { env });
      cancelled = { job: started.job, key: started.key, at: Date.now() };
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  stdout = existsSync(swarmLog) ? readFileSync(swarmLog, "utf8") : "";
  statusJson = (await status)?.stdout ?? "";
  queueAfter = cluster.squeue();
}, 400_000);

afterAll(async () => {
  await cluster?.stop();
});

it("says why when no runner job starts within the budget, and leaves none queued: nor any of a launcher killed before it, nor of one interrupted while they wait", async () => {
  const env = { ...process.env, ...cluster.env };
  // A partition that takes jobs but starts none, as a busy cluster's queue does.
  execFileSync("scontrol", ["update", `PartitionName=${cluster.partition}`, "State=DOWN"], { env });
  try {
    // A launcher of this workspace SIGKILLed before: its runner job still queued, its record left.
    const never = join(root, "never");
    mkdirSync(join(never, "slurm"), { recursive: true });
    execFileSync("sbatch", ["--job-name=research-runner-killed", "--wrap", "sleep 600"], { env });
    const dead = spawn("true");
    await new Promise((r) => dead.once("exit", r));
    writeFileSync(join(never, "slurm", "launcher.json"), JSON.stringify({ pid: dead.pid, host: hostname(), name: "research-runner-killed" }));
    expect(cluster.squeue()).toHaveLength(1);
    const { NODE_CHANNEL_FD: _ipc, ...inherited } = env;
    const r = await run("./research-agent", ["launch", "--goal", "digits: reach 99% validation accuracy", "--time-budget", "15s", "--runners", "slurm", "--workspace", never], { env: inherited, timeout: 120_000 });
    // It ends at its budget, with a report that says why it trained nothing.
    expect(r.status).toBe(3);
    const said = /^research-agent: no Slurm runner job came up within 15 s \(0 of 2 up, 2 pending \(PartitionDown\)\); the jobs' logs are in \S+; report: (\S+)$/.exec(r.stderr.trim());
    expect(said, r.stderr).not.toBeNull();
    expect(r.stdout).toMatch(/runner jobs: 0 of 2 up, 2 pending \(PartitionDown\)/);
    const report = unwrapped(readFileSync(said![1]!, "utf8"));
    expect(report).toContain("**Status:** budget_exhausted: no Slurm runner job came up within 15 s");
    expect(report).toContain("Runners: Slurm jobs, 0 of 2 up, 2 pending (PartitionDown) when last recorded.");
    expect(report).toContain("Trials judged: 0");
    expect(cluster.squeue()).toEqual([]);
    // Interrupted while its jobs wait in the queue: they are cancelled, and the launch ends at once with SIGINT's code.
    const waiting = spawn("./research-agent", ["launch", "--goal", "digits: reach 99% validation accuracy", "--time-budget", "5m", "--runners", "slurm", "--workspace", join(root, "interrupted")], { env: inherited, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    waiting.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    waiting.stderr!.on("data", (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((r) => waiting.once("exit", (code) => r(code)));
    for (let i = 0; i < 600 && !/pending \(PartitionDown\)/.test(out); i++) await new Promise((r) => setTimeout(r, 100));
    expect(cluster.squeue()).toHaveLength(2);
    const t0 = Date.now();
    waiting.kill("SIGINT");
    expect(await exited).toBe(130);
    expect(Date.now() - t0).toBeLessThan(60_000);
    expect(err.trim()).toBe("research-agent: stopped while waiting for the runner jobs: SIGINT");
    expect(cluster.squeue()).toEqual([]);
  } finally {
    execFileSync("scontrol", ["update", `PartitionName=${cluster.partition}`, "State=UP"], { env });
  }
}, 120_000);

it("runs as a Slurm job over Slurm runner jobs, loses no trial to a job cancelled mid-training, trains none twice, and leaves no job queued", () => {
  // The console's end says what the run did when a line is missing.
  const end = stdout.slice(-4000);
  expect(stdout, end).toMatch(/submitting 2 runner jobs to Slurm/);
  expect(stdout, end).toMatch(/status: budget_exhausted after 5 trials/);
  expect(stdout, end).toMatch(/runner jobs: 2 of 2 up/);
  // status saw the run's jobs and asked the runners that joined over the bus for their health.
  const seen = JSON.parse(statusJson) as { runs: { runner_jobs?: string }[]; runners: { address: string; health?: { slots: number } }[] };
  expect(seen.runs[0]?.runner_jobs).toMatch(/^\d of 2 up/);
  expect(seen.runners.filter((r) => r.health?.slots === 1).length, statusJson).toBeGreaterThanOrEqual(1);
  expect(cancelled, "a training to cancel a job under").toBeDefined();
  // Every trial proposed, each with a verdict or a failure label: none lost.
  const runId = /run (r[\w-]+) started/.exec(stdout)![1]!;
  const report = JSON.parse(readFileSync(join(workspace, "runs", runId, "report.json"), "utf8")) as { trials: { verdict: string | null; failure_label: string | null }[] };
  const proposed = new Set(stdout.match(/\bt\d{3}(?= proposed)/g));
  expect(report.trials.length, stdout).toBe(proposed.size);
  for (const t of report.trials) expect(t.verdict ?? t.failure_label).toBeTruthy();
  const log = runnerLog();
  // Trainings, not the test confirmation's evaluations of kept weights (started with training false).
  const trainings = log.filter((l) => l.training && l.msg === "started");
  expect(new Set(trainings.map((l) => l.job)).size, "jobs that trained").toBeGreaterThanOrEqual(2);
  for (const key of new Set(trainings.map((l) => l.key))) {
    const started = trainings.filter((l) => l.key === key).sort((a, b) => a.time - b.time);
    const finished = log.filter((l) => l.key === key && l.msg === "finished");
    const story = log.filter((l) => l.key === key).map((l) => `${l.time} job ${l.job} ${l.msg}`).join("\n");
    expect(finished.length, `${key} finished\n${story}`).toBeLessThanOrEqual(1);
    // A training the cancelled job cut short (the one it was cancelled under, and any other it
    // held) again exactly once, on another job; every other training once.
    const cutShort = started.some((l) => l.job === cancelled!.job) && !finished.some((l) => l.job === cancelled!.job);
    expect(started.length, story).toBe(cutShort ? 2 : 1);
    if (cutShort) expect(started[1]!.job, story).not.toBe(cancelled!.job);
    if (key === cancelled!.key) expect(cutShort, story).toBe(true);
  }
  const again = trainings.filter((l) => l.key === cancelled!.key).sort((a, b) => a.time - b.time).at(-1)!;
  console.log(`slurm: ${trainings.length} trainings on jobs ${[...new Set(trainings.map((l) => l.job))].join(", ")}; ${cancelled!.key} cancelled with job ${cancelled!.job}, trained again on job ${again.job} ${((again.time - cancelled!.at) / 1000).toFixed(1)} s later`);
  // The cancelled job was replaced while the run had budget left (the new one may still be pending when the run ends), and nothing stays queued.
  expect(stdout).toMatch(/runner jobs: (1 of 2 up, 1 (starting|pending)[^\n]*|2 of 2 up), 1 ended/);
  expect(queueAfter).toEqual([]);
});

it("gives each goal posted to serve --runners slurm runner jobs of its own: the goal trains on them alone, or says in its report that none came up", async () => {
  const env = { ...process.env, ...cluster.env };
  const { NODE_CHANNEL_FD: _ipc, ...inherited } = env;
  const served = join(root, "served");
  const serve = spawn("./research-agent", ["serve", "--runners", "slurm", "--slurm-jobs", "1", "--slurm-cpus", "1", "--slots", "1", "--port", "0", "--workspace", served], {
    env: { ...inherited, LOG_LEVEL: "info", EMBEDDER: "hashing" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const lines: string[] = [];
  const seen = (pattern: RegExp, timeoutMs: number) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const deadline = Date.now() + timeoutMs;
      const look = () => {
        const m = lines.map((l) => pattern.exec(l)).find(Boolean);
        if (m) return resolve(m);
        if (Date.now() > deadline || serve.exitCode !== null) return reject(new Error(`no line like ${pattern}; serve said:\n${lines.join("\n")}`));
        setTimeout(look, 200);
      };
      look();
    });
  createInterface({ input: serve.stdout! }).on("line", (l) => lines.push(l));
  try {
    const url = (await seen(/\] dashboard: (http\S+)/, 120_000))[1]!;
    const post = async (body: object) => (await (await fetch(new URL("/api/runs", url), { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })).json()) as { run_id: string };
    // Its serve's runner (the dataset's checks) is not one of the run's jobs, and the jobs of a partition that starts none never come up.
    execFileSync("scontrol", ["update", `PartitionName=${cluster.partition}`, "State=DOWN"], { env });
    const never = (await post({ goal: "digits: reach 99% validation accuracy", time_budget: "10s" })).run_id;
    const report = (await seen(new RegExp(`${never} no Slurm runner job came up within 10 s \\(0 of 1 up, 1 pending \\(PartitionDown\\)\\).*; report: (\\S+)`), 60_000))[1]!;
    expect(unwrapped(readFileSync(report, "utf8"))).toContain("Runners: Slurm jobs, 0 of 1 up, 1 pending (PartitionDown) when last recorded.");
    expect(cluster.squeue()).toEqual([]);
    execFileSync("scontrol", ["update", `PartitionName=${cluster.partition}`, "State=UP"], { env });
    const own = (await post({ goal: "digits: reach 99.9% validation accuracy", time_budget: "60s", max_trials: 2, last_epochs: 2, no_research: true })).run_id;
    await seen(new RegExp(`${own} report: `), 240_000);
    const trainings = runnerJobLog(join(served, "slurm", own)).filter((l) => l.msg === "started");
    expect(trainings.length, lines.join("\n")).toBeGreaterThanOrEqual(2);
    expect(new Set(trainings.map((l) => l.run))).toEqual(new Set([own]));
    // serve's own runner trained none of it.
    const local = readFileSync(join(served, "logs", "gpu-runner.log"), "utf8");
    expect(local.split("\n").filter((l) => l.includes('"evaluation started"') && l.includes(own))).toEqual([]);
    const json = JSON.parse(readFileSync(join(served, "runs", own, "report.json"), "utf8")) as { outcome: { runner_jobs: { text: string } | null } };
    expect(json.outcome.runner_jobs?.text).toMatch(/^1 of 1 up/);
    expect(cluster.squeue()).toEqual([]);
  } finally {
    execFileSync("scontrol", ["update", `PartitionName=${cluster.partition}`, "State=UP"], { env });
    serve.kill("SIGTERM");
    await new Promise((r) => (serve.exitCode !== null ? r(null) : serve.once("exit", r)));
  }
  expect(cluster.squeue()).toEqual([]);
}, 420_000);
