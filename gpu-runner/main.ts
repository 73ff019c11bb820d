/**
 * The runner as a standalone service:
 *   tsx gpu-runner/main.ts [--address 0.0.0.0:50051] [--slots N] [--device auto|cpu|cuda] [--seeds auto|apart|together] [--data-root DIR]... [--state-dir DIR] [--unsafe-no-sandbox] [--announce [--for-run RUN_ID]]
 * Prints one line "runner listening on HOST:PORT" on stdout when ready.
 */
import { hostname } from "node:os";
import { parseArgs } from "node:util";
import { runnerConfig } from "../core/config.js";
import { announceRunner, connectBus } from "../bus/index.js";
import { createLogger, setLogLevel } from "../core/logger.js";
import { exitWithParent } from "../core/process.js";
import { loadSecrets } from "../core/secrets.js";
import { parseChoice, parseDevice, SEED_PLACEMENTS } from "./device.js";
import { startRunner } from "./server.js";

const { values } = parseArgs({
  options: {
    address: { type: "string" },
    slots: { type: "string" },
    device: { type: "string" },
    seeds: { type: "string" },
    python: { type: "string" },
    "data-root": { type: "string", multiple: true },
    "state-dir": { type: "string" },
    "unsafe-no-sandbox": { type: "boolean" },
    announce: { type: "boolean" },
    "for-run": { type: "string" },
    help: { type: "boolean", short: "h" },
  },
});
if (values.help) {
  process.stdout.write(
    "gpu-runner: gRPC evaluation service\n  --address HOST:PORT (default 127.0.0.1:50051, env RUNNER_ADDRESS)\n  --slots N (default: the CPU count; on a GPU host one per 10 GiB of GPU memory, at most 8 per GPU and the CPU count)\n  --device auto|cpu|cuda (default auto: the GPUs when there are any; cuda: refuse to start without one)\n  --seeds auto|apart|together (default auto: a trial's seeds train together in one process on a GPU, apart in a job each on a CPU)\n  --python PATH (default: RUNNER_PYTHON, else the project's .venv/bin/python, else /usr/bin/python3)\n  --data-root DIR (repeatable; datasets are only read from these and /usr/share/datasets)\n  --state-dir DIR (ended evaluations' answers and kept weights outlive a restart there, for a day; default: none, they go with the process)\n  --unsafe-no-sandbox (run model code without bubblewrap)\n  --announce (join the swarm at NATS_URL: its agents find this runner there, by this host's name when it listens on 0.0.0.0; what a Slurm job runs, where nobody knows the node or port beforehand: give --address 0.0.0.0:0)\n  --for-run RUN_ID (with --announce: take only that run's trials, as a run's own Slurm jobs under serve do)\nWith RESEARCH_SECRETS set it serves TLS and refuses calls without the deployment's token (docs/DEPLOY.md).\n",
  );
  process.exit(0);
}
const device = parseDevice(values.device);
if (!device.ok) {
  process.stderr.write(`gpu-runner: ${device.error}\n`);
  process.exit(1);
}
const seeds = parseChoice("--seeds", SEED_PLACEMENTS, values.seeds);
if (!seeds.ok) {
  process.stderr.write(`gpu-runner: ${seeds.error}\n`);
  process.exit(1);
}
if (values.slots !== undefined && !(Number.isInteger(Number(values.slots)) && Number(values.slots) >= 1)) {
  process.stderr.write(`gpu-runner: --slots must be a positive integer, got "${values.slots}"\n`);
  process.exit(1);
}
// First, so a launcher that dies while the workers start is followed too (a runner once outlived its bench harness).
exitWithParent();
const config = runnerConfig({ address: values.address, python: values.python });
setLogLevel(config.logLevel);
const log = createLogger("gpu-runner");
try {
  const secrets = config.secretsDir ? loadSecrets(config.secretsDir) : undefined;
  const runner = await startRunner({
    address: config.address,
    slots: values.slots ? Number(values.slots) : undefined,
    python: config.python,
    device: device.device,
    seeds: seeds.value,
    dataRoots: values["data-root"],
    stateDir: values["state-dir"],
    unsafeNoSandbox: values["unsafe-no-sandbox"],
    secrets,
    logger: log,
  });
  process.stdout.write(`runner listening on ${runner.address}\n`);
  const announced = values.announce ? await announce(runner.address, secrets) : undefined;
  const stop = async () => {
    log.info("shutting down");
    // Out of the registry first: no new call comes while the ones under way end.
    await announced?.stop();
    await runner.close();
    process.exit(0);
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
} catch (err) {
  log.fatal({ err: (err as Error).message }, "runner failed to start");
  process.stderr.write(`gpu-runner: ${(err as Error).message}\n`);
  process.exit(1);
}

/** Into the bus's runner registry (bus/runner-registry.ts) under the address the agents reach it at. */
async function announce(listening: string, secrets: ReturnType<typeof loadSecrets> | undefined) {
  const bound = config.address.slice(0, config.address.lastIndexOf(":"));
  const host = ["0.0.0.0", "[::]", ""].includes(bound) ? hostname() : bound;
  const address = `${host}:${listening.slice(listening.lastIndexOf(":") + 1)}`;
  const bus = await connectBus({ servers: config.natsServers, name: `gpu-runner@${address}`, logger: log, replicas: config.streamReplicas, secrets });
  const entry = await announceRunner(bus, { address, job: process.env.SLURM_JOB_ID ?? "", run: values["for-run"] ?? "" }, config.streamReplicas);
  log.info({ address, job: process.env.SLURM_JOB_ID, run_id: values["for-run"] }, "runner announced on the bus");
  return {
    stop: async () => {
      await entry.stop();
      await bus.close();
    },
  };
}
