/**
 * The runner's gRPC door, fed random bytes and truncated requests (fast-check): every call ends
 * with a status within its deadline (a refusal, or an answer carrying a failure label), none
 * hangs, and the runner still answers after all of them with every slot free.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as grpc from "@grpc/grpc-js";
import { create, toBinary } from "@bufbuild/protobuf";
import fc from "fast-check";
import { createLogger } from "../../core/logger.js";
import { connectRunner, type RunnerClient } from "../../gpu-runner/client.js";
import { startRunner, type RunningRunner } from "../../gpu-runner/server.js";
import { CancelRequestSchema, DescribeRequestSchema, EvaluateRequestSchema, HealthRequestSchema, ScriptRequestSchema, SummarizeRequestSchema, WeightsRequestSchema } from "../../proto/gen/research/v1/runner_pb.js";

// The same inputs on every run: a failure is a bug to fix, never a run's luck.
fc.configureGlobal({ seed: 20261128 });

let runner: RunningRunner;
let client: RunnerClient;
let raw: grpc.Client;

beforeAll(async () => {
  const logger = createLogger("fuzz-runner");
  logger.level = "silent";
  runner = await startRunner({ slots: 1, logger });
  client = connectRunner(runner.address);
  raw = new grpc.Client(runner.address, grpc.credentials.createInsecure());
}, 120_000);

afterAll(async () => {
  raw?.close();
  client?.close();
  await runner?.close();
});

const METHOD = "/research.v1.RunnerService/";
/** What each refusal said, for a failure message. */
const REFUSALS = new Set<string>();
/** Each RPC with a valid request to cut short, and whether it streams its answer. */
const RPCS: [string, Uint8Array, boolean][] = [
  ["Evaluate", toBinary(EvaluateRequestSchema, create(EvaluateRequestSchema, { trialId: "t001", model: { code: "import torch\nclass Net(torch.nn.Module):\n  pass\n", className: "Net" }, dataset: { name: "digits" }, seeds: 1 })), true],
  ["Summarize", toBinary(SummarizeRequestSchema, create(SummarizeRequestSchema, { model: { code: "x = (", className: "Net" }, inputShape: [1, 8, 8], numClasses: 10 })), false],
  ["Describe", toBinary(DescribeRequestSchema, create(DescribeRequestSchema, { dataset: { name: "no-such-set" } })), false],
  ["RunScript", toBinary(ScriptRequestSchema, create(ScriptRequestSchema, { source: "raise SystemExit(3)", timeoutS: 5 })), false],
  ["FetchWeights", toBinary(WeightsRequestSchema, create(WeightsRequestSchema, { runId: "r1", trialId: "no-such-trial" })), true],
  ["Health", toBinary(HealthRequestSchema, create(HealthRequestSchema, {})), false],
  ["Cancel", toBinary(CancelRequestSchema, create(CancelRequestSchema, { idempotencyKey: "r1/t001" })), false],
];

/** One call with these bytes as its request: the status it ended with (0 OK), within 20 s. */
function call(rpc: string, bytes: Uint8Array, streams: boolean): Promise<number> {
  const id = (b: Buffer) => b;
  const deadline = Date.now() + 20_000;
  return new Promise((done) => {
    if (streams) {
      const s = raw.makeServerStreamRequest(METHOD + rpc, () => Buffer.from(bytes), id, bytes, new grpc.Metadata(), { deadline });
      s.on("data", () => undefined);
      s.on("error", (e: grpc.ServiceError) => (REFUSALS.add(`${rpc} ${e.code} ${e.details.slice(0, 80)}`), done(e.code)));
      s.on("status", (st: grpc.StatusObject) => st.code === grpc.status.OK && done(0));
    } else raw.makeUnaryRequest(METHOD + rpc, () => Buffer.from(bytes), id, bytes, new grpc.Metadata(), { deadline }, (e) => (e && REFUSALS.add(`${rpc} ${e.code} ${e.details.slice(0, 80)}`), done(e ? e.code : 0)));
  });
}

describe("the runner's gRPC door, fuzzed", () => {
  it("ends every random or truncated request with a status, and stays healthy", async () => {
    let tried = 0;
    const statuses = new Map<number, number>();
    for (const [rpc, valid, streams] of RPCS) {
      const input = fc.oneof(fc.uint8Array({ maxLength: 64 }), fc.nat({ max: valid.length }).map((n) => valid.slice(0, n)));
      await fc.assert(
        fc.asyncProperty(input, async (bytes) => {
          const code = await call(rpc, bytes, streams);
          tried++;
          statuses.set(code, (statuses.get(code) ?? 0) + 1);
          // OK (an answer, a failure label in it where the request could not be served) or the caller's mistake;
          // INTERNAL would be the service failing on it, DEADLINE_EXCEEDED a call that hung.
          expect([grpc.status.OK, grpc.status.INVALID_ARGUMENT], `${rpc} ${Buffer.from(bytes).toString("hex")}`).toContain(code);
        }),
        { numRuns: 25 },
      );
    }
    expect(statuses.get(grpc.status.INVALID_ARGUMENT), [...REFUSALS].join("\n")).toBeGreaterThan(20);
    expect(tried).toBe(25 * RPCS.length);
    const health = await client.health({});
    expect(health.freeSlots).toBe(health.slots);
    expect(health.queueDepth).toBe(0);
  }, 600_000);
});
