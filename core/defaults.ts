/**
 * A run's time budget when its goal and flags name none. Every run has a clock: the planner's
 * exploit phase, the reserve for the test confirmation and the report, and the judge's stop
 * need one (a "reach 90%" launch without it planned a 20-minute promotion at minute 11).
 */
export const DEFAULT_TIME_BUDGET_S = 1800;

/**
 * The launcher's watchdog: a run with nothing in flight, nothing proposed and no event of its own
 * for this long ends (RUN_END_IDLE). A working planner proposes within seconds of a judgement;
 * the longest quiet spell of a healthy run is an LLM researcher's brief before its first trial.
 */
export const IDLE_GRACE_S = 180;

/**
 * Epochs a last long training (or a continued one) may reach when its time allows: it stops at
 * its time (train_seconds) first. launch --last-epochs lowers it, so that a run bounded by its
 * trial budget ends when its work does (the suite's launches) rather than at its clock.
 */
export const LAST_EPOCHS = 200;

/** The epochs a last long training may reach in a run with these settings: 0 on the wire is the default, as for every setting. */
export const lastEpochsOf = (settings: { lastEpochs: number } | undefined): number => settings?.lastEpochs || LAST_EPOCHS;

/**
 * A run's settings where the launch names none (deploy/swarm.ts fills them in). Agents
 * read a setting left at 0 on the wire as this value too: `patience` here is the judge's
 * and the planner's, whoever started the run.
 */
export const RUN_DEFAULTS = { maxTrials: 100, parallel: 2, patience: 10, planner: "builtin", research: true, lastEpochs: LAST_EPOCHS } as const;

/** Seeds per evaluation when nobody chose a number: the fewest that give a seed spread worth an interval. */
export const DEFAULT_SEEDS = 3;

/** Runner jobs a `launch --runners slurm` submits at once unless --slurm-jobs says otherwise. */
export const DEFAULT_SLURM_JOBS = 2;

/**
 * Seeds of the built-in planner's trials on a slice of the training split (probes, and
 * promotions that are not yet on the full split). They rank configs against their rung and
 * claim nothing, so one seed does (three tripled the cost of every probe). Trials on the full
 * split train with the run's seeds: their intervals decide the goal and the best trial, and
 * the rule for the best ranks every multi-seed trial above every probe (core/ranking.ts).
 */
export const PROBE_SEEDS = 1;

/**
 * Where the planner starts a run, by the device its runner trains on, where the run's
 * settings leave subset or epochs at 0. On a CPU a rung-0 probe trains on a slice of a
 * large training split (the scheduler's promotions grow it), in batches of 128. On a GPU a
 * whole Fashion-MNIST epoch of the reference CNN takes 0.28 s (H200, bf16, batch 512), and
 * the job's start-up is most of a short probe's time: probes see every example, in batches
 * that keep the GPU busy, with bf16 autocast. Images train in channels-last memory on both:
 * oneDNN's convolutions on a CPU are faster on it as cuDNN's are (docs/BENCHMARKS.md).
 * The rungs above the probe, the last long training and the time plan use the run's own
 * measured timings. The starting templates (core/tasks/) are `templateWidth` times as wide
 * on a GPU. A corpus's rows hold 256 targets each: a CPU probe of a language model
 * reads a slice of 1,000 rows (256k bytes), which a 0.46M-parameter byte transformer trains
 * through in about a minute an epoch here at its batch of 16 windows.
 */
export const SEARCH_DEFAULTS = {
  cpu: { epochs: 3, subset: 10_000, corpusRows: 1_000, batchSize: 128, amp: true, channelsLast: true, templateWidth: 1 },
  cuda: { epochs: 3, subset: 0, corpusRows: 0, batchSize: 512, amp: true, channelsLast: true, templateWidth: 4 },
} as const satisfies Record<
  string,
  { epochs: number; subset: number; corpusRows: number; batchSize: number; amp: boolean; channelsLast: boolean; templateWidth: number }
>;

export type SearchDevice = keyof typeof SEARCH_DEFAULTS;

/** The runner's device kind as the planner plans for it: Apple's MPS and unknown runners as CPUs. */
export function searchDevice(kind: string | undefined): SearchDevice {
  return kind === "cuda" ? "cuda" : "cpu";
}
