/** Runner choice by health (swarm/runners.ts), and the test confirmation across runners, against two real runners. */
import { afterAll, beforeAll, expect, it } from "vitest";
import { createLogger } from "../../core/logger.js";
import { confirmOnTest } from "../../agents/judge/confirm.js";
import { Decision, Verdict } from "../../proto/gen/research/v1/events_pb.js";
import { DIGITS_CNN } from "../helpers/models.js";
import { evaluated, RUN, started, state } from "../agents/helpers.js";
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

it("confirms the best trial on the runner that kept its weights, whichever the pick would be", async () => {
  const request = {
    runId: RUN,
    trialId: "best",
    model: { code: DIGITS_CNN, className: "DigitsNet" },
    dataset: { name: "digits", subset: 600 },
    recipe: { epochs: 1, batchSize: 64 },
    seeds: 2,
    keepWeights: true,
    budget: { timeBudgetS: 60 },
  };
  const [toA, toB] = [connectRunner(a.address), connectRunner(b.address)];
  await evaluateToResult(toB, request); // trained, and kept, on b
  const run = state([
    started({}, { timeBudgetS: 600 }),
    { runId: RUN, trialId: "best", body: { case: "trialProposed", value: { hypothesis: "best" } } },
    { runId: RUN, trialId: "best", body: { case: "trialAssembled", value: { request } } },
    evaluated("best", 0.9),
    { runId: RUN, trialId: "best", body: { case: "trialJudged", value: { verdict: Verdict.ACCEPT, decision: Decision.STOP } } },
  ]);
  const log = createLogger("test-confirm");
  log.level = "silent";
  const result = (await confirmOnTest(run, [toA, toB], log, Date.now()))?.result;
  expect(result?.seedResults.map((s) => s.epochsCompleted)).toEqual([0, 0]); // b's weights, not a second training
  toA.close();
  toB.close();
});

it("gives a run with a runner of its own (its Slurm job under serve) that runner alone, and the others the rest", async () => {
  const scoped = new Runners([a.address], undefined, testLogger, 60_000);
  scoped.add(b.address, "r-own");
  await scoped.poll();
  const instanceOf = async (c: ReturnType<Runners["pick"]>) => (await c.health({})).instance;
  const [ia, ib] = await Promise.all([a.address, b.address].map(async (address) => {
    const c = connectRunner(address);
    const instance = await instanceOf(c);
    c.close();
    return instance;
  }));
  const picked = async (run: string) => {
    const seen = new Set<string>();
    for (let i = 0; i < 4; i++) seen.add(await instanceOf(scoped.pick(run)));
    return seen;
  };
  expect(await picked("r-else")).toEqual(new Set([ia]));
  expect(await picked("r-own")).toEqual(new Set([ib]));
  expect(scoped.all("r-else")).toHaveLength(1);
  expect(scoped.all("r-own")).toHaveLength(1);
  scoped.close();
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
  expect((await runners.pick(RUN).health({})).freeSlots).toBe(1); // b; its one slot is now spoken for
  abort.abort();
  await spinning;
  busy.close();

  await b.close();
  await runners.poll();
  for (let i = 0; i < 3; i++) expect((await runners.pick(RUN).health({}, { timeoutMs: 5000 })).workersReady).toBe(1); // a, the one left
}, 120_000);
