import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Bus } from "../../bus/index.js";
import { request } from "../../swarm/lineage-query.js";
import { TrialStatus } from "../../proto/gen/research/v1/common_pb.js";
import { serveQueries } from "../../lineage-store/query.js";
import { LineageStore } from "../../lineage-store/store.js";
import { startTestServer, testBus, type TestServer } from "../bus/helpers.js";
import { trialId } from "../../core/ids.js";
import { runEvents } from "./fixtures.js";

describe("similarity queries over the bus (real nats-server)", () => {
  const root = mkdtempSync(join(tmpdir(), "lineage-client-"));
  let nats: TestServer;
  let service: Bus;
  let agent: Bus;
  let store: LineageStore;

  beforeAll(async () => {
    nats = await startTestServer();
    [service, agent] = await Promise.all([testBus(nats.server.url, "lineage-store"), testBus(nats.server.url, "planner")]);
    store = await LineageStore.open(root);
    await store.applyEvents(runEvents("bus"));
    serveQueries(service, store);
    // The subscription must reach the server before the first request, or it has no responder.
    await service.nc.flush();
  });
  afterAll(async () => {
    await Promise.all([service.close(), agent.close()]);
    await store.close();
    await nats.dispose();
    rmSync(root, { recursive: true, force: true });
  });

  it("answers a planner's query with the trials it needs", async () => {
    const failed = await request(agent, { text: "convolutional network", k: 50, status: TrialStatus.FAILED });
    expect(failed.map((t) => t.trialId).sort()).toEqual([7, 8, 11].map((i) => trialId("bus", i)));
    expect(failed[0]!.model?.kind.case).toBe("network");
    const [top] = await request(agent, { text: "squeeze excitation block", k: 1 });
    expect(top!.trialId).toBe(trialId("bus", 2));
  });

  it("turns a bad query into an error for the caller, and keeps serving", async () => {
    await expect(request(agent, { trialId: "missing" })).rejects.toThrow(/unknown trial missing/);
    expect(await request(agent, { trialId: trialId("bus", 1), k: 2 })).toHaveLength(2);
  });
});
