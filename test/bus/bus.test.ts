import { create } from "@bufbuild/protobuf";
import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  encodeEvent,
  EVENT_KINDS,
  filterFor,
  STREAM,
  type Bus,
  type Event,
} from "../../bus/index.js";
import { ResearchError } from "../../core/failure.js";
import { EventSchema, type Heartbeat } from "../../proto/gen/research/v1/events_pb.js";
import { eventOf, sleep, startTestServer, testBus, waitFor, type TestServer } from "./helpers.js";

let ts: TestServer;
let bus: Bus;
let other: Bus;

beforeAll(async () => {
  ts = await startTestServer();
  bus = await testBus(ts.server.url, "bus-test");
  other = await testBus(ts.server.url, "bus-test-2");
});

afterAll(async () => {
  await bus?.close();
  await other?.close();
  await ts?.dispose();
});

async function consumerInfo(name: string) {
  return (await jetstreamManager(bus.nc)).consumers.info(STREAM, name);
}

const fast = { ackWaitMs: 1_000, retryDelayMs: 100, pullExpiresMs: 2_000 };

describe("bus", () => {
  it("creates the stream idempotently with the trajectory settings", async () => {
    const info = await bus.ensureStream();
    expect(info.config.name).toBe(STREAM);
    expect(info.config.subjects).toEqual(["research.>"]);
    expect(info.config.duplicate_window).toBe(120_000_000_000);
    expect(info.config.storage).toBe("file");
    expect(info.config.max_age).toBe(0);
  });

  it("round-trips every kind through a durable consumer", async () => {
    const seen: Event[] = [];
    const consumption = await bus.consume("roundtrip", EVENT_KINDS, async (event) => {
      seen.push(event);
    }, fast);
    for (const kind of EVENT_KINDS) await bus.publish(eventOf(kind, "rt-run", `t-${kind}`));
    await waitFor("every kind", () => seen.length === EVENT_KINDS.length);
    await consumption.stop();
    expect(new Set(seen.map((e) => e.body.case))).toEqual(new Set(EVENT_KINDS));
    for (const e of seen) {
      expect(e.runId).toBe("rt-run");
      expect(e.trialId).toBe(`t-${e.body.case}`);
      expect(e.eventId).not.toBe("");
      expect(e.emittedAtMs).toBeGreaterThan(0n);
      expect(e.producer).toBe("bus-test");
    }
    expect(consumption.handled()).toBe(EVENT_KINDS.length);
  });

  it("stores an event published twice with the same event_id once", async () => {
    const first = await bus.publish(eventOf("trialProposed", "dedup-run", "t1", { eventId: "fixed-id" }));
    const second = await bus.publish(eventOf("trialProposed", "dedup-run", "t1", { eventId: "fixed-id" }));
    expect(first.duplicate).toBe(false);
    expect(second.duplicate).toBe(true);
    expect(second.seq).toBe(first.seq);
    expect(await bus.replay("dedup-run", () => undefined)).toBe(1);
  });

  it("shares a role's events between its instances without duplicates", async () => {
    const byInstance: Record<string, string[]> = { a: [], b: [] };
    const handler = (name: string) => async (event: Event) => {
      if (event.runId !== "share-run") return;
      byInstance[name]!.push(event.trialId);
      await sleep(20);
    };
    const a = await bus.consume("sharer", ["trialAssembled"], handler("a"), fast);
    const b = await other.consume("sharer", ["trialAssembled"], handler("b"), fast);
    const n = 20;
    await Promise.all(Array.from({ length: n }, (_, i) => bus.publish(eventOf("trialAssembled", "share-run", `t${i}`))));
    await waitFor("all events", () => byInstance.a!.length + byInstance.b!.length >= n);
    await sleep(300);
    await Promise.all([a.stop(), b.stop()]);
    const all = [...byInstance.a!, ...byInstance.b!];
    expect(all).toHaveLength(n);
    expect(new Set(all).size).toBe(n);
    expect(byInstance.a!.length).toBeGreaterThan(0);
    expect(byInstance.b!.length).toBeGreaterThan(0);
  });

  it("redelivers after a retryable failure and then succeeds", async () => {
    const deliveries: number[] = [];
    const c = await bus.consume("flaky", ["trialEvaluated"], async (event, ctx) => {
      if (event.runId !== "flaky-run") return;
      deliveries.push(ctx.deliveryCount);
      if (ctx.deliveryCount === 1) throw new ResearchError("runner_unavailable", "runner busy");
    }, fast);
    await bus.publish(eventOf("trialEvaluated", "flaky-run", "t1"));
    await waitFor("success", () => deliveries.length === 2);
    await sleep(200);
    await c.stop();
    expect(deliveries).toEqual([1, 2]);
  });

  it("retries a retryable failure after its own delays (1x, 2x, 4x), never the ack wait's, then dead-letters it", async () => {
    const at: number[] = [];
    let deadLettered = 0;
    const c = await bus.consume("unreachable", ["trialAssembled"], async (event) => {
      if (event.runId !== "unreachable-run") return;
      at.push(Date.now());
      throw new ResearchError("runner_unavailable", "connect ECONNREFUSED");
    }, { ...fast, ackWaitMs: 5_000, retryDelayMs: 300, maxDeliver: 4, onDeadLetter: () => void deadLettered++ });
    await bus.publish(eventOf("trialAssembled", "unreachable-run", "t1"));
    await waitFor("the dead letter", () => deadLettered === 1, 20_000);
    await c.stop();
    const gaps = at.slice(1).map((t, i) => t - at[i]!);
    expect(gaps).toHaveLength(3);
    // 0.3, 0.6 and 1.2 s asked; with an ack-wait backoff on the consumer (5, 10, 20 s) it was not dead-lettered after 20 s.
    gaps.forEach((gap, i) => expect(gap, `retry ${i + 1} of ${gaps.join(", ")} ms`).toBeLessThan(300 * 2 ** i + 2_000));
  }, 30_000);

  it("terminates poison messages and keeps consuming", async () => {
    const seen: string[] = [];
    const c = await bus.consume("poisoned", ["trialJudged"], async (event) => {
      if (event.runId !== "poison-run") return;
      seen.push(event.trialId);
    }, fast);
    const subject = filterFor("trialJudged", "poison-run");
    bus.nc.publish(subject, new TextEncoder().encode("not protobuf at all {"));
    // A valid event of another kind on this subject can never be handled either.
    bus.nc.publish(subject, encodeEvent(create(EventSchema, eventOf("runStarted", "poison-run"))));
    await bus.publish(eventOf("trialJudged", "poison-run", "good"));
    await waitFor("the good event", () => seen.length === 1);
    await sleep(300);
    const info = await consumerInfo("poisoned-trial-judged");
    await c.stop();
    expect(seen).toEqual(["good"]);
    expect(info.num_ack_pending).toBe(0);
    expect(info.num_pending).toBe(0);
    expect(info.num_redelivered).toBe(0);
  });

  it("dead-letters an event after its last delivery", async () => {
    let calls = 0;
    const dead: Array<{ event: Event; error: unknown }> = [];
    const c = await bus.consume("doomed", ["llmCall"], async (event) => {
      if (event.runId !== "doomed-run") return;
      calls++;
      throw new ResearchError("runner_unavailable", "still down");
    }, { ...fast, maxDeliver: 3, onDeadLetter: (event, error) => void dead.push({ event, error }) });
    await bus.publish(eventOf("llmCall", "doomed-run", "t9"));
    await waitFor("dead letter", () => dead.length === 1);
    await sleep(500);
    await c.stop();
    expect(calls).toBe(3);
    expect(dead).toHaveLength(1);
    expect(dead[0]!.event.trialId).toBe("t9");
    expect((dead[0]!.error as Error).message).toBe("still down");
  });

  it("dead-letters a permanent failure at once", async () => {
    let calls = 0;
    const dead: Event[] = [];
    const c = await bus.consume("broken", ["briefReady"], async (event) => {
      if (event.runId !== "broken-run") return;
      calls++;
      throw new Error("cannot parse brief");
    }, { ...fast, onDeadLetter: (event) => void dead.push(event) });
    await bus.publish(eventOf("briefReady", "broken-run"));
    await waitFor("dead letter", () => dead.length === 1);
    await sleep(300);
    await c.stop();
    expect(calls).toBe(1);
  });

  it("waits for the in-flight handler when stopped", async () => {
    let finished = false;
    const c = await bus.consume("slowpoke", ["runFinished"], async (event) => {
      if (event.runId !== "slow-run") return;
      await sleep(1_500);
      finished = true;
    }, fast);
    await bus.publish(eventOf("runFinished", "slow-run"));
    await sleep(300);
    expect(c.inFlight()).toBe(1);
    await c.stop();
    expect(finished).toBe(true);
    const info = await consumerInfo("slowpoke-run-finished");
    expect(info.num_ack_pending).toBe(0);
    expect(info.num_redelivered).toBe(0);
  });

  it("recreates its durable when the server loses it", async () => {
    const seen: string[] = [];
    const c = await bus.consume("phoenix", ["trialProposed"], async (event) => {
      if (event.runId === "phoenix-run") seen.push(event.trialId);
    }, fast);
    await bus.publish(eventOf("trialProposed", "phoenix-run", "t1"));
    await waitFor("first event", () => seen.length === 1);
    await (await jetstreamManager(bus.nc)).consumers.delete(STREAM, "phoenix-trial-proposed");
    await bus.publish(eventOf("trialProposed", "phoenix-run", "t2"));
    await waitFor("event after the durable came back", () => seen.includes("t2"), 10_000);
    await c.stop();
    expect((await consumerInfo("phoenix-trial-proposed")).num_ack_pending).toBe(0);
  });

  it("replays a run's events in publication order", async () => {
    const kinds = ["runStarted", "briefReady", "trialProposed", "trialAssembled", "trialEvaluated", "trialJudged"] as const;
    for (const [i, kind] of kinds.entries()) await bus.publish(eventOf(kind, "replay-run", `t${i}`));
    await bus.publish(eventOf("runStarted", "another-run"));
    const got: Event[] = [];
    const count = await bus.replay("replay-run", (e) => void got.push(e));
    expect(count).toBe(kinds.length);
    expect(got.map((e) => e.body.case)).toEqual([...kinds]);
    expect(await bus.replay("no-such-run", () => undefined)).toBe(0);
  });

  it("watches history then live events of a run", async () => {
    await bus.publish(eventOf("runStarted", "watch-run"));
    await bus.publish(eventOf("trialProposed", "watch-run", "t1"));
    const got: string[] = [];
    const watch = await bus.watch("watch-run", (e) => void got.push(e.body.case!));
    expect(await watch.caughtUp).toBe(2);
    await bus.publish(eventOf("trialAssembled", "watch-run", "t1"));
    await waitFor("live event", () => got.length === 3);
    await watch.stop();
    expect(got).toEqual(["runStarted", "trialProposed", "trialAssembled"]);
  });

  it("delivers live events to plain subscribers", async () => {
    const got: string[] = [];
    const sub = bus.subscribe(filterFor("trialJudged", "live-run"), (e) => void got.push(e.trialId));
    await bus.nc.flush();
    await bus.publish(eventOf("trialJudged", "live-run", "t1"));
    await bus.publish(eventOf("trialJudged", "other-live-run", "t2"));
    await waitFor("live event", () => got.length === 1);
    await sub.stop();
    expect(got).toEqual(["t1"]);
  });

  it("answers requests, once per request, and carries service errors back", async () => {
    const answered: string[] = [];
    const upper = (who: string) => async (req: Uint8Array) => {
      const text = new TextDecoder().decode(req);
      if (text === "fail") throw new Error("bad query");
      answered.push(who);
      return new TextEncoder().encode(text.toUpperCase());
    };
    const s1 = bus.serve("lineage.query", upper("s1"));
    const s2 = other.serve("lineage.query", upper("s2"));
    await Promise.all([bus.nc.flush(), other.nc.flush()]);
    for (let i = 0; i < 6; i++) {
      const reply = await bus.request("lineage.query", new TextEncoder().encode("similar"), 2_000);
      expect(new TextDecoder().decode(reply)).toBe("SIMILAR");
    }
    expect(answered).toHaveLength(6);
    await expect(bus.request("lineage.query", new TextEncoder().encode("fail"))).rejects.toMatchObject({ label: "crash", message: "lineage.query: bad query" });
    await expect(bus.request("lineage.query", new TextEncoder().encode("fail"))).rejects.toThrow(/bad query/);
    await Promise.all([s1.stop(), s2.stop()]);
  });

  it("asks again a service that has no responder yet, until its timeout: a swarm's processes start in any order", async () => {
    const asked = bus.request("lineage.starting", new TextEncoder().encode("early"), 3_000);
    await new Promise((r) => setTimeout(r, 700));
    const s = other.serve("lineage.starting", async (req) => req);
    expect(new TextDecoder().decode(await asked)).toBe("early");
    await s.stop();
    // With no responder at all, the request fails at its timeout, not later.
    const t0 = Date.now();
    await expect(bus.request("lineage.nobody", new TextEncoder().encode("x"), 600)).rejects.toThrow();
    expect(Date.now() - t0).toBeLessThan(1_500);
  });

  it("publishes heartbeats that watchHeartbeats sees", async () => {
    const beats: Heartbeat[] = [];
    const watcher = other.watchHeartbeats((beat) => void beats.push(beat));
    await other.nc.flush();
    const hb = bus.startHeartbeat({ role: "coder", instance: "box-1", inFlight: () => 2, handled: () => 7, intervalMs: 100 });
    await waitFor("two beats", () => beats.length >= 2);
    await hb.stop();
    await watcher.stop();
    expect(beats[0]).toMatchObject({ role: "coder", instance: "box-1", inFlight: 2, handled: 7 });
    expect(beats[0]!.startedAtMs).toBeGreaterThan(0n);
    expect(await bus.replay("*", (e) => expect(e.body.case).not.toBe("heartbeat"))).toBeGreaterThan(0);
  });

  it("refuses to store heartbeats", async () => {
    await expect(bus.publish({ runId: "r", body: { case: "heartbeat", value: {} } })).rejects.toThrow(/startHeartbeat/);
  });
});
