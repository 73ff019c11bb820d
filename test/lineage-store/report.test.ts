import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { parse as parseYaml } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyToRunState, emptyRunState, type RunState } from "../../swarm/run-state.js";
import { SURFACE, type SurfaceName } from "../../core/enums.js";
import { failure, type FailureName } from "../../core/failure.js";
import { trialId } from "../../core/ids.js";
import { Decision, EventSchema, RunStatus, Verdict, type Event } from "../../proto/gen/research/v1/events_pb.js";
import { EvalResultSchema, GoalStatus } from "../../proto/gen/research/v1/runner_pb.js";
import { readRegistry, writeArtifacts, type RegistryEntry } from "../../lineage-store/artifacts.js";
import { failuresPlot, learningCurvesPlot, scoresPlot } from "../../lineage-store/plots.js";
import { escapeXml, renderSvg } from "../../lineage-store/svg.js";
import { buildReport } from "../../lineage-store/report.js";
import { FRONT_PLOT, PLOT_FILES } from "../../lineage-store/report-json.js";
import { inferenceJson } from "../../lineage-store/report-model.js";
import { evaluated, proposed, RUN as AGENT_RUN, started, state as agentState } from "../agents/helpers.js";
import { Cost } from "../../proto/gen/research/v1/common_pb.js";
import type { EventInit } from "../../bus/index.js";
import { briefMessage, modelSpec, trainSpec } from "../../core/config-wire.js";
import type { ModelConfigInput, TrainConfigInput } from "../../core/model-config.js";
import { unwrapped } from "../helpers/markdown.js";
import { marks, series } from "../helpers/plots.js";

const RUN = "run-fmnist";
const T0 = 1_750_000_000_000;

interface Spec {
  hypothesis: string;
  surface: SurfaceName;
  channels: number[];
  /** Mean validation accuracy and CI half-width; absent when the trial fails. */
  acc?: [number, number];
  fails?: { label: FailureName; at: "assembled" | "evaluated"; message: string };
  verdict: Verdict;
  decision?: Decision;
  parent?: number;
  concepts?: string[];
}

const SPECS: Spec[] = [
  { hypothesis: "baseline: two conv layers and a linear head", surface: "architecture", channels: [16, 32], acc: [0.872, 0.007], verdict: Verdict.ACCEPT },
  { hypothesis: "wider conv stack with batchnorm", surface: "architecture", channels: [32, 64, 64], acc: [0.903, 0.004], verdict: Verdict.ACCEPT, parent: 0, concepts: ["batchnorm"] },
  {
    hypothesis: "very deep residual network at full resolution",
    surface: "architecture",
    channels: [256, 256, 256, 256],
    fails: { label: "oom", at: "evaluated", message: "CUDA out of memory. Tried to allocate 2.00 GiB" },
    verdict: Verdict.REJECT,
    parent: 1,
  },
  {
    hypothesis: "depthwise separable convs | <b>cut</b> params <50k & keep accuracy",
    surface: "architecture",
    channels: [32, 64],
    fails: { label: "shape_error", at: "assembled", message: "mat1 and mat2 shapes cannot be multiplied (128x3136 and 1568x10)" },
    verdict: Verdict.REJECT,
    parent: 1,
  },
  { hypothesis: "label smoothing 0.1 against overconfidence", surface: "regularisation", channels: [32, 64, 64], acc: [0.899, 0.005], verdict: Verdict.REJECT, parent: 1 },
  {
    hypothesis: "squeeze-excitation after each conv stage",
    surface: "architecture",
    channels: [32, 64, 64],
    acc: [0.9235, 0.0027],
    verdict: Verdict.ACCEPT,
    decision: Decision.GOAL_ACHIEVED,
    parent: 1,
    concepts: ["se_block"],
  },
];

const tid = (i: number) => trialId(RUN, i + 1);
// A trial that adopts a concept holds its blocks (squeeze-excitation: an se layer after each stage).
const modelConfig = (s: Spec, i: number): ModelConfigInput => ({
  name: `fmnist_cnn_${i + 1}`,
  layers: s.channels.flatMap((c) => [
    { type: "conv2d" as const, out_channels: c },
    { type: "batchnorm" as const },
    { type: "activation" as const, fn: "relu" as const },
    ...(s.concepts?.includes("se_block") ? [{ type: "se" as const }] : []),
  ]),
});
const codeOf = (i: number) => `import torch.nn as nn\n\n\nclass Trial${i + 1}(nn.Module):\n    """${SPECS[i]!.hypothesis}"""\n`;
const paramsOf = (s: Spec) => BigInt(s.channels.reduce((a, c) => a + c * 9 * 32, 0));
const SEEDS = 3;
const EPOCHS = 5;

function evalResult(mean: number, half: number, params: bigint, target: number): MessageInitShape<typeof EvalResultSchema> {
  const seeds = Array.from({ length: SEEDS }, (_, k) => {
    const final = mean + (k - 1) * half * 0.4;
    const val = Array.from({ length: EPOCHS }, (_, e) => final - 0.12 * (0.5 ** e - 0.5 ** (EPOCHS - 1)));
    const train = val.map((v, e) => Math.min(1, v + 0.004 * e));
    return {
      seed: k,
      metrics: { val_accuracy: final, train_accuracy: train[EPOCHS - 1]! },
      learningCurve: { valAccuracy: val, trainAccuracy: train, valLoss: val.map((v) => 1 - v), trainLoss: train.map((v) => 1 - v) },
      seconds: 11 + k,
      epochsCompleted: EPOCHS,
    };
  });
  const lo = mean - half;
  return {
    aggregated: { val_accuracy: { mean, std: half / 2.5, ci95: [lo, mean + half], min: mean - half * 0.4, max: mean + half * 0.4, n: SEEDS } },
    seedResults: seeds,
    bestSeed: 2,
    numSeeds: SEEDS,
    goalAchieved: lo >= target,
    goalStatus: lo >= target ? GoalStatus.ACHIEVED : mean >= target ? GoalStatus.LIKELY : GoalStatus.NOT_ACHIEVED,
    target,
    params,
    seconds: 36,
  };
}

function runEvents(): Event[] {
  const out: Event[] = [];
  let clock = T0;
  const ev = (trialId: string, body: MessageInitShape<typeof EventSchema>["body"], advanceS: number) => {
    clock += advanceS * 1000;
    out.push(create(EventSchema, { runId: RUN, trialId, eventId: `e${out.length}`, emittedAtMs: BigInt(clock), producer: "test", body }));
  };
  const target = 0.92;
  ev("", {
    case: "runStarted",
    value: {
      goal: { rawText: "Fashion-MNIST, at least 92% validation accuracy, under 200k parameters, 20 minutes", dataset: "fashion-mnist", target, maxParams: 200_000n, timeBudgetS: 1200 },
      settings: { maxTrials: 12, seeds: SEEDS, parallel: 2, planner: "builtin", patience: 4, subset: 10_000, epochs: EPOCHS, trialTimeBudgetS: 120, rngSeed: 7, research: true },
    },
  }, 0);
  ev("", {
    case: "briefReady",
    value: {
      briefId: "b1",
      query: "compact cnn fashion-mnist",
      author: "builtin",
      brief: briefMessage({
        summary_title: "Compact CNNs for Fashion-MNIST",
        insights: ["Batch normalisation speeds up convergence of small CNNs."],
        architectural_suggestions: [
          { name: "se_block", description: "squeeze-and-excitation channel attention", implementation_note: "after each conv stage", building_blocks: ["se"], buildable: true },
          { name: "ghost_module", description: "cheap feature maps", implementation_note: "replace 3x3 convs", building_blocks: ["ghost"], buildable: true },
        ],
        sources: [{ title: "Squeeze-and-Excitation Networks", url: "https://arxiv.org/abs/1709.01507" }],
      }),
    },
  }, 4);
  SPECS.forEach((s, i) => {
    const id = tid(i);
    const parentIds = s.parent === undefined ? [] : [tid(s.parent)];
    ev(id, {
      case: "trialProposed",
      value: {
        hypothesis: s.hypothesis, rationale: `prior trials suggest ${s.surface} is paying off`, parentIds, surface: SURFACE.value(s.surface),
        model: modelSpec(modelConfig(s, i)), train: trainSpec({ optimizer: "adamw", lr: 0.002, epochs: EPOCHS }),
        index: i, adoptedConcepts: s.concepts ?? [], proposer: `planner-${s.surface}`,
      },
    }, 2);
    const assemblyFails = s.fails?.at === "assembled";
    ev(id, {
      case: "trialAssembled",
      value: {
        code: codeOf(i), className: `Trial${i + 1}`,
        diff: parentIds.length ? `--- ${parentIds[0]}\n+++ ${id}\n@@ -1 +1 @@\n-old\n+new\n` : "",
        summary: assemblyFails
          ? { failure: failure(s.fails!.label, s.fails!.message) }
          : { totalParams: paramsOf(s), trainableParams: paramsOf(s), flops: paramsOf(s) * 1500n, outputShape: [1n, 10n], sizeMb: 0.4 },
        failure: assemblyFails ? failure(s.fails!.label, s.fails!.message) : undefined,
      },
    }, 3);
    ev(id, {
      case: "trialEvaluated",
      value: s.acc
        ? {
            result: evalResult(s.acc[0], s.acc[1], paramsOf(s), target),
            analysis: { overfitting: "mild", convergence: "converged", weakClasses: [6], notes: ["shirt vs t-shirt confusion"] },
            evalSeconds: 36 + i,
          }
        : { failure: failure(s.fails!.label, s.fails!.message), evalSeconds: assemblyFails ? 0 : 8 },
    }, s.acc ? 40 : 8);
    ev(id, {
      case: "trialJudged",
      value: {
        verdict: s.verdict, decision: s.decision ?? Decision.ITERATE, reason: s.decision ? "95% CI lower bound reaches the target" : "continue",
        score: s.acc ? s.acc[0] - s.acc[1] : 0, ciLow: s.acc ? s.acc[0] - s.acc[1] : 0, ciHigh: s.acc ? s.acc[0] + s.acc[1] : 0, surface: SURFACE.value(s.surface),
        failure: s.fails ? failure(s.fails.label, s.fails.message) : undefined,
        gain: s.acc && s.parent !== undefined ? s.acc[0] - SPECS[s.parent]!.acc![0] : 0, trialsDone: i + 1,
      },
    }, 1);
  });
  const test = evalResult(0.9187, 0.0031, paramsOf(SPECS[5]!), 0);
  test.aggregated = {
    ...test.aggregated,
    test_accuracy: { mean: 0.9187, std: 0.0012, ci95: [0.9156, 0.9218], min: 0.9174, max: 0.9199, n: SEEDS },
    ensemble_test_accuracy: { mean: 0.9243, std: 0, ci95: [0.9189, 0.9293], min: 0.9243, max: 0.9243, n: 1 },
  } as typeof test.aggregated;
  ev("", {
    case: "runFinished",
    value: { status: RunStatus.GOAL_ACHIEVED, bestTrialId: tid(5), testResult: test, trials: SPECS.length, seconds: (clock - T0) / 1000 + 40, reason: "95% CI lower bound reaches the target" },
  }, 40);
  return out;
}

/** The same run with no target: what the judge emits for a goal like "fashion-mnist: best model you can in 20 minutes". */
function openEndedEvents(): Event[] {
  const events = runEvents();
  for (const e of events) {
    const b = e.body;
    if (b.case === "runStarted") {
      Object.assign(b.value.goal!, {
        rawText: "fashion-mnist: maximise test accuracy, under 200k parameters, 20 minutes",
        description: "find the most accurate model on fashion-mnist: no target; maximise validation accuracy until the trial or time budget is spent or it plateaus",
        target: 0,
        openEnded: true,
      });
    }
    if (b.case === "trialJudged" && b.value.decision === Decision.GOAL_ACHIEVED) Object.assign(b.value, { decision: Decision.ITERATE, reason: "accepted" });
    if (b.case === "runFinished") Object.assign(b.value, { status: RunStatus.COMPLETED, reason: "trial budget of 6 spent" });
  }
  return events;
}

/** Tags nest and close, attributes are unique, text is escaped: what a strict XML parser would reject, without depending on one. */
function assertBalancedXml(svg: string): void {
  const stack: string[] = [];
  for (const m of svg.matchAll(/<(\/?)([A-Za-z][\w:-]*)[^>]*?(\/?)>/g)) {
    const [tag, closing, name, selfClosing] = m;
    const attrs = [...tag.matchAll(/\s([\w:-]+)=/g)].map((a) => a[1]);
    expect(new Set(attrs).size, `duplicate attribute in ${tag}`).toBe(attrs.length);
    if (selfClosing) continue;
    if (closing) expect(stack.pop()).toBe(name);
    else stack.push(name!);
  }
  expect(stack).toEqual([]);
  expect(svg.replace(/<[^>]*>/g, "")).not.toMatch(/[<>]|&(?!(amp|lt|gt|quot|apos|#\d+);)/);
}


describe("run artifacts and report", () => {
  let dir: string;
  let state: RunState;
  const events = runEvents();
  let currentAfterT2 = "";

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "artifacts-"));
    state = emptyRunState(RUN);
    for (const e of events) {
      applyToRunState(state, e);
      await writeArtifacts(dir, state, e);
      if (e.body.case === "trialJudged" && e.trialId === tid(1)) currentAfterT2 = await readFile(join(dir, "src/models/current_model.py"), "utf8");
    }
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("writes the MVP layout for every trial", async () => {
    for (let i = 0; i < SPECS.length; i++) {
      const exp = join(dir, "experiments", tid(i));
      for (const f of ["model_config.yaml", "train_config.yaml", "hypothesis.md", "model_code.py", "summary.json", "results.json"]) {
        expect((await stat(join(exp, f))).isFile(), `${tid(i)}/${f}`).toBe(true);
      }
      expect(parseYaml(await readFile(join(exp, "model_config.yaml"), "utf8"))).toEqual(modelConfig(SPECS[i]!, i));
      expect(await readFile(join(exp, "model_code.py"), "utf8")).toBe(codeOf(i));
    }
    await expect(stat(join(dir, "experiments", tid(0), "code.diff"))).rejects.toThrow();
    expect(await readFile(join(dir, "experiments", tid(1), "code.diff"), "utf8")).toContain(`+++ ${tid(1)}`);
    expect(await readFile(join(dir, "experiments", tid(5), "hypothesis.md"), "utf8")).toContain("Adopted concepts: se_block");
  });

  it("records summaries and results as proto JSON with snake_case names, counts as numbers and failure labels", async () => {
    const summary = JSON.parse(await readFile(join(dir, "experiments", tid(1), "summary.json"), "utf8"));
    expect(summary).toMatchObject({ total_params: Number(paramsOf(SPECS[1]!)), flops: Number(paramsOf(SPECS[1]!) * 1500n), output_shape: [1, 10] });
    const failedSummary = JSON.parse(await readFile(join(dir, "experiments", tid(3), "summary.json"), "utf8"));
    expect(failedSummary.failure.label).toBe("shape_error");

    const results = JSON.parse(await readFile(join(dir, "experiments", tid(5), "results.json"), "utf8"));
    const acc = results.aggregated.val_accuracy;
    expect(Object.keys(acc)).toEqual(expect.arrayContaining(["mean", "std", "ci_95", "min", "max"]));
    expect(acc.mean).toBeCloseTo(0.9235, 6);
    expect(acc.ci_95).toHaveLength(2);
    expect(results.seed_results).toHaveLength(SEEDS);
    expect(results.seed_results[0].learning_curve.val_accuracy).toHaveLength(EPOCHS);
    expect(results).toMatchObject({ best_seed: 2, num_seeds: SEEDS, goal_achieved: true, analysis: { overfitting: "mild" } });
    expect(results.params).toBe(Number(paramsOf(SPECS[5]!)));

    const oom = JSON.parse(await readFile(join(dir, "experiments", tid(2), "results.json"), "utf8"));
    expect(oom.failure).toMatchObject({ label: "oom", message: expect.stringContaining("out of memory") });
  });

  it("keeps a registry entry per judged trial in the MVP's shape", async () => {
    const registry = await readRegistry(dir);
    expect(registry.map((e) => e.trial_id)).toEqual(SPECS.map((_, i) => tid(i)));
    const keys: (keyof RegistryEntry)[] = ["run_id", "trial_id", "timestamp", "model_name", "dataset", "metrics_summary", "experiment_dir", "decision", "verdict", "failure_label"];
    for (const e of registry) expect(Object.keys(e).sort()).toEqual([...keys].sort());
    const last = registry[5]!;
    expect(last).toMatchObject({ run_id: RUN, model_name: "fmnist_cnn_6", dataset: "fashion-mnist", experiment_dir: `experiments/${tid(5)}`, decision: "goal_achieved", verdict: "accept", failure_label: null });
    expect(last.metrics_summary).toMatchObject({ num_seeds: SEEDS, params: Number(paramsOf(SPECS[5]!)) });
    expect(last.metrics_summary.ci_95![0]).toBeCloseTo(0.9208, 6);
    expect(Date.parse(last.timestamp)).toBeGreaterThan(T0);
    expect(registry.map((e) => e.failure_label)).toEqual([null, null, "oom", "shape_error", null, null]);
    expect(registry[4]!.verdict).toBe("reject");
  });

  it("tracks the current best accepted model", async () => {
    expect(currentAfterT2).toBe(codeOf(1));
    expect(await readFile(join(dir, "src/models/current_model.py"), "utf8")).toBe(codeOf(5));
    expect(parseYaml(await readFile(join(dir, "configs/models/current_model_config.yaml"), "utf8"))).toEqual(modelConfig(SPECS[5]!, 5));
  });

  it("writes a report naming the best trial, its CI, the test confirmation and the failures", async () => {
    const md = unwrapped(await readFile(join(dir, "report.md"), "utf8"));
    // After the title, a trial goes by its number in the run.
    expect(md).toContain(`**Best trial:** \`t006\``);
    expect(md).not.toContain(`${tid(5)}\``);
    expect(md).toContain("92.35% (95% CI 92.08% – 92.62%)");
    expect(md).toMatch(/one-time confirmation on the test split.*91\.87% \(95% CI 91\.56% – 92\.18%\)/);
    expect(md).toContain("| oom | 1 |");
    expect(md).toContain("| shape_error | 1 |");
    expect(md).toContain("![score per trial](plots/scores.svg)");
    expect(md).toContain("Suggestion **se_block**: adopted by `t006`");
    // User text must neither break the table nor inject HTML, and reads as written otherwise.
    expect(md).toContain("depthwise separable convs \\| &lt;b>cut&lt;/b> params <50k & keep…");
    expect(md).not.toMatch(/&gt;|&amp;/);
    const trialRows = md.split("\n").filter((l) => l.startsWith("| ") && /`t\d{3}/.test(l));
    expect(trialRows.filter((l) => l.split(/(?<!\\)\|/).length === 13)).toHaveLength(SPECS.length);

    const json = JSON.parse(await readFile(join(dir, "report.json"), "utf8"));
    expect(json.outcome.best_trial_id).toBe(tid(5));
    expect(json.outcome.best_trial.test.metrics.test_accuracy.mean).toBeCloseTo(0.9187, 6);
    expect(json.outcome.best_trial.test.metrics.ensemble_test_accuracy.mean).toBeCloseTo(0.9243, 6);
    expect(md).toContain(`- Ensemble of its ${SEEDS} seeds (mean of their probabilities, no extra training): test 92.43% (95% CI 91.89% – 92.93%)`);
    expect(json.failures).toEqual({ oom: 1, shape_error: 1 });
    expect(json.timeline.first_accepted).toMatchObject({ trial_id: tid(0), trials_judged: 1, seconds: 50 });
    expect(json.timeline.goal_reached).toMatchObject({ trial_id: tid(5), trials_judged: 6 });
    expect(json.surfaces.find((s: { surface: string }) => s.surface === "architecture")).toMatchObject({ trials: 5, accepted: 3, failed: 2 });
  });

  it("draws well-formed plots with one mark per trial, seed and failure label", async () => {
    const plots = buildReport(state, events.at(-1)!.body.value as Parameters<typeof buildReport>[1]).plots;
    for (const file of [PLOT_FILES.scores, PLOT_FILES.learningCurves, PLOT_FILES.failures]) {
      const svg = await readFile(join(dir, file), "utf8");
      expect(svg.startsWith("<svg")).toBe(true);
      expect(svg).toContain(`<title>${escapeXml(plots[file]!.title)}</title>`);
      assertBalancedXml(svg);
    }
    const scores = plots[PLOT_FILES.scores]!;
    expect(marks(scores, "95% CI")).toBe(4);
    expect(marks(scores, "accepted") + marks(scores, "rejected") + marks(scores, "best")).toBe(4);
    expect(marks(scores, "failed")).toBe(2);
    expect(marks(scores, "best")).toBe(1);
    expect(series(scores, "95% CI").markLine!.data).toEqual([{ yAxis: 0.92 }]);
    const curves = plots[PLOT_FILES.learningCurves]!;
    for (let seed = 0; seed < SEEDS; seed++) {
      expect(marks(curves, `seed ${seed}`)).toBeGreaterThan(0);
      expect(marks(curves, `seed ${seed} train`)).toBe(marks(curves, `seed ${seed}`));
    }
    expect(series(plots[PLOT_FILES.failures]!, "failures").data).toEqual([1, 1]);
  });

  it("rewrites the same bytes when events are replayed", async () => {
    const before = await Promise.all(["experiments/registry.json", "report.md", "plots/scores.svg"].map((f) => readFile(join(dir, f), "utf8")));
    const replayed = emptyRunState(RUN);
    for (const e of events) {
      applyToRunState(replayed, e);
      await writeArtifacts(dir, replayed, e);
    }
    const after = await Promise.all(["experiments/registry.json", "report.md", "plots/scores.svg"].map((f) => readFile(join(dir, f), "utf8")));
    expect(after).toEqual(before);
    expect((await readdir(join(dir, "experiments"), { recursive: true })).filter((f) => String(f).endsWith(".tmp"))).toEqual([]);
  });

  it("writes the report again when the best's evaluation and verdict come after the run's end (the store takes each kind on its own)", async () => {
    const late = await mkdtemp(join(tmpdir(), "artifacts-late-"));
    try {
      const best = tid(5);
      const isLate = (e: Event) => e.trialId === best && (e.body.case === "trialEvaluated" || e.body.case === "trialJudged");
      const order = [...events.filter((e) => !isLate(e)), ...events.filter(isLate)];
      expect(order.findIndex((e) => e.body.case === "runFinished")).toBeLessThan(order.findIndex(isLate));
      const s = emptyRunState(RUN);
      for (const e of order) {
        applyToRunState(s, e);
        await writeArtifacts(late, s, e);
      }
      const report = JSON.parse(await readFile(join(late, "report.json"), "utf8")) as { outcome: { best_trial_id: string; best_trial: { val_accuracy: { mean: number } | null } } };
      expect(report.outcome.best_trial_id).toBe(best);
      expect(report.outcome.best_trial.val_accuracy?.mean).toBe(0.9235);
    } finally {
      await rm(late, { recursive: true, force: true });
    }
  });

  it("handles empty runs and hostile text", () => {
    const empty = emptyRunState("run-empty");
    const finished = events.at(-1)!.body.value as Parameters<typeof buildReport>[1];
    const { markdown } = buildReport(empty, { ...finished, bestTrialId: "", testResult: undefined });
    expect(unwrapped(markdown)).toContain("No trial was accepted.");
    for (const plot of Object.values(buildReport(empty, finished).plots)) assertBalancedXml(renderSvg(plot));
    assertBalancedXml(renderSvg(scoresPlot([{ trialId: `<a&"b'>`, mean: 0.5, ci95: [0.4, 0.6], accepted: true, best: true }], 0.7)));
    assertBalancedXml(renderSvg(learningCurvesPlot("t<1>", [{ seed: 0, val: [0.5], train: [0.6] }])));
    const failures = renderSvg(failuresPlot({ "a<b": 3 }));
    assertBalancedXml(failures);
    expect(failures).toContain(">a&lt;b</text>");
    expect(escapeXml(`<a href="x">&'`)).toBe("&lt;a href=&quot;x&quot;&gt;&amp;&apos;");
  });

  it("says a targeted run's goal was met and has a target line in the plot", () => {
    const { markdown } = buildReport(state, events.at(-1)!.body.value as Parameters<typeof buildReport>[1]);
    expect(unwrapped(markdown)).toContain("- Goal reached: `t006`");
    expect(unwrapped(markdown)).toContain("against the 92.00% target: met");
    expect(unwrapped(markdown)).not.toContain("No target was set");
  });
});

describe("report of an open-ended run", () => {
  const events = openEndedEvents();
  const state = emptyRunState(RUN);
  for (const e of events) applyToRunState(state, e);
  const finished = events.at(-1)!.body.value as Parameters<typeof buildReport>[1];

  it("names the best model with its CI and its one-time test accuracy, and says there was no target", () => {
    const { markdown, json } = buildReport(state, finished);
    expect(unwrapped(markdown)).toContain("**Status:** completed: trial budget of 6 spent");
    expect(unwrapped(markdown)).toContain(
      "No target was set, so there is no goal to meet or miss: the best model found is `t006`, validation accuracy 92.35% (95% CI 92.08% – 92.62%); " +
        "test accuracy, measured once on the held-out test split: 91.87% (95% CI 91.56% – 92.18%) per seed, 92.43% (95% CI 91.89% – 92.93%) for the ensemble of its 3 seeds.",
    );
    expect(unwrapped(markdown)).toContain("| target | none (open-ended: the best model within the limits) |");
    expect(unwrapped(markdown)).toContain("Understood as: find the most accurate model on fashion-mnist: no target;");
    expect(unwrapped(markdown)).toMatch(/one-time confirmation on the test split.*91\.87%/);
    // No goal wording anywhere.
    expect(unwrapped(markdown)).not.toMatch(/Goal reached|goal met|target: (?:met|not met)|against the/i);
    expect(json.goal).toMatchObject({ open_ended: true, target: null, max_params: 200_000 });
    expect(json.outcome.status).toBe("completed");
    expect(json.outcome.best_trial_id).toBe(tid(5));
    expect(json.timeline.goal_reached).toBeNull();
  });

  it("says so when no model was accepted", () => {
    const started = emptyRunState(RUN);
    applyToRunState(started, events[0]!);
    const { markdown } = buildReport(started, { ...finished, bestTrialId: "", testResult: undefined });
    expect(unwrapped(markdown)).toContain("No target was set, so there is no goal to meet or miss: no model was accepted.");
    expect(unwrapped(markdown)).toContain("No trial was accepted.");
  });

  it("draws no target line", () => {
    expect(series(buildReport(state, finished).plots[PLOT_FILES.scores]!, "95% CI").markLine).toBeUndefined();
  });
});

describe("a model's inference cost in the report", () => {
  const result = (device: string, peaks: (number | undefined)[]) =>
    create(EvalResultSchema, {
      device: { kind: device },
      seedResults: peaks.map((peak, seed) => ({
        seed,
        inference: {
          batch1: { batch: 1, medianMs: 0.5 + seed, p90Ms: 1 + seed, repeats: 30 },
          batchEval: { batch: 256, medianMs: 10 + seed, p90Ms: 12 + seed, repeats: 30, ...(peak !== undefined && { peakMemoryMb: peak }) },
          flopsPerSample: 1_000_000n,
          ...(device === "cuda" && { hostCpuBatch1: { batch: 1, medianMs: 3 + seed, p90Ms: 4 + seed, repeats: 10 } }),
        },
      })),
    });

  it("gives a GPU's allocator peak as the largest over the seeds, and none on a CPU", () => {
    const gpu = inferenceJson(result("cuda", [80, 96, 88]))!;
    expect(gpu.batch_eval).toEqual({ batch: 256, median_ms: 11, p90_ms: 14, peak_memory_mb: 96, seeds: 3 });
    expect(gpu.batch_1!.peak_memory_mb).toBeNull();
    expect(gpu.host_cpu_batch_1).toEqual({ batch: 1, median_ms: 4, p90_ms: 6, peak_memory_mb: null, seeds: 3 });
    const cpu = inferenceJson(result("cpu", [undefined, undefined]))!;
    expect(cpu.batch_eval!.peak_memory_mb).toBeNull();
    expect(cpu.host_cpu_batch_1).toBeNull();
  });
});

describe("a Pareto goal with a latency limit in the report (issue 39)", () => {
  // Four probes: a (small, fast), b (accurate, large), c (dominated by a), d (over the limit).
  const probe = (id: string, mean: number, params: number, ms: number, verdict = Verdict.ACCEPT): EventInit[] => [
    proposed(id),
    evaluated(id, mean, 0.01, { n: 1, params: BigInt(params), latencyMs: [ms] }),
    { runId: AGENT_RUN, trialId: id, body: { case: "trialJudged", value: { verdict, decision: Decision.ITERATE, failure: verdict === Verdict.ACCEPT ? undefined : failure("over_limit", "2.50 ms per example") } } },
  ];
  const events = [
    started({}, { dataset: "fashion-mnist", openEnded: true, target: 0, tradeOffs: [Cost.PARAMS, Cost.LATENCY], maxLatencyMs: 2 }),
    ...probe("a", 0.85, 20_000, 0.5),
    ...probe("b", 0.9, 400_000, 1.8),
    ...probe("c", 0.8, 60_000, 0.9),
    ...probe("d", 0.93, 900_000, 2.5, Verdict.REJECT),
  ];
  const s = agentState(events);
  const finished = { status: RunStatus.COMPLETED, reason: "time budget spent", trials: 4, seconds: 100, bestTrialId: "b", frontTests: [] } as unknown as Parameters<typeof buildReport>[1];

  it("states the front by its rule with each objective's interval, the knee and the limit's outcome", () => {
    const { markdown, json } = buildReport(s, finished);
    expect(json.goal).toMatchObject({ trade_offs: ["params", "latency"], max_latency_ms: 2 });
    expect(json.front!.trials.map((t) => t.trial_id)).toEqual(["b", "a"]);
    expect(json.front!.axes.map((a) => a.name)).toEqual(["accuracy", "parameters", "latency per example"]);
    expect(json.front!.trials[1]!.values[2]).toEqual({ mean: 0.5, low: 0.5, high: 0.55 });
    expect(json.limits).toMatchObject({ max_latency_ms: 2, within: ["a", "b", "c"], over: ["d"], best_within: "b" });
    expect(json.trials.find((r) => r.trial_id === "d")!.latency_ms).toBe(2.5);
    expect(unwrapped(markdown)).toContain("## Pareto front");
    expect(unwrapped(markdown)).toContain("| `a` (knee) | 85.00% [84.00%, 86.00%] | 20,000 | 0.500 [0.500, 0.550] | extreme |");
    expect(unwrapped(markdown)).toMatch(/The knee, the balanced trade-off .*: `a`\./);
    expect(unwrapped(markdown)).toContain("- Over it: 1 (`d`)");
    expect(unwrapped(markdown)).toContain("| Pareto objectives | accuracy vs parameters vs latency per example |");
    const front = buildReport(s, finished).plots[FRONT_PLOT]!;
    expect(marks(front, "on the front")).toBe(2);
    expect(marks(front, "front")).toBe(2);
    expect(marks(front, "dominated")).toBe(1);
    expect(series(front, "knee").data).toEqual([[20_000, 0.85]]);
    assertBalancedXml(renderSvg(front));
  });

  it("marks the long trainings no other long training dominates: the claims' own front", () => {
    const long = (id: string, parent: string, mean: number, params: number, ms: number): EventInit[] => {
      const [p, e, j] = probe(id, mean, params, ms);
      (p!.body!.value as { lastTraining: boolean; parentIds: string[]; rung: number }).lastTraining = true;
      (p!.body!.value as { parentIds: string[] }).parentIds = [parent];
      return [p!, e!, j!];
    };
    // La beats Lc on accuracy beyond their intervals, size and latency; Lb is the accurate end.
    const trained = agentState([...events, ...long("La", "a", 0.9, 20_000, 0.5), ...long("Lb", "b", 0.93, 400_000, 1.8), ...long("Lc", "c", 0.86, 60_000, 0.9)]);
    const { markdown, json } = buildReport(trained, finished);
    expect(json.front!.trained_long.map((l) => [l.trial_id, l.on_front])).toEqual([["La", true], ["Lb", true], ["Lc", false]]);
    expect(unwrapped(markdown)).toMatch(/- `Lc` trained `c` .*\(dominated by another long training\)/);
    expect(unwrapped(markdown)).not.toMatch(/- `La` .*dominated/);
  });

  // One model, as its probe and as the last long training of it.
  const of = (id: string, lastTraining: boolean, mean: number, n: number, ms: number[], train: TrainConfigInput = {}): EventInit[] => [
    { runId: AGENT_RUN, trialId: id, body: { case: "trialProposed", value: { hypothesis: `h ${id}`, model: modelSpec({ name: "vgg", layers: [{ type: "flatten" }] }), train: trainSpec({ subset: lastTraining ? 0 : 10_000, ...train }), lastTraining } } },
    evaluated(id, mean, 0.005, { n, params: 170_242n, latencyMs: ms }),
    { runId: AGENT_RUN, trialId: id, body: { case: "trialJudged", value: { verdict: Verdict.ACCEPT, decision: Decision.ITERATE } } },
  ];

  it("states the latency the limit held the best to beside its own seeds' timing: a last training's seeds are timed beside others still training", () => {
    // latency-2 at 987dd99: timed 1.14 ms itself, held to 0.80 ms, its probe's timing, under a 1 ms limit.
    const limited = agentState([started({}, { dataset: "fashion-mnist", openEnded: true, target: 0, maxLatencyMs: 1 }), ...of("p", false, 0.89, 1, [0.8]), ...of("L", true, 0.93, 3, [1.1, 1.14, 1.2])]);
    const { json, markdown } = buildReport(limited, { ...finished, trials: 2, bestTrialId: "L" });
    expect(json.limits).toMatchObject({ within: ["p", "L"], over: [], best_within: "L", best_latency_ms: 0.8 });
    expect(unwrapped(markdown)).toContain("- Latency: 1.14 ms per example (batch 1, warm, on the device it ran on; median of its seeds); the goal's limit of 1 ms holds it to 0.800 ms, the fastest seed median the run timed for its model (see Limits)");
  });

  it("gives a best under no latency limit one latency per example, the test confirmation's, saying how it was timed", () => {
    const plain = agentState([started({}, { dataset: "fashion-mnist", openEnded: true, target: 0 }), ...of("p", false, 0.89, 1, [0.8]), ...of("L", true, 0.93, 3, [1.1, 1.14, 1.2])]);
    const inference = { batch1: { batch: 1, medianMs: 0.91, p90Ms: 1, repeats: 30 }, batchEval: { batch: 256, medianMs: 10, p90Ms: 12, repeats: 30 }, flopsPerSample: 1_000_000n };
    const testResult = create(EvalResultSchema, { device: { kind: "cpu" }, seedResults: [0, 1, 2].map((seed) => ({ seed, inference })) });
    const { markdown } = buildReport(plain, { ...finished, trials: 2, bestTrialId: "L", testResult });
    // The evaluation's own timing (1.14 ms, seeds timed beside others training) is not a second figure.
    expect(unwrapped(markdown)).not.toContain("- Latency:");
    expect(unwrapped(markdown)).toMatch(/- Inference on the cpu it trained on \(median of its seeds, each timed warm beside the others\): 0\.91 ms for one example;/);
    // A flip-averaged best was timed as it was scored, two passes a prediction, and says so.
    const flipped = agentState([
      started({}, { dataset: "fashion-mnist", openEnded: true, target: 0 }),
      ...of("p", false, 0.89, 1, [0.8]),
      ...of("L", true, 0.93, 3, [1.1, 1.14, 1.2], { tta_hflip: true }),
    ]);
    const both = unwrapped(buildReport(flipped, { ...finished, trials: 2, bestTrialId: "L", testResult }).markdown);
    expect(both).toMatch(/- Inference on the cpu it trained on \(median of its seeds, each timed warm beside the others, each prediction flip-averaged over two passes as the run scored it\): 0\.91 ms/);
  });

  it("has no front or limits for a single-objective goal", () => {
    const plain = agentState([started({}, { dataset: "fashion-mnist", openEnded: true, target: 0 }), ...probe("a", 0.85, 20_000, 0.5)]);
    const { json, markdown } = buildReport(plain, finished);
    expect([json.front, json.limits]).toEqual([null, null]);
    expect(unwrapped(markdown)).not.toContain("## Pareto front");
    expect(buildReport(plain, finished).plots[FRONT_PLOT]).toBeUndefined();
  });
});

describe("a warm run that continued a past run's training in the report (issue 37)", () => {
  const trained = (id: string, mean: number, init: { runId: string; trialId: string }, informedBy: string[]): EventInit[] => [
    { runId: AGENT_RUN, trialId: id, body: { case: "trialProposed", value: { hypothesis: `continue ${init.trialId}`, model: modelSpec({ name: id, layers: [{ type: "flatten" }] }), train: trainSpec({ subset: 0, train_seconds: 300 }), initWeights: init, informedBy, informedWeights: informedBy.map(() => 0.5), lastTraining: !informedBy.length } } },
    evaluated(id, mean, 0.003, { n: 3 }),
    { runId: AGENT_RUN, trialId: id, body: { case: "trialJudged", value: { verdict: Verdict.ACCEPT, decision: Decision.ITERATE } } },
  ];
  const s = agentState([
    started({}, { dataset: "fashion-mnist", openEnded: true, target: 0 }),
    ...trained("c0", 0.935, { runId: "r0", trialId: "r0-t9" }, ["r0-t9"]),
    ...trained("c1", 0.94, { runId: AGENT_RUN, trialId: "c0" }, []),
  ]);
  const finished = { status: RunStatus.COMPLETED, reason: "time budget spent", trials: 2, seconds: 100, bestTrialId: "c1", frontTests: [] } as unknown as Parameters<typeof buildReport>[1];

  it("says which trial took a past run's trained weights, and which goes on from it", () => {
    const { markdown, json } = buildReport(s, finished);
    expect(json.trials.map((r) => r.init_weights)).toEqual([{ run_id: "r0", trial_id: "r0-t9" }, { run_id: AGENT_RUN, trial_id: "c0" }]);
    expect(unwrapped(markdown)).toContain("| `c0` | `r0-t9` (weight 0.50) | trained weights | 93.50% ± 0.30 | accept |");
    expect(unwrapped(markdown)).toContain("- `c1` continues the training of `c0` from its kept weights.");
  });
});

describe("a trial whose seeds kept an earlier epoch than their last in the report", () => {
  const reportWith = (kept: (k: number) => number) => {
    const events = openEndedEvents();
    const state = emptyRunState(RUN);
    for (const e of events) {
      if (e.body.case === "trialEvaluated" && e.trialId === tid(5)) e.body.value.result!.seedResults.forEach((s, k) => (s.keptEpoch = kept(k)));
      applyToRunState(state, e);
    }
    return unwrapped(buildReport(state, events.at(-1)!.body.value as Parameters<typeof buildReport>[1]).markdown);
  };

  it("says which epochs its seeds kept, and nothing where every seed kept its last", () => {
    expect(reportWith((k) => (k === 0 ? EPOCHS : 2 + k))).toContain("its seeds' best validation epochs kept (3-5)");
    expect(reportWith(() => EPOCHS)).not.toContain("best validation epochs kept");
  });
});
