/**
 * research-agent serve as a team uses it: a real swarm that stays up, goals sent
 * through its dashboard's form in a real Chromium and over the API, each checked
 * as launch checks it, run in order, and a stop that leaves the run going with
 * its report so far and nothing running.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import puppeteer, { type Browser } from "puppeteer-core";
import type { QueueJson, RunSummary, StartRunReply } from "../../dashboard/api.js";
import { installPythonClient, pythonClientTests } from "../helpers/python-client.js";
import { unwrapped } from "../helpers/markdown.js";
import { run } from "../helpers/run.js";

const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
// Without NODE_CHANNEL_FD: the CLI must not pick up vitest's IPC channel variable.
const { NODE_CHANNEL_FD: _ipc, ...inherited } = process.env;

const workspace = mkdtempSync(join(tmpdir(), "serve-test-"));
// The one folder posted goals may read from; a symlink in it leads out.
const dataRoot = mkdtempSync(join(tmpdir(), "serve-data-"));
symlinkSync("/etc", join(dataRoot, "etc"));
let serve: ChildProcess;
let exited: Promise<number | null>;
let url: string;
const lines: string[] = [];
let browser: Browser | undefined;
let clientSite: Promise<string>;
// The form's run has no target and a budget far longer than the test: the client's goal is sure to
// find it going, and the test stops it once the queue is shown (research-agent stop).
const OPEN_GOAL = "digits: maximise validation accuracy";
const GOAL = "digits: reach 90% validation accuracy";

async function post(body: unknown, contentType = "application/json"): Promise<{ status: number; reply: StartRunReply }> {
  const res = await fetch(new URL("/api/runs", url), { method: "POST", headers: { "content-type": contentType }, body: JSON.stringify(body) });
  return { status: res.status, reply: (await res.json()) as StartRunReply };
}

const get = async <T>(path: string): Promise<T> => (await (await fetch(new URL(path, url))).json()) as T;

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; serve said:\n${lines.join("\n")}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

const FINISHED = new Set(["goal_achieved", "budget_exhausted", "stopped", "failed", "completed", "interrupted"]);

beforeAll(async () => {
  clientSite = installPythonClient();
  // Awaited by the client's test; a failure before then must not go unhandled.
  clientSite.catch(() => undefined);
  serve = spawn("./research-agent", ["serve", "--workspace", workspace, "--port", "0", "--max-runs", "1", "--slots", "2", "--data-root", dataRoot], {
    env: { ...inherited, LOG_LEVEL: "warn", EMBEDDER: "hashing" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  exited = new Promise((r) => serve.once("exit", (code) => r(code)));
  createInterface({ input: serve.stderr! }).on("line", (l) => lines.push(`stderr: ${l}`));
  url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: serve.stdout! }).on("line", (l) => {
      lines.push(l);
      // Its own line only: "no dashboard: stopping ..." must not pass for a URL.
      const m = /\] dashboard: (http\S+)/.exec(l);
      if (m) resolve(m[1]!);
    });
    void exited.then((code) => reject(new Error(`serve exited ${code} before its dashboard was up:\n${lines.join("\n")}`)));
    // Our own deadline, under the hook's: a hook's timeout lets the tests run on without a URL
    // and hides what serve said (a CI run on a loaded machine failed that way).
    setTimeout(() => reject(new Error(`serve's dashboard not up after 270 s; serve said:\n${lines.join("\n")}`)), 270_000).unref();
  });
}, 300_000);

afterAll(async () => {
  await browser?.close();
  if (serve.exitCode === null) serve.kill("SIGKILL");
});

describe("research-agent serve", () => {
  it("answers a goal it cannot run with launch's own line, and takes nothing", async () => {
    const cases: [unknown, string][] = [
      [{ goal: "make it good please" }, "cannot understand the goal"],
      [{ goal: "digits: 95% accuracy", time_budget: "soon" }, '--time-budget must be a duration such as 90s, 20m or 2h, got "soon"'],
      [{ goal: "digits: 95% accuracy", colour: "red" }, "colour"],
      [{ goal: "digits: 95% accuracy", from: join(dataRoot, "nowhere.py"), class: "Net" }, `no such file: ${join(dataRoot, "nowhere.py")}`],
      // Every path a goal names lies under --data-root once symlinks and .. are resolved; nothing outside is read.
      [{ goal: `csv:${join(workspace, "people.csv")} target=bought: maximise accuracy` }, `the goal's data ${join(workspace, "people.csv")} is outside the folders this swarm reads`],
      [{ goal: `csv:${join(dataRoot, "etc", "passwd")} target=x: maximise accuracy` }, `the goal's data ${join(dataRoot, "etc", "passwd")} is outside the folders this swarm reads`],
      // As many ".." as dataRoot is deep (join would fold them away): /etc/hostname, wherever TMPDIR is.
      [{ goal: "digits: 95% accuracy", from: `${dataRoot}${"/..".repeat(dataRoot.split("/").length)}/etc/hostname`, class: "Net" }, "--from /etc/hostname is outside the folders this swarm reads"],
      [{ goal: "digits: 95% accuracy", from: join(dataRoot, "etc", "hostname"), class: "Net" }, `--from ${join(dataRoot, "etc", "hostname")} is outside the folders this swarm reads`],
      // The space is the document itself, checked as launch --space checks it; a path is not read.
      [{ goal: "digits: 95% accuracy", space: { lr: { low: 0.1, high: 0.01 } } }, "--space: lr low 0.1 is above high 0.01"],
      [{ goal: "digits: 95% accuracy", space: "/etc/space.yaml" }, "--space: expected a mapping of dimensions"],
      [{ goal: "digits: 95% accuracy", space: "{lr: [1" }, "--space: "],
      // Runner jobs of a goal's own need a serve whose bus the cluster's nodes reach (serve --runners slurm).
      [{ goal: "digits: 95% accuracy", runners: "slurm", slurm_jobs: 2 }, "runners: this serve takes no goal with runner jobs of its own; start it with --runners slurm"],
      [{ goal: "digits: 95% accuracy", slurm_gres: "gpu:1" }, "slurm_gres: this serve takes no goal with runner jobs of its own"],
    ];
    for (const [body, message] of cases) {
      const { status, reply } = await post(body);
      expect(status, JSON.stringify(body)).toBe(400);
      expect(reply.ok).toBe(false);
      expect(!reply.ok && reply.error, JSON.stringify(body)).toContain(message);
    }
    const res = await fetch(new URL("/api/runs", url), { method: "POST", headers: { "content-type": "text/plain" }, body: "digits" });
    expect(res.status).toBe(415);
    expect(await get<QueueJson>("/api/queue")).toEqual({ accepting: true, max_runs: 1, running: [], queued: [] });
    expect(await get<RunSummary[]>("/api/runs")).toEqual([]);
  });

  it("starts a goal from the dashboard's form, queues the Python client's behind it, and runs both to their end", async () => {
    browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
    const page = await browser.newPage();
    await page.goto(url, { waitUntil: "domcontentloaded" });
    await page.waitForSelector('[data-testid="new-run-goal"]');
    await page.type('[data-testid="new-run-goal"]', OPEN_GOAL);
    await page.click('[data-testid="new-run"] summary');
    // Never ended by its clock here: a 30-s run ended in 8 s, before the client's test (a Python
    // start-up) asked to queue behind it (CI, 2026-12-03), and a 60-s one trained its whole minute.
    await page.type('[data-testid="new-run-time_budget"]', "10m");
    // A space typed into the form as YAML, checked as launch --space checks it.
    await page.type('[data-testid="new-run-space"]', "{label_smoothing: default}");
    await page.click('[data-testid="new-run-submit"]');
    const replyText = await page.waitForSelector('[data-testid="new-run-reply"]').then((el) => el!.evaluate((e) => e.textContent ?? ""));
    const first = /^(r[\w-]+) started$/.exec(replyText.trim())?.[1];
    expect(first, replyText).toBeDefined();

    // The client's start_run and queue (clients/python/tests/test_serve.py): its goal waits behind the form's.
    const ran = await pythonClientTests(await clientSite, "test_serve.py", { RESEARCH_UI_URL: url, RESEARCH_UI_TOKEN: "", RESEARCH_SWARM_TEST_RUN: first!, RESEARCH_SWARM_TEST_GOAL: GOAL });
    expect(ran.status, ran.stdout + ran.stderr).toBe(0);
    expect(ran.stdout).not.toMatch(/skipped/);
    // The client's test saw its goal queued behind the first, which still goes.
    const queue = await get<QueueJson>("/api/queue");
    expect(queue.running.map((r) => r.run_id)).toEqual([first]);
    expect(queue.queued.map((r) => [r.goal, r.who])).toEqual([[GOAL, "ui:pytest"]]);
    const second = queue.queued[0]!.run_id;
    // The page lists the waiting run while the first one goes.
    await page.reload({ waitUntil: "domcontentloaded" });
    await page.waitForSelector(`[data-testid="queued-row"]`, { timeout: 30_000 });

    // Stopped as a person stops it: the first ends with its report, and the second starts.
    const stopped = await run("./research-agent", ["stop", first!, "--reason", "the queue is shown", "--workspace", workspace], { env: { ...inherited, LOG_LEVEL: "warn" }, timeout: 60_000 });
    expect(stopped.status, stopped.stderr).toBe(0);
    const runs = await until(
      "both runs to end",
      async () => {
        const all = await get<RunSummary[]>("/api/runs");
        return all.length === 2 && all.every((r) => FINISHED.has(r.status)) ? all : undefined;
      },
      200_000,
    );
    const byId = new Map(runs.map((r) => [r.run_id, r]));
    // In the order they came: the second started once the first had ended.
    expect(byId.get(second)!.started_at).toBeGreaterThanOrEqual(byId.get(first!)!.started_at + byId.get(first!)!.seconds * 1000 - 1000);
    expect(byId.get(first!)!.status).toBe("stopped");
    expect(byId.get(first!)!.time_budget_s).toBe(600);
    expect(byId.get(first!)!.goal).toContain("maximise");
    expect(byId.get(second)!.time_budget_s).toBe(45);
    // The lineage store writes each report once it has stored the run's end.
    for (const id of [first!, second]) await until(`${id}'s report`, async () => existsSync(join(workspace, "runs", id, "report.md")) || undefined, 60_000);
    // Each goal came with a space: the client's as a dict (start_run(space=...)), the form's as YAML text.
    expect(unwrapped(readFileSync(join(workspace, "runs", second, "report.md"), "utf8"))).toContain("Narrowed with --space: optimizer one of adam, adamw.");
    expect(unwrapped(readFileSync(join(workspace, "runs", first!, "report.md"), "utf8"))).toContain("Narrowed with --space: label_smoothing fixed at 0.");
    // serve lets a run go once its report is written, the moment the store has stored its end.
    await until("the queue to empty", async () => ((await get<QueueJson>("/api/queue")).running.length === 0 ? true : undefined), 60_000);
    expect(await get<QueueJson>("/api/queue")).toMatchObject({ running: [], queued: [] });
  }, 300_000);

  it("stops on SIGTERM: the run going is interrupted with its report so far, and nothing is left running", async () => {
    const { reply } = await post({ goal: "digits: reach 99.9% validation accuracy", time_budget: "5m" });
    const third = reply.ok ? reply.run_id : "";
    expect(third).not.toBe("");
    await until("a trial of the third run", async () => ((await get<RunSummary[]>("/api/runs")).find((r) => r.run_id === third)?.trials ?? 0) > 0 || undefined, 120_000);
    serve.kill("SIGTERM");
    expect(await exited).toBe(0);
    const report = unwrapped(readFileSync(join(workspace, "runs", third, "report.md"), "utf8"));
    expect(report).toMatch(/interrupted/i);
    expect(lines.join("\n")).toContain(`launch --resume ${third}`);
    const left = readdirSync("/proc")
      .filter((p) => /^\d+$/.test(p))
      .filter((p) => {
        try {
          return readFileSync(`/proc/${p}/cmdline`, "utf8").includes(workspace);
        } catch {
          return false;
        }
      });
    expect(left).toEqual([]);
  }, 180_000);
});
