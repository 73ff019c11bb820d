/**
 * The dashboard in a real browser: headless Chromium (puppeteer-core) on the
 * real server, first following a real swarm while a small run on digits goes
 * on, then reading the finished run from disk with no swarm at all. The
 * Python client's tests (clients/python/tests) run against the same run at
 * both moments.
 *
 * With SCREENSHOTS_DIR set (npm run screenshots: docs/img) it also saves the
 * pages docs/DASHBOARD.md shows.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { connectBus } from "../../bus/index.js";
import { parseGoal } from "../../core/goal.js";
import { createLogger } from "../../core/logger.js";
import { buildWeb } from "../../dashboard/build.js";
import { startDashboard, type Dashboard, type WebAssets } from "../../dashboard/server.js";
import type { RunDetail } from "../../dashboard/api.js";
import { runGoal, startSwarm, workspaceSecrets, type RunOutcome, type Swarm } from "../../deploy/swarm.js";
import { runSettings } from "../../deploy/settings.js";
import { installPythonClient, pythonClientTests } from "../helpers/python-client.js";

const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const SHOTS = process.env.SCREENSHOTS_DIR;

const logger = createLogger("dashboard-test");
logger.level = "warn";

let workspace: string;
let swarm: Swarm | undefined;
let dashboard: Dashboard | undefined;
/** While the run goes on: a second dashboard beyond loopback, with a token, for the Python client. */
let clientDashboard: Dashboard | undefined;
const CLIENT_TOKEN = "a-token-for-the-python-client";
/** Where pip installed the Python client (installed while the swarm starts). */
let clientSite: Promise<string>;
let browser: Browser | undefined;
let page: Page;
let assets: WebAssets;
let run: Promise<RunOutcome>;
const following = new AbortController();

const sel = (testid: string) => `[data-testid="${testid}"]`;

async function open(dash: Dashboard, path: string): Promise<void> {
  // The event stream keeps the network busy: wait for the DOM, then for what each test needs.
  await page.goto(new URL(path, dash.url).href, { waitUntil: "domcontentloaded" });
}

async function shot(name: string): Promise<void> {
  if (!SHOTS) return;
  // Let charts finish their entry animation.
  await new Promise((r) => setTimeout(r, 600));
  await page.screenshot({ path: `${join(SHOTS, name)}.png`, fullPage: true });
}

/** In the page: each trial row as id:status:progress, to see the table change in place. */
const ROWS = `[...document.querySelectorAll('[data-testid="trial-row"]')]
  .map((r) => r.getAttribute("data-trial") + ":" + r.getAttribute("data-status") + ":" + (r.querySelector('[data-testid="progress-cell"]')?.textContent ?? ""))
  .join("|")`;
const rowsSignature = () => page.evaluate(ROWS) as Promise<string>;

const apiJson = <T>(path: string) => page.evaluate(`fetch(${JSON.stringify(path)}).then((r) => r.json())`) as Promise<T>;

beforeAll(async () => {
  clientSite = installPythonClient();
  // Awaited by the client's tests; a failure before then must not go unhandled.
  clientSite.catch(() => undefined);
  workspace = mkdtempSync(join(tmpdir(), "dashboard-test-"));
  if (SHOTS) mkdirSync(SHOTS, { recursive: true });
  assets = await buildWeb();
  swarm = await startSwarm({ workspace, slots: 2, logger });
  const natsUrl = swarm.natsUrl;
  const connect = (name: string) => () => connectBus({ servers: natsUrl.split(","), name, ensureStream: false, logger, secrets: workspaceSecrets(workspace) });
  dashboard = await startDashboard({ workspace, assets, logger, connect: connect("dashboard-test") });
  clientDashboard = await startDashboard({ workspace, assets, logger, host: "0.0.0.0", token: CLIENT_TOKEN, connect: connect("python-client-test") });
  browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-dev-shm-usage"], defaultViewport: { width: 1280, height: 900 } });
  page = await browser.newPage();
  const parsed = parseGoal("digits: reach 99.5% validation accuracy in 10 minutes");
  if (!parsed.ok) throw new Error(parsed.error);
  run = runGoal(swarm, {
    start: { goal: parsed.goal, settings: runSettings(parsed.goal, { maxTrials: 4, seeds: 2, parallel: 2, epochs: 3, trialTimeBudgetS: 120 }, workspace) },
    log: logger,
    signal: following.signal,
  });
  // Awaited after the live tests; a failure before then must not go unhandled.
  run.catch(() => undefined);
}, 300_000);

afterAll(async () => {
  following.abort();
  // Each closes on its own: one failing must not leave the others running.
  await browser?.close().catch(() => undefined);
  await dashboard?.close().catch(() => undefined);
  await clientDashboard?.close().catch(() => undefined);
  await swarm?.stop().catch(() => undefined);
  if (workspace) rmSync(workspace, { recursive: true, force: true });
  const site = await clientSite?.catch(() => undefined);
  if (site) rmSync(dirname(site), { recursive: true, force: true });
});

let runId = "";

describe("while a run goes on", () => {
  it("lists the run as live", async () => {
    await open(dashboard!, "/runs");
    const row = await page.waitForSelector(`${sel("run-row")} .live-dot`, { timeout: 90_000 });
    expect(row).not.toBeNull();
    runId = (await page.$eval(sel("run-row"), (r) => r.getAttribute("data-run"))) ?? "";
    expect(runId).toMatch(/^r/);
    expect(await page.$eval(sel("status-badge"), (b) => b.textContent)).toMatch(/running/);
  });

  it("serves the Python client the live run with its token: events, a pause and a resume, refusals", async () => {
    expect(runId).toMatch(/^r/);
    const port = new URL(clientDashboard!.url).port;
    const ran = await pythonClientTests(await clientSite, "test_live.py", { RESEARCH_UI_URL: `http://127.0.0.1:${port}/`, RESEARCH_UI_TOKEN: CLIENT_TOKEN, RESEARCH_SWARM_TEST_RUN: runId });
    expect(ran.status, ran.stdout + ran.stderr).toBe(0);
    expect(ran.stdout).not.toMatch(/skipped/);
    // The page's own dashboard has the resume too before the page pauses the run.
    const paused = async () => ((await (await fetch(new URL(`/api/runs/${runId}`, dashboard!.url))).json()) as RunDetail).paused;
    for (const deadline = Date.now() + 10_000; await paused(); ) {
      if (Date.now() > deadline) throw new Error("the page's dashboard never saw the resume");
      await new Promise((r) => setTimeout(r, 100));
    }
  });

  it("opens the run page from its link and updates it in place", async () => {
    await page.click(`${sel("run-row")} a`);
    await page.waitForSelector(sel("trial-row"), { timeout: 120_000 });
    await page.waitForSelector(`${sel("lineage-tree")} svg`);
    expect(await page.$(sel("btn-stop"))).not.toBeNull();
    // Set on this document only: a reload would lose it.
    await page.evaluate("window.__sameDocument = true");
    const before = await rowsSignature();

    // Pause and resume from the page: the swarm takes both, and the page follows.
    await page.click(sel("btn-pause"));
    await page.waitForFunction(`document.querySelector('[data-testid="intervention-reply"]')?.textContent.startsWith("paused")`, { timeout: 10_000 });
    await page.waitForSelector(sel("btn-resume"), { timeout: 10_000 });
    expect(await page.$eval(sel("status-badge"), (b) => b.textContent)).toMatch(/paused/);
    await page.click(sel("btn-resume"));
    await page.waitForFunction(`document.querySelector('[data-testid="intervention-reply"]')?.textContent.startsWith("resumed")`, { timeout: 10_000 });
    await page.waitForSelector(sel("btn-pause"), { timeout: 10_000 });

    await page.waitForFunction(`(${ROWS}) !== ${JSON.stringify(before)}`, { timeout: 180_000, polling: 250 });
    expect(await page.evaluate("window.__sameDocument")).toBe(true);
    expect(await rowsSignature()).not.toBe(before);
    await shot("run-live");
  });
});

describe("after the run, with no swarm", () => {
  let outcome: RunOutcome;

  beforeAll(async () => {
    outcome = await run;
    await clientDashboard?.close();
    clientDashboard = undefined;
    await dashboard?.close();
    dashboard = undefined;
    await swarm?.stop();
    swarm = undefined;
    dashboard = await startDashboard({ workspace, assets, logger });
  }, 300_000);

  it("lists the finished run", async () => {
    expect(outcome.runId).toBe(runId);
    await open(dashboard!, "/");
    await page.waitForSelector(sel("run-row"));
    expect(await page.$eval(sel("run-row"), (r) => r.getAttribute("data-run"))).toBe(runId);
    expect(await page.$(`${sel("run-row")} .live-dot`)).toBeNull();
    expect(await page.$eval(sel("status-badge"), (b) => b.textContent)).not.toMatch(/running/);
    await shot("runs");
  });

  it("shows the run with its trials and lineage tree", async () => {
    await open(dashboard!, `/runs/${runId}`);
    await page.waitForSelector(sel("trial-row"));
    const detail = await apiJson<RunDetail>(`/api/runs/${runId}`);
    expect(detail.trials_table.length).toBeGreaterThanOrEqual(2);
    expect(await page.$$(sel("trial-row"))).toHaveLength(detail.trials_table.length);
    // ECharts drew the tree: a node label for every trial.
    await page.waitForSelector(`${sel("lineage-tree")} svg text`);
    const labels = await page.$$eval(`${sel("lineage-tree")} svg text`, (ts) => ts.map((t) => t.textContent ?? ""));
    for (const t of detail.trials_table) expect(labels).toContain(t.trial_id.slice(t.trial_id.lastIndexOf("-") + 1));
    // A finished run takes no interventions. It had the Python client's pause and resume, then the page's.
    expect(await page.$(sel("run-controls"))).toBeNull();
    expect(await page.$$(`${sel("interventions-table")} tbody tr`)).toHaveLength(4);
    await shot("run");
  });

  it("opens a trial from its row, with curves and a confusion matrix", async () => {
    const best = outcome.finished.bestTrialId;
    await page.click(`${sel("trial-row")}[data-trial="${best}"] td:nth-child(4)`);
    await page.waitForSelector(sel("trial-hypothesis"));
    expect(new URL(page.url()).pathname).toBe(`/runs/${runId}/trials/${best}`);
    expect((await page.$eval(sel("trial-hypothesis"), (h) => h.textContent ?? "")).length).toBeGreaterThan(0);
    await page.waitForSelector(`${sel("curves-accuracy")} svg`);
    await page.waitForSelector(`${sel("confusion-matrix")} svg`);
    expect(await page.$$(`${sel("per-class")} tbody tr`)).toHaveLength(10);
    await shot("trial");
  });

  it("compares two trials", async () => {
    const best = outcome.finished.bestTrialId;
    const other = outcome.state.order.find((id) => id !== best)!;
    await page.select(sel("compare-picker"), other);
    await page.waitForSelector(`${sel("overlay-accuracy")} svg`);
    expect(new URL(page.url()).pathname).toBe(`/runs/${runId}/compare/${best}/${other}`);
    expect(await page.$eval(sel("compare-diff"), (d) => d.textContent ?? "")).toContain("model_config");
    await shot("compare");
  });

  it("finds trials like a description", async () => {
    await open(dashboard!, `/search?q=${encodeURIComponent("vgg cnn with label smoothing")}`);
    await page.waitForSelector(`${sel("search-results")} tbody tr`, { timeout: 60_000 });
    const links = await page.$$eval(`${sel("search-results")} a`, (as) => as.map((a) => a.getAttribute("href") ?? ""));
    expect(links.some((h) => h.startsWith(`/runs/${runId}/trials/`))).toBe(true);
  });

  it("serves the Python client the finished run: trials, the best, a lineage, search, errors", async () => {
    // The page's dashboard, on loopback: no token. Its search has the embedder warm by now.
    const ran = await pythonClientTests(await clientSite, "test_finished.py", { RESEARCH_UI_URL: dashboard!.url, RESEARCH_UI_TOKEN: "", RESEARCH_SWARM_TEST_RUN: runId });
    expect(ran.status, ran.stdout + ran.stderr).toBe(0);
    expect(ran.stdout).not.toMatch(/skipped/);
  });

  it("gives the Python client the same finished run offline, from the workspace on disk", async () => {
    const env = { RESEARCH_UI_URL: dashboard!.url, RESEARCH_UI_TOKEN: "", RESEARCH_SWARM_TEST_RUN: runId, RESEARCH_SWARM_WORKSPACE: workspace };
    const ran = await pythonClientTests(await clientSite, "test_workspace.py", env);
    expect(ran.status, ran.stdout + ran.stderr).toBe(0);
    expect(ran.stdout).toMatch(/2 passed/);
  });
});
