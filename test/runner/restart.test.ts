/**
 * A runner restarted on its state directory (`--state-dir`, which `launch` gives the runner it
 * starts) answers a redelivered request with what the one killed before it had ended, instead of
 * training it again, and still has the trial's kept weights for the test confirmation; a key its
 * predecessor was leased but never answered it refuses to start for a caller that read that lease.
 * The killed runner's scratch in TMPDIR is removed by the one after it.
 */
import { afterAll, expect, it } from "vitest";
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { freePort } from "../../bus/index.js";
import { ResearchError } from "../../core/failure.js";
import { connectRunner, endedByRunner, evaluateToResult } from "../../gpu-runner/client.js";
import type { EvaluateRequestSchema } from "../../proto/gen/research/v1/runner_pb.js";
import { DIGITS_CNN } from "../helpers/models.js";
import { startRunnerProcess } from "../helpers/runner-process.js";

const root = mkdtempSync(join(tmpdir(), "runner-restart-"));
const runners: ChildProcess[] = [];
afterAll(() => {
  for (const r of runners) r.kill("SIGKILL");
  rmSync(root, { recursive: true, force: true });
});

it("answers from the state its killed predecessor left, trains nothing again, and confirms from the kept weights", async () => {
  const address = `127.0.0.1:${await freePort()}`;
  const log: Record<string, unknown>[] = [];
  const start = async () => {
    const runner = await startRunnerProcess(address, { args: ["--state-dir", join(root, "state")], onLog: (e) => log.push(e) });
    runners.push(runner);
    return runner;
  };
  const request = {
    runId: "r-restart",
    trialId: "t1",
    idempotencyKey: "r-restart/t1",
    model: { code: DIGITS_CNN, className: "DigitsNet" },
    dataset: { name: "digits", subset: 300 },
    recipe: { epochs: 1, batchSize: 32 },
    seeds: 2,
    keepWeights: true,
    budget: { timeBudgetS: 60 },
  } satisfies MessageInitShape<typeof EvaluateRequestSchema>;
  const trainings = () => log.filter((e) => e.msg === "evaluation started" && e.training === true).map((e) => e.key);

  const first = await start();
  const before = connectRunner(address);
  const answered = await evaluateToResult(before, request);
  // What a lease on the key names besides the address (swarm/runner-leases.ts).
  const firstInstance = (await before.health({})).instance;
  expect(firstInstance).not.toBe("");
  before.close();
  first.kill("SIGKILL");
  await new Promise((r) => first.once("exit", r));
  // Killed, it could not remove its scratch (with the weights it kept): the next runner does.
  const scratchOf = (pid: number) => readdirSync(tmpdir()).filter((n) => n.startsWith(`runner-scratch-${pid}-`));
  expect(scratchOf(first.pid!)).toHaveLength(1);

  const second = await start();
  expect(scratchOf(first.pid!)).toEqual([]);
  expect(scratchOf(second.pid!)).toHaveLength(1);
  const after = connectRunner(address);
  try {
    // The analyst's redelivered request, after the runner's restart: the same answer, at once,
    // though its lease names the process before.
    const t0 = Date.now();
    const again = await evaluateToResult(after, { ...request, runnerInstance: firstInstance });
    expect(Date.now() - t0).toBeLessThan(2_000);
    expect(again.seedResults.map((s) => s.seconds)).toEqual(answered.seedResults.map((s) => s.seconds));
    expect(again.aggregated).toEqual(answered.aggregated);
    expect(Number((await after.health({})).evaluationsJoined)).toBe(1);
    // The judge's confirmation: from the weights the first process kept, no training.
    const confirmed = await evaluateToResult(after, { ...request, trialId: "t1-test", idempotencyKey: "r-restart/t1/confirm", keepWeights: false, weightsOf: "t1", evaluateTest: true });
    expect(confirmed.aggregated.test_accuracy?.mean).toBeGreaterThan(0);
    // A key the process before was leased but never answered: refused here, by this runner's own
    // answer, since the lease may have moved to a runner that trains it now; with no process named
    // or this one, it trains.
    const refused = await evaluateToResult(after, { ...request, trialId: "t2", idempotencyKey: "r-restart/t2", runnerInstance: firstInstance }).catch((e: unknown) => e as ResearchError);
    expect(refused).toBeInstanceOf(ResearchError);
    expect((refused as ResearchError).label).toBe("runner_unavailable");
    expect(endedByRunner(refused as ResearchError)).toBe(true);
    expect(trainings()).toEqual(["r-restart/t1"]);
    const secondInstance = (await after.health({})).instance;
    expect(secondInstance).not.toBe(firstInstance);
    await evaluateToResult(after, { ...request, trialId: "t2", idempotencyKey: "r-restart/t2", runnerInstance: secondInstance, keepWeights: false });
    expect(trainings()).toEqual(["r-restart/t1", "r-restart/t2"]);
  } finally {
    after.close();
  }
}, 120_000);
