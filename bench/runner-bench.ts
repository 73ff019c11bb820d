/**
 * Runner benchmark: evaluations end to end through gRPC against sandboxed
 * runners started here, as production runs them. Measures cold and warm
 * latency of the seed documents' three quick-evaluation cases, time to the
 * first training step, multi-seed scaling, and a reference CNN on full
 * Fashion-MNIST. How to read the numbers: bench/HISTORY.md, "Runner".
 *
 *   npx tsx bench/runner-bench.ts [--quick] [--short] [--slots N] [--fashion-dir DIR] [--out FILE]
 *
 * --quick skips the Fashion-MNIST run (minutes on a CPU); --short (the GPU
 * check's mode, scripts/gpu-check.sh) starts one runner for the three cases and
 * repeats less; --fashion-dir points at its IDX files where they are not in
 * /usr/share/datasets/fashion-mnist. On a CUDA runner the seed scaling and the
 * Fashion-MNIST run train the reference CNN in bf16 batches of 512 (what the
 * planner sends a GPU), and ResNet-9 trains 6 epochs with three seeds at once.
 * The default output, bench/results/runner-<device>-<cpus>core[-quick].json,
 * is named after the kind of machine rather than the hostname, which is
 * meaningless in containers.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, hostname, loadavg, tmpdir, totalmem } from "node:os";
import { dirname, join, resolve } from "node:path";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { cliConfig } from "../core/config.js";
import type { RunnerClient } from "../gpu-runner/client.js";
import { FASHION_CNN, mean, measure, median, r3, RESNET9, roundRun, since, withBenchRunner, type Run } from "./runner-harness.js";
import { Optimizer, Schedule, type EvaluateRequestSchema, type HealthResponse } from "../proto/gen/research/v1/runner_pb.js";

type Req = MessageInitShape<typeof EvaluateRequestSchema>;

const argv = process.argv.slice(2);
function option(name: string): string | undefined {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : argv.find((a) => a.startsWith(`${name}=`))?.slice(name.length + 1);
}
const QUICK = argv.includes("--quick");
const SHORT = argv.includes("--short");
const SLOTS = Number(option("--slots") ?? availableParallelism());
const OUT = option("--out");
const fashionDirArg = option("--fashion-dir");
const FASHION_DIR = fashionDirArg ? resolve(fashionDirArg) : undefined;
const { runnerPython: PYTHON } = cliConfig();
const WARM_REPEATS = SHORT ? 3 : 5;
const SCALING_REPEATS = SHORT ? 2 : 3;
const SCALING_SEEDS = [1, 3, 5];

// As reported by the seed documents for the same three cases; how they were timed is not stated.
const SEED_SECONDS = { a: 0.4, b: 1.1, c: 3.5 } as const;

const TINY_MLP = `
import torch.nn as nn

class TinyMLP(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, num_classes))

    def forward(self, x):
        return self.net(x)
`;

const CIFAR_CNN = `
import torch.nn as nn

class CifarCNN(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(32 * 8 * 8, num_classes),
        )

    def forward(self, x):
        return self.net(x)
`;

const DIGITS_CNN = `
import torch.nn as nn

class DigitsCNN(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(32 * 4 * 4, num_classes),
        )

    def forward(self, x):
        return self.net(x)
`;

interface QuickCase {
  id: keyof typeof SEED_SECONDS;
  title: string;
  request: (trialId: string) => Req;
}

function quickCases(cifarDir: string): QuickCase[] {
  const synthetic = (seeds: number) => (trialId: string): Req => ({
    trialId,
    model: { code: TINY_MLP, className: "TinyMLP" },
    dataset: { name: "synthetic", shape: [1, 8, 8], numClasses: 10, subset: 64, difficulty: 0.3 },
    recipe: { epochs: 1 },
    seeds,
    budget: { timeBudgetS: 120 },
  });
  return [
    { id: "a", title: "synthetic 64 samples, MLP, 1 seed", request: synthetic(1) },
    { id: "b", title: "synthetic 64 samples, MLP, 3 seeds", request: synthetic(3) },
    {
      id: "c",
      title: "CIFAR-10 format 300 samples, CNN, 2 seeds",
      request: (trialId) => ({
        trialId,
        model: { code: CIFAR_CNN, className: "CifarCNN" },
        dataset: { name: "cifar10", dataDir: cifarDir },
        recipe: { epochs: 1, batchSize: 64 },
        seeds: 2,
        budget: { timeBudgetS: 120 },
      }),
    },
  ];
}

/** A case's cold request (the first after `startupS` of runner start-up) and its warm repeats. */
async function coldAndWarm(c: QuickCase, client: RunnerClient, startupS: number, t0: number) {
  const cold = await measure(client, c.request(`bench-${c.id}-cold`));
  const coldTotalS = since(t0);
  const warm: Run[] = [];
  for (let i = 0; i < WARM_REPEATS; i++) warm.push(await measure(client, c.request(`bench-${c.id}-warm-${i}`)));
  const warmS = median(warm.map((r) => r.wallS));
  return {
    id: c.id,
    title: c.title,
    params: cold.params,
    seed_documents_s: SEED_SECONDS[c.id],
    cold: { startup_s: r3(startupS), first_result_s: r3(coldTotalS), request_s: r3(cold.wallS), run: roundRun(cold) },
    warm: {
      median_s: r3(warmS),
      min_s: r3(Math.min(...warm.map((r) => r.wallS))),
      max_s: r3(Math.max(...warm.map((r) => r.wallS))),
      median_started_s: r3(median(warm.map((r) => r.startedS ?? NaN))),
      median_first_step_s: r3(median(warm.map((r) => Math.max(...r.firstStepS)))),
      median_first_progress_s: r3(median(warm.map((r) => r.firstProgressS ?? NaN))),
      // Where the time goes: the slowest seed in its worker, the runner around the seeds, gRPC and the client.
      median_slowest_seed_s: r3(median(warm.map((r) => Math.max(...r.seedS)))),
      median_server_s: r3(median(warm.map((r) => r.serverS))),
      runs: warm.map(roundRun),
    },
    speedup_warm: r3(SEED_SECONDS[c.id] / warmS),
    speedup_cold: r3(SEED_SECONDS[c.id] / coldTotalS),
  };
}

/** Each case on a runner of its own, so every cold request is a runner's first; --short: one runner, only the first case cold. */
async function quickCaseRuns(cases: QuickCase[], dataRoots: string[]) {
  if (!SHORT) {
    const out = [];
    for (const c of cases) out.push(await withRunner(dataRoots, (client, startupS, t0) => coldAndWarm(c, client, startupS, t0)));
    return out;
  }
  return withRunner(dataRoots, async (client, startupS, t0) => {
    const out = [];
    for (const c of cases) out.push(await coldAndWarm(c, client, out.length ? 0 : startupS, out.length ? performance.now() : t0));
    return out;
  });
}

const digits = (seeds: number, epochs: number, trialId: string): Req => ({
  trialId,
  model: { code: DIGITS_CNN, className: "DigitsCNN" },
  dataset: { name: "digits" },
  recipe: { epochs, batchSize: 64, lr: 3e-3 },
  seeds,
  budget: { timeBudgetS: 300 },
});

/** The reference CNN on Fashion-MNIST as the planner sends it to a GPU: bf16, channels-last, batches of 512. */
const fashionOnGpu = (seeds: number, epochs: number, trialId: string): Req => ({
  trialId,
  model: { code: FASHION_CNN, className: "FashionCNN" },
  dataset: { name: "fashion-mnist", dataDir: FASHION_DIR ?? "" },
  recipe: { epochs, batchSize: 512, optimizer: Optimizer.ADAM, lr: 4e-3, amp: true, channelsLast: true },
  seeds,
  budget: { timeBudgetS: 600 },
});

async function scaling(client: RunnerClient, cuda: boolean) {
  // On a CPU, digits; on a GPU, whose small jobs take the CPU lane, one epoch of Fashion-MNIST.
  const job = cuda ? (seeds: number, id: string) => fashionOnGpu(seeds, 1, id) : (seeds: number, id: string) => digits(seeds, 3, id);
  // Every slot loads the dataset once into its worker's cache before anything is timed.
  await measure(client, job(SLOTS, "bench-scaling-warmup"));
  const rows = [];
  for (const seeds of SCALING_SEEDS) {
    const runs: Run[] = [];
    for (let i = 0; i < SCALING_REPEATS; i++) runs.push(await measure(client, job(seeds, `bench-scaling-${seeds}-${i}`)));
    const wallS = median(runs.map((r) => r.wallS));
    const rounds = Math.ceil(seeds / SLOTS);
    rows.push({
      seeds,
      rounds,
      median_wall_s: r3(wallS),
      wall_per_seed_s: r3(wallS / seeds),
      wall_per_round_s: r3(wallS / rounds),
      median_seed_s: r3(median(runs.flatMap((r) => r.seedS))),
      val_accuracy: r3(median(runs.map((r) => r.valAccuracy))),
      // The seeds each seed's job trained: 1 apart (a CPU's default), the trial's seeds together (a GPU's).
      seeds_together: Math.max(...runs[0]!.seedsTogether),
      // Why seeds asked to train together trained a process each ("" when they did not).
      seeds_apart: runs[0]!.seedsApart,
      runs: runs.map(roundRun),
    });
  }
  const workload = cuda
    ? "Fashion-MNIST full (54k train), reference BN CNN, 1 epoch, batch 512, bf16, channels-last, adam 4e-3"
    : "digits (1797 images, 10% validation), small BN CNN, 3 epochs, batch 64, adam 3e-3";
  return { workload, repeats: SCALING_REPEATS, rows, five_over_one: r3(rows[2]!.median_wall_s / rows[0]!.median_wall_s) };
}

/** Per-epoch seconds of each seed, epoch 1 counted from the first step (dataset loading is first_step_s). */
function epochSeconds(run: Run, seeds: number): number[][] {
  // Seeds are numbered from 0 here and seed_results come in seed order, so index i is seed i.
  return Array.from({ length: seeds }, (_, i) => {
    const ends = run.epochEnds.filter((e) => e.seed === i).sort((a, b) => a.epoch - b.epoch).map((e) => e.seconds);
    return ends.map((t, k) => r3(t - (k === 0 ? run.firstStepS[i]! : ends[k - 1]!)));
  });
}

async function fashion(client: RunnerClient, cuda: boolean) {
  const seeds = Math.min(2, SLOTS);
  const run = await measure(
    client,
    cuda
      ? fashionOnGpu(seeds, 3, "bench-fashion")
      : {
          trialId: "bench-fashion",
          model: { code: FASHION_CNN, className: "FashionCNN" },
          dataset: { name: "fashion-mnist", dataDir: FASHION_DIR ?? "" },
          recipe: { epochs: 3, batchSize: 128, optimizer: Optimizer.ADAM, lr: 2e-3 },
          seeds,
          budget: { timeBudgetS: 3600 },
        },
  );
  const epochS = epochSeconds(run, seeds);
  return {
    workload: `Fashion-MNIST full (54k train / 6k validation), BN CNN, 3 epochs, ${cuda ? "batch 512, bf16, channels-last, adam 4e-3" : "batch 128, adam 2e-3"}, ${seeds} seeds in parallel`,
    params: run.params,
    val_accuracy_mean: r3(run.valAccuracy),
    val_accuracy_ci95: run.valAccuracyCi95.map(r3),
    epoch_s: epochS,
    mean_epoch_s: r3(mean(epochS.flat())),
    first_step_s: run.firstStepS.map(r3),
    wall_s: r3(run.wallS),
    load1: r3(run.load1),
  };
}

/** ResNet-9 on a GPU, three seeds at once, as the planner's GPU template trains: its epoch and first step. */
async function resnet9(client: RunnerClient) {
  const run = await measure(client, {
    trialId: "bench-resnet9",
    model: { code: RESNET9, className: "ResNet9" },
    dataset: { name: "fashion-mnist", dataDir: FASHION_DIR ?? "" },
    recipe: { epochs: 6, batchSize: 512, optimizer: Optimizer.SGD, lr: 0.2, momentum: 0.9, nesterov: true, weightDecay: 5e-4, schedule: Schedule.ONECYCLE, labelSmoothing: 0.1, amp: true, channelsLast: true, augment: { hflip: true, cropPadding: 2 } },
    seeds: 3,
    budget: { timeBudgetS: 600 },
  });
  return {
    workload: "ResNet-9 (3.0M), Fashion-MNIST full, 3 seeds at once, 6 epochs, batch 512, bf16, channels-last, SGD one-cycle, flip + crop",
    params: run.params,
    epoch_s: epochSeconds(run, 3),
    steady_epoch_s: r3(median(epochSeconds(run, 3).flatMap((e) => e.slice(1)))),
    first_step_s: run.firstStepS.map(r3),
    val_accuracy: r3(run.valAccuracy),
    wall_s: r3(run.wallS),
    seeds_together: Math.max(...run.seedsTogether),
    seeds_apart: run.seedsApart,
  };
}

function table(headers: string[], rows: (string | number)[][]): string {
  const cells = [headers, ...rows.map((r) => r.map(String))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => r[i]!.length)));
  return cells.map((r) => r.map((c, i) => c.padStart(widths[i]!)).join("  ")).join("\n");
}

function machineName(health: HealthResponse): string {
  const device = health.device?.kind === "cuda" ? `cuda-${health.device.name.toLowerCase().replace(/[^a-z0-9]+/g, "-")}` : health.device?.kind ?? "unknown";
  return `${device}-${availableParallelism()}core${QUICK ? "-quick" : SHORT ? "-short" : ""}`;
}

const withRunner = <T>(dataRoots: string[], fn: (client: RunnerClient, startupS: number, t0: number) => Promise<T>) =>
  withBenchRunner({ slots: SLOTS, python: PYTHON, dataRoots }, fn);

const fixtures = mkdtempSync(join(tmpdir(), "runner-bench-data-"));
try {
  const load = [loadavg()];
  const log = (s: string) => process.stderr.write(`[runner-bench] ${s}\n`);
  execFileSync(PYTHON, [resolve("test/fixtures/make_datasets.py"), fixtures, "--cifar-n", "300"], { stdio: "inherit" });

  log(`cases: ${quickCases(join(fixtures, "cifar10")).map((c) => c.id).join(", ")} (cold, then ${WARM_REPEATS} warm${SHORT ? ", one runner" : ", a runner each"})`);
  const cases = await quickCaseRuns(quickCases(join(fixtures, "cifar10")), [fixtures]);

  const rest = await withRunner([fixtures, ...(FASHION_DIR ? [FASHION_DIR] : [])], async (client) => {
    const health = await client.health({});
    const cuda = health.device?.kind === "cuda";
    log(`scaling: ${SCALING_SEEDS.join("/")} seeds on ${SLOTS} slots`);
    const scale = await scaling(client, cuda);
    if (QUICK) return { health, scale, fmnist: null, resnet: null };
    log(`Fashion-MNIST reference CNN${cuda ? "" : " (minutes on a CPU)"}`);
    const fmnist = await fashion(client, cuda);
    if (!cuda) return { health, scale, fmnist, resnet: null };
    log("ResNet-9, 6 epochs, 3 seeds at once");
    return { health, scale, fmnist, resnet: await resnet9(client) };
  });
  load.push(loadavg());

  const report = {
    benchmark: "runner",
    date: new Date().toISOString(),
    mode: QUICK ? "quick" : SHORT ? "short" : "full",
    machine: {
      hostname: hostname(),
      cpus: availableParallelism(),
      cpu_model: cpus()[0]?.model ?? "",
      memory_gb: r3(totalmem() / 2 ** 30),
      node: process.version,
      device: rest.health.device?.kind ?? "",
      device_name: rest.health.device?.name ?? "",
      torch: rest.health.device?.torchVersion ?? "",
      sandboxed: rest.health.device?.sandboxed ?? false,
      slots: rest.health.slots,
      python: PYTHON,
    },
    load_average: { start: load[0]!.map(r3), end: load[1]!.map(r3) },
    quick_cases: cases,
    scaling: rest.scale,
    fashion_mnist: rest.fmnist,
    resnet9: rest.resnet,
  };
  const out = OUT ?? `bench/results/runner-${machineName(rest.health)}.json`;
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify(report, null, 2) + "\n");

  const m = report.machine;
  console.log(`\nRunner benchmark, ${report.date}: ${m.cpus} CPUs (${m.cpu_model}), ${m.device} ${m.device_name}, torch ${m.torch}, ${m.slots} slots, sandboxed ${m.sandboxed}`);
  console.log(`load average (1/5/15 min) at start ${report.load_average.start.join(" ")}, at end ${report.load_average.end.join(" ")}\n`);
  console.log(
    table(
      ["case", "seed docs s", "start-up s", "cold first result s", "warm median s", "warm min-max s", "speed-up warm", "load1"],
      cases.map((c) => [
        `${c.id}: ${c.title}`,
        c.seed_documents_s,
        c.cold.startup_s,
        c.cold.first_result_s,
        c.warm.median_s,
        `${c.warm.min_s}-${c.warm.max_s}`,
        `${c.speedup_warm}x`,
        c.warm.runs.map((r) => r.load1.toFixed(1)).join(" "),
      ]),
    ),
  );
  console.log("\nTime to first step (warm medians; cold in brackets)");
  console.log(
    table(
      ["case", "call -> started s", "worker first step s", "call -> first progress s"],
      cases.map((c) => [
        c.id,
        `${c.warm.median_started_s} (${c.cold.run.started_s})`,
        `${c.warm.median_first_step_s} (${Math.max(...c.cold.run.first_step_s)})`,
        `${c.warm.median_first_progress_s} (${c.cold.run.first_progress_s})`,
      ]),
    ),
  );
  console.log(`\nSeed scaling: ${rest.scale.workload}, median of ${rest.scale.repeats}`);
  console.log(
    table(
      ["seeds", "rounds", "wall s", "wall/seed s", "wall/round s", "per-seed s", "val acc"],
      rest.scale.rows.map((r) => [r.seeds, r.rounds, r.median_wall_s, r.wall_per_seed_s, r.wall_per_round_s, r.median_seed_s, r.val_accuracy]),
    ),
  );
  if (rest.fmnist) {
    const f = rest.fmnist;
    console.log(`\nFashion-MNIST: ${f.workload}, ${f.params} params`);
    console.log(
      `val accuracy ${f.val_accuracy_mean} (95% CI ${f.val_accuracy_ci95.join("-")}), ${f.mean_epoch_s} s per epoch per seed ` +
        `(${f.epoch_s.map((s) => s.join("/")).join(", ")}), first step after ${f.first_step_s.join("/")} s, wall ${f.wall_s} s`,
    );
  }
  console.log(`\nfive seeds / one seed: ${rest.scale.five_over_one}x`);
  for (const r of rest.scale.rows) if (r.seeds_apart) console.log(`${r.seeds} seeds trained a process each: ${r.seeds_apart}`);
  if (rest.resnet) {
    const r = rest.resnet;
    console.log(`\n${r.workload}: steady epoch ${r.steady_epoch_s} s a seed, first step ${r.first_step_s.join("/")} s, val ${r.val_accuracy}, wall ${r.wall_s} s`);
    if (r.seeds_apart) console.log(`its seeds trained a process each: ${r.seeds_apart}`);
  }
  console.log(`\nwrote ${out}`);
} finally {
  rmSync(fixtures, { recursive: true, force: true });
}
