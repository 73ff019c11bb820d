/**
 * The dashboard in a real browser: headless Chromium (puppeteer-core) on the
 * real server, first following a real swarm while a small run on digits goes
 * on, then reading the finished run from disk with no swarm at all.
 *
 * With SCREENSHOTS_DIR set (npm run screenshots: docs/img) it also saves the
 * pages docs/DASHBOARD.md shows.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { connectBus } from "../../bus/index.js";
import { parseGoal } from "../../core/goal.js";
import { createLogger } from "../../core/logger.js";
import { buildWeb } from "../../dashboard/build.js";
import { startDashboard, type Dashboard, type WebAssets } from "../../dashboard/server.js";
import type { RunDetail } from "../../dashboard/api.js";
import { runGoal, startSwarm, workspaceSecrets, type RunOutcome, type Swarm } from "../../deploy/swarm.js";
import { runSettings } from "../../deploy/settings.js";

const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const SHOTS = process.env.SCREENSHOTS_DIR;

const logger = createLogger("dashboard-test");
logger.level = "warn";

let workspace: string;
let swarm: Swarm | undefined;
let dashboard: Dashboard | undefined;
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
  workspace = mkdtempSync(join(tmpdir(), "dashboard-test-"));
  if (SHOTS) mkdirSync(SHOTS, { recursive: true });
  assets = await buildWeb();
  swarm = await startSwarm({ workspace, slots: 2, logger });
  const natsUrl = swarm.natsUrl;
  dashboard = await startDashboard({
    workspace,
    assets,
    logger,
    connect: () => connectBus({ servers: natsUrl.split(","), name: "dashboard-test", ensureStream: false, logger, secrets: workspaceSecrets(workspace) }),
  });
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
  await swarm?.stop().catch(() => undefined);
  if (workspace) rmSync(workspace, { recursive: true, force: true });
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
    // A finished run takes no interventions.
    expect(await page.$(sel("run-controls"))).toBeNull();
    expect(await page.$$(`${sel("interventions-table")} tbody tr`)).toHaveLength(2);
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
});
