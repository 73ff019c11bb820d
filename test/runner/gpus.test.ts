import { describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { createLogger } from "../../core/logger.js";
import { ResearchError } from "../../core/failure.js";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Evaluator } from "../../gpu-runner/evaluator.js";
import { defaultSlots, FreeGpuMemory, freeGpuMemory, parseNvidiaSmi, pickSlot } from "../../gpu-runner/gpus.js";
import { WorkerPool } from "../../gpu-runner/pool.js";
import { WeightStore } from "../../gpu-runner/weights.js";
import { workerLaunch } from "../../gpu-runner/sandbox.js";
import { startRunner } from "../../gpu-runner/server.js";
import { DEFAULT_PYTHON } from "../../core/config.js";

const H100 = "NVIDIA H100 80GB HBM3, 81559\n";

describe("GPU host sizing", () => {
  it("reads nvidia-smi's CSV, and nothing from an empty or garbled one", () => {
    expect(parseNvidiaSmi(H100 + "NVIDIA A10G, 23028\n")).toEqual([
      { name: "NVIDIA H100 80GB HBM3", memoryMb: 81559 },
      { name: "NVIDIA A10G", memoryMb: 23028 },
    ]);
    expect(parseNvidiaSmi("")).toEqual([]);
    expect(parseNvidiaSmi("No devices were found\n")).toEqual([]);
  });

  it("places a job on the GPU with the most free memory, as nvidia-smi reads it, warm slots first among equals", async () => {
    // An 8-GPU host as a stand-in nvidia-smi reports it: GPU 5 the emptiest, 2 and 6 tied behind it.
    const bin = mkdtempSync(join(tmpdir(), "nvidia-smi-"));
    const free = [1200, 30000, 64000, 8000, 512, 70000, 64000, 40000];
    writeFileSync(join(bin, "nvidia-smi"), `#!/bin/sh\ncase "$*" in *memory.free*) printf '${free.join("\\n")}\\n' ;; *) exit 9 ;; esac\n`);
    chmodSync(join(bin, "nvidia-smi"), 0o755);
    const path = process.env.PATH;
    process.env.PATH = `${bin}:${path}`;
    try {
      expect(await freeGpuMemory()).toEqual(free);
      // A job's look at the reading never waits on nvidia-smi: none before the first read, the last one after.
      const reading = new FreeGpuMemory(freeGpuMemory, 60_000);
      expect(reading.latest()).toEqual([]);
      await reading.refresh();
      expect(reading.latest()).toEqual(free);
    } finally {
      process.env.PATH = path;
      rmSync(bin, { recursive: true, force: true });
    }
    // 16 slots over 8 GPUs (slot i on GPU i % 8), all idle: a slot on GPU 5.
    const slots = Array.from({ length: 16 }, (_, i) => ({ gpu: i % 8, warm: i < 3 }));
    expect(slots[pickSlot(slots, free)]!.gpu).toBe(5);
    // GPU 5's slots busy: GPUs 2 and 6 tie, and slot 2 is warm where 6, 10 and 14 are not.
    const rest = slots.filter((s) => s.gpu !== 5);
    expect(rest[pickSlot(rest, free)]).toEqual({ gpu: 2, warm: true });
    // No reading (a CPU host, one GPU, nvidia-smi gone): the first warm slot, else the first.
    expect(pickSlot([{ warm: false }, { warm: true }, { warm: true }], [])).toBe(1);
    expect(pickSlot([{ warm: false }, { warm: false }], [])).toBe(0);
  });

  it("sizes slots by GPU memory, bounded by the CPUs to drive them; a CPU host gets one per CPU", () => {
    expect(defaultSlots(parseNvidiaSmi(H100), 16)).toBe(7);
    expect(defaultSlots(parseNvidiaSmi(H100), 4)).toBe(4);
    expect(defaultSlots(parseNvidiaSmi("T4, 15360\nT4, 15360\n"), 16)).toBe(2);
    expect(defaultSlots(parseNvidiaSmi("GH200, 97871\n"), 64)).toBe(8);
    expect(defaultSlots([], 2)).toBe(2);
  });

  it("pins a worker to one GPU, or hides them all, through CUDA_VISIBLE_DEVICES", () => {
    const base = { python: "/usr/bin/python3", scratchDir: "/tmp/x", publishedDir: "/tmp/p", dataRoots: [], sandbox: true };
    const env = (visibleGpus?: string) => {
      const args = workerLaunch({ ...base, visibleGpus }).args;
      const i = args.findIndex((a, k) => a === "--setenv" && args[k + 1] === "CUDA_VISIBLE_DEVICES");
      return i < 0 ? undefined : args[i + 2];
    };
    expect(env("1")).toBe("1");
    expect(env("")).toBe("");
    expect(env(undefined)).toBeUndefined();
    expect(workerLaunch({ ...base, sandbox: false, visibleGpus: "" }).env.CUDA_VISIBLE_DEVICES).toBe("");
  });
});

it("Health names the GPU from nvidia-smi, which a fork server cannot ask CUDA for, and splits its memory between the slots", () => {
  const logger = createLogger("test-gpus");
  logger.level = "silent";
  const scratch = mkdtempSync(join(tmpdir(), "gpus-test-"));
  try {
    // A pool never started: its workers' report is what a CUDA host's fork servers send (trainer's accel.probe).
    const pool = new WorkerPool({ name: "train", slots: 8, sandbox: true, gpus: 1, scratchRoot: scratch, logger, launch: () => ({ command: "false", args: [], env: {} }) });
    pool.device = { kind: "cuda", name: "cuda", torch_version: "2.11.0+cu130" };
    const evaluator = new Evaluator({ pool, quick: pool, referee: pool, dataRoots: [], weights: new WeightStore(scratch), gpus: parseNvidiaSmi(H100), logger });
    const device = evaluator.health().device!;
    expect(device.name).toBe("NVIDIA H100 80GB HBM3");
    expect([device.kind, device.gpus, device.gpuMemoryMb]).toEqual(["cuda", 1, 81559n]);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
});

it("a runner asked for CUDA on a host without it refuses to start, and leaves no worker behind", async () => {
  const logger = createLogger("test-gpus");
  logger.level = "silent";
  const err = await startRunner({ slots: 1, device: "cuda", logger }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ResearchError);
  expect((err as ResearchError).message).toMatch(/^--device cuda: .* sees no CUDA device \(torch /);
  expect(String((err as ResearchError).message)).toContain(DEFAULT_PYTHON);
  const zygotes = execFileSync("ps", ["-eo", "ppid,args"], { encoding: "utf8" })
    .split("\n")
    .filter((l) => l.includes("zygote.py") && l.trim().split(/\s+/)[0] === String(process.pid));
  expect(zygotes).toEqual([]);
});
