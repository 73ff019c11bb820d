/**
 * The host's NVIDIA GPUs as nvidia-smi lists them, read by the runner itself
 * (outside the sandbox, without initialising CUDA), and the slot count they
 * suggest. A host without nvidia-smi has none.
 */
import { execFile, execFileSync } from "node:child_process";
import { promisify } from "node:util";

const execFileAsync = promisify(execFile);

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
export async function freeGpuMemory(): Promise<number[]> {
  try {
    const { stdout } = await execFileAsync("nvidia-smi", ["--query-gpu=memory.free", "--format=csv,noheader,nounits"], { encoding: "utf8", timeout: 5_000 });
    return stdout.split("\n").filter((l) => l.trim()).map(Number).filter(Number.isFinite);
  } catch {
    return [];
  }
}

/**
 * The GPUs' free memory as last read, for the slot a job takes: reading it is a process start
 * (tens of ms, more on a busy host), so a job never waits on it; each look at a reading older
 * than `maxAgeMs` starts a new one in the background. None until the first read completes.
 */
export class FreeGpuMemory {
  private reading: number[] = [];
  private readAtMs = 0;
  private pending?: Promise<void>;

  constructor(
    private readonly read: () => Promise<number[]> = freeGpuMemory,
    private readonly maxAgeMs = 1_000,
  ) {}

  latest = (): number[] => {
    if (Date.now() - this.readAtMs > this.maxAgeMs) void this.refresh();
    return this.reading;
  };

  /** A new reading; one at a time (a call while one runs waits for that one). */
  refresh(): Promise<void> {
    this.pending ??= this.read()
      .then((r) => {
        this.reading = r;
        this.readAtMs = Date.now();
      })
      .finally(() => (this.pending = undefined));
    return this.pending;
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
