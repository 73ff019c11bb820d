/**
 * The runner registry (bus/runner-registry.ts) on a real nats-server: a runner that announces
 * itself is seen by a watcher that started before it and by one that starts after; one that
 * stops is told gone; an entry that is not a runner's is passed over.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { announceRunner, KvBucket, watchRunners, type Bus } from "../../bus/index.js";
import { startTestServer, testBus, waitFor, type TestServer } from "./helpers.js";

let server: TestServer;
let bus: Bus;

beforeAll(async () => {
  server = await startTestServer();
  bus = await testBus(server.server.url, "registry-test");
});

afterAll(async () => {
  await bus?.close();
  await server?.dispose();
});

it("tells watchers each runner that joins and each that stops, and skips what is not a runner's entry", async () => {
  const early = new Map<string, string>();
  const watchEarly = await watchRunners(bus, (address, entry) => (entry ? early.set(address, entry.job) : early.delete(address)));
  const a = await announceRunner(bus, { address: "node-a:41000", job: "17" });
  const b = await announceRunner(bus, { address: "[::1]:41001", job: "" });
  // Written by something that is not a runner of this version.
  await (await KvBucket.open(bus, "runners", { ttlMs: 16_000 })).put("junk", "{not json");
  await waitFor("both runners seen", () => early.size === 2);
  expect(early).toEqual(new Map([["node-a:41000", "17"], ["[::1]:41001", ""]]));

  const late = new Set<string>();
  const watchLate = await watchRunners(bus, (address, entry) => (entry ? late.add(address) : late.delete(address)));
  await waitFor("a late watcher sees both", () => late.size === 2);

  await a.stop();
  await waitFor("the stopped runner gone", () => !early.has("node-a:41000") && !late.has("node-a:41000"));
  expect([...early.keys()]).toEqual(["[::1]:41001"]);
  await b.stop();
  watchEarly.stop();
  watchLate.stop();
});
