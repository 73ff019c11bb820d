import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * Seconds each long file takes alone on 2 cores (idle, or at a load of 3-5 where measured after
 * the tests' own changes). Most of a swarm test is waiting (start-up, a time budget, JetStream's
 * redelivery): the chaos, swarm and resume tests keep 0.6-0.7 of a core busy, so two files side
 * by side take little longer than the longer of them. The longest start first, so
 * that no long file is left to run alone at the end; the others fill in beside them.
 */
const SECONDS: Record<string, number> = {
  "test/cli/resume.test.ts": 147,
  "test/cli/cli.test.ts": 106,
  "test/deploy/pack-swarm.test.ts": 83,
  "test/cli/from.test.ts": 97,
  "test/cli/language-model.test.ts": 140,
  "test/cli/open-ended.test.ts": 100,
  "test/cli/regression.test.ts": 78,
  "test/cli/serve.test.ts": 50,
  "test/swarm/swarm.test.ts": 62,
  "test/chaos/chaos.test.ts": 120, // stopped a judgement after its last fault
  "test/dashboard/browser.test.ts": 48,
  "test/swarm/llm-swarm.test.ts": 37,
  "test/cli/signal.test.ts": 20,
  "test/runner/runner.test.ts": 32,
  "test/swarm/interventions.test.ts": 31,
  "test/swarm/watchdog.test.ts": 110, // three swarms side by side, two of them 90-second runs
  "test/coder/tools.test.ts": 16,
  "test/runner/weights.test.ts": 15,
  "test/swarm/runners.test.ts": 14,
  "test/bus/resilience.test.ts": 13,
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
    // Two files at a time, whatever the core count: every test must pass on a loaded machine (it
    // does at a load of 15-25 on 2 cores), and two files side by side load 2 idle cores far less.
    maxWorkers: 2,
    sequence: { sequencer: LongestFirst },
  },
});
