/** Runner choice by health (swarm/runners.ts) against two real runners. */
import { afterAll, beforeAll, expect, it } from "vitest";
import { evaluateToResult, connectRunner } from "../../gpu-runner/client.js";
import { startRunner, type RunningRunner } from "../../gpu-runner/server.js";
import { Runners } from "../../swarm/runners.js";
import { hostile } from "../helpers/models.js";
import { testLogger } from "../bus/helpers.js";

let a: RunningRunner;
let b: RunningRunner;
let runners: Runners;

beforeAll(async () => {
  [a, b] = await Promise.all([startRunner({ slots: 1, logger: testLogger }), startRunner({ slots: 1, logger: testLogger })]);
  runners = new Runners([a.address, b.address], undefined, testLogger, 60_000);
}, 120_000);

afterAll(async () => {
  runners?.close();
  await Promise.all([a?.close(), b?.close()]);
});

it("sends work to the runner with room, and passes over one that stopped answering", async () => {
  // Runner a's only slot is taken by a trial that spins until it is cancelled.
  const busy = connectRunner(a.address);
  const abort = new AbortController();
  const spinning = evaluateToResult(
    busy,
    { trialId: "spin", model: { code: hostile("while True:\n    pass"), className: "Net" }, dataset: { name: "digits", subset: 300 }, seeds: 1, budget: { timeBudgetS: 60 } },
    () => {},
    { signal: abort.signal },
  ).catch(() => undefined);
  for (let i = 0; i < 100 && (await busy.health({})).freeSlots > 0; i++) await new Promise((r) => setTimeout(r, 100));
  await runners.poll();
  expect((await runners.pick().health({})).freeSlots).toBe(1); // b; its one slot is now spoken for
  abort.abort();
  await spinning;
  busy.close();

  await b.close();
  await runners.poll();
  for (let i = 0; i < 3; i++) expect((await runners.pick().health({}, { timeoutMs: 5000 })).workersReady).toBe(1); // a, the one left
}, 120_000);
