import type { LlmRole } from "./config.js";

/**
 * Tokens, time and money spent by one role (or one call). `calls` counts HTTP
 * requests, retries included; `failures` counts requests that gave nothing
 * usable (an HTTP or network error, a timeout, a refusal, an answer that did
 * not parse or validate).
 */
export interface Usage {
  role: LlmRole;
  model: string;
  promptTokens: number;
  completionTokens: number;
  latencyMs: number;
  costUsd: number;
  calls: number;
  failures: number;
}

export function emptyUsage(role: LlmRole, model: string): Usage {
  return { role, model, promptTokens: 0, completionTokens: 0, latencyMs: 0, costUsd: 0, calls: 0, failures: 0 };
}

type Counts = Omit<Usage, "role" | "model">;

function addCounts<T extends Counts>(a: T, b: Counts): T {
  a.promptTokens += b.promptTokens;
  a.completionTokens += b.completionTokens;
  a.latencyMs += b.latencyMs;
  a.costUsd += b.costUsd;
  a.calls += b.calls;
  a.failures += b.failures;
  return a;
}

/** Adds `b` into `a` in place; a role served by two models reports both names. */
export function addUsage(a: Usage, b: Omit<Usage, "role">): Usage {
  if (!a.model.split("+").includes(b.model)) a.model = `${a.model}+${b.model}`;
  return addCounts(a, b);
}

/** Per-role totals for a run; shared by every client of the run so a snapshot is the whole bill. */
export class LlmUsageLedger {
  private readonly byRole = new Map<LlmRole, Usage>();

  record(usage: Usage): void {
    const current = this.byRole.get(usage.role);
    if (current) addUsage(current, usage);
    else this.byRole.set(usage.role, { ...usage });
  }

  /** Copies, so callers can keep them while the ledger keeps counting. */
  snapshot(): Usage[] {
    return [...this.byRole.values()].map((u) => ({ ...u }));
  }

  forRole(role: LlmRole): Usage | undefined {
    const u = this.byRole.get(role);
    return u ? { ...u } : undefined;
  }

  total(): Counts {
    const sum: Counts = { promptTokens: 0, completionTokens: 0, latencyMs: 0, costUsd: 0, calls: 0, failures: 0 };
    for (const u of this.byRole.values()) addCounts(sum, u);
    return sum;
  }
}
