import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * Seconds each long file took in the whole suite (2 cores, three files at a time, the fast CPU,
 * 2026-12-07; a file's own wall time, its hooks included: scripts/suite-times.ts): only their
 * order counts. The longest start first, so that no long file is left to run alone at the end; the
 * others fill in beside them.
 */
const SECONDS: Record<string, number> = {
  "test/cli/warm-start.test.ts": 192, // nine short runs one after another, bounded by their trials
  "test/cli/cli.test.ts": 165,
  "test/deploy/slurm-runners.test.ts": 160, // the swarm as a Slurm job, its run over two more, and 15 s of a queue that starts none (70 s alone)
  "test/deploy/pack-swarm.test.ts": 150,
  "test/swarm/watchdog.test.ts": 127, // three swarms side by side, two of them 90-second runs (mostly waiting)
  "test/cli/language-model.test.ts": 115,
  "test/dashboard/browser.test.ts": 109,
  "test/chaos/chaos.test.ts": 108,
  "test/runner/runner.test.ts": 105,
  "test/runner/weights.test.ts": 96,
  "test/cli/serve.test.ts": 93,
  "test/cli/from.test.ts": 91,
  "test/cli/resume.test.ts": 84,
  "test/cli/open-ended.test.ts": 82, // the one launch bounded by its clock: 80 s
  "test/swarm/swarm.test.ts": 75,
  "test/cli/pareto.test.ts": 62,
  "test/cli/regression.test.ts": 50,
  "test/cli/signal.test.ts": 46,
  "test/cli/llm-edit.test.ts": 29,
  "test/runner/restart.test.ts": 26,
  "test/swarm/interventions.test.ts": 25,
  "test/dashboard/pages.test.ts": 22,
  "test/swarm/runners.test.ts": 22,
  "test/swarm/llm-swarm.test.ts": 19,
  "test/runner/seeds-together.test.ts": 15,
  "test/bus/resilience.test.ts": 15,
  "test/cli/closed-console.test.ts": 13,
  "test/coder/tools.test.ts": 13,
  "test/core/tasks.test.ts": 12,
  "test/swarm/runner-leases.test.ts": 9,
  "test/bus/cluster.test.ts": 9,
  "test/bus/bus.test.ts": 8,
  "test/lineage-store/store.test.ts": 8,
  "test/deploy/slurm-cluster.test.ts": 7, // a private Slurm cluster starts in about 1 s
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
