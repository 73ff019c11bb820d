/**
 * The machine a TypeScript benchmark's result came from: bench/machine.py's fingerprint (the CPU's
 * native bf16 and AVX-512, torch, a calibration step) beside what Node sees.
 */
import { execFileSync } from "node:child_process";
import { cpus, release, totalmem } from "node:os";

export function machineFingerprint(python = ".venv/bin/python"): Record<string, unknown> {
  const measured = JSON.parse(execFileSync(python, ["bench/machine.py"], { encoding: "utf8" })) as Record<string, unknown>;
  return { ...measured, cpu_model: cpus()[0]?.model, memory_gib: Math.round(totalmem() / 2 ** 30), kernel: release() };
}
