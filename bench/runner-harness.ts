/**
 * What the runner benchmarks share: the models they train, one timed evaluation through gRPC
 * (`measure`), and a sandboxed runner started for a benchmark and closed after it.
 */
import { loadavg } from "node:os";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { createLogger } from "../core/logger.js";
import { connectRunner, evaluateToResult, type RunnerClient } from "../gpu-runner/client.js";
import { startRunner } from "../gpu-runner/server.js";
import type { SeedPlacement } from "../gpu-runner/device.js";
import type { EvaluateRequestSchema } from "../proto/gen/research/v1/runner_pb.js";

type Req = MessageInitShape<typeof EvaluateRequestSchema>;

// ResNet-9 at width 64 (3.0M parameters), the shape of the planner's resnet9 template on a GPU.
export const RESNET9 = `
import torch.nn as nn

def cbr(cin, cout):
    return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()]

class Residual(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.body = nn.Sequential(*cbr(c, c), *cbr(c, c))

    def forward(self, x):
        return x + self.body(x)

class ResNet9(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.net = nn.Sequential(
            *cbr(1, 64), *cbr(64, 128), nn.MaxPool2d(2), Residual(128),
            *cbr(128, 256), nn.MaxPool2d(2), Residual(256),
            *cbr(256, 512), nn.MaxPool2d(2),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, num_classes),
        )

    def forward(self, x):
        return self.net(x)
`;

export const FASHION_CNN = `
import torch.nn as nn

def block(cin, cout):
    return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()]

class FashionCNN(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.net = nn.Sequential(
            *block(1, 24), nn.MaxPool2d(2),
            *block(24, 48), nn.MaxPool2d(2),
            *block(48, 96), nn.MaxPool2d(2),
            nn.Flatten(), nn.Dropout(0.2), nn.Linear(96 * 3 * 3, num_classes),
        )

    def forward(self, x):
        return self.net(x)
`;

export interface Run {
  /** Client side, from the Evaluate call. */
  wallS: number;
  startedS: number | null;
  firstProgressS: number | null;
  /** Worker side: from the job reaching its worker to the end of the first optimiser step, per seed. */
  firstStepS: number[];
  seedS: number[];
  serverS: number;
  valAccuracy: number;
  valAccuracyCi95: number[];
  params: number;
  epochEnds: { seed: number; epoch: number; seconds: number }[];
  load1: number;
  /** Each seed's validation accuracy and the seeds its job trained (itself included), in seed order. */
  seedVal: number[];
  seedsTogether: number[];
  /** Why seeds asked to train together trained apart, or "". */
  seedsApart: string;
}

export const since = (t0: number) => (performance.now() - t0) / 1000;
export const r3 = (x: number) => Math.round(x * 1000) / 1000;
export const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export async function measure(client: RunnerClient, req: Req): Promise<Run> {
  const load1 = loadavg()[0]!;
  let startedS: number | null = null;
  let firstProgressS: number | null = null;
  const epochEnds: Run["epochEnds"] = [];
  const t0 = performance.now();
  const result = await evaluateToResult(client, req, (e) => {
    if (e.event.case === "started") startedS ??= since(t0);
    if (e.event.case === "progress") {
      firstProgressS ??= since(t0);
      epochEnds.push({ seed: e.event.value.seed, epoch: e.event.value.epoch, seconds: e.event.value.seconds });
    }
  });
  const wallS = since(t0);
  const acc = result.aggregated.val_accuracy;
  return {
    wallS,
    startedS,
    firstProgressS,
    firstStepS: result.seedResults.map((s) => s.secondsToFirstStep),
    seedS: result.seedResults.map((s) => s.seconds),
    serverS: result.seconds,
    valAccuracy: acc?.mean ?? 0,
    valAccuracyCi95: acc?.ci95 ?? [],
    params: Number(result.params),
    epochEnds,
    load1,
    seedVal: result.seedResults.map((s) => s.metrics.val_accuracy ?? 0),
    seedsTogether: result.seedResults.map((s) => s.seedsTogether),
    seedsApart: result.seedsApart,
  };
}

/** A sandboxed runner for `fn`, closed after it; `fn` gets its client, its start-up seconds and when it started. */
export async function withBenchRunner<T>(
  opts: { slots: number; python: string; dataRoots: string[]; seeds?: SeedPlacement },
  fn: (client: RunnerClient, startupS: number, t0: number) => Promise<T>,
): Promise<T> {
  const logger = createLogger("runner-bench");
  logger.level = "warn";
  const t0 = performance.now();
  const runner = await startRunner({ ...opts, logger });
  const startupS = since(t0);
  const client = connectRunner(runner.address);
  try {
    return await fn(client, startupS, t0);
  } finally {
    client.close();
    await runner.close();
  }
}

export function roundRun(r: Run) {
  return {
    wall_s: r3(r.wallS),
    started_s: r.startedS === null ? null : r3(r.startedS),
    first_progress_s: r.firstProgressS === null ? null : r3(r.firstProgressS),
    first_step_s: r.firstStepS.map(r3),
    seed_s: r.seedS.map(r3),
    server_s: r3(r.serverS),
    val_accuracy: r3(r.valAccuracy),
    load1: r3(r.load1),
  };
}

