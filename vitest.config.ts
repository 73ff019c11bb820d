import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * Seconds each long file took in the whole suite from a fresh clone (2 cores, two files at a
 * time, 2026-11-28; the chaos file since its stop after the faults, alone): only their order
 * counts. The longest start first, so that no long file is left to run alone at the end; the
 * others fill in beside them.
 */
const SECONDS: Record<string, number> = {
  "test/cli/resume.test.ts": 147,
  "test/swarm/watchdog.test.ts": 112, // three swarms side by side, two of them 90-second runs
  "test/cli/open-ended.test.ts": 165,
  "test/chaos/chaos.test.ts": 100, // 82 s alone: stopped a judgement after its last fault
  "test/swarm/swarm.test.ts": 91,
  "test/deploy/pack-swarm.test.ts": 88,
  "test/cli/from.test.ts": 88,
  "test/dashboard/browser.test.ts": 75,
  "test/cli/language-model.test.ts": 55,
  "test/runner/runner.test.ts": 50,
  "test/cli/cli.test.ts": 45,
  "test/cli/regression.test.ts": 44,
  "test/cli/pareto.test.ts": 61,
  "test/cli/closed-console.test.ts": 15,
  "test/cli/warm-start.test.ts": 240, // nine short runs, three of them a long training, its continuation and one without the weights
  "test/cli/signal.test.ts": 43,
  "test/cli/serve.test.ts": 41,
  "test/swarm/llm-swarm.test.ts": 27,
  "test/coder/tools.test.ts": 25,
  "test/swarm/interventions.test.ts": 23,
  "test/cli/llm-edit.test.ts": 20,
  "test/runner/restart.test.ts": 18,
  "test/bus/cluster.test.ts": 14,
  "test/bus/resilience.test.ts": 14,
  "test/dashboard/pages.test.ts": 12,
  "test/runner/weights.test.ts": 11,
  "test/runner/seeds-together.test.ts": 10,
  "test/swarm/runners.test.ts": 9,
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
    // Three files at a time, whatever the core count: a time-budgeted launch takes its budget in
    // wall time whatever it is given, so a third file shortens the suite on 2 cores (vitest 699 s
    // against 825-889 s with two, 2026-12-02), and every test must pass on a loaded machine anyway
    // (load 9-11 on 2 cores with three). That load found a last long training cancelled at the
    // reserve (agents/analyst/evaluation.ts): what a loaded machine does to a run is the suite's to find.
    maxWorkers: 3,
    sequence: { sequencer: LongestFirst },
  },
});
