/** Typed gRPC client for the runner, plus the "collect a whole evaluation" and "download kept weights" helpers. */
import { readFileSync } from "node:fs";
import { open, rename, rm, type FileHandle } from "node:fs/promises";
import * as grpc from "@grpc/grpc-js";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { createClient, type CallOptions, type ServiceClient } from "../core/grpc.js";
import type { Secrets } from "../core/secrets.js";
import { ResearchError } from "../core/failure.js";
import {
  RunnerService,
  type EvalResult,
  type EvaluateEvent,
  type EvaluateRequestSchema,
  type WeightsRequestSchema,
} from "../proto/gen/research/v1/runner_pb.js";

export type RunnerClient = ServiceClient<(typeof RunnerService)["method"]>;

/**
 * With a deployment's secrets: TLS trusting only its CA, and its token on every call. The name
 * checked is the certificate's "localhost" whatever host the runner is on: the deployment's CA
 * signed one certificate, which every server of it presents, so a host name would prove nothing
 * more, and a runner on a node the secrets were not made on (a Slurm job) would be refused.
 */
export function connectRunner(address: string, secrets?: Secrets): RunnerClient {
  if (!secrets) return createClient(RunnerService, address, undefined, RECONNECT);
  return createClient(RunnerService, address, runnerCredentials(secrets), { ...RECONNECT, "grpc.ssl_target_name_override": "localhost" });
}

/**
 * A runner comes up seconds after its client is made (its workers import torch first), and
 * comes back seconds after a restart: grpc-js's default backoff (1 s, growing 1.6x up to
 * 120 s) kept a launch waiting 2 s after its runner listened, and would keep a restarted
 * runner's callers minutes. Reconnecting every 0.2-2 s costs a refused connect on loopback.
 */
const RECONNECT = { "grpc.initial_reconnect_backoff_ms": 200, "grpc.max_reconnect_backoff_ms": 2000 };

export function runnerCredentials(secrets: Secrets, token = secrets.runnerToken): grpc.ChannelCredentials {
  const bearer = grpc.credentials.createFromMetadataGenerator((_, done) => {
    const metadata = new grpc.Metadata();
    metadata.set("authorization", `Bearer ${token}`);
    done(null, metadata);
  });
  return grpc.credentials.combineChannelCredentials(grpc.credentials.createSsl(readFileSync(secrets.files.ca)), bearer);
}

/** Failures the runner itself answered with (a `failure` event): its evaluation has ended there. */
const answered = new WeakSet<ResearchError>();

/**
 * Whether the runner ended the evaluation with this failure. When it did not, the call broke (the
 * connection dropped, the stream stopped short) and the runner may still be training it: a
 * caller that moves it elsewhere would train it twice (swarm/runner-leases.ts).
 */
export function endedByRunner(err: ResearchError): boolean {
  return answered.has(err);
}

/** Whether the runner answers a Health call within `timeoutMs`: it is up, whatever became of a call to it. */
export function answers(client: RunnerClient, timeoutMs = 5_000): Promise<boolean> {
  return client.health({}, { timeoutMs }).then(
    () => true,
    () => false,
  );
}

/**
 * Runs one evaluation to its end. Resolves with the result; a trial failure
 * or an unreachable runner rejects with a labelled ResearchError. An error
 * `onEvent` throws is its own, never the runner's.
 */
export async function evaluateToResult(
  client: RunnerClient,
  req: MessageInitShape<typeof EvaluateRequestSchema>,
  onEvent: (e: EvaluateEvent) => void = () => {},
  opts?: CallOptions,
): Promise<EvalResult> {
  const events = client.evaluate(req, opts)[Symbol.asyncIterator]();
  try {
    for (;;) {
      let next: IteratorResult<EvaluateEvent>;
      try {
        next = await events.next();
      } catch (err) {
        throw ResearchError.from(err, "runner_unavailable");
      }
      if (next.done) throw new ResearchError("runner_unavailable", "the runner closed the stream without a result", "", { reason: "network" });
      const e = next.value;
      onEvent(e);
      if (e.event.case === "result") return e.event.value;
      if (e.event.case === "failure") {
        const failed = ResearchError.fromProto(e.event.value);
        answered.add(failed);
        throw failed;
      }
    }
  } finally {
    // Ends the call when the caller stops early (a result, or onEvent threw).
    await events.return?.();
  }
}

export interface SeedWeights {
  seed: number;
  path: string;
  bytes: number;
}

/**
 * Writes the weights a runner kept for a trial, one file per seed at
 * `pathOf(seed)`, as the chunks arrive (never a whole model in memory). A
 * file takes its name only once complete, and on any failure every file this
 * call wrote is removed: what it resolves with is all there is. Rejects with
 * invalid_config when the runner keeps none; runner_unavailable when the
 * runner is gone, fails, cuts the stream short or passes `opts.timeoutMs`;
 * crash when the local disk refuses the bytes.
 */
export async function downloadWeights(
  client: RunnerClient,
  req: MessageInitShape<typeof WeightsRequestSchema>,
  pathOf: (seed: number) => string,
  opts?: CallOptions,
): Promise<SeedWeights[]> {
  const done: SeedWeights[] = [];
  const written: string[] = [];
  let current: { seed: number; size: number; bytes: number; part: string; file: FileHandle } | undefined;
  const finish = async () => {
    if (!current) return;
    const { seed, size, bytes, part, file } = current;
    current = undefined;
    await file.close();
    if (bytes !== size) throw new ResearchError("runner_unavailable", `the weights of seed ${seed} ended at ${bytes} of ${size} bytes`);
    await rename(part, pathOf(seed));
    written.push(pathOf(seed));
    done.push({ seed, path: pathOf(seed), bytes });
  };
  try {
    for await (const chunk of client.fetchWeights(req, opts)) {
      if (current?.seed !== chunk.seed) {
        await finish();
        if (done.some((d) => d.seed === chunk.seed)) throw new ResearchError("runner_unavailable", `the runner sent seed ${chunk.seed}'s weights twice`);
        const part = `${pathOf(chunk.seed)}.part`;
        written.push(part);
        current = { seed: chunk.seed, size: Number(chunk.size), bytes: 0, part, file: await open(part, "w") };
      }
      await current!.file.write(chunk.data);
      current!.bytes += chunk.data.length;
    }
    await finish();
    if (!done.length) throw new ResearchError("runner_unavailable", "the runner ended the weights stream without sending any");
    return done;
  } catch (err) {
    await current?.file.close().catch(() => undefined);
    await Promise.all(written.map((path) => rm(path, { force: true })));
    throw ResearchError.from(err);
  }
}
