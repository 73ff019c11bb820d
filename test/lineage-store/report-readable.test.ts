/**
 * A report without contradictions, read from real runs' stored events (test/fixtures/runs): what
 * a person found in the reports of a GPU run and the README's first command (issue 63). A brief's
 * suggestion is credited only to trials whose configs hold every one of its blocks; a trial that
 * failed is never "pending" while Next steps says none is unjudged; the text is plain (no HTML
 * entities where nothing needs one); a trial goes by its number after the title; prose lines are
 * wrapped; a hypothesis is cut at a word.
 */
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { create, fromJsonString } from "@bufbuild/protobuf";
import { blocksOf } from "../../core/brief.js";
import { buildReport } from "../../lineage-store/report.js";
import { renderSvg } from "../../lineage-store/svg.js";
import { series } from "../helpers/plots.js";
import { reportText } from "../../lineage-store/report-json.js";
import { registryEntry } from "../../lineage-store/artifacts.js";
import { valMetricOf } from "../../swarm/trial-state.js";
import { EventSchema, RunnerJobsSchema, RunStatus } from "../../proto/gen/research/v1/events_pb.js";
import { foldRun, runSoFar } from "../../swarm/run-state.js";

const RUNS = ["h200-5.5min-open-ea238f7.jsonl", "fmnist-reach90-f823c5b.jsonl", "fmnist-30min-open-c982011.jsonl", "fmnist-30min-open-c982011-seed1.jsonl"];

function reportOf(file: string) {
  const events = readFileSync(join(import.meta.dirname, "..", "fixtures", "runs", file), "utf8").split("\n").filter(Boolean).map((l) => fromJsonString(EventSchema, l));
  const state = foldRun(events[0]!.runId, events);
  const end = events.find((e) => e.body.case === "runFinished")?.body;
  const finished = end?.case === "runFinished" ? end.value : runSoFar(state, RunStatus.INTERRUPTED, "interrupted by SIGINT", state.lastEventMs);
  return { state, ...buildReport(state, finished) };
}

/** The report's lines outside code blocks, tables and headings: its prose. */
function prose(markdown: string): string[] {
  let code = false;
  return markdown.split("\n").filter((line) => {
    if (line.trimStart().startsWith("```")) code = !code;
    return !code && !/^\s*(```|\||#)/.test(line);
  });
}

describe.each(RUNS)("the report of %s", (file) => {
  const { state, markdown, json } = reportOf(file);

  it("credits a brief's suggestion only to trials whose configs hold all its blocks, and never an unbuildable one", () => {
    const suggestions = state.briefs.flatMap((b) => b.architectural_suggestions);
    let credited = 0;
    for (const brief of json.research.briefs) {
      for (const s of brief.suggestions) {
        const blocks = suggestions.find((x) => x.name === s.name)!.building_blocks ?? [];
        if (s.buildable === false) expect(s.adopted_by, s.name).toEqual([]);
        for (const id of s.adopted_by) {
          const t = state.trials.get(id)!;
          const held = blocksOf(t.model, t.train);
          expect(blocks.filter((b) => !held.has(b)), `${s.name} credited to ${id}`).toEqual([]);
          credited++;
        }
      }
    }
    expect(credited).toBeGreaterThanOrEqual(0);
  });

  it("shows no trial pending that Next steps does not list as not judged", () => {
    const pending = new Set(json.next_steps.pending.map((p) => p.trial_id));
    for (const r of json.trials) {
      const row = markdown.split("\n").find((l) => l.includes(`| \`${r.trial_id.slice(state.runId.length + 1)}\``))!;
      const verdict = row.split(/(?<!\\)\|/)[9]!.trim();
      if (verdict === "pending") expect(pending.has(r.trial_id), r.trial_id).toBe(true);
      if (r.failure_label) expect(verdict, r.trial_id).not.toBe("pending");
    }
  });

  it("is plain text: no HTML entity where no tag needs escaping", () => {
    expect(markdown).not.toMatch(/&(gt|lt|amp);/);
  });

  it("names a trial by its number after the title, saying once what that number stands for", () => {
    const full = markdown.match(new RegExp(`${state.runId}-t\\d{3}`, "g")) ?? [];
    expect(full).toEqual([`${state.runId}-t003`]);
    expect(markdown).toContain(`Trials are named by their number in the run: \`t003\` is \`${state.runId}-t003\`.`);
    expect(markdown).toMatch(/\| `t000` \|/);
  });

  it("wraps its prose at 100 characters, a code span kept whole", () => {
    const long = prose(markdown).filter((l) => [...l].length > 100 && !/^\s*(?:- [^`]*:\s*)?`[^`]+`$/.test(l));
    expect(long).toEqual([]);
  });

  it("cuts a hypothesis in the trials table at a word", () => {
    for (const r of json.trials) {
      const row = markdown.split("\n").find((l) => l.includes(`| \`${r.trial_id.slice(state.runId.length + 1)}\``))!;
      const cell = row.split(/(?<!\\)\|/)[4]!.trim();
      if (!cell.endsWith("…")) continue;
      const full = r.hypothesis.replaceAll(`${state.runId}-t`, "t").replace(/\s+/g, " ");
      const kept = cell.slice(0, -1).replace(/\\\|/g, "|");
      expect(full.startsWith(kept), r.trial_id).toBe(true);
      expect(full[kept.length], `${r.trial_id}: "${cell}"`).toBe(" ");
    }
  });
});

describe("a run whose runners were Slurm jobs", () => {
  it("says what became of its runner jobs, in the Markdown and the JSON", () => {
    const file = join(import.meta.dirname, "..", "fixtures", "runs", RUNS[1]!);
    const events = readFileSync(file, "utf8").split("\n").filter(Boolean).map((l) => fromJsonString(EventSchema, l));
    const at = events.findIndex((e) => e.body.case === "runStarted") + 1;
    const jobs = create(RunnerJobsSchema, { requested: 3, up: 2, pending: 1, ended: 1, waiting: "Priority" });
    events.splice(at, 0, create(EventSchema, { runId: events[0]!.runId, eventId: "jobs", emittedAtMs: events[at]!.emittedAtMs, body: { case: "runnerJobs", value: jobs } }));
    const state = foldRun(events[0]!.runId, events);
    const end = events.find((e) => e.body.case === "runFinished")!.body;
    const { markdown, json } = buildReport(state, end.value as Parameters<typeof buildReport>[1]);
    expect(markdown.replace(/\n(?!\n)/g, " ")).toContain("Runners: Slurm jobs, 2 of 3 up, 1 pending (Priority), 1 ended when last recorded (a job that ended while the run had budget left was submitted again).");
    expect(json.outcome.runner_jobs).toEqual({ requested: 3, pending: 1, starting: 0, up: 2, ended: 1, waiting: "Priority", text: "2 of 3 up, 1 pending (Priority), 1 ended" });
    // A run whose runners were not jobs says nothing of them.
    expect(reportOf(RUNS[1]!).json.outcome.runner_jobs).toBeNull();
  });
});

describe("a regression run's files", () => {
  it("name its metric by its name, in report.json's rows, best and surfaces and in the registry, never accuracy", () => {
    const { state, json } = reportOf("friedman-4min-open-3baeb1f.jsonl");
    expect(state.objective.key).toBe("val_rmse");
    const text = reportText(json, state.objective);
    expect(text).not.toMatch(/"(best_)?val(_accuracy)?(_mean)?"/);
    const file = JSON.parse(text) as { outcome: { best_trial: Record<string, unknown> }; trials: Record<string, unknown>[]; surfaces: Record<string, unknown>[] };
    const best = state.trials.get(json.outcome.best_trial_id!)!;
    expect(file.outcome.best_trial.val_rmse).toMatchObject({ mean: valMetricOf(best)!.mean });
    for (const row of file.trials) expect(row, String(row.trial_id)).toHaveProperty("val_rmse");
    expect(file.trials.filter((r) => r.val_rmse).length).toBeGreaterThan(5);
    for (const s of file.surfaces) expect(s).toHaveProperty("best_val_rmse");
    expect(registryEntry(state, best, 0).metrics_summary).toEqual(expect.objectContaining({ val_rmse_mean: valMetricOf(best)!.mean }));
    expect(registryEntry(state, best, 0).metrics_summary).not.toHaveProperty("val_accuracy_mean");
  });
});

describe("a classification run's classes", () => {
  it("gives each class's scores weakest recall first, what it is most often taken for, and the confusion plot, from its seeds' counts", () => {
    const { state, markdown, json } = reportOf("fmnist-reach90-4f3f5b9-seed1.jsonl");
    const best = state.trials.get(json.outcome.best_trial_id!)!;
    const c = json.outcome.best_trial!.classes!;
    const seeds = best.evaluated!.result!.seedResults;
    expect(c.seeds).toBe(seeds.length);
    expect(c.rows.map((r) => r.name).sort()).toEqual([...best.evaluated!.result!.classNames].sort());
    expect(c.rows.map((r) => r.recall)).toEqual(c.rows.map((r) => r.recall).sort((a, b) => a - b));
    // Recomputed here from each seed's own numbers: recall the seeds' mean, the confusion their sum.
    for (const row of c.rows) {
      const i = best.evaluated!.result!.classNames.indexOf(row.name);
      const recalls = seeds.map((s) => s.perClass.find((p) => p.classIndex === i)!.recall);
      expect(row.recall).toBeCloseTo(recalls.reduce((a, b) => a + b, 0) / seeds.length, 12);
      const counts = seeds.map((s) => s.confusionMatrix[i]!.counts).reduce((a, b) => a.map((n, j) => n + b[j]!));
      const other = counts.map((n, j) => (j === i ? -1 : n)).reduce((m, n, j, all) => (n > all[m]! ? j : m), i === 0 ? 1 : 0);
      expect(row.taken_for).toEqual({ name: best.evaluated!.result!.classNames[other], share: counts[other]! / counts.reduce((a, b) => a + b, 0) });
    }
    const weakest = c.rows[0]!;
    expect(markdown).toContain(`| ${weakest.name} | ${(100 * weakest.recall).toFixed(1)}% |`);
    expect(markdown).toContain("![confusion matrix of the best trial](plots/confusion.svg)");
    const plot = buildReport(state, state.runFinished!).plots["plots/confusion.svg"]!;
    // A cell per (true, predicted) pair, its share of the true class; the weakest class's most common mistake among them.
    const cells = series(plot, "cells").data as [number, number, number][];
    expect(cells).toHaveLength(c.rows.length ** 2);
    const names = best.evaluated!.result!.classNames;
    const [i, j] = [names.indexOf(weakest.name), names.indexOf(weakest.taken_for!.name)];
    expect(cells.find(([x, y]) => x === j && y === i)![2]).toBeCloseTo(weakest.taken_for!.share, 12);
    const svg = renderSvg(plot);
    for (const name of names) expect(svg).toContain(`>${name}</text>`);
  });

  it("has none in a regression run", () => {
    const { state, json } = reportOf("friedman-4min-open-3baeb1f.jsonl");
    expect(json.outcome.best_trial!.classes).toBeNull();
    expect(Object.keys(buildReport(state, state.runFinished!).plots)).not.toContain("plots/confusion.svg");
  });
});
