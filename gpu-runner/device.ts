/** --device as the runner and the CLIs that start one take it: here, not in server.ts, so a CLI's flag check does not load gRPC. */
export const RUNNER_DEVICES = ["auto", "cpu", "cuda"] as const;
export type RunnerDevice = (typeof RUNNER_DEVICES)[number];

export function parseDevice(text: string | undefined): { ok: true; device?: RunnerDevice } | { ok: false; error: string } {
  if (text === undefined) return { ok: true };
  if ((RUNNER_DEVICES as readonly string[]).includes(text)) return { ok: true, device: text as RunnerDevice };
  return { ok: false, error: `--device must be one of ${RUNNER_DEVICES.join(", ")}, got "${text}"` };
}
