import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Bus } from "../../bus/index.js";
import { RunStates } from "../../swarm/run-states.js";
import { eventOf, startTestServer, testBus, testLogger, type TestServer } from "../bus/helpers.js";

let ts: TestServer;
let bus: Bus;
let publisher: Bus;

beforeAll(async () => {
  ts = await startTestServer();
  bus = await testBus(ts.server.url, "run-states");
  publisher = await testBus(ts.server.url, "run-states-publisher");
});

afterAll(async () => {
  await bus?.close();
  await publisher?.close();
  await ts?.dispose();
});

const proposed = (runId: string, i: number) => ({ ...eventOf("trialProposed", runId, `${runId}-t${i}`), eventId: `${runId}/${i}/proposed` });

describe("RunStates", () => {
  it("folds a run once and then applies only what is new, current at every get", async () => {
    const runs = new RunStates(bus, testLogger);
    try {
      for (let i = 0; i < 5; i++) await publisher.publish(proposed("rs-a", i));
      const first = await runs.get("rs-a");
      expect(first.order).toHaveLength(5);
      // Stored by another connection just before the call: the next get sees it.
      await publisher.publish(proposed("rs-a", 5));
      const second = await runs.get("rs-a");
      expect(second).toBe(first);
      expect(second.order).toEqual(["rs-a-t0", "rs-a-t1", "rs-a-t2", "rs-a-t3", "rs-a-t4", "rs-a-t5"]);
      // Another run's events never reach this run's state.
      await publisher.publish(proposed("rs-b", 0));
      expect((await runs.get("rs-a")).order).toHaveLength(6);
    } finally {
      await runs.close();
    }
  });

  it("starts from an empty run and catches up with events published while idle", async () => {
    const runs = new RunStates(bus, testLogger);
    try {
      expect((await runs.get("rs-empty")).order).toEqual([]);
      for (let i = 0; i < 3; i++) await publisher.publish(proposed("rs-empty", i));
      expect((await runs.get("rs-empty")).order).toHaveLength(3);
      await publisher.publish({ ...eventOf("runFinished", "rs-empty"), eventId: "rs-empty/finished" });
      expect((await runs.get("rs-empty")).finished).toBe(true);
    } finally {
      await runs.close();
    }
  });

  it("waits for the event a handler holds when the follower's replica has not reported it yet", async () => {
    // In a cluster a durable consumer can deliver an event that the follower's replica does not
    // hold yet; here the event is stored 300 ms after the get that names its sequence.
    const runs = new RunStates(bus, testLogger);
    try {
      const first = await publisher.publish(proposed("rs-lag", 0));
      expect((await runs.get("rs-lag", first.seq)).order).toEqual(["rs-lag-t0"]);
      const later = new Promise<number>((resolve) => setTimeout(() => void publisher.publish(proposed("rs-lag", 1)).then((ack) => resolve(ack.seq)), 300));
      const state = await runs.get("rs-lag", first.seq + 1);
      expect(state.order).toEqual(["rs-lag-t0", "rs-lag-t1"]);
      expect(await later).toBe(first.seq + 1);
    } finally {
      await runs.close();
    }
  });

  it("stops the least recently used follower beyond its limit and rebuilds it on demand", async () => {
    const runs = new RunStates(bus, testLogger, { maxRuns: 1 });
    try {
      await publisher.publish(proposed("rs-lru-1", 0));
      await publisher.publish(proposed("rs-lru-2", 0));
      const a = await runs.get("rs-lru-1");
      await runs.get("rs-lru-2");
      const again = await runs.get("rs-lru-1");
      expect(again).not.toBe(a);
      expect(again.order).toEqual(["rs-lru-1-t0"]);
    } finally {
      await runs.close();
    }
  });
});
