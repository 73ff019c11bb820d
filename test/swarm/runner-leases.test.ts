/** Which runner holds an evaluation key (swarm/runner-leases.ts), on a real nats-server's KV bucket. */
import { afterAll, beforeAll, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Bus, NatsServer } from "../../bus/index.js";
import { RunnerLeases } from "../../swarm/runner-leases.js";
import { startCluster, startTestServer, testBus, whenClusterReady, type TestServer } from "../bus/helpers.js";

let ts: TestServer;
let a: Bus;
let b: Bus;

beforeAll(async () => {
  ts = await startTestServer();
  [a, b] = await Promise.all([testBus(ts.server.url, "leases-a"), testBus(ts.server.url, "leases-b")]);
});

afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
  await ts?.dispose();
});

it("sends every request of a key to the runner the first claimed, from any process, until that runner fails it", async () => {
  // Two agent processes, each with its own pick by health.
  const [here, there] = await Promise.all([RunnerLeases.open(a), RunnerLeases.open(b)]);
  const picks: string[] = [];
  const holder = (address: string, instance = "p1") => ({ address, instance });
  const pick = (address: string, instance?: string) => () => (picks.push(address), holder(address, instance));

  // A request and its duplicates at once, in both processes: one claim, one runner.
  const holders = await Promise.all([
    here.holder("r1/t001", pick("10.0.0.1:50051")),
    there.holder("r1/t001", pick("10.0.0.2:50051")),
    here.holder("r1/t001", pick("10.0.0.3:50051")),
  ]);
  expect(new Set(holders.map((h) => h.address)).size).toBe(1);
  const first = holders[0]!;
  // Later, where health would pick another runner: still the holder, and no pick asked.
  picks.length = 0;
  expect(await there.holder("r1/t001", pick("10.0.0.9:50051"))).toEqual(first);
  expect(picks).toEqual([]);
  // Another key is another claim; a runner whose process is not known yet holds it by its address.
  expect(await here.holder("r1/t002", pick("10.0.0.9:50051", ""))).toEqual(holder("10.0.0.9:50051", ""));

  // Only the holder's failure gives the lease up, the same address under another process not;
  // the next request then picks again.
  await there.release("r1/t001", holder("10.0.0.7:50051"));
  await there.release("r1/t001", holder(first.address, "p2"));
  expect(await here.holder("r1/t001", pick("10.0.0.8:50051"))).toEqual(first);
  await there.release("r1/t001", first);
  expect(await here.holder("r1/t001", pick("10.0.0.8:50051", "p7"))).toEqual(holder("10.0.0.8:50051", "p7"));
});

it("gives a released key to one claim of two at once on a 3-node cluster at 3 replicas", async () => {
  // Where the chaos test saw two runners train one trial: both of a trial's deliveries failed on a
  // killed runner, released its lease and claimed again at the same moment. KV's own create let
  // both claims land about one time in four on nats-server 2.9.
  const root = mkdtempSync(join(tmpdir(), "leases-cluster-"));
  const nodes: NatsServer[] = await startCluster(root);
  const buses: Bus[] = [];
  try {
    for (const [i, node] of nodes.slice(0, 2).entries()) buses.push(await whenClusterReady(() => testBus(node.url, `leases-node-${i}`)));
    const [here, there] = await Promise.all(buses.map((bus) => whenClusterReady(() => RunnerLeases.open(bus, 3))));
    const split: string[] = [];
    for (let i = 0; i < 120; i++) {
      const key = `r1/t${i}`;
      const old = { address: "10.0.0.1:50051", instance: "p1" };
      await here!.holder(key, () => old);
      await Promise.all([here!.release(key, old), there!.release(key, old)]);
      const holders = await Promise.all([
        here!.holder(key, () => ({ address: "10.0.0.1:50051", instance: "p2" })),
        there!.holder(key, () => ({ address: "10.0.0.2:50051", instance: "p1" })),
      ]);
      if (holders[0]!.address !== holders[1]!.address) split.push(key);
    }
    expect(split, "keys held by two runners").toEqual([]);
  } finally {
    await Promise.all(buses.map((bus) => bus.close()));
    await Promise.all(nodes.map((node) => node.stop()));
    rmSync(root, { recursive: true, force: true });
  }
}, 90_000);
