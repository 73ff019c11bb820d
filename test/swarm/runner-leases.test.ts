/** Which runner holds an evaluation key (swarm/runner-leases.ts), on a real nats-server's KV bucket. */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Bus } from "../../bus/index.js";
import { RunnerLeases } from "../../swarm/runner-leases.js";
import { startTestServer, testBus, type TestServer } from "../bus/helpers.js";

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
  const pick = (address: string) => () => (picks.push(address), address);

  // A request and its duplicates at once, in both processes: one claim, one runner.
  const holders = await Promise.all([
    here.holder("r1/t001", pick("10.0.0.1:50051")),
    there.holder("r1/t001", pick("10.0.0.2:50051")),
    here.holder("r1/t001", pick("10.0.0.3:50051")),
  ]);
  expect(new Set(holders).size).toBe(1);
  const first = holders[0]!;
  // Later, where health would pick another runner: still the holder, and no pick asked.
  picks.length = 0;
  expect(await there.holder("r1/t001", pick("10.0.0.9:50051"))).toBe(first);
  expect(picks).toEqual([]);
  // Another key is another claim.
  expect(await here.holder("r1/t002", pick("10.0.0.9:50051"))).toBe("10.0.0.9:50051");

  // Only the holder's failure gives the lease up; the next request then picks again.
  await there.release("r1/t001", "10.0.0.7:50051");
  expect(await here.holder("r1/t001", pick("10.0.0.8:50051"))).toBe(first);
  await there.release("r1/t001", first);
  expect(await here.holder("r1/t001", pick("10.0.0.8:50051"))).toBe("10.0.0.8:50051");
});
