/**
 * A 3-node JetStream cluster on loopback, the RESEARCH stream at 3 replicas:
 * the node a client is connected to dies mid-stream, and no event is lost or
 * stored twice.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connectBus, type Bus, type NatsServer } from "../../bus/index.js";
import { eventOf, startCluster, testLogger, waitFor, whenClusterReady } from "./helpers.js";

const EVENTS = 60;
let root: string;
let nodes: NatsServer[] = [];
let bus: Bus;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "cluster-test-"));
  nodes = await startCluster(root);
  bus = await whenClusterReady(() =>
    connectBus({ servers: nodes.map((n) => n.url), name: "cluster-test", logger: testLogger, replicas: 3, reconnectTimeWaitMs: 200 }),
  );
}, 90_000);

afterAll(async () => {
  await bus?.close();
  await Promise.all(nodes.map((n) => n.stop()));
  rmSync(root, { recursive: true, force: true });
});

it("loses and duplicates nothing when the node a client uses dies", async () => {
  const seen: string[] = [];
  const consumer = await bus.consume("cluster-test", ["runStarted"], async (event) => void seen.push(event.trialId), {
    ackWaitMs: 2_000,
    pullExpiresMs: 2_000,
  });
  const publish = (i: number) => bus.publish({ ...eventOf("runStarted", "cluster-run", `t${i}`), eventId: `cluster-run/t${i}` });
  for (let i = 0; i < EVENTS / 2; i++) await publish(i);
  const connected = nodes.find((n) => n.port === bus.nc.info?.port) ?? nodes[0]!;
  await connected.stop();
  for (let i = EVENTS / 2; i < EVENTS; i++) await publish(i);
  await waitFor("every event", () => new Set(seen).size === EVENTS, 60_000);
  await consumer.stop();
  expect(new Set(seen).size).toBe(EVENTS);
  // Delivery is at least once: an ack lost with the node is redelivered (seen in about 1 run in 5
  // here), and handlers are idempotent on their event (ARCHITECTURE.md, "Bus"). Stored, each is once.
  expect(seen.length).toBeLessThanOrEqual(EVENTS + 2);
  // Reading back makes a consumer, which waits for the stream's new leader (a few seconds after a loss).
  let stored: number | undefined;
  for (let i = 0; i < 10 && stored === undefined; i++) stored = await bus.replay("cluster-run", () => undefined).catch(() => undefined);
  expect(stored).toBe(EVENTS);
}, 120_000);
