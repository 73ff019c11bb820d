/** Small formatting and argument helpers shared by the CLIs. */
import { pct } from "../core/format.js";
import type { EvaluateEvent } from "../proto/gen/research/v1/runner_pb.js";

/** "0.9", "90" and "90%" all mean 0.9. */
export function parseFraction(text: string): number | undefined {
  const n = Number(text.trim().replace(/%$/, ""));
  if (!Number.isFinite(n) || n <= 0) return undefined;
  const f = n > 1 || text.trim().endsWith("%") ? n / 100 : n;
  return f <= 1 ? f : undefined;
}

export function parsePositiveInt(text: string): number | undefined {
  const n = Number(text);
  return Number.isInteger(n) && n > 0 ? n : undefined;
}

/** 0 included, up to the largest uint32 (a seed on the wire). */
export function parseSeed(text: string): number | undefined {
  const n = Number(text);
  return text.trim() !== "" && Number.isInteger(n) && n >= 0 && n <= 0xffffffff ? n : undefined;
}

/** Live progress of one evaluation on stderr: one line per epoch per seed. */
export class Progress {
  private readonly t0 = Date.now();
  constructor(private readonly enabled: boolean) {}

  private write(line: string): void {
    if (this.enabled) process.stderr.write(`[${((Date.now() - this.t0) / 1000).toFixed(1).padStart(6)}s] ${line}\n`);
  }

  onEvent(e: EvaluateEvent): void {
    const ev = e.event;
    if (ev.case === "started") {
      this.write(`started ${ev.value.seeds} seeds on ${ev.value.device?.kind}${ev.value.device?.sandboxed ? " (sandboxed)" : ""}`);
    } else if (ev.case === "progress") {
      const p = ev.value;
      this.write(
        `seed ${p.seed} epoch ${p.epoch}/${p.epochs}  train_loss ${p.trainLoss.toFixed(4)}  val_acc ${pct(p.valAccuracy)}  val_loss ${p.valLoss.toFixed(4)}`,
      );
    } else if (ev.case === "seedFinished") {
      this.write(`seed ${ev.value.seed} done: val_acc ${pct(ev.value.valAccuracy)} in ${ev.value.seconds.toFixed(1)} s`);
    }
  }
}
