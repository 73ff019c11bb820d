/** --device and --seeds as the runner and the CLIs that start one take them: here, not in server.ts, so a CLI's flag check does not load gRPC. */
export const RUNNER_DEVICES = ["auto", "cpu", "cuda"] as const;
export type RunnerDevice = (typeof RUNNER_DEVICES)[number];

/**
 * Where a trial's seeds train. "apart": a job each, side by side on free slots. "together": up to
 * request.ts DEFAULTS.maxTogether of them in one job (python/stack.py Stack: one process, one
 * CUDA context, the seeds' kernels as one batch, each seed's numbers those of its own job to float
 * rounding). "auto": together on a GPU, where a seed's own process costs a CUDA context and its
 * kernels leave the device mostly idle; apart on a CPU, where each slot's job has its own cores.
 */
export const SEED_PLACEMENTS = ["auto", "apart", "together"] as const;
export type SeedPlacement = (typeof SEED_PLACEMENTS)[number];

export function parseChoice<T extends string>(flag: string, choices: readonly T[], text: string | undefined): { ok: true; value?: T } | { ok: false; error: string } {
  if (text === undefined) return { ok: true };
  if ((choices as readonly string[]).includes(text)) return { ok: true, value: text as T };
  return { ok: false, error: `${flag} must be one of ${choices.join(", ")}, got "${text}"` };
}

export function parseDevice(text: string | undefined): { ok: true; device?: RunnerDevice } | { ok: false; error: string } {
  const parsed = parseChoice("--device", RUNNER_DEVICES, text);
  return parsed.ok ? { ok: true, device: parsed.value } : parsed;
}
