/**
 * The whole swarm on real parts: a real nats-server, the sandboxed runner
 * with real torch, a LanceDB directory, and every agent as its own OS
 * process. A small goal on digits runs to its end while one agent process
 * is killed mid-run.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { connect } from "@nats-io/transport-node";
import { connectRunner } from "../../gpu-runner/client.js";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseGoal } from "../../core/goal.js";
import { createLogger } from "../../core/logger.js";
import { request as queryLineage } from "../../swarm/lineage-query.js";
import { RunStatus, Verdict, type Event, type RunFinished, type TrialEvaluated, type TrialJudged, type TrialProposed } from "../../proto/gen/research/v1/events_pb.js";
import { adoptedConcepts, blocksOf } from "../../core/brief.js";
import { bestRule } from "../../core/ranking.js";
import { runGoal, startSwarm, type RunOutcome, type Swarm } from "../../deploy/swarm.js";
import { runSettings } from "../../deploy/settings.js";
import { DEFAULT_PYTHON } from "../../core/config.js";
import { run } from "../helpers/run.js";
import { modelSent, trainSent } from "../../core/config-wire.js";
import type { TrainConfigInput, TrialModelInput } from "../../core/model-config.js";
import { unwrapped } from "../helpers/markdown.js";

let workspace: string;
let swarm: Swarm;
let outcome: RunOutcome;
const seen: Event[] = [];
let killedAnalyst = false;
/** A trial whose assembly was published twice (another event id), as a publisher retrying would. */
let duplicated = "";
let firstAssembled = "";
const DUPLICATE = "-published-twice";

beforeAll(async () => {
  workspace = mkdtempSync(join(tmpdir(), "swarm-test-"));
  const logger = createLogger("swarm-test");
  logger.level = "warn";
  // The agents inherit it: the killed analyst's trial comes back after 10 s, not after its 60 s default.
  process.env.AGENT_ACK_WAIT_S = "10";
  swarm = await startSwarm({ workspace, slots: 2, logger });
  const parsed = parseGoal("digits: reach 99.5% validation accuracy in 10 minutes");
  if (!parsed.ok) throw new Error(parsed.error);
  outcome = await runGoal(swarm, {
    start: { goal: parsed.goal, settings: runSettings(parsed.goal, { maxTrials: 6, seeds: 2, parallel: 2, epochs: 3, trialTimeBudgetS: 120 }, workspace) },
    log: logger,
    onEvent: (e) => {
      seen.push(e);
      // The second assembly (not the first, whose analyst is killed below) published again: the
      // analyst evaluates it twice, side by side, and the runner must train it once.
      if (!duplicated && e.body.case === "trialAssembled" && !e.body.value.failure && killedAnalyst && e.trialId !== firstAssembled) {
        duplicated = e.trialId;
        void swarm.bus.publish({ runId: e.runId, trialId: e.trialId, eventId: `${e.eventId}${DUPLICATE}`, body: e.body });
      }
      // Kill the analyst while it holds a trial: JetStream must hand that trial to its restarted successor.
      if (!killedAnalyst && e.body.case === "trialAssembled" && !e.body.value.failure) {
        killedAnalyst = true;
        firstAssembled = e.trialId;
        setTimeout(() => swarm.supervisor.child("analyst")?.kill("SIGKILL"), 300);
      }
    },
  });
}, 600_000);

afterAll(async () => {
  await swarm?.stop();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
});

const kinds = (trialId: string, kind: string) => seen.filter((e) => e.trialId === trialId && e.body.case === kind && !e.eventId.endsWith(DUPLICATE)).length;

describe("a research run on digits", () => {
  it("runs to its end with a decision on the CI", () => {
    expect(killedAnalyst).toBe(true);
    expect([RunStatus.GOAL_ACHIEVED, RunStatus.BUDGET_EXHAUSTED, RunStatus.STOPPED]).toContain(outcome.finished.status);
    expect(outcome.finished.trials).toBeGreaterThanOrEqual(1);
    expect(outcome.finished.bestTrialId).not.toBe("");
    const best = outcome.state.trials.get(outcome.finished.bestTrialId)!;
    expect(best.evaluated?.result?.aggregated.val_accuracy?.mean).toBeGreaterThan(0.8);
    // The best trial was confirmed once on the held-out test split.
    expect(outcome.finished.testResult?.aggregated.test_accuracy?.mean).toBeGreaterThan(0.8);
    // ... from the weights the runner kept: no epoch trained again, the same validation score.
    const test = outcome.finished.testResult!;
    expect(test.seedResults.map((s) => s.epochsCompleted)).toEqual([0, 0]);
    expect(test.aggregated.val_accuracy?.mean).toBe(best.evaluated?.result?.aggregated.val_accuracy?.mean);
    // The two seeds also score as one model (the mean of their probabilities).
    expect(test.aggregated.ensemble_test_accuracy?.mean).toBeGreaterThan(0.8);
    expect(test.aggregated.ensemble_val_accuracy?.n).toBe(1);
  });

  it("loses no trial and duplicates none, although an agent was killed", () => {
    const proposed = outcome.state.order;
    expect(proposed.length).toBeGreaterThanOrEqual(2);
    for (const id of proposed) {
      expect(kinds(id, "trialProposed"), id).toBe(1);
      expect(kinds(id, "trialAssembled"), id).toBeLessThanOrEqual(1);
      expect(kinds(id, "trialEvaluated"), id).toBeLessThanOrEqual(1);
      expect(kinds(id, "trialJudged"), id).toBeLessThanOrEqual(1);
    }
    // Every trial that was judged went through every stage exactly once.
    const judged = proposed.filter((id) => kinds(id, "trialJudged") === 1);
    expect(judged.length).toBe(outcome.finished.trials);
    for (const id of judged) expect(kinds(id, "trialEvaluated"), id).toBe(1);
    expect(seen.filter((e) => e.body.case === "runFinished")).toHaveLength(1);
  });

  it("promotes a top rung-0 trial to the next rung: the same model, three times the training", () => {
    const promotions = [...outcome.state.trials.values()].filter((t) => (t.proposed?.rung ?? 0) > 0);
    expect(promotions.length).toBeGreaterThanOrEqual(1);
    const p = promotions[0]!;
    const parent = outcome.state.trials.get(p.proposed!.parentIds[0]!)!;
    expect(parent.proposed?.rung ?? 0).toBe(0);
    // The same model as validated (the promotion's JSON has the schema's defaults written out).
    expect(p.model).toEqual(parent.model);
    expect(p.train!.epochs).toBe(3 * parent.train!.epochs);
    expect(p.proposed!.proposer).toBe("scheduler");
  });

  it("grounds its first trials in the research brief", () => {
    const brief = seen.find((e) => e.body.case === "briefReady");
    expect(brief).toBeDefined();
    const first = outcome.state.trials.get(outcome.state.order[0]!)!;
    expect(first.proposed?.adoptedConcepts.length).toBeGreaterThan(0);
  });

  it("writes the report and the MVP's registry layout, with the best trial's trained weights beside its code", async () => {
    const runDir = join(workspace, "runs", outcome.runId);
    expect(existsSync(outcome.finished.reportPath)).toBe(true);
    const markdown = unwrapped(readFileSync(outcome.finished.reportPath, "utf8"));
    // After the title a trial goes by its number in the run.
    expect(markdown).toContain(`\`${outcome.finished.bestTrialId.slice(outcome.finished.bestTrialId.lastIndexOf("-") + 1)}\``);
    // What the best model costs to run, timed in its test confirmation.
    expect(markdown).toMatch(/^- Inference on the cpu it trained on \(median of its seeds, each timed warm beside the others\): [\d.e+-]+ ms for one example; [\d.e+-]+ ms for a batch of \d+ \([\d.e+-]+ ms an example\); [\d.e+-]+ MFLOPs an example$/m);
    const registry = JSON.parse(readFileSync(join(runDir, "experiments", "registry.json"), "utf8")) as Record<string, unknown>[];
    expect(registry.length).toBe(outcome.finished.trials);
    expect(Object.keys(registry[0]!)).toEqual(
      expect.arrayContaining(["run_id", "timestamp", "model_name", "dataset", "metrics_summary", "experiment_dir", "decision"]),
    );
    const best = outcome.finished.bestTrialId;
    for (const f of ["model_config.yaml", "model_code.py", "summary.json", "results.json"]) {
      expect(existsSync(join(runDir, "experiments", best, f)), f).toBe(true);
    }
    expect(readFileSync(join(runDir, "src", "models", "current_model.py"), "utf8")).toBe(
      readFileSync(join(runDir, "experiments", best, "model_code.py"), "utf8"),
    );
    // One state_dict per seed, fetched from the runner over gRPC; each loads into the exported class.
    const seeds = outcome.state.trials.get(best)!.evaluated!.result!.seedResults.map((s) => s.seed);
    const files = seeds.map((s) => `src/models/current_model_seed-${s}.pt`);
    const className = outcome.state.trials.get(best)!.assembled!.request!.model!.className;
    const load = `import sys, torch\nsys.path.insert(0, "src/models")\nfrom current_model import ${className}\nfor path in sys.argv[1:]:\n    ${className}().load_state_dict(torch.load(path, map_location="cpu"))\nprint("loaded", len(sys.argv) - 1)`;
    const python = await run(DEFAULT_PYTHON, ["-c", load, ...files], { cwd: runDir, timeout: 60_000 });
    expect(python.stdout.trim(), python.stderr).toBe(`loaded ${seeds.length}`);
    const report = JSON.parse(readFileSync(join(runDir, "report.json"), "utf8")) as { outcome: { best_trial: { weights: { files: { path: string }[]; failure: unknown } } } };
    expect(report.outcome.best_trial.weights).toMatchObject({ files: files.map((path) => ({ path })), failure: null });
  });

  it("claims in its report only what the stored events show, by the rule the report states", () => {
    const report = JSON.parse(readFileSync(join(workspace, "runs", outcome.runId, "report.json"), "utf8")) as {
      outcome: { best_trial_id: string; best_rule: string; why_best: string; test_skipped: string | null; best_trial: { test: { metrics: Record<string, { mean: number }> } | null } };
      trials: { trial_id: string; num_seeds: number | null; val_examples: number | null; adopted_concepts: string[] }[];
    };
    const evaluated = new Map<string, TrialEvaluated>();
    const judged = new Map<string, TrialJudged>();
    const proposed = new Map<string, TrialProposed>();
    for (const e of seen) {
      if (e.body.case === "trialEvaluated") evaluated.set(e.trialId, e.body.value);
      if (e.body.case === "trialJudged") judged.set(e.trialId, e.body.value);
      if (e.body.case === "trialProposed") proposed.set(e.trialId, e.body.value);
    }
    // The best, recomputed from the events by the rule the report states: multi-seed first, then the CI lower bound.
    expect(report.outcome.best_rule).toBe(bestRule());
    const ranked = [...judged]
      .filter(([id, j]) => j.verdict === Verdict.ACCEPT && evaluated.get(id)?.result?.aggregated.val_accuracy)
      .map(([id]) => ({ id, acc: evaluated.get(id)!.result!.aggregated.val_accuracy! }))
      .sort((a, b) => Number(b.acc.n >= 2) - Number(a.acc.n >= 2) || b.acc.ci95[0]! - a.acc.ci95[0]!);
    expect(report.outcome.best_trial_id).toBe(ranked[0]!.id);
    const pct = (x: number) => `${(100 * x).toFixed(2)}%`;
    expect(report.outcome.why_best).toContain(pct(ranked[0]!.acc.ci95[0]!));
    if (ranked[1]) expect(report.outcome.why_best).toContain(`${pct(ranked[1].acc.ci95[0]!)} (`);
    // The test accuracy is the one stored with the run's end, or the report says why there is none.
    const finished = seen.find((e) => e.body.case === "runFinished")!.body.value as RunFinished;
    if (finished.testResult) expect(report.outcome.best_trial.test?.metrics.test_accuracy?.mean).toBe(finished.testResult.aggregated.test_accuracy?.mean);
    else expect(report.outcome.test_skipped).toBe(finished.testSkipped);
    for (const row of report.trials) {
      const result = evaluated.get(row.trial_id)?.result;
      // What each interval counts.
      expect(row.num_seeds ?? 0, row.trial_id).toBe(result?.numSeeds ?? 0);
      if (result) expect(row.val_examples, row.trial_id).toBe(result.seedResults[0]!.valExamples);
      // Each adopted concept names a block the trial's configs hold and its parent's did not.
      const p = proposed.get(row.trial_id)!;
      const parent = p.parentIds[0] ? proposed.get(p.parentIds[0]) : undefined;
      const blocks = blocksOf(modelSent(p) as TrialModelInput, trainSent(p) as TrainConfigInput);
      const before = parent ? blocksOf(modelSent(parent) as TrialModelInput, trainSent(parent) as TrainConfigInput) : undefined;
      expect(row.adopted_concepts, row.trial_id).toEqual(adoptedConcepts(outcome.state.briefs, blocks, before).map((c) => c.name).filter((n) => row.adopted_concepts.includes(n)));
      for (const name of row.adopted_concepts) {
        const brought = outcome.state.briefs.flatMap((b) => b.architectural_suggestions).find((sg) => sg.name === name)?.building_blocks?.filter((b) => blocks.has(b) && !before?.has(b));
        expect(brought?.length, `${row.trial_id} ${name}`).toBeGreaterThan(0);
      }
    }
  });

  it("answers similarity queries over the bus and from the workspace on disk", async () => {
    const first = outcome.state.trials.get(outcome.state.order[0]!)!;
    const hits = await queryLineage(swarm.bus, { text: first.proposed!.hypothesis, k: 3, runId: outcome.runId });
    expect(hits[0]?.trialId).toBe(first.id);
    const query = await run("./research-agent", ["query", "--similar", first.proposed!.hypothesis, "--workspace", workspace, "--nats", "nats://127.0.0.1:1", "--json"], { timeout: 120_000 });
    expect(query.status, query.stderr).toBe(0);
    expect((JSON.parse(query.stdout) as { trial_id: string }[])[0]?.trial_id).toBe(first.id);
  });

  it("gives a run's report over a bus another host started: report --nats from a workspace that lacks the run", async () => {
    const elsewhere = mkdtempSync(join(tmpdir(), "report-nats-"));
    try {
      const env = { ...process.env, RESEARCH_SECRETS: join(workspace, "secrets") };
      const r = await run("./research-agent", ["report", outcome.runId, "--workspace", elsewhere, "--nats", swarm.natsUrl, "--json"], { env, timeout: 120_000 });
      expect(r.status, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ run_id: outcome.runId });
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
  });

  it("is protected by default: the workspace's own credentials, and nothing gets in without them", async () => {
    expect(statSync(join(workspace, "secrets")).mode & 0o777).toBe(0o700);
    expect(statSync(join(workspace, "secrets", "nats.json")).mode & 0o777).toBe(0o600);
    await expect(connect({ servers: swarm.natsUrl, reconnect: false, timeout: 3000 })).rejects.toThrow();
    const stranger = connectRunner(swarm.runnerAddress);
    await expect(stranger.health({}, { timeoutMs: 5000 })).rejects.toMatchObject({ label: "runner_unavailable" });
    stranger.close();
    // The CLI logs in with the workspace's credentials: runs, runners and their slots, agents.
    const [{ status: code, stdout: status, stderr }, json] = await Promise.all([
      run("./research-agent", ["status", "--workspace", workspace], { timeout: 120_000 }),
      run("./research-agent", ["status", "--json", "--workspace", workspace], { timeout: 120_000 }),
    ]);
    expect(code, stderr).toBe(0);
    // The same as one JSON document.
    const doc = JSON.parse(json.stdout) as { runs: unknown[]; runners: { health?: { slots: number; evaluations_joined: number } }[]; agents: { agent: string }[] };
    expect(doc.runs).toEqual([]);
    expect(doc.runners[0]!.health).toMatchObject({ slots: 2 });
    expect(doc.runners[0]!.health!.evaluations_joined).toBeGreaterThanOrEqual(1);
    expect(doc.agents.map((a) => a.agent.split("/")[0])).toEqual(expect.arrayContaining(["researcher", "planner", "coder", "analyst", "judge"]));
    expect(status).toMatch(/^runs:\n  none running\nrunners:\n  127\.0\.0\.1:\d+  2 slots, \d free, \d queued, \d workers up; cpu .*, sandboxed; \d+ evaluations, \d+ duplicate requests joined one\nagents:\n/);
    // The trial assembled twice trained once: its duplicate request joined the evaluation running.
    expect(duplicated).not.toBe("");
    expect(Number(/(\d+) duplicate requests joined one/.exec(status)![1])).toBeGreaterThanOrEqual(1);
    expect(kinds(duplicated, "trialEvaluated")).toBe(1);
    expect(status).toMatch(/judge\/judge/);
  });
});
