/**
 * The dashboard following a real nats-server (no swarm: the test publishes
 * what agents would): runs fold from the stream, live events and progress
 * reach /api/events, an intervention lands on the bus, and a bus that goes
 * away leaves the runs as last seen.
 */
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { INTERVENTION_KIND } from "../../core/enums.js";
import type { Bus } from "../../bus/index.js";
import type { Event } from "../../proto/gen/research/v1/events_pb.js";
import { startDashboard, type Dashboard } from "../../dashboard/server.js";
import type { LiveMessage, RunDetail, RunSummary } from "../../dashboard/api.js";
import { runEvents, TRIALS } from "../lineage-store/fixtures.js";
import { startTestServer, testBus, testLogger, waitFor, type TestServer } from "../bus/helpers.js";
import { ASSETS, workspaceWith } from "./helpers.js";

const STORED = "r-stored";
const BOTH = "r-both";
const LIVE = "r-live";

const stored = (events: Event[]) => events.filter((e) => e.body.case !== "trialProgress");

/** The messages of an /api/events stream as they arrive. */
async function follow(url: string, signal: AbortSignal): Promise<LiveMessage[]> {
  const res = await fetch(url, { signal });
  expect(res.status).toBe(200);
  const got: LiveMessage[] = [];
  void (async () => {
    const decoder = new TextDecoder();
    let text = "";
    try {
      for await (const chunk of res.body!) {
        text += decoder.decode(chunk, { stream: true });
        let end: number;
        while ((end = text.indexOf("\n\n")) >= 0) {
          const block = text.slice(0, end);
          text = text.slice(end + 2);
          const data = block.split("\n").find((l) => l.startsWith("data: "));
          const name = block.split("\n").find((l) => l.startsWith("event: "));
          if (data) {
            const m = JSON.parse(data.slice(6)) as LiveMessage;
            expect(name).toBe(`event: ${m.type}`);
            got.push(m);
          }
        }
      }
    } catch {
      // aborted
    }
  })();
  return got;
}

describe("dashboard following a swarm's bus", () => {
  let nats: TestServer;
  let pub: Bus;
  let workspace: string;
  let dash: Dashboard;
  const ac = new AbortController();
  const get = (path: string, init?: RequestInit) => fetch(new URL(path, dash.url), init);
  const json = async <T>(path: string): Promise<T> => (await (await get(path)).json()) as T;
  const summary = async (run: string) => (await json<RunSummary[]>("/api/runs")).find((r) => r.run_id === run);
  const until = async (what: string, check: () => Promise<boolean>, timeoutMs = 10_000) => {
    let ok = false;
    const poll = async () => void (ok = await check());
    await poll();
    const deadline = Date.now() + timeoutMs;
    while (!ok) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
      await poll();
    }
  };

  beforeAll(async () => {
    const both = runEvents(BOTH, TRIALS.slice(0, 6), 1_700_000_200_000);
    // The store has half of BOTH (it fell behind); the stream has all of it.
    workspace = await workspaceWith({ [STORED]: runEvents(STORED, TRIALS.slice(0, 3)), [BOTH]: both.slice(0, 10) });
    nats = await startTestServer();
    pub = await testBus(nats.server.url, "test-agent");
    for (const e of stored(both)) await pub.publish(e);
    dash = await startDashboard({ workspace, logger: testLogger, assets: ASSETS, connect: () => testBus(nats.server.url, "dashboard"), retryMs: 200, lostAfterMs: 300 });
  }, 30_000);
  afterAll(async () => {
    ac.abort();
    await dash?.close();
    // The server is gone by now: a drain (close()) would wait for it.
    await pub?.nc.close();
    await nats?.dispose();
    rmSync(workspace, { recursive: true, force: true });
  });

  it("folds a run in the stream from the stream, and keeps one only stored from the store", async () => {
    await until("BOTH folded from the stream", async () => (await summary(BOTH))?.live === true);
    const both = await json<RunDetail>(`/api/runs/${BOTH}`);
    expect(both).toMatchObject({ status: "budget_exhausted", live: true, trials: 6, judged: 6 });
    expect(both.trials_table.map((r) => r.index)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(await summary(STORED)).toMatchObject({ live: false, status: "budget_exhausted", trials: 3 });
  });

  it("shows events published now, sends them and live progress to /api/events, and lands an intervention on the bus", async () => {
    const all = await follow(new URL("/api/events", dash.url).href, ac.signal);
    const mine = await follow(new URL(`/api/events?run=${LIVE}`, dash.url).href, ac.signal);
    const events = stored(runEvents(LIVE, TRIALS.slice(0, 2), Date.now() - 60_000)).filter((e) => e.body.case !== "runFinished");
    const [start, brief, proposed0] = events;
    await pub.publish(start!);
    await pub.publish(brief!);
    await pub.publish(proposed0!);
    await waitFor("change messages", () => mine.some((m) => m.type === "change" && m.kind === "trialProposed"));
    expect(mine.filter((m) => m.type === "change").map((m) => m.type === "change" && m.kind)).toEqual(["runStarted", "briefReady", "trialProposed"]);
    expect(mine.every((m) => m.run_id === LIVE)).toBe(true);
    const t0 = proposed0!.trialId;
    expect(await json<RunDetail>(`/api/runs/${LIVE}`)).toMatchObject({ status: "running", live: true, trials: 1, in_flight: 1 });

    pub.publishLive({ runId: LIVE, trialId: t0, body: { case: "trialProgress", value: { progress: { seed: 0, epoch: 1, epochs: 3, valAccuracy: 0.61, trainAccuracy: 0.55, seconds: 2 } } } });
    await waitFor("a progress message", () => mine.some((m) => m.type === "progress"));
    expect(mine.find((m) => m.type === "progress")).toEqual({ type: "progress", run_id: LIVE, trial_id: t0, seed: 0, epoch: 1, epochs: 3, val_accuracy: 0.61, train_accuracy: 0.55, seconds: 2 });
    expect((await json<RunDetail>(`/api/runs/${LIVE}`)).trials_table[0]!.progress).toEqual({ epoch: 1, epochs: 3, val_accuracy: 0.61, seconds: 2 });

    // An intervention from the page: published by the dashboard, seen by whoever follows the run.
    const seen: Event[] = [];
    const watch = await pub.watch(LIVE, (e) => void (e.body.case === "runIntervention" && seen.push(e)));
    const post = (body: unknown) =>
      get(`/api/runs/${LIVE}/interventions`, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json", "x-research-user": "ann" } });
    const res = await post({ kind: "pause", reason: "look first" });
    expect(res.status).toBe(202);
    const reply = (await res.json()) as { ok: true; intervention_id: string; summary: string };
    expect(reply).toMatchObject({ ok: true, intervention_id: expect.stringMatching(/^iv-/), summary: expect.stringContaining(`paused run ${LIVE}`) });
    await waitFor("the intervention on the bus", () => seen.length === 1);
    await watch.stop();
    const iv = seen[0]!.body.case === "runIntervention" ? seen[0]!.body.value : undefined;
    expect(iv).toMatchObject({ interventionId: reply.intervention_id, kind: INTERVENTION_KIND.value("pause"), who: "ui:ann", reason: "look first" });
    await until("the run paused", async () => (await json<RunDetail>(`/api/runs/${LIVE}`)).paused);
    expect((await json<RunDetail>(`/api/runs/${LIVE}`)).interventions).toMatchObject([{ intervention_id: reply.intervention_id, kind: "pause", who: "ui:ann" }]);
    expect(mine.some((m) => m.type === "change" && m.kind === "runIntervention")).toBe(true);

    const again = await post({ kind: "pause" });
    expect(again.status).toBe(400);
    expect(await again.json()).toEqual({ ok: false, error: `run ${LIVE} is already paused` });
    expect((await post({ kind: "explode" })).status).toBe(400);

    // Once evaluated, the trial's progress is over.
    for (const e of events.slice(3).filter((e) => e.trialId === t0)) await pub.publish(e);
    await until("t0 judged", async () => (await json<RunDetail>(`/api/runs/${LIVE}`)).trials_table[0]!.status === "judged");
    expect((await json<RunDetail>(`/api/runs/${LIVE}`)).trials_table[0]!.progress).toBeNull();
    expect(all.some((m) => m.run_id === LIVE)).toBe(true);
  });

  it("lets go of a bus that stays away: runs stay as last seen, no longer live, and interventions are refused", async () => {
    await nats.server.stop();
    await until("the runs no longer live", async () => (await summary(LIVE))?.live === false);
    expect(await summary(LIVE)).toMatchObject({ status: "interrupted", trials: 1 });
    expect(await summary(BOTH)).toMatchObject({ status: "budget_exhausted", trials: 6 });
    const res = await get(`/api/runs/${LIVE}/interventions`, { method: "POST", body: JSON.stringify({ kind: "resume" }), headers: { "content-type": "application/json" } });
    expect(res.status).toBe(409);
  });
});
