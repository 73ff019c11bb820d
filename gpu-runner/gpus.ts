/**
 * The host's NVIDIA GPUs as nvidia-smi lists them, read by the runner itself
 * (outside the sandbox, without initialising CUDA), and the slot count they
 * suggest. A host without nvidia-smi has none.
 */
import { execFileSync } from "node:child_process";

export interface Gpu {
  name: string;
  memoryMb: number;
}

/** `nvidia-smi --query-gpu=name,memory.total --format=csv,noheader,nounits` output. */
export function parseNvidiaSmi(csv: string): Gpu[] {
  return csv
    .split("\n")
    .map((line) => line.split(",").map((f) => f.trim()))
    .filter((f) => f.length >= 2 && f[0] && Number(f[1]) > 0)
    .map(([name, memory]) => ({ name: name!, memoryMb: Number(memory) }));
}

/** Free memory of each GPU now (MB), in nvidia-smi's order; none where it cannot say. */
export function freeGpuMemory(): number[] {
  try {
    const out = execFileSync("nvidia-smi", ["--query-gpu=memory.free", "--format=csv,noheader,nounits"], { encoding: "utf8", timeout: 5_000, stdio: ["ignore", "pipe", "ignore"] });
    return out.split("\n").filter((l) => l.trim()).map(Number).filter(Number.isFinite);
  } catch {
    return [];
  }
}

/**
 * Which idle slot a job takes: on a host with several GPUs, one on the GPU with the most free
 * memory (another process's allocation counts: the host may be shared); among those, a warm
 * worker before one that has not started, then the lowest slot. Without a reading of free memory
 * (or one GPU), the first warm idle slot, then the first idle one. Indexes into `idle`.
 */
export function pickSlot(idle: { gpu?: number; warm: boolean }[], free: number[]): number {
  const memory = (s: { gpu?: number }) => (s.gpu === undefined ? 0 : (free[s.gpu] ?? 0));
  let best = 0;
  for (let i = 1; i < idle.length; i++) {
    const [a, b] = [idle[i]!, idle[best]!];
    if (memory(a) > memory(b) || (memory(a) === memory(b) && a.warm && !b.warm)) best = i;
  }
  return best;
}

export function listGpus(): Gpu[] {
  try {
    const out = execFileSync("nvidia-smi", ["--query-gpu=name,memory.total", "--format=csv,noheader,nounits"], { encoding: "utf8", timeout: 10_000, stdio: ["ignore", "pipe", "ignore"] });
    return parseNvidiaSmi(out);
  } catch {
    return [];
  }
}

/** GPU memory a slot is sized for: one seed of the models a search tries fits many times over. */
export const GPU_SLOT_MB = 10 * 1024;
const MAX_SLOTS_PER_GPU = 8;

/**
 * Slots when none are asked for: one per CPU on a CPU host; on a GPU host one
 * per GPU_SLOT_MB of each GPU (seeds side by side on one GPU cost little more
 * than one), at most 8 per GPU and never more than CPUs to drive them.
 */
export function defaultSlots(gpus: Gpu[], cpus: number): number {
  if (gpus.length === 0) return Math.max(1, cpus);
  const perGpu = gpus.map((g) => Math.min(MAX_SLOTS_PER_GPU, Math.max(1, Math.floor(g.memoryMb / GPU_SLOT_MB))));
  return Math.max(1, Math.min(cpus, perGpu.reduce((a, b) => a + b, 0)));
}
