/**
 * The load a shared swarm holds: `research-agent serve --max-runs M` takes N goals posted at once
 * (the dashboard's POST /api/runs, as the Python client and the New run form send them), runs M
 * side by side on its one runner and queues the rest. Measured: every run ends with its report
 * and within its budget, never more than M run at once, how fast the dashboard answers while they
 * do (GET /api/runs and /api/queue, once a second), and that nothing of serve's is left running
 * after it stops.
 *
 *   npx tsx bench/serve-load.ts [--goals 8] [--max-runs 4] [--budget-s 90] [--slots 2] [--out FILE]
 *
 * The goals are digits runs whose target cannot be met ("reach 99.9% validation accuracy"), so
 * each spends its budget. Writes bench/results/serve-load-<commit>.json unless --out says where.
 */
import { spawn } from "node:child_process";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, release, tmpdir, totalmem } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import type { QueueJson, RunSummary, StartRunReply } from "../dashboard/api.js";
import { alive, descendants } from "../test/helpers/runner-process.js";

const { values } = parseArgs({
  options: {
    goals: { type: "string", default: "8" },
    "max-runs": { type: "string", default: "4" },
    "budget-s": { type: "string", default: "90" },
    slots: { type: "string", default: "2" },
    out: { type: "string" },
  },
});
const goals = Number(values.goals);
const maxRuns = Number(values["max-runs"]);
const budgetS = Number(values["budget-s"]);
const commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
const out = values.out ?? `bench/results/serve-load-${commit}.json`;
const FINISHED = new Set(["goal_achieved", "budget_exhausted", "stopped", "failed", "completed", "interrupted"]);
const say = (s: string) => process.stderr.write(`serve-load: ${s}\n`);

const workspace = mkdtempSync(join(tmpdir(), "serve-load-"));
const command = ["serve", "--workspace", workspace, "--port", "0", "--max-runs", String(maxRuns), "--slots", values.slots!];
const serve = spawn("./research-agent", command, { env: { ...process.env, LOG_LEVEL: "warn" }, stdio: ["ignore", "pipe", "pipe"] });
const said: string[] = [];
createInterface({ input: serve.stderr! }).on("line", (l) => said.push(l));
const url = await new Promise<string>((resolve, reject) => {
  createInterface({ input: serve.stdout! }).on("line", (l) => {
    said.push(l);
    const m = /dashboard: (https?:\S+)/.exec(l);
    if (m) resolve(m[1]!);
  });
  serve.once("exit", (code) => reject(new Error(`serve exited ${code}:\n${said.join("\n")}`)));
});
say(`serve up at ${url}, posting ${goals} goals at once`);

/** A request's JSON and how long the dashboard took to answer it. */
async function timed<T>(path: string, init?: RequestInit): Promise<{ ms: number; body: T }> {
  const t0 = performance.now();
  const res = await fetch(new URL(path, url), init);
  const body = (await res.json()) as T;
  return { ms: performance.now() - t0, body };
}

const t0 = Date.now();
const posted = await Promise.all(
  Array.from({ length: goals }, (_, i) =>
    timed<StartRunReply>("/api/runs", {
      method: "POST",
      headers: { "content-type": "application/json", "x-research-user": `load-${i}` },
      body: JSON.stringify({ goal: "digits: reach 99.9% validation accuracy", time_budget: `${budgetS}s`, seed: i }),
    }),
  ),
);
const refused = posted.filter((p) => !p.body.ok);
if (refused.length) throw new Error(`refused: ${JSON.stringify(refused.map((p) => p.body))}`);
const ids = posted.map((p) => (p.body as { run_id: string }).run_id);

const latency: number[] = [];
const loads: number[] = [];
let mostRunning = 0;
let runs: RunSummary[] = [];
const deadline = Date.now() + Math.ceil(goals / maxRuns) * (budgetS + 180) * 1000;
for (;;) {
  const [r, q] = await Promise.all([timed<RunSummary[]>("/api/runs"), timed<QueueJson>("/api/queue")]);
  latency.push(r.ms, q.ms);
  loads.push(loadavg()[0]!);
  mostRunning = Math.max(mostRunning, q.body.running.length);
  runs = r.body.filter((x) => ids.includes(x.run_id));
  if (runs.length === goals && runs.every((x) => FINISHED.has(x.status))) break;
  if (Date.now() > deadline) throw new Error(`not every run ended in time: ${JSON.stringify(runs.map((x) => [x.run_id, x.status]))}`);
  await new Promise((res) => setTimeout(res, 1000));
}
const wallS = (Date.now() - t0) / 1000;
say(`all ${goals} runs ended after ${wallS.toFixed(0)} s`);

const under = descendants(serve.pid!);
serve.kill("SIGTERM");
await new Promise((res) => serve.once("exit", res));
for (let i = 0; i < 30 && alive(under).length; i++) await new Promise((res) => setTimeout(res, 500));

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))]!;
const result = {
  bench: "serve-load",
  commit,
  command: `npx tsx bench/serve-load.ts --goals ${goals} --max-runs ${maxRuns} --budget-s ${budgetS} --slots ${values.slots}`,
  machine: { cpu: cpus()[0]?.model, cores: cpus().length, memory_gib: Math.round(totalmem() / 2 ** 30), kernel: release() },
  load_1min: { mean: loads.reduce((a, b) => a + b, 0) / loads.length, max: Math.max(...loads) },
  goals,
  max_runs: maxRuns,
  budget_s: budgetS,
  wall_s: wallS,
  post_ms: { max: Math.max(...posted.map((p) => p.ms)) },
  most_running_at_once: mostRunning,
  api_ms: { requests: latency.length, p50: pct(latency, 0.5), p95: pct(latency, 0.95), max: Math.max(...latency) },
  runs: runs.map((r) => ({
    run_id: r.run_id,
    status: r.status,
    seconds: r.seconds,
    over_budget_s: Math.max(0, r.seconds - budgetS),
    trials: r.judged,
    best_val: r.best?.val.mean ?? null,
    report: existsSync(join(workspace, "runs", r.run_id, "report.md")),
  })),
  failed_runs: runs.filter((r) => r.status === "failed" || r.status === "interrupted").length,
  processes_left: alive(under).length,
};
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
say(`wrote ${out}: ${result.failed_runs} failed, at most ${mostRunning} at once, API p95 ${result.api_ms.p95.toFixed(0)} ms, ${result.processes_left} processes left`);
rmSync(workspace, { recursive: true, force: true });
