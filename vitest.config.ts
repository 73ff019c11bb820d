import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * Seconds each long file took in the whole suite (2 cores, three files at a time, the fast CPU,
 * 2026-12-07; a file's own wall time, its hooks included: scripts/suite-times.ts): only their
 * order counts. The longest start first, so that no long file is left to run alone at the end; the
 * others fill in beside them.
 */
const SECONDS: Record<string, number> = {
  "test/deploy/slurm-runners.test.ts": 246, // the swarm as a Slurm job, its run over two more, and 15 s of a queue that starts none
  "test/cli/warm-start.test.ts": 178, // nine short runs one after another, bounded by their trials
  "test/cli/from.test.ts": 172,
  "test/dashboard/browser.test.ts": 142,
  "test/swarm/swarm.test.ts": 140,
  "test/swarm/watchdog.test.ts": 128, // three swarms side by side, two of them 90-second runs (mostly waiting)
  "test/cli/language-model.test.ts": 128,
  "test/runner/weights.test.ts": 119,
  "test/chaos/chaos.test.ts": 115,
  "test/cli/cli.test.ts": 106,
  "test/deploy/pack-swarm.test.ts": 103,
  "test/cli/resume.test.ts": 103,
  "test/runner/runner.test.ts": 99,
  "test/cli/open-ended.test.ts": 85, // the one launch bounded by its clock: 80 s
  "test/cli/pareto.test.ts": 78,
  "test/cli/serve.test.ts": 73,
  "test/cli/signal.test.ts": 56,
  "test/cli/regression.test.ts": 51,
  "test/cli/llm-edit.test.ts": 43,
  "test/swarm/interventions.test.ts": 29,
  "test/dashboard/pages.test.ts": 24,
  "test/swarm/runners.test.ts": 22,
  "test/swarm/llm-swarm.test.ts": 18,
  "test/runner/restart.test.ts": 17,
  "test/coder/tools.test.ts": 16,
  "test/bus/resilience.test.ts": 15,
  "test/swarm/runner-leases.test.ts": 15,
  "test/cli/closed-console.test.ts": 14,
  "test/core/tasks.test.ts": 14,
  "test/bus/cluster.test.ts": 12,
  "test/runner/seeds-together.test.ts": 10,
  "test/bus/bus.test.ts": 8,
  "test/deploy/slurm-cluster.test.ts": 7, // a private Slurm cluster starts in about 1 s
  "test/lineage-store/store.test.ts": 3,
};

class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const seconds = (f: TestSpecification) => SECONDS[f.moduleId.slice(f.project.config.root.length + 1)] ?? 0;
    return (await super.sort(files)).sort((a, b) => seconds(b) - seconds(a));
  }
}

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/global-setup.ts"],
    // Real nats-server, real torch workers: give them time.
    testTimeout: 120_000,
    hookTimeout: 180_000,
    pool: "forks",
    // Three files at a time, whatever the core count: a file that waits (a fault's timeout, a
    // 90-second budget, the open-ended run's clock) leaves the cores to the others, so a third file
    // shortened the suite on 2 cores (vitest 699 s against 825-889 s with two, 2026-12-02), and every test must pass on a loaded machine anyway
    // (load 9-11 on 2 cores with three). That load found a last long training cancelled at the
    // reserve (agents/analyst/evaluation.ts): what a loaded machine does to a run is the suite's to find.
    maxWorkers: 3,
    sequence: { sequencer: LongestFirst },
  },
});
