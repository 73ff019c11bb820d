/**
 * The runners of RUNNER_ADDRESS and those that join over the bus (bus/runner-registry.ts: Slurm
 * jobs), picked by their health rather than in turn. A run with runners of its own (its Slurm
 * jobs under `serve`, which asked for their GPUs) trains on those alone, and they on it alone;
 * the other runners take every other run's calls.
 *
 * With more than one runner, each is asked for its `Health` every few seconds
 * (a unary call, answered from counters). A call goes to the runner with the
 * most free slots net of its queue, less the calls this process sent it since
 * that runner last answered; a runner that did not answer is passed over
 * until it does, unless none answers. A trial whose runner dies mid-way fails
 * `runner_unavailable`, which the bus redelivers (ResearchError.retryable, a
 * bounded number of times), and the redelivery picks again: another runner.
 */
import type { Logger } from "../core/logger.js";
import type { Secrets } from "../core/secrets.js";
import { connectRunner, type RunnerClient } from "../gpu-runner/client.js";

const POLL_MS = 2_000;
const HEALTH_TIMEOUT_MS = 1_500;

interface Runner {
  address: string;
  /** The one run it serves, else "": any run. */
  run: string;
  client: RunnerClient;
  /** Free slots less queued jobs at the last answer; undefined until the first. */
  room?: number;
  /** The runner process that answered last (HealthResponse.instance); "" until the first answer. */
  instance: string;
  up: boolean;
  /** Calls sent since the last answer, which it cannot count yet. */
  sent: number;
}

export class Runners {
  private readonly runners: Runner[] = [];
  private readonly gone: Runner[] = [];
  private next = 0;
  private timer?: NodeJS.Timeout;

  constructor(
    addresses: string[],
    private readonly secrets: Secrets | undefined,
    private readonly log: Logger,
    private readonly pollMs = POLL_MS,
  ) {
    for (const address of addresses) this.add(address);
  }

  /** A runner more (one that joined over the bus, for `run`'s calls only when given); polled from now on, since there is a choice. */
  add(address: string, run = ""): void {
    if (this.runners.some((r) => r.address === address)) return;
    this.runners.push({ address, run, client: connectRunner(address, this.secrets), up: true, sent: 0, instance: "" });
    if (this.runners.length > 1 && !this.timer) {
      void this.poll();
      this.timer = setInterval(() => void this.poll(), this.pollMs);
      this.timer.unref();
    }
  }

  /** A runner that said it stopped: no call goes to it any more (those under way end with it). */
  remove(address: string): void {
    const i = this.runners.findIndex((r) => r.address === address);
    // The last one stays: a call to it fails `runner_unavailable`, which the bus retries, rather than finding no runner at all.
    if (i < 0 || this.runners.length === 1) return;
    this.log.info({ runner: address }, "runner left");
    // Closed with the others: a call to it may still be ending.
    this.gone.push(...this.runners.splice(i, 1));
  }

  /** Asks every runner for its health once; resolves when all have answered or timed out. */
  async poll(): Promise<void> {
    await Promise.all(
      this.runners.map(async (r) => {
        try {
          const h = await r.client.health({}, { timeoutMs: HEALTH_TIMEOUT_MS });
          if (!r.up) this.log.info({ runner: r.address }, "runner is back");
          Object.assign(r, { room: h.freeSlots - h.queueDepth, up: h.workersReady > 0, sent: 0, instance: h.instance });
        } catch (err) {
          if (r.up) this.log.warn({ runner: r.address, err: (err as Error).message }, "runner does not answer; passing it over");
          r.up = false;
        }
      }),
    );
  }

  /** The runner for a call of `run` with the most room; in turn among equals. */
  pick(run: string): RunnerClient {
    return this.choose(run).client;
  }

  /** `pick()`'s runner by its address and process (what a lease on an evaluation key holds, swarm/runner-leases.ts). */
  pickHolder(run: string): { address: string; instance: string } {
    const r = this.choose(run);
    return { address: r.address, instance: r.instance };
  }

  /** The runner at `address`; `pick(run)`'s when it is not one of these (another process's list). */
  at(address: string, run: string): RunnerClient {
    return this.runners.find((r) => r.address === address)?.client ?? this.pick(run);
  }

  /** The runners that take `run`'s calls: its own, else the shared ones, else (none left) any, whose refusal the bus retries. */
  private of(run: string): Runner[] {
    const own = this.runners.filter((r) => r.run === run);
    if (own.length) return own;
    const shared = this.runners.filter((r) => r.run === "");
    return shared.length ? shared : [...this.runners];
  }

  private choose(run: string): Runner {
    const mine = this.of(run);
    const live = mine.filter((r) => r.up);
    const candidates = live.length ? live : mine;
    let best: Runner | undefined;
    for (let i = 0; i < candidates.length; i++) {
      const r = candidates[(this.next + i) % candidates.length]!;
      if (!best || (r.room ?? 0) - r.sent > (best.room ?? 0) - best.sent) best = r;
    }
    this.next++;
    best!.sent++;
    return best!;
  }

  /** `run`'s runners, those that answer first. */
  all(run: string): RunnerClient[] {
    return this.of(run).sort((a, b) => Number(b.up) - Number(a.up)).map((r) => r.client);
  }

  close(): void {
    clearInterval(this.timer);
    for (const r of [...this.runners, ...this.gone]) r.client.close();
  }
}
