/**
 * research-agent: launch a research run, watch lineage events live, query
 * past trials, print a report, show who is alive.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { homedir, tmpdir, userInfo } from "node:os";
import { dirname, join, resolve } from "node:path";
import { parseArgs, type ParseArgsConfig } from "node:util";
import { connectBus, natsAuthConfig, progressSubject, type Bus } from "../bus/index.js";
import { ensureSecrets } from "../core/secrets.js";
import { DECISION, RUN_STATUS, SURFACE, TRIAL_STATUS, VERDICT, type InterventionKindName } from "../core/enums.js";
import { interventionEvent, type InterventionCheck } from "../swarm/interventions.js";
import { FAILURE_LABEL, labelName } from "../core/failure.js";
import { parseDuration, parseGoal } from "../core/goal.js";
import { DEFAULT_SEEDS, DEFAULT_TIME_BUDGET_S, PROBE_SEEDS } from "../core/defaults.js";
import { BEST_RULE, intervalBasis, standingOf } from "../core/ranking.js";
import { shortTrialId } from "../core/ids.js";
import { describeLlm, llmConfigFromFlags } from "../core/llm/config.js";
import { cliConfig } from "../core/config.js";
import { createLogger, type Logger } from "../core/logger.js";
import { DEFAULT_K, MAX_K, request as queryLineage, summaryJson } from "../swarm/lineage-query.js";
import { summaryOf } from "../lineage-store/query.js";
import { LineageStore } from "../lineage-store/store.js";
import { buildReport, duration, writeReport } from "../lineage-store/report.js";
import { REGISTRY_FILE } from "../lineage-store/artifacts.js";
import { lineageEmbedder } from "../lineage-store/embedder.js";
import { EventSchema, RunStatus, type Event, type RunSettings } from "../proto/gen/research/v1/events_pb.js";
import { fromBinary } from "@bufbuild/protobuf";
import type { TrialSummary } from "../proto/gen/research/v1/lineage_pb.js";
import { applyToRunState, bestTrial, emptyRunState, foldRun, inFlightCount, meanOf, runSoFar, standing, trialStatus, type RunState } from "../swarm/run-state.js";
import { connectRunner } from "../gpu-runner/client.js";
import { runGoal, runSettings, startSwarm, workspaceSecrets, type Swarm } from "../deploy/swarm.js";
import { runAblation } from "./ablation.js";
import { startDashboard, type Dashboard } from "../dashboard/server.js";
import { buildWeb } from "../dashboard/build.js";
import { ArxivClient } from "../research/arxiv.js";
import { DeepResearch, type DeepBrief } from "../research/deep-research.js";
import { parseOutputFormat } from "../research/research.js";
import { parseFraction, parsePositiveInt, parseSeed } from "./format.js";
import { pct } from "../core/format.js";
import { parseModelConfig, parseTrainConfig } from "../core/model-config.js";
import { cudaProblem, dataProblem } from "./preflight.js";
import { parseDevice } from "../gpu-runner/server.js";
import { globalHelp, isVerb, UI_PORT, verbHelp, versionText, type Verb } from "./help.js";

const COMMON = {
  workspace: { type: "string", default: "./workspace" },
  nats: { type: "string" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const satisfies ParseArgsConfig["options"];

function fail(message: string, code = 1): never {
  process.stderr.write(`research-agent: ${message}\n`);
  process.exit(code);
}

const [verb, ...verbArgs] = process.argv.slice(2);

/** The verb's flags; --help prints the verb's own help and exits. */
function args<O extends ParseArgsConfig["options"]>(argv: string[], options: O) {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: { ...COMMON, ...options }, allowPositionals: true });
  } catch (err) {
    fail(`${(err as Error).message}\nrun research-agent ${verb} --help for usage`);
  }
  // Every verb has COMMON's --help; the generic options type hides it.
  if ((parsed.values as { help?: boolean }).help) {
    process.stdout.write(verbHelp(verb as Verb));
    process.exit(0);
  }
  return parsed;
}

/** What the launcher of the swarm in `workspace` wrote about it (deploy/swarm.ts), if one was launched there. */
function swarmFile(workspace: string): { nats_url: string; runner_address: string } | undefined {
  const f = join(resolve(workspace), "swarm.json");
  return existsSync(f) ? (JSON.parse(readFileSync(f, "utf8")) as { nats_url: string; runner_address: string }) : undefined;
}

function natsUrlOf(workspace: string, nats?: string): string | undefined {
  return nats ?? swarmFile(workspace)?.nats_url;
}

async function connectOrFail(workspace: string, nats?: string): Promise<Bus | undefined> {
  const url = natsUrlOf(workspace, nats);
  if (!url) return undefined;
  try {
    return await Promise.race([
      connectBus({ servers: url, name: "cli", ensureStream: false, logger: quietLogger(), secrets: workspaceSecrets(workspace, cliConfig().secretsDir) }),
      new Promise<never>((_, rej) => setTimeout(() => rej(new Error("timeout")), 3000)),
    ]);
  } catch {
    return undefined;
  }
}

/** `file`: where a launcher's logs go, since its console is for the person who launched it. */
function quietLogger(file?: string) {
  const log = createLogger("research-agent", {}, file);
  log.level = cliConfig().logLevel;
  return log;
}

const elapsed = (t0: number) => `[${((Date.now() - t0) / 1000).toFixed(0).padStart(5)}s]`;

/** What the run's banner promises about seeds: every planner probes a slice of the split with one. */
function seedPlan(settings: RunSettings | undefined): string {
  const seeds = settings?.seeds || DEFAULT_SEEDS;
  return seeds !== PROBE_SEEDS
    ? `trials on a slice of the training split train ${PROBE_SEEDS} seed, trials on the full split ${seeds}`
    : `${seeds} seeds a trial`;
}

/** One line per meaningful event, for launch and watch. */
export function describeEvent(e: Event, s: RunState): string | undefined {
  const b = e.body;
  const id = shortTrialId(e.trialId);
  switch (b.case) {
    case "runStarted":
      // Runs started before goals carried a description show their target.
      return `run ${e.runId} started: ${b.value.goal?.description || `${b.value.goal?.dataset} target ${pct(b.value.goal?.target ?? 0)}`} (planner ${b.value.settings?.planner}; ${seedPlan(b.value.settings)}; best: ${BEST_RULE})`;
    case "briefReady":
      return `brief ready: ${JSON.parse(b.value.briefJson).summary_title}`;
    case "trialProposed":
      return `${id} proposed [${SURFACE.name(b.value.surface) ?? ""}] ${b.value.hypothesis}`;
    case "trialAssembled":
      return b.value.failure
        ? `${id} assembly failed [${labelName(b.value.failure.label)}] ${b.value.failure.message.split("\n")[0]}`
        : `${id} assembled: ${b.value.summary?.totalParams.toLocaleString()} params`;
    case "trialProgress": {
      // One seed stands for the trial; all seeds' curves are in the results.
      const p = b.value.progress;
      return p && p.seed === 0 ? `${id} epoch ${p.epoch}/${p.epochs} (seed 0): val ${pct(p.valAccuracy)}, ${p.seconds.toFixed(0)} s` : undefined;
    }
    case "trialEvaluated": {
      const acc = b.value.result?.aggregated.val_accuracy;
      if (b.value.failure) return `${id} failed [${labelName(b.value.failure.label)}] ${b.value.failure.message.split("\n")[0]}`;
      const basis = standingOf(b.value.result);
      return acc && basis ? `${id} evaluated: val ${pct(acc.mean)} 95% CI [${pct(acc.ci95[0]!)}, ${pct(acc.ci95[1]!)}] over ${intervalBasis(basis)} in ${b.value.evalSeconds.toFixed(0)} s` : undefined;
    }
    case "trialJudged": {
      const best = bestTrial(s);
      const failures = [...s.trials.values()].filter((t) => t.judged?.failure).reduce<Record<string, number>>((a, t) => {
        const l = labelName(t.judged!.failure!.label);
        a[l] = (a[l] ?? 0) + 1;
        return a;
      }, {});
      const inFlight = inFlightCount(s);
      return `${id} ${VERDICT.name(b.value.verdict) ?? "?"} -> ${DECISION.name(b.value.decision) ?? "?"} | best ${best ? `${shortTrialId(best.id)} ${pct(meanOf(best) ?? 0)} (CI low ${pct(best.judged?.ciLow ?? 0)}, ${intervalBasis({ seeds: standing(best)?.seeds ?? 0, valExamples: 0 })})` : "none"} | ${b.value.trialsDone} judged, ${inFlight} in flight${Object.keys(failures).length ? ` | failures ${Object.entries(failures).map(([k, v]) => `${k}:${v}`).join(" ")}` : ""}`;
    }
    case "runResumed":
      return `run resumed: ${b.value.downtimeS.toFixed(0)} s down, not counted against the time budget${b.value.timeBudgetS ? `, which is now ${b.value.timeBudgetS.toFixed(0)} s of live time` : ""}`;
    case "runFinished":
      return `run finished: ${RUN_STATUS.name(b.value.status) ?? ""} (${b.value.reason})${b.value.testSkipped ? `; no test accuracy: ${b.value.testSkipped}` : ""}`;
    default:
      return undefined;
  }
}

const RUN_FLAGS = {
  goal: { type: "string" },
  "max-trials": { type: "string" },
  "time-budget": { type: "string" },
  target: { type: "string" },
  "max-params": { type: "string" },
  "data-dir": { type: "string" },
  seeds: { type: "string" },
  parallel: { type: "string" },
  planner: { type: "string" },
  subset: { type: "string" },
  epochs: { type: "string" },
  "no-research": { type: "boolean" },
  seed: { type: "string" },
  slots: { type: "string" },
  resume: { type: "string" },
  runs: { type: "string" },
  "unsafe-no-sandbox": { type: "boolean" },
  device: { type: "string" },
  llm: { type: "string" },
  "llm-base-url": { type: "string" },
  "llm-config": { type: "string" },
} as const satisfies ParseArgsConfig["options"];

type RunArgs = ReturnType<typeof args<typeof RUN_FLAGS>>["values"];

/** Flags that shape a run when it starts; a resumed run keeps its own. */
const RUN_SHAPE = ["goal", "target", "max-params", "data-dir", "max-trials", "seeds", "parallel", "subset", "epochs", "seed", "planner"] as const satisfies readonly (keyof RunArgs)[];

const positiveInt = (flag: string, v?: string) => (v === undefined ? undefined : (parsePositiveInt(v) ?? fail(`--${flag} must be a positive integer, got "${v}"`)));

/**
 * Goal, settings and swarm options from the flags shared by launch and
 * ablation. Every flag is checked here, before anything starts or is
 * written: a bad one exits with a line naming it.
 */
function prepareRun(a: RunArgs) {
  if (a.planner && !["builtin", "random"].includes(a.planner)) fail(`--planner must be builtin or random, got "${a.planner}"`);
  const workspace = resolve(a.workspace);
  if (!a.goal && !a.resume) fail('--goal is required, e.g. --goal "fashion-mnist: reach 90% validation accuracy"');
  if (a.resume) {
    const fixed = RUN_SHAPE.filter((f) => a[f] !== undefined);
    if (fixed.length) fail(`--resume continues run ${a.resume} as it was set up; only --time-budget may change it (its new total of live time): drop --${fixed.join(", --")}`);
  }
  // A run's events live in the workspace's NATS stream (its folder under runs/ may not exist yet);
  // whether this run is there is known once NATS is up, and said then.
  if (a.resume && !existsSync(join(workspace, "nats"))) fail(`--resume: ${workspace} has no swarm data (nats/), so no run ${a.resume} to resume`);
  if (a["time-budget"] !== undefined && !((parseDuration(a["time-budget"]) ?? 0) > 0)) {
    fail(`--time-budget must be a duration such as 90s, 20m or 2h, got "${a["time-budget"]}"`);
  }
  const flags = {
    maxTrials: positiveInt("max-trials", a["max-trials"]),
    seeds: positiveInt("seeds", a.seeds),
    parallel: positiveInt("parallel", a.parallel),
    subset: positiveInt("subset", a.subset),
    epochs: positiveInt("epochs", a.epochs),
    rngSeed: a.seed === undefined ? undefined : (parseSeed(a.seed) ?? fail(`--seed must be a whole number from 0 to 4294967295, got "${a.seed}"`)),
  };
  const slots = positiveInt("slots", a.slots);
  const parse = (timeBudgetS: string | number | undefined) =>
    parseGoal(a.goal ?? "resume", {
      target: a.target !== undefined ? (parseFraction(a.target) ?? fail(`--target must be a fraction or percentage, got "${a.target}"`)) : undefined,
      maxParams: positiveInt("max-params", a["max-params"]),
      timeBudgetS,
      dataDir: a["data-dir"] ? resolve(a["data-dir"]) : undefined,
    });
  let parsed = parse(a["time-budget"]);
  if (parsed.ok && !parsed.goal.timeBudgetS) parsed = parse(DEFAULT_TIME_BUDGET_S);
  if (!parsed.ok && !a.resume) fail(`cannot understand the goal: ${parsed.error}`);
  const goal = parsed.ok ? parsed.goal : undefined;
  if (goal?.dataDir) {
    // The runner starts in the repository, not here: a path as the user wrote it is read from here.
    goal.dataDir = resolve(goal.dataDir.replace(/^~(?=\/|$)/, homedir()));
    const problem = dataProblem(goal);
    if (problem) fail(problem);
  }
  const llmFlags = { llm: a.llm, baseUrl: a["llm-base-url"], file: a["llm-config"] ? resolve(a["llm-config"]) : undefined };
  let llm: string;
  try {
    llm = describeLlm(llmConfigFromFlags({ ...llmFlags, workspace }));
  } catch (err) {
    fail(`LLM settings: ${(err as Error).message}`);
  }
  const device = parseDevice(a.device);
  if (!device.ok) fail(device.error);
  // Last: it asks the runner's Python, which takes seconds where the other checks take none.
  const noCuda = device.device === "cuda" ? cudaProblem(cliConfig().runnerPython) : undefined;
  if (noCuda) fail(noCuda);
  const settings = (swarm: Swarm, research: boolean, seed?: number) =>
    runSettings(goal!, { ...flags, planner: a.planner, rngSeed: seed ?? flags.rngSeed, research, llm }, workspace, swarm.runnerHealth);
  return { workspace, goal, llmFlags, settings, slots, device: device.device };
}

/** Exit statuses of a launch stopped by a signal, after its report is written. */
const SIGNAL_EXIT: Record<string, number> = { SIGINT: 130, SIGTERM: 143 };

/**
 * Starts the swarm, checks the dataset, runs `body`, and always stops the
 * swarm; exits with `body`'s code (2 when it threw). A SIGINT or SIGTERM
 * stops at once, unless `body` wraps up on `interrupt` (when `wrapsUp`):
 * then the first aborts it and a second stops at once.
 */
async function withSwarm(
  a: RunArgs,
  run: ReturnType<typeof prepareRun>,
  say: (line: string) => void,
  body: (swarm: Swarm, interrupt: AbortSignal, log: Logger) => Promise<number>,
  wrapsUp = false,
): Promise<never> {
  const { goal } = run;
  // Beside the swarm's own logs (deploy/supervisor.ts): the console shows `say` lines only.
  const log = quietLogger(join(run.workspace, "logs", "launcher.log"));
  say(`starting the swarm in ${run.workspace} ...`);
  // The runner mounts data roots read-only into its sandbox; a CSV file's folder is its root.
  const dataRoot = goal?.dataDir ? (statSync(goal.dataDir, { throwIfNoEntry: false })?.isFile() ? dirname(goal.dataDir) : goal.dataDir) : undefined;
  let swarm: Swarm;
  try {
    swarm = await startSwarm({
      workspace: run.workspace,
      natsUrl: a.nats,
      slots: run.slots,
      device: run.device,
      dataRoots: dataRoot ? [dataRoot] : [],
      unsafeNoSandbox: a["unsafe-no-sandbox"],
      llm: run.llmFlags,
      natsServer: cliConfig().natsServer,
      replicas: cliConfig().streamReplicas,
      secretsDir: cliConfig().secretsDir,
      logger: log,
      onRestart: (name, n) => say(`process ${name} exited; restarted (${n})`),
    });
  } catch (err) {
    fail(`cannot start the swarm: ${(err as Error).message}`, 2);
  }
  const { slots, device } = swarm.runnerHealth;
  // Which device the run gets (--device), said before it spends any of its budget.
  say(`runner: ${slots} slots on ${device?.kind ?? "?"}${device?.kind === "cuda" ? ` (${device.gpus} x ${device.name})` : ""}, torch ${device?.torchVersion ?? "?"}${device?.sandboxed ? ", sandboxed" : ", NOT sandboxed"}`);
  let stopping = false;
  const shutdown = async (code: number): Promise<never> => {
    if (!stopping) {
      stopping = true;
      say("stopping the swarm ...");
      await swarm.stop();
    }
    process.exit(code);
  };
  const interrupt = new AbortController();
  for (const sig of Object.keys(SIGNAL_EXIT)) {
    process.on(sig, () => {
      if (!wrapsUp || interrupt.signal.aborted) return void shutdown(SIGNAL_EXIT[sig]!);
      say(`${sig}: writing the report so far, then stopping (again to stop at once) ...`);
      interrupt.abort(sig);
    });
  }
  try {
    if (goal) {
      const info = await swarm.runner.describe({ dataset: { name: goal.dataset, dataDir: goal.dataDir, targetColumn: goal.targetColumn } });
      if (info.failure) throw new Error(`dataset ${goal.dataset}: ${info.failure.message}`);
      say(`dataset ${goal.dataset}: ${info.nTrain} train / ${info.nVal} val / ${info.nTest} test, input ${JSON.stringify(info.inputShape)}, ${info.numClasses} classes`);
    }
    if (interrupt.signal.aborted) return await shutdown(SIGNAL_EXIT[String(interrupt.signal.reason)]!);
    return await shutdown(await body(swarm, interrupt.signal, log));
  } catch (err) {
    process.stderr.write(`research-agent: ${(err as Error).message}\n`);
    return await shutdown(2);
  }
}

async function launch(argv: string[]): Promise<void> {
  const { values: a } = args(argv, RUN_FLAGS);
  const run = prepareRun(a);
  const t0 = Date.now();
  const say = (line: string) => void (!a.json && process.stdout.write(`${elapsed(t0)} ${line}\n`));
  await withSwarm(a, run, say, async (swarm, interrupt, log) => {
    const outcome = await runGoal(swarm, {
      start: run.goal ? { goal: run.goal, settings: run.settings(swarm, !a["no-research"]) } : undefined,
      runId: a.resume,
      resume: !!a.resume,
      timeBudgetS: a.resume && a["time-budget"] ? parseDuration(a["time-budget"]) : undefined,
      signal: interrupt,
      log,
      onEvent: (e, s) => {
        const line = describeEvent(e, s);
        if (line) say(line);
      },
    });
    if (outcome.interrupted) {
      // The lineage store writes reports on RunFinished, which an interrupted run has not had.
      const dir = join(run.workspace, "runs", outcome.runId);
      await writeReport(dir, outcome.state, outcome.finished);
      outcome.finished.reportPath = join(dir, "report.md");
      outcome.finished.registryPath = join(dir, REGISTRY_FILE);
    }
    const best = outcome.state.trials.get(outcome.finished.bestTrialId);
    const acc = best?.evaluated?.result?.aggregated.val_accuracy;
    const test = outcome.finished.testResult?.aggregated.test_accuracy;
    const ensemble = outcome.finished.testResult?.aggregated.ensemble_test_accuracy;
    const openEnded = outcome.state.goal?.openEnded ?? false;
    if (a.json) {
      process.stdout.write(
        `${JSON.stringify({
          run_id: outcome.runId,
          open_ended: openEnded,
          status: RUN_STATUS.name(outcome.finished.status) ?? "",
          reason: outcome.finished.reason,
          trials: outcome.finished.trials,
          seconds: outcome.finished.seconds,
          best_trial: best
            ? { trial_id: best.id, val_accuracy: acc?.mean, ci_95: acc?.ci95, params: Number(best.evaluated?.result?.params ?? 0), test_accuracy: test?.mean, ensemble_test_accuracy: ensemble?.mean, test_skipped: outcome.finished.testSkipped || undefined }
            : null,
          report: outcome.finished.reportPath,
          registry: outcome.finished.registryPath,
        })}\n`,
      );
    } else {
      say(`status: ${RUN_STATUS.name(outcome.finished.status) ?? ""} after ${outcome.finished.trials} trials`);
      if (openEnded) say(`no target was set: ${best && acc ? "the best model found follows, not a goal met or missed" : "no model was accepted"}`);
      if (best && acc) {
        say(`best${openEnded ? " model" : ""}: ${best.id} val ${pct(acc.mean)} 95% CI [${pct(acc.ci95[0]!)}, ${pct(acc.ci95[1]!)}] over ${intervalBasis(standing(best)!)}${test ? `, test ${pct(test.mean)}${ensemble ? ` per seed, ${pct(ensemble.mean)} as an ensemble of its seeds` : ""} (measured once on the test split)` : ""}`);
        if (outcome.finished.testSkipped) say(`test accuracy not measured: ${outcome.finished.testSkipped}`);
      }
      say(`report: ${outcome.finished.reportPath}`);
      say(`registry: ${outcome.finished.registryPath}`);
    }
    if (outcome.interrupted) return SIGNAL_EXIT[String(interrupt.reason)] ?? 130;
    return outcome.finished.status === RunStatus.GOAL_ACHIEVED || outcome.finished.status === RunStatus.COMPLETED ? 0 : 3;
  }, true);
}

async function ablation(argv: string[]): Promise<void> {
  const { values: a } = args(argv, RUN_FLAGS);
  const runs = positiveInt("runs", a.runs) ?? 3;
  const run = prepareRun(a);
  const t0 = Date.now();
  const say = (line: string) => void (!a.json && process.stdout.write(`${elapsed(t0)} ${line}\n`));
  await withSwarm(a, run, say, async (swarm, _interrupt, log) => {
    const result = await runAblation(swarm, {
      goal: run.goal!,
      settings: (research, seed) => run.settings(swarm, research, seed),
      runs,
      log,
      onRun: (r) => say(`research ${r.research ? "on " : "off"} seed ${r.seed}: ${r.status}, best ${pct(r.bestMean)} (CI low ${pct(r.bestCiLow)}) in ${r.trials} trials, ${r.seconds.toFixed(0)} s`),
    });
    const dir = join(run.workspace, "ablations");
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `ablation-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
    writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    if (a.json) process.stdout.write(`${JSON.stringify({ ...result, file })}\n`);
    else {
      const t = result.meanTest;
      say(`briefs valid: ${pct(result.validBriefRate)}; first trial adopts a brief concept in ${pct(result.adoptionRate)} of research runs`);
      say(
        t
          ? `uplift (research on - off, best mean val accuracy, ${t.n} matched pairs): ${(100 * t.meanDiff).toFixed(2)} pp, 95% CI [${(100 * t.ci95[0]).toFixed(2)}, ${(100 * t.ci95[1]).toFixed(2)}] pp, paired t = ${t.t.toFixed(2)}, p = ${t.p.toFixed(3)}`
          : "uplift: needs --runs 2 or more for a test",
      );
      say(`results: ${file}`);
    }
    return 0;
  });
}

async function research(argv: string[]): Promise<void> {
  const { values: a, positionals } = args(argv, {
    format: { type: "string" },
    dataset: { type: "string" },
    notes: { type: "string" },
    arxiv: { type: "boolean" },
    // No default here: only an explicit workspace keeps the index (and the arXiv cache) for the next call.
    workspace: { type: "string" },
  });
  const query = positionals.join(" ").trim() || fail('research needs a query, e.g. research-agent research "regularisation for small CNNs on fashion-mnist"');
  let opts;
  try {
    opts = a.format ? parseOutputFormat(a.format) : {};
  } catch (err) {
    fail(`--format: ${(err as Error).message}`);
  }
  const notesDir = a.notes ? resolve(a.notes) : undefined;
  if (notesDir && !statSync(notesDir, { throwIfNoEntry: false })?.isDirectory()) fail(`--notes: ${notesDir} is not a folder`);
  const root = a.workspace ? resolve(a.workspace) : mkdtempSync(join(tmpdir(), "research-agent-"));
  let result: DeepBrief;
  try {
    const deep = await DeepResearch.open({
      dir: join(root, "research-index", "cli"),
      notesDir,
      arxiv: a.arxiv ? new ArxivClient({ cacheDir: join(root, "arxiv-cache") }) : undefined,
      logger: quietLogger(),
    });
    try {
      result = await deep.brief(query, { ...opts, dataset: a.dataset });
    } finally {
      await deep.close();
    }
  } catch (err) {
    // fail() exits at once, so the temporary index goes first.
    if (!a.workspace) rmSync(root, { recursive: true, force: true });
    fail(`research: ${(err as Error).message}`);
  }
  if (!a.workspace) rmSync(root, { recursive: true, force: true });
  const { brief, sources } = result;
  const drawnFrom = `drawn from: ${sources.builtin} built-in, ${sources.notes} from notes, ${sources.arxiv} from arXiv${a.arxiv ? "" : " (not searched; add --arxiv)"}`;
  // stdout stays one brief document for --json; the tally goes where people still see it.
  if (a.json) {
    process.stderr.write(`${drawnFrom}\n`);
    return void process.stdout.write(`${JSON.stringify(brief, null, 2)}\n`);
  }
  const lines = [`# ${brief.summary_title}`, "", ...brief.insights.map((i) => `- ${i}`), ""];
  for (const s of brief.architectural_suggestions) {
    lines.push(`## ${s.name}${s.buildable === false ? " (not buildable by the coder yet)" : ""}`, s.description, `how: ${s.implementation_note}`, "");
  }
  lines.push("sources:", ...brief.sources.map((s) => `- ${s.title} ${s.url}`));
  lines.push("", drawnFrom);
  process.stdout.write(`${lines.join("\n")}\n`);
}

/** The workspace's lineage, read-only (the store process may be writing it). */
async function openLineage(workspace: string): Promise<LineageStore> {
  const dir = join(resolve(workspace), "lineage");
  if (!existsSync(dir)) fail(`no lineage in ${dir} (is --workspace right?)`);
  return LineageStore.open(dir, { readOnly: true, embedder: await lineageEmbedder(dir, {}, quietLogger()), logger: quietLogger() });
}

/** outcome.seconds of the run's report.json, if it has one. */
function reportSeconds(runDir: string): number | undefined {
  const file = join(runDir, "report.json");
  if (!existsSync(file)) return undefined;
  const seconds = (JSON.parse(readFileSync(file, "utf8")) as { outcome?: { seconds?: unknown } }).outcome?.seconds;
  return typeof seconds === "number" ? seconds : undefined;
}

async function runs(argv: string[]): Promise<void> {
  const { values: a } = args(argv, {});
  const store = await openLineage(a.workspace);
  const rows = await store.listRuns();
  await store.close();
  // A run still "running" in a workspace with no swarm up was interrupted: launch --resume continues it.
  const bus = await connectOrFail(a.workspace);
  const live = bus !== undefined;
  await bus?.close();
  const statusOf = (r: (typeof rows)[number]) => (r.status === "running" && !live ? "interrupted" : r.status || "starting");
  // The run time its report states (RunFinished.seconds, or when its launcher was interrupted);
  // without a report, until now while it runs, else until its last event, not until this listing.
  const seconds = (r: (typeof rows)[number]) => {
    const running = statusOf(r) === "running";
    const stated = running ? undefined : reportSeconds(join(resolve(a.workspace), "runs", r.run_id));
    return stated ?? ((running ? Date.now() : (r.finished_at ?? r.updated_at)) - (r.started_at ?? r.updated_at)) / 1000;
  };
  if (a.json) {
    const json = rows.map((r) => ({ run_id: r.run_id, goal: r.goal, status: statusOf(r), trials: r.trials, best_trial_id: r.best_trial_id, best_val_accuracy: r.best_score, started_at: r.started_at, seconds: seconds(r) }));
    return void process.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
  }
  if (rows.length === 0) return void process.stdout.write("no runs in this workspace\n");
  for (const r of rows) {
    const started = r.started_at ? new Date(r.started_at).toISOString().slice(0, 16).replace("T", " ") : "?";
    const best = r.best_score !== null ? `best val ${pct(r.best_score)}` : "no best yet";
    process.stdout.write(`${r.run_id}  ${statusOf(r).padEnd(16)} ${String(r.trials).padStart(4)} trials  ${best.padEnd(22)} ${started}  ${duration(seconds(r)).padStart(8)}  ${r.goal}\n`);
  }
}

async function watch(argv: string[]): Promise<void> {
  const { values: a, positionals } = args(argv, {});
  const states = new Map<string, RunState>();
  const stateOf = (runId: string) => states.get(runId) ?? states.set(runId, emptyRunState(runId)).get(runId)!;
  const print = (e: Event, s: RunState) => {
    const line = describeEvent(e, s);
    if (line) process.stdout.write(`${new Date(Number(e.emittedAtMs)).toISOString()} ${e.runId} ${line}\n`);
  };
  const bus = await connectOrFail(a.workspace, a.nats);
  if (!bus) {
    // No swarm: the run as the workspace stored it, start to end.
    const runId = positionals[0] ?? fail("no swarm is running for this workspace: watch RUN replays a stored run (research-agent runs lists them)");
    const store = await openLineage(a.workspace);
    const rows = await store.eventsOf(runId);
    await store.close();
    if (rows.length === 0) fail(`no run ${runId} in this workspace's lineage`);
    for (const row of rows) {
      const e = fromBinary(EventSchema, row.payload);
      print(e, applyToRunState(stateOf(e.runId), e));
    }
    return;
  }
  const run = positionals[0] ?? "*";
  await bus.watch(run, (e) => print(e, applyToRunState(stateOf(e.runId), e)));
  // Progress is live only: what is running now, never the history.
  bus.subscribe(progressSubject(run), (e) => print(e, stateOf(e.runId)));
  process.once("SIGINT", () => void bus.close().then(() => process.exit(0)));
}

async function query(argv: string[]): Promise<void> {
  const { values: a } = args(argv, { similar: { type: "string" }, run: { type: "string" }, k: { type: "string" } });
  if (!a.similar) fail('query needs --similar "TEXT"');
  const k = a.k === undefined ? DEFAULT_K : (parsePositiveInt(a.k) ?? 0);
  if (!(k >= 1 && k <= MAX_K)) fail(`--k must be a whole number from 1 to ${MAX_K}, got "${a.k}"`);
  const bus = await connectOrFail(a.workspace, a.nats);
  let rows: TrialSummary[];
  if (bus) {
    rows = await queryLineage(bus, { text: a.similar, k, runId: a.run });
    await bus.close();
  } else {
    const store = await openLineage(a.workspace);
    rows = (await store.similarTrials({ text: a.similar, k, runId: a.run })).map(summaryOf);
    await store.close();
  }
  if (a.json) {
    const json = rows.map(summaryJson);
    return void process.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
  }
  if (rows.length === 0) return void process.stdout.write(`no trials${a.run ? ` in run ${a.run}` : ""} in this workspace's lineage\n`);
  const table = [
    ["distance", "trial", "val acc", "status", "hypothesis"],
    ...rows.map((r) => [
      r.distance.toFixed(3),
      r.trialId,
      r.valAccuracy !== undefined ? pct(r.valAccuracy) : "-",
      // A failed trial's label says more than its status.
      FAILURE_LABEL.name(r.failureLabel) ?? TRIAL_STATUS.name(r.status) ?? "?",
      r.hypothesis,
    ]),
  ];
  const widths = table[0]!.map((_, c) => Math.max(...table.map((row) => row[c]!.length)));
  const lines = table.map((row) => row.map((cell, c) => (c === row.length - 1 ? cell : cell.padEnd(widths[c]!))).join("  "));
  process.stdout.write(`closest first; distance: cosine distance to the text, 0 (same direction) to 2 (opposite): lower is closer\n${lines.join("\n")}\n`);
}

async function report(argv: string[]): Promise<void> {
  const { values: a, positionals } = args(argv, {});
  const run = positionals[0] ?? fail("report needs a RUN id");
  const path = join(resolve(a.workspace), "runs", run, "report.md");
  if (existsSync(path)) return void process.stdout.write(readFileSync(path, "utf8"));
  // A run still going has no report yet: render one from what the workspace has stored so far.
  const store = await openLineage(a.workspace);
  const rows = await store.eventsOf(run);
  await store.close();
  if (rows.length === 0) fail(`no run ${run} in this workspace (research-agent runs lists them)`);
  const state = foldRun(run, rows.map((row) => fromBinary(EventSchema, row.payload)));
  const sofar = runSoFar(state, RunStatus.RUNNING, `still running: the report so far, after ${state.judgedCount} judged trials`);
  process.stdout.write(buildReport(state, sofar).markdown);
}

/**
 * The swarm at a glance: its live runs with their trials by state (from the
 * workspace's lineage), the runners with their slots (Health), and the agents
 * (heartbeats).
 */
async function status(argv: string[]): Promise<void> {
  const { values: a } = args(argv, {});
  const bus = (await connectOrFail(a.workspace, a.nats)) ?? fail("no swarm is running for this workspace (give --nats URL or --workspace DIR)");
  const agents = new Map<string, string>();
  const sub = bus.watchHeartbeats((beat) => {
    agents.set(`${beat.role}/${beat.instance}`, `in flight ${beat.inFlight}, handled ${beat.handled}, up ${((Date.now() - Number(beat.startedAtMs)) / 1000).toFixed(0)} s`);
  });
  const [runLines, runnerLines] = await Promise.all([liveRuns(a.workspace), runnerHealth(a.workspace), new Promise((r) => setTimeout(r, 6000))]); // heartbeats come every 5 s
  await sub.stop();
  await bus.close();
  const lines = ["runs:", ...(runLines.length ? runLines : ["  none running"]), "runners:", ...runnerLines, "agents:"];
  lines.push(...(agents.size ? [...agents.entries()].sort().map(([who, what]) => `  ${who.padEnd(38)} ${what}`) : ["  no heartbeats in 6 s"]));
  process.stdout.write(`${lines.join("\n")}\n`);
  if (agents.size === 0) process.exitCode = 1;
}

async function liveRuns(workspace: string): Promise<string[]> {
  if (!existsSync(join(resolve(workspace), "lineage"))) return [];
  const store = await openLineage(workspace);
  try {
    const out: string[] = [];
    for (const r of (await store.listRuns()).filter((x) => x.status === "running")) {
      const state = foldRun(r.run_id, (await store.eventsOf(r.run_id)).map((row) => fromBinary(EventSchema, row.payload)));
      const counts = new Map<string, number>();
      for (const t of state.trials.values()) counts.set(trialStatus(t), (counts.get(trialStatus(t)) ?? 0) + 1);
      const trials = TRIAL_STATUS.names.filter((n) => counts.has(n)).map((n) => `${counts.get(n)} ${n}`).join(", ") || "none yet";
      const best = bestTrial(state);
      const ci = best?.evaluated?.result?.aggregated.val_accuracy?.ci95;
      const held = state.stopRequested ? ` (stopping: ${state.stopRequested.who})` : state.paused ? " (paused)" : "";
      out.push(`  ${r.run_id}${held}  trials: ${trials}${best && ci ? `; best ${best.id} ${pct(ci[0]!)}–${pct(ci[1]!)}` : ""}  ${r.goal}`);
    }
    return out;
  } finally {
    await store.close();
  }
}

async function runnerHealth(workspace: string): Promise<string[]> {
  const addresses = swarmFile(workspace)?.runner_address.split(",") ?? [];
  return Promise.all(
    addresses.map(async (address) => {
      const client = connectRunner(address, workspaceSecrets(workspace, cliConfig().secretsDir));
      try {
        const h = await client.health({}, { timeoutMs: 3000 });
        const d = h.device;
        return `  ${address}  ${h.slots} slots, ${h.freeSlots} free, ${h.queueDepth} queued, ${h.workersReady} workers up; ${d?.kind ?? "?"} ${d?.name ?? ""}${d?.sandboxed ? ", sandboxed" : ", NOT sandboxed"}`;
      } catch (err) {
        return `  ${address}  not answering: ${(err as Error).message}`;
      } finally {
        client.close();
      }
    }),
  );
}

/**
 * A deployment's credentials folder for Compose or Kubernetes (a local launch makes its own):
 * the secrets, and nats-server's `nats-auth.conf` naming the files where the servers see them.
 */
async function secrets(argv: string[]): Promise<void> {
  const { values: a, positionals } = args(argv, {
    "mounted-at": { type: "string", default: "/secrets" },
    // What deploy/compose.yaml and deploy/k8s call the servers.
    names: { type: "string", default: "nats,nats1,nats2,nats3,gpu-runner,*.gpu-runner" },
  });
  const dir = resolve(positionals[0] ?? fail("secrets needs a DIR to make them in"));
  const made = ensureSecrets(dir, String(a.names).split(",").map((n) => n.trim()).filter(Boolean));
  writeFileSync(join(dir, "nats-auth.conf"), natsAuthConfig(made, String(a["mounted-at"])), { mode: 0o600 });
  process.stdout.write(`secrets in ${dir} (nats.json, runner-token, ca.pem, tls.pem, tls-key.pem, nats-auth.conf); mount it at ${a["mounted-at"]} with RESEARCH_SECRETS=${a["mounted-at"]}\n`);
}

/**
 * A config flag's value, a file's text or the JSON itself, checked with `parse` before
 * the bus is asked: a problem in a file names the file (YAML errors give its line).
 */
function configFlag(flag: string, v: string | undefined, parse: (text: string) => { ok: boolean; error?: string }): string | undefined {
  if (v === undefined) return undefined;
  const inline = v.trim().startsWith("{");
  if (!inline && !existsSync(v)) fail(`--${flag}: no file ${v} (give a file, or the JSON itself)`);
  const text = inline ? v : readFileSync(v, "utf8");
  const checked = parse(text);
  if (!checked.ok) fail(`--${flag}${inline ? "" : ` ${v}`}: ${checked.error}`);
  return text;
}

/** pause, resume, stop, cancel and propose: one intervention on a live run (swarm/interventions.ts). */
function intervention(kind: InterventionKindName) {
  return async (argv: string[]): Promise<void> => {
    const { values: a, positionals } = args(argv, {
      reason: { type: "string" },
      hypothesis: { type: "string" },
      model: { type: "string" },
      train: { type: "string" },
      parent: { type: "string", multiple: true },
    });
      const runId = positionals[0] ?? fail(`${kind} needs a RUN id (research-agent runs lists them)`);
    if (kind === "cancel_trial" && !positionals[1]) fail("cancel needs a RUN and a TRIAL id");
    const request = { kind, reason: a.reason, trial_id: positionals[1], hypothesis: a.hypothesis, model_config: configFlag("model", a.model, parseModelConfig), train_config: configFlag("train", a.train, parseTrainConfig), parent_ids: a.parent };
    const bus = (await connectOrFail(a.workspace, a.nats)) ?? fail("no swarm is running for this workspace: only a live run can be paused, resumed, stopped, cancelled or given a proposal");
    let check: InterventionCheck;
    try {
      const state = emptyRunState(runId);
      const watch = await bus.watch(runId, (e) => void applyToRunState(state, e));
      await watch.caughtUp;
      await watch.stop();
      check = interventionEvent(state, request, `cli:${userInfo().username}`);
      if (check.ok) await bus.publish(check.event);
    } finally {
      await bus.close();
    }
    if (!check.ok) fail(check.error);
    process.stdout.write(`${check.summary}\n`);
  };
}

/**
 * The dashboard: the workspace's runs in a browser, followed live whenever a
 * swarm runs for the workspace (it may start later). Serves until SIGINT or SIGTERM.
 */
async function ui(argv: string[]): Promise<void> {
  const { values: a } = args(argv, { host: { type: "string", default: "127.0.0.1" }, port: { type: "string", default: String(UI_PORT) }, token: { type: "string" } });
  const port = Number(a.port);
  if (!/^\d+$/.test(a.port) || port > 65535) fail(`--port must be a whole number from 0 (a free port) to 65535, got "${a.port}"`);
  const workspace = resolve(a.workspace);
  if (!existsSync(workspace)) fail(`no workspace ${workspace} (is --workspace right?)`);
  const logger = createLogger("dashboard");
  logger.level = cliConfig().logLevel;
  let dashboard: Dashboard;
  try {
    dashboard = await startDashboard({
      workspace,
      host: a.host,
      port,
      token: a.token ?? cliConfig().uiToken,
      logger,
      assets: await buildWeb(),
      connect: () => connectOrFail(workspace, a.nats),
    });
  } catch (err) {
    const inUse = (err as NodeJS.ErrnoException).code === "EADDRINUSE";
    fail(inUse ? `port ${port} is in use (another dashboard?): give --port N, or --port 0 for a free one` : `cannot start the dashboard: ${(err as Error).message}`, 2);
  }
  process.stdout.write(`dashboard: ${dashboard.url}\n`);
  const stop = () => void dashboard.close().then(() => process.exit(0));
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

const commands: Record<Verb, (argv: string[]) => Promise<void>> = {
  launch,
  runs,
  watch,
  query,
  report,
  status,
  research,
  ablation,
  secrets,
  pause: intervention("pause"),
  resume: intervention("resume"),
  stop: intervention("stop"),
  cancel: intervention("cancel_trial"),
  propose: intervention("propose"),
  ui,
};
if (!verb || verb === "--help" || verb === "-h") process.stdout.write(globalHelp());
else if (verb === "--version" || verb === "-V") process.stdout.write(versionText());
else if (verb === "help") {
  const about = verbArgs[0];
  if (about === undefined) process.stdout.write(globalHelp());
  else if (isVerb(about)) process.stdout.write(verbHelp(about));
  else fail(`no verb "${about}" (research-agent --help lists them)`);
} else if (!isVerb(verb)) fail(`unknown command "${verb}" (research-agent --help lists them)`);
else await commands[verb](verbArgs);
