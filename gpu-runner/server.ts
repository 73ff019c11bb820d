/**
 * The gRPC adapter over the Evaluator, and the runner's lifecycle: start the
 * warm worker pool, serve, shut down. Also used in-process by the CLI and
 * the tests, so "a runner of its own" is the same code as the service.
 */
import * as grpc from "@grpc/grpc-js";
import { availableParallelism } from "node:os";
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { DEFAULT_PYTHON } from "../core/config.js";
import { addService } from "../core/grpc.js";
import { ResearchError } from "../core/failure.js";
import { ownTempDir } from "../core/process.js";
import type { RunnerDevice, SeedPlacement } from "./device.js";
import type { Logger } from "../core/logger.js";
import { tokenMatches, type Secrets } from "../core/secrets.js";
import { RunnerService } from "../proto/gen/research/v1/runner_pb.js";
import { Evaluator } from "./evaluator.js";
import { WeightStore } from "./weights.js";
import { WorkerPool } from "./pool.js";
import { checkSandbox, refereeLaunch, workerLaunch } from "./sandbox.js";
import { defaultSlots, FreeGpuMemory, listGpus } from "./gpus.js";

export const DEFAULT_DATA_ROOTS = ["/usr/share/datasets"];

export interface RunnerOptions {
  /** host:port to bind; port 0 picks a free one. */
  address?: string;
  slots?: number;
  /** Default DEFAULT_PYTHON; processes pass their RUNNER_PYTHON. */
  python?: string;
  dataRoots?: string[];
  /** Run untrusted code without bubblewrap. Only with an explicit opt-in. */
  unsafeNoSandbox?: boolean;
  /** auto (default): the GPUs when there are any; cpu: none, even on a GPU host; cuda: fail to start without one. */
  device?: RunnerDevice;
  /** Where a trial's seeds train (device.ts); auto (default): together on a GPU, apart on a CPU. */
  seeds?: SeedPlacement;
  /**
   * Where ended evaluations' answers and kept weights outlive this process, so that a runner
   * restarted on it answers a redelivered request without training again, and still has the
   * best trials' weights for the test confirmation. Without it, both live in scratch space and
   * go with the process.
   */
  stateDir?: string;
  /** Serve TLS with the deployment's certificate and refuse calls without its token (core/secrets.ts). */
  secrets?: Secrets;
  logger: Logger;
}


export interface RunningRunner {
  address: string;
  evaluator: Evaluator;
  close(): Promise<void>;
}

export async function startRunner(opts: RunnerOptions): Promise<RunningRunner> {
  const log = opts.logger;
  const sandbox = !opts.unsafeNoSandbox;
  if (sandbox) {
    const problem = checkSandbox();
    if (problem) {
      throw new ResearchError(
        "runner_unavailable",
        `${problem}. The runner refuses to execute untrusted model code without a sandbox; install bubblewrap, or pass --unsafe-no-sandbox if you trust every model it will run.`,
      );
    }
  } else log.warn("running WITHOUT a sandbox: model code runs with the runner's privileges");

  // Named with its pid: a runner that was killed leaves its scratch (and the weights it kept
  // without a state directory) behind, and the next one removes it.
  const scratchRoot = ownTempDir("runner-scratch", (dir, pid) => log.info({ dir, pid }, "removed the scratch of a runner that is gone"));
  const dataRoots = [...new Set([...DEFAULT_DATA_ROOTS, ...(opts.dataRoots ?? [])])];
  const gpus = opts.device === "cpu" ? [] : listGpus();
  const python = opts.python ?? DEFAULT_PYTHON;
  // What the referee publishes for the workers, and the labels it keeps from them.
  const publishedDir = join(scratchRoot, "published");
  const privateDir = join(scratchRoot, "labels");
  mkdirSync(publishedDir);
  mkdirSync(privateDir, { mode: 0o700 });
  const common = {
    launch: (scratchDir: string, visibleGpus: string | undefined) =>
      workerLaunch({ python, scratchDir, publishedDir, dataRoots, sandbox, visibleGpus }),
    sandbox,
    logger: log,
  };
  const slots = opts.slots ?? defaultSlots(gpus, availableParallelism());
  // A CPU runner hides the GPUs; with several, each slot is pinned to one. Summaries share the first.
  const pinned = opts.device === "cpu" ? 0 : gpus.length > 1 ? gpus.length : undefined;
  const free = pinned && pinned > 1 ? new FreeGpuMemory() : undefined;
  await free?.refresh();
  const pool = new WorkerPool({ ...common, name: "train", slots, gpus: pinned, freeMemory: free?.latest, scratchRoot: join(scratchRoot, "train") });
  const quick = new WorkerPool({ ...common, name: "quick", slots: 1, gpus: pinned && 1, scratchRoot: join(scratchRoot, "quick") });
  const referee = new WorkerPool({
    name: "referee",
    launch: () => refereeLaunch(python, publishedDir, privateDir),
    sandbox: false,
    slots: 1,
    scratchRoot: join(scratchRoot, "referee"),
    logger: log,
  });
  const release = async () => {
    await Promise.all([pool.close(), quick.close(), referee.close()]);
    rmSync(scratchRoot, { recursive: true, force: true });
  };
  const t0 = Date.now();
  const [device] = await Promise.all([pool.start(), referee.start()]).catch(async (err: unknown) => {
    await release();
    throw err;
  });
  if (opts.device === "cuda" && device.kind !== "cuda") {
    await release();
    throw new ResearchError("runner_unavailable", `--device cuda: ${python} sees no CUDA device (torch ${device.torch_version}, ${gpus.length} GPU(s) listed by nvidia-smi)`);
  }
  log.info({ slots: pool.stats().slots, device, sandbox, ms: Date.now() - t0 }, "workers ready");
  const weights = new WeightStore(join(opts.stateDir ?? scratchRoot, "weights"));
  const evaluator = new Evaluator({ pool, quick, referee, dataRoots, gpus, weights, stateDir: opts.stateDir, seeds: opts.seeds, logger: log });

  // An address that cannot be bound stops the workers too: nothing is left running.
  const { server, address } = await serve(evaluator, weights, opts).catch(async (err: unknown) => {
    await release();
    throw err;
  });
  log.info({ address }, "runner listening");
  return {
    address,
    evaluator,
    async close() {
      await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
      server.forceShutdown();
      await release();
    },
  };
}

/** The runner's gRPC service over `evaluator`, behind the deployment's TLS and token when it has secrets, bound to `opts.address`. */
async function serve(evaluator: Evaluator, weights: WeightStore, opts: RunnerOptions): Promise<{ server: grpc.Server; address: string }> {
  const server = new grpc.Server({ "grpc.max_receive_message_length": 64 * 1024 * 1024 });
  const secrets = opts.secrets;
  const authorize = (metadata: grpc.Metadata) => {
    if (!secrets) return true;
    const header = String(metadata.get("authorization")[0] ?? "");
    return header.startsWith("Bearer ") && tokenMatches(secrets, header.slice("Bearer ".length));
  };
  addService(
    server,
    RunnerService,
    {
      evaluate: (req, ctx) => evaluator.evaluateOnce(req, ctx.signal),
      summarize: (req, ctx) => evaluator.summarize(req, ctx.signal),
      describe: (req, ctx) => evaluator.describe(req, ctx.signal),
      runScript: (req, ctx) => evaluator.runScript(req, ctx.signal),
      health: async () => evaluator.health(),
      fetchWeights: (req) => weights.chunks(req.runId, req.trialId),
      cancel: async (req) => ({ cancelled: evaluator.flights.cancel(req.idempotencyKey) }),
    },
    authorize,
  );
  const credentials = secrets
    ? grpc.ServerCredentials.createSsl(null, [{ cert_chain: readFileSync(secrets.files.cert), private_key: readFileSync(secrets.files.key) }], false)
    : grpc.ServerCredentials.createInsecure();
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(opts.address ?? "127.0.0.1:0", credentials, (err, p) => (err ? reject(err) : resolve(p))),
  );
  const host = (opts.address ?? "127.0.0.1:0").split(":")[0] || "127.0.0.1";
  const address = `${host === "0.0.0.0" ? "127.0.0.1" : host}:${port}`;
  return { server, address };
}
