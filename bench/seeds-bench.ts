/**
 * Seeds apart against seeds together (gpu-runner --seeds; python/stack.py Stack), side by side
 * on this machine: the wall time of one trial of 1 and of 5 seeds on the reference CNN and on
 * ResNet-9, for a runner of each placement with the same slots, and how far each seed's
 * validation accuracy moved between the two (seed for seed the same training to float rounding,
 * but for dropout, which draws for all seeds at once together: the reference CNN has some).
 * Issue 41's target, on a GPU: 5 seeds at most 1.3x one on the reference CNN, 1.5x on ResNet-9.
 *
 *   npx tsx bench/seeds-bench.ts [--fashion-dir DIR] [--repeats R] [--slots N] [--out FILE]
 *
 * On a GPU each trial trains one epoch of full Fashion-MNIST as the planner sends a GPU (batch
 * 512, bf16, channels-last where the seeds train apart); on a CPU one epoch of a subset (3,000
 * images for the CNN, 1,000 for ResNet-9, batch 128), which keeps it to about ten minutes on two
 * cores. The output, bench/results/seeds-<device>-<cpus>core.json, holds every timed run.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, hostname, loadavg } from "node:os";
import { dirname, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { cliConfig } from "../core/config.js";
import type { SeedPlacement } from "../gpu-runner/device.js";
import { Optimizer, Schedule, type EvaluateRequestSchema } from "../proto/gen/research/v1/runner_pb.js";
import { FASHION_CNN, measure, median, r3, RESNET9, roundRun, withBenchRunner, type Run } from "./runner-harness.js";

type Req = MessageInitShape<typeof EvaluateRequestSchema>;

const { values } = parseArgs({
  options: { "fashion-dir": { type: "string" }, repeats: { type: "string", default: "2" }, slots: { type: "string" }, out: { type: "string" } },
});
const FASHION_DIR = resolve(values["fashion-dir"] ?? "/usr/share/datasets/fashion-mnist");
const REPEATS = Number(values.repeats);
const SLOTS = Number(values.slots ?? availableParallelism());
const { runnerPython: PYTHON } = cliConfig();
const PLACEMENTS: SeedPlacement[] = ["apart", "together"];
const SEEDS = [1, 5];

interface Workload {
  id: "reference_cnn" | "resnet9";
  title: string;
  request: (seeds: number, trialId: string) => Req;
}

function workloads(cuda: boolean): Workload[] {
  const dataset = (subset: number) => ({ name: "fashion-mnist", dataDir: FASHION_DIR, subset: cuda ? 0 : subset });
  const gpu = cuda ? { batchSize: 512, amp: true, channelsLast: true } : { batchSize: 128 };
  return [
    {
      id: "reference_cnn",
      // Its dropout draws for all seeds at once when they train together: their accuracies move by more than rounding.
      title: `reference BN CNN (dropout 0.2), 1 epoch of ${cuda ? "full Fashion-MNIST, batch 512, bf16" : "3,000 Fashion-MNIST images, batch 128"}, adam`,
      request: (seeds, trialId) => ({ trialId, model: { code: FASHION_CNN, className: "FashionCNN" }, dataset: dataset(3000), recipe: { epochs: 1, optimizer: Optimizer.ADAM, lr: 3e-3, ...gpu }, seeds, budget: { timeBudgetS: 1800 } }),
    },
    {
      id: "resnet9",
      title: `ResNet-9 (3.0M), 1 epoch of ${cuda ? "full Fashion-MNIST, batch 512, bf16, SGD one-cycle to 0.2" : "1,000 Fashion-MNIST images, batch 128, SGD one-cycle to 0.05"}, flip + crop`,
      request: (seeds, trialId) => ({
        trialId,
        model: { code: RESNET9, className: "ResNet9" },
        dataset: dataset(1000),
        // On a CPU's 1,000 images (8 steps) the GPU's rate 0.2 leaves every seed at chance.
        recipe: { epochs: 1, optimizer: Optimizer.SGD, lr: cuda ? 0.2 : 0.05, momentum: 0.9, nesterov: true, weightDecay: 5e-4, schedule: Schedule.ONECYCLE, labelSmoothing: 0.1, augment: { hflip: true, cropPadding: 2 }, ...gpu },
        seeds,
        budget: { timeBudgetS: 1800 },
      }),
    },
  ];
}

const log = (s: string) => process.stderr.write(`[seeds-bench] ${s}\n`);
const load = [loadavg()];
let device = { kind: "", name: "", torch: "", slots: 0 };
const runs: Record<string, Record<string, Record<number, Run[]>>> = {};
for (const placement of PLACEMENTS) {
  await withBenchRunner({ slots: SLOTS, python: PYTHON, dataRoots: [FASHION_DIR], seeds: placement }, async (client) => {
    const health = await client.health({});
    device = { kind: health.device?.kind ?? "", name: health.device?.name ?? "", torch: health.device?.torchVersion ?? "", slots: health.slots };
    for (const w of workloads(device.kind === "cuda")) {
      // Each slot loads the dataset into its worker's cache before anything is timed.
      await measure(client, w.request(SLOTS, `warm-${placement}-${w.id}`));
      for (const seeds of SEEDS) {
        for (let i = 0; i < REPEATS; i++) {
          log(`${placement}: ${w.id}, ${seeds} seed(s), run ${i + 1} of ${REPEATS}`);
          const run = await measure(client, w.request(seeds, `${placement}-${w.id}-${seeds}-${i}`));
          (((runs[placement] ??= {})[w.id] ??= {})[seeds] ??= []).push(run);
        }
      }
    }
  });
}
load.push(loadavg());

const table = workloads(device.kind === "cuda").map((w) => {
  const wall = (p: string, n: number) => median(runs[p]![w.id]![n]!.map((r) => r.wallS));
  const five = (p: string) => runs[p]![w.id]![5]!;
  const placed = (p: SeedPlacement) => ({
    median_wall_s: Object.fromEntries(SEEDS.map((n) => [n, r3(wall(p, n))])) as Record<number, number>,
    five_over_one: r3(wall(p, 5) / wall(p, 1)),
    seeds_together: five(p)[0]!.seedsTogether,
    seeds_apart: five(p)[0]!.seedsApart,
    runs: Object.fromEntries(SEEDS.map((n) => [n, runs[p]![w.id]![n]!.map((r) => ({ ...roundRun(r), seed_val: r.seedVal.map(r3) }))])),
  });
  return {
    workload: w.id,
    title: w.title,
    apart: placed("apart"),
    together: placed("together"),
    // The same five seeds trained both ways: how far any seed's validation accuracy moved.
    max_seed_val_difference: r3(Math.max(...five("apart").flatMap((a, i) => a.seedVal.map((v, s) => Math.abs(v - five("together")[i]!.seedVal[s]!))))),
    together_five_over_apart_five: r3(wall("together", 5) / wall("apart", 5)),
  };
});

const report = {
  benchmark: "seeds",
  date: new Date().toISOString(),
  command: `npx tsx bench/seeds-bench.ts ${process.argv.slice(2).join(" ")}`.trim(),
  machine: { hostname: hostname(), cpus: availableParallelism(), cpu_model: cpus()[0]?.model ?? "", device: device.kind, device_name: device.name, torch: device.torch, slots: device.slots, python: PYTHON },
  load_average: { start: load[0]!.map(r3), end: load[1]!.map(r3) },
  repeats: REPEATS,
  targets: { reference_cnn: 1.3, resnet9: 1.5 },
  workloads: table,
};
const name = device.kind === "cuda" ? `cuda-${device.name.toLowerCase().replace(/[^a-z0-9]+/g, "-")}` : device.kind;
const out = values.out ?? `bench/results/seeds-${name}-${availableParallelism()}core.json`;
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, JSON.stringify(report, null, 2) + "\n");
for (const t of table) {
  const [a, g] = [t.apart, t.together];
  console.log(`${t.title}: apart 1 seed ${a.median_wall_s[1]} s, 5 seeds ${a.median_wall_s[5]} s (${a.five_over_one}x); together 1 seed ${g.median_wall_s[1]} s, 5 seeds ${g.median_wall_s[5]} s (${g.five_over_one}x); seeds' val moved at most ${t.max_seed_val_difference}`);
}
console.log(`wrote ${out}`);
