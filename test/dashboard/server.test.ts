/**
 * The dashboard over HTTP against a real (LanceDB) lineage and no swarm:
 * every route, its errors, the app's pages, and the token beyond loopback.
 */
import { request } from "node:http";
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as lancedb from "@lancedb/lancedb";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDashboard, type Dashboard } from "../../dashboard/server.js";
import { HashingEmbedder } from "../../core/embedder.js";
import { runsSchema } from "../../lineage-store/schema.js";
import { LineageStore } from "../../lineage-store/store.js";
import type { RunDetail, RunSummary, SearchHit, TrialDetail } from "../../dashboard/api.js";
import { runEvents, TRIALS } from "../lineage-store/fixtures.js";
import { testLogger } from "../bus/helpers.js";
import { ASSETS, workspaceWith } from "./helpers.js";

const DONE = "r-done";
const HALF = "r-half";

describe("dashboard server without a swarm", () => {
  let workspace: string;
  let dash: Dashboard;
  const get = (path: string, init?: RequestInit) => fetch(new URL(path, dash.url), init);
  const json = async <T>(path: string): Promise<T> => {
    const res = await get(path);
    expect(res.status, `${path}: ${res.status}`).toBe(200);
    return (await res.json()) as T;
  };

  beforeAll(async () => {
    const half = runEvents(HALF, TRIALS.slice(0, 4), 1_700_000_100_000).filter((e) => e.body.case !== "runFinished");
    workspace = await workspaceWith({ [DONE]: runEvents(DONE), [HALF]: half });
    dash = await startDashboard({ workspace, logger: testLogger, assets: ASSETS });
  });
  afterAll(async () => {
    await dash?.close();
    rmSync(workspace, { recursive: true, force: true });
  });

  it("binds loopback on a free port with no token", () => {
    expect(dash.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
  });

  it("lists the stored runs, newest first; one never finished off a swarm is interrupted", async () => {
    const runs = await json<RunSummary[]>("/api/runs");
    expect(runs.map((r) => [r.run_id, r.status, r.live, r.trials])).toEqual([
      [HALF, "interrupted", false, 4],
      [DONE, "budget_exhausted", false, 12],
    ]);
  });

  it("details a run and a trial (by full or short id); 404 for what is not there", async () => {
    const d = await json<RunDetail>(`/api/runs/${DONE}`);
    expect(d.trials_table).toHaveLength(12);
    expect(d.failures).toEqual({ oom: 1, shape_error: 2 });
    expect(d.report_path).toBe(`/runs/${DONE}/report.md`);
    expect(d.best?.trial_id).toBe(`${DONE}-t009`);
    const short = await json<TrialDetail>(`/api/runs/${DONE}/trials/t001`);
    const full = await json<TrialDetail>(`/api/runs/${DONE}/trials/${DONE}-t001`);
    expect(short).toEqual(full);
    expect(short.row.trial_id).toBe(`${DONE}-t001`);
    expect(short.config_diff).toContain(`--- ${DONE}-t000/config.json`);

    for (const [path, error] of [
      ["/api/runs/r-nope", "no run r-nope in this workspace"],
      [`/api/runs/${DONE}/trials/t999`, `no trial t999 in run ${DONE}`],
      ["/api/runs/r-nope/trials/t001", "no run r-nope in this workspace"],
      ["/api/nope", "no route /api/nope (see docs/DASHBOARD.md)"],
    ]) {
      const res = await get(path!);
      expect(res.status, path).toBe(404);
      expect(await res.json()).toEqual({ error: error });
    }
  });

  it("searches the lineage by meaning; 400 for a missing text or a bad k", async () => {
    const hits = await json<SearchHit[]>(`/api/search?q=${encodeURIComponent("squeeze excitation blocks")}&k=3`);
    expect(hits).toHaveLength(3);
    expect(hits[0]).toMatchObject({ hypothesis: expect.stringContaining("squeeze"), failure_label: null });
    expect(typeof hits[0]!.distance).toBe("number");
    const inRun = await json<SearchHit[]>(`/api/search?q=conv&run=${HALF}`);
    expect(inRun.length).toBeGreaterThan(0);
    expect(new Set(inRun.map((h) => h.run_id))).toEqual(new Set([HALF]));
    const failed = (await json<SearchHit[]>(`/api/search?q=${encodeURIComponent("very deep residual network")}&k=1`))[0]!;
    expect(failed).toMatchObject({ failure_label: "oom", val_accuracy: null });

    for (const q of ["/api/search", "/api/search?q=%20", "/api/search?q=x&k=0", "/api/search?q=x&k=two"]) {
      const res = await get(q);
      expect(res.status, q).toBe(400);
      expect(((await res.json()) as { error: string }).error).toMatch(/search needs q|k must be/);
    }
  });

  it("refuses an intervention without a swarm (409), a body that is not JSON (415, 400), an unknown run (404)", async () => {
    const post = (run: string, body: string, type = "application/json") => get(`/api/runs/${run}/interventions`, { method: "POST", body, headers: { "content-type": type } });
    const res = await post(HALF, JSON.stringify({ kind: "pause" }));
    expect(res.status).toBe(409);
    expect(await res.json()).toEqual({ ok: false, error: expect.stringMatching(/^no swarm is running for this workspace: /) });
    expect((await post(HALF, "kind=pause", "application/x-www-form-urlencoded")).status).toBe(415);
    expect((await post(HALF, "{nope")).status).toBe(400);
    expect((await post("r-nope", "{}")).status).toBe(404);
    expect((await get(`/api/runs/${HALF}`, { method: "DELETE" })).status).toBe(405);
  });

  it("serves the app's page on its routes, its assets, and 404 elsewhere", async () => {
    for (const path of ["/", "/runs", `/runs/${DONE}`, `/runs/${DONE}/trials/t001`, `/runs/${DONE}/compare/t001/t002`, "/search"]) {
      const res = await get(path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^text\/html/);
      expect(await res.text()).toBe(ASSETS.html);
    }
    const js = await get("/assets/app.js");
    expect(js.headers.get("content-type")).toMatch(/^text\/javascript/);
    expect(await js.text()).toBe("console.log('app')");
    // Gzipped for a client that takes it (fetch does, and unpacks it), as built for one that does not.
    expect(js.headers.get("content-encoding")).toBe("gzip");
    const plain = await get("/assets/app.js", { headers: { "accept-encoding": "identity" } });
    expect(plain.headers.get("content-encoding")).toBeNull();
    expect(await plain.text()).toBe("console.log('app')");
    for (const path of ["/assets/nope.js", "/assets/constructor", "/runs/a/b", "/favicon.ico"]) expect((await get(path)).status, path).toBe(404);
  });

  it("streams live messages (none without a swarm)", async () => {
    const ac = new AbortController();
    const res = await get("/api/events", { signal: ac.signal });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const first = await res.body!.getReader().read();
    expect(new TextDecoder().decode(first.value)).toBe(": connected\n\n");
    ac.abort();
  });

  it("answers fuzzed bodies, paths and query strings with a JSON refusal, never a 5xx, and writes nothing", async () => {
    const files = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? files(join(dir, d.name)) : [`${join(dir, d.name)} ${statSync(join(dir, d.name)).size}`]));
    const before = files(workspace).sort();
    // The same inputs on every run: a failure is a bug to fix, never a run's luck.
    const seed = 20261128;
    const json = fc.json({ maxDepth: 3 });
    // Not "events": that route is a stream that stays open (its own test reads it).
    const segment = fc.oneof(fc.constantFrom("runs", DONE, HALF, "trials", "t001", "interventions", "search", "queue", "..", "%2e%2e", "%00"), fc.string({ maxLength: 12 }));
    let tried = 0;
    const answer = async (path: string, init?: RequestInit) => {
      tried++;
      const res = await fetch(new URL(path, dash.url), init);
      expect(res.status, `${init?.method ?? "GET"} ${path}`).toBeLessThan(500);
      const type = res.headers.get("content-type") ?? "";
      // The API answers JSON; anything else is the app's page or an asset.
      if (path.startsWith("/api/") && type.includes("json")) expect(await res.json()).toBeDefined();
      else await res.arrayBuffer();
    };
    const post = (path: string, body: string, type = "application/json") => answer(path, { method: "POST", headers: { "content-type": type }, body });
    await fc.assert(fc.asyncProperty(json, (b) => post("/api/runs", b)), { numRuns: 150, seed });
    await fc.assert(fc.asyncProperty(json, (b) => post(`/api/runs/${DONE}/interventions`, b)), { numRuns: 150, seed });
    await fc.assert(fc.asyncProperty(fc.string({ maxLength: 200 }), fc.constantFrom("application/json", "text/plain", ""), (b, t) => post(`/api/runs/${HALF}/interventions`, b, t)), { numRuns: 150, seed });
    const path = fc.array(segment, { minLength: 1, maxLength: 5 }).filter((parts) => parts[0] !== "events");
    await fc.assert(fc.asyncProperty(path, (parts) => answer(`/api/${parts.map(encodeURIComponent).join("/")}`)), { numRuns: 150, seed });
    await fc.assert(fc.asyncProperty(fc.string({ maxLength: 40 }), fc.string({ maxLength: 6 }), fc.constantFrom(DONE, "", "x"), (q, k, run) => answer(`/api/search?q=${encodeURIComponent(q)}&k=${encodeURIComponent(k)}&run=${run}`)), { numRuns: 100, seed });
    expect(tried).toBe(700);
    expect((await get("/api/runs")).status).toBe(200);
    expect(files(workspace).sort()).toEqual(before);
  }, 120_000);

  it("answers only requests addressed to localhost when it has no token (DNS rebinding)", async () => {
    const { port } = new URL(dash.url);
    const status = await new Promise<number>((resolve, reject) => {
      request({ host: "127.0.0.1", port, path: "/api/runs", headers: { host: `evil.example:${port}` } }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      }).on("error", reject).end();
    });
    expect(status).toBe(403);
  });
});

describe("dashboard server beyond loopback", () => {
  let workspace: string;
  let dash: Dashboard;
  const TOKEN = "a-token-of-enough-length";

  beforeAll(async () => {
    workspace = await workspaceWith({ [DONE]: runEvents(DONE) });
    dash = await startDashboard({ workspace, host: "0.0.0.0", token: TOKEN, logger: testLogger, assets: ASSETS });
  });
  afterAll(async () => {
    await dash?.close();
    rmSync(workspace, { recursive: true, force: true });
  });

  it("wants the token: as a bearer, or once in the URL, which sets an HttpOnly cookie", async () => {
    expect(dash.url).toMatch(new RegExp(`^http://.+:\\d+/\\?token=${TOKEN}$`));
    const base = `http://127.0.0.1:${new URL(dash.url).port}`;
    const none = await fetch(`${base}/api/runs`);
    expect(none.status).toBe(401);
    expect(((await none.json()) as { error: string }).error).toMatch(/needs its token/);
    expect((await fetch(`${base}/api/runs`, { headers: { authorization: "Bearer wrong-token-of-enough-length" } })).status).toBe(401);
    expect((await fetch(`${base}/`)).status).toBe(401);

    const bearer = await fetch(`${base}/api/runs`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(bearer.status).toBe(200);
    expect(((await bearer.json()) as RunSummary[]).map((r) => r.run_id)).toEqual([DONE]);

    const first = await fetch(`${base}/runs/${DONE}?token=${TOKEN}&x=1`, { redirect: "manual" });
    expect(first.status).toBe(303);
    expect(first.headers.get("location")).toBe(`/runs/${DONE}?x=1`);
    const cookie = first.headers.get("set-cookie")!;
    expect(cookie).toMatch(/HttpOnly/);
    const page = await fetch(`${base}/runs/${DONE}`, { headers: { cookie: cookie.split(";")[0]! } });
    expect(page.status).toBe(200);
    expect(await page.text()).toBe(ASSETS.html);
  });

  it("wants a token given on loopback too, and says who can use it", async () => {
    expect(dash.access).toBe("whoever holds its token (the URL's ?token=, or Authorization: Bearer)");
    const local = await startDashboard({ workspace, token: TOKEN, logger: testLogger, assets: ASSETS });
    try {
      const base = `http://127.0.0.1:${new URL(local.url).port}`;
      expect(local.url).toBe(`${base}/?token=${TOKEN}`);
      expect((await fetch(`${base}/api/runs`)).status).toBe(401);
      expect((await fetch(`${base}/api/runs`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
    } finally {
      await local.close();
    }
    const open = await startDashboard({ workspace, logger: testLogger, assets: ASSETS });
    try {
      expect(open.access).toMatch(/^anyone who can reach 127\.0\.0\.1:\d+ on this machine, with no token/);
      expect((await fetch(`http://127.0.0.1:${new URL(open.url).port}/api/runs`)).status).toBe(200);
    } finally {
      await open.close();
    }
  });

  it("refuses a token too short to guard anything", async () => {
    await expect(startDashboard({ workspace, host: "0.0.0.0", token: "short", logger: testLogger, assets: ASSETS })).rejects.toThrow(/16 characters/);
  });
});

describe("dashboard server beside a swarm still creating its lineage", () => {
  it("starts with no runs, and reads the store once its writer has made it", async () => {
    const workspace = mkdtempSync(join(tmpdir(), "dashboard-half-"));
    const dir = join(workspace, "lineage");
    // Where serve's dashboard may find the lineage-store process part way (a CI run failed so).
    const db = await lancedb.connect(dir);
    const embedder = new HashingEmbedder();
    await db.createEmptyTable("runs", runsSchema(embedder.dim, embedder.name));
    db.close();
    const dash = await startDashboard({ workspace, logger: testLogger, assets: ASSETS });
    try {
      const runs = async () => ((await (await fetch(new URL("/api/runs", dash.url))).json()) as RunSummary[]).map((r) => r.run_id);
      expect(await runs()).toEqual([]);
      const search = () => fetch(new URL("/api/search?q=width", dash.url)).then(async (r) => [r.status, ((await r.json()) as SearchHit[]).length]);
      expect(await search()).toEqual([200, 0]);
      const store = await LineageStore.open(dir, { logger: testLogger });
      await store.applyEvents(runEvents(DONE));
      await store.close();
      // The store, now written, answers the next search.
      const [status, hits] = await search();
      expect(status).toBe(200);
      expect(hits).toBeGreaterThan(0);
    } finally {
      await dash.close();
      rmSync(workspace, { recursive: true, force: true });
    }
  });
});
