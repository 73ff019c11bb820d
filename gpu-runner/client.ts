/** Typed gRPC client for the runner, plus the "collect a whole evaluation" helper most callers want. */
import { readFileSync } from "node:fs";
import * as grpc from "@grpc/grpc-js";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { createClient, type CallOptions, type ServiceClient } from "../core/grpc.js";
import { loopbackServerName, type Secrets } from "../core/secrets.js";
import { ResearchError } from "../core/failure.js";
import {
  RunnerService,
  type EvalResult,
  type EvaluateEvent,
  type EvaluateRequestSchema,
} from "../proto/gen/research/v1/runner_pb.js";

export type RunnerClient = ServiceClient<(typeof RunnerService)["method"]>;

/** With a deployment's secrets: TLS trusting only its CA, and its token on every call. */
export function connectRunner(address: string, secrets?: Secrets): RunnerClient {
  if (!secrets) return createClient(RunnerService, address);
  const servername = loopbackServerName([address]);
  return createClient(RunnerService, address, runnerCredentials(secrets), servername ? { "grpc.ssl_target_name_override": servername } : {});
}

export function runnerCredentials(secrets: Secrets, token = secrets.runnerToken): grpc.ChannelCredentials {
  const bearer = grpc.credentials.createFromMetadataGenerator((_, done) => {
    const metadata = new grpc.Metadata();
    metadata.set("authorization", `Bearer ${token}`);
    done(null, metadata);
  });
  return grpc.credentials.combineChannelCredentials(grpc.credentials.createSsl(readFileSync(secrets.files.ca)), bearer);
}

/**
 * Runs one evaluation to its end. Resolves with the result; a trial failure
 * or an unreachable runner rejects with a labelled ResearchError.
 */
export async function evaluateToResult(
  client: RunnerClient,
  req: MessageInitShape<typeof EvaluateRequestSchema>,
  onEvent: (e: EvaluateEvent) => void = () => {},
  opts?: CallOptions,
): Promise<EvalResult> {
  try {
    for await (const e of client.evaluate(req, opts)) {
      onEvent(e);
      if (e.event.case === "result") return e.event.value;
      if (e.event.case === "failure") throw ResearchError.fromProto(e.event.value);
    }
  } catch (err) {
    throw ResearchError.from(err, "runner_unavailable");
  }
  throw new ResearchError("runner_unavailable", "the runner closed the stream without a result");
}
