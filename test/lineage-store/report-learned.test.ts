/**
 * What a report says was learned, read from real runs' stored events (test/fixtures/runs): a
 * hypothesis held or not by the one rule (core/ranking.ts hypothesisOutcome), recomputed here
 * from the events themselves; promotions apart from edits; the best named by what it is and
 * the path to it; no spread for one seed; and where the run stands for whoever goes on.
 */
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fromJsonString } from "@bufbuild/protobuf";
import { hypothesisOutcome } from "../../core/ranking.js";
import { buildReport } from "../../lineage-store/report.js";
import { EventSchema, RunStatus } from "../../proto/gen/research/v1/events_pb.js";
import { foldRun, runSoFar } from "../../swarm/run-state.js";
import { valMetricOf } from "../../swarm/trial-state.js";
import { unwrapped } from "../helpers/markdown.js";

function reportOf(file: string, cut?: number) {
  const all = readFileSync(join(import.meta.dirname, "..", "fixtures", "runs", file), "utf8").split("\n").filter(Boolean).map((l) => fromJsonString(EventSchema, l));
  const events = cut === undefined ? all : all.slice(0, cut);
  const state = foldRun(events[0]!.runId, events);
  const end = events.find((e) => e.body.case === "runFinished")?.body;
  // Interrupted at its last event.
  const finished = end?.case === "runFinished" ? end.value : runSoFar(state, RunStatus.INTERRUPTED, "interrupted by SIGINT", state.lastEventMs);
  return { state, ...buildReport(state, finished) };
}

describe("a report says what was learned", () => {
  const open = reportOf("fmnist-30min-open-c982011.jsonl");

  it("judges each edit's hypothesis against its parent at the highest fidelity both reached, and no promotion's", () => {
    const rows = open.json.trials;
    const promotions = rows.filter((r) => r.promotion);
    expect(promotions.map((r) => r.hypothesis)).toEqual(promotions.map(() => expect.stringMatching(/^promote /)));
    for (const r of promotions) expect(r.hypothesis_outcome).toBeNull();
    const judged = rows.filter((r) => r.hypothesis_outcome);
    expect(judged.length).toBeGreaterThanOrEqual(8);
    // The same config trained again: the trial itself or a promotion of it, of one of its promotions, ...
    const sameConfig = (id: string, of: string): boolean => {
      for (let at = open.state.trials.get(id); at; at = open.state.trials.get(at.proposed!.parentIds[0]!)) {
        if (at.id === of) return true;
        if ((at.proposed?.rung ?? 0) === 0) return false;
      }
      return false;
    };
    for (const r of judged) {
      const child = open.state.trials.get(r.trial_id)!;
      const parent = open.state.trials.get(child.proposed!.parentIds[0]!)!;
      expect(child.train!.subset).toBe(parent.train!.subset);
      const h = r.hypothesis_outcome!;
      expect(h.parent_id).toBe(parent.id);
      // Recomputed from the events: the pair's stored intervals, by the rule, the pair the same configs at one fidelity.
      const [own, theirs] = h.trial_ids.map((id) => open.state.trials.get(id)!);
      expect(sameConfig(own!.id, child.id) && sameConfig(theirs!.id, parent.id), h.trial_ids.join(" vs ")).toBe(true);
      expect([own!.train!.subset, own!.train!.epochs]).toEqual([theirs!.train!.subset, theirs!.train!.epochs]);
      const again = hypothesisOutcome(valMetricOf(own!)!, valMetricOf(theirs!)!);
      expect(h).toEqual({ outcome: again.outcome, parent_id: parent.id, trial_ids: h.trial_ids, change: again.change, ci_95: again.ci95, detectable: again.detectable, paired_examples: 0 });
      // The smallest change the two could resolve: the interval's half-width, never wider than the probes'.
      expect(again.detectable).toBeCloseTo((again.ci95[1] - again.ci95[0]) / 2, 12);
      expect(again.detectable).toBeLessThanOrEqual(hypothesisOutcome(valMetricOf(child)!, valMetricOf(parent)!).detectable);
    }
    // One-seed probes on 1,000 validation examples resolve about 2.5-3 pp; where ASHA promoted both
    // configs to 30,000 examples (validated on 3,000), about 1.4 pp: t006 (widen) and t008 here.
    const probes = judged.filter((r) => r.hypothesis_outcome!.trial_ids[0] === r.trial_id);
    const promoted = judged.filter((r) => r.hypothesis_outcome!.trial_ids[0] !== r.trial_id);
    expect(promoted.map((r) => r.trial_id.slice(-4)).sort()).toEqual(["t006", "t008"]);
    expect(probes.every((r) => r.hypothesis_outcome!.detectable > 0.02 && r.hypothesis_outcome!.detectable < 0.04)).toBe(true);
    expect(promoted.every((r) => r.hypothesis_outcome!.detectable > 0.01 && r.hypothesis_outcome!.detectable < 0.02)).toBe(true);
    // Changes of a point or two stay within the noise either way.
    expect(judged.every((r) => r.hypothesis_outcome!.outcome === "inconclusive")).toBe(true);
    expect(unwrapped(open.markdown)).toMatch(/\| inconclusive \(\+2\.00 pp; ±[23]\.\d\d pp\) \| accept \|/);
    expect(unwrapped(open.markdown)).toMatch(/\| inconclusive \([+-]\d\.\d\d pp; ±1\.\d\d pp, at t\d{3} vs t\d{3}\) \| accept \|/);
    expect(unwrapped(open.markdown)).toContain("| promotion | accept |");
  });

  it("keeps promotions out of every edit's gain", () => {
    // Every promotion of this run is on the data surface (more examples, epochs): none of it is an edit's gain.
    const data = open.json.surfaces.find((s) => s.surface === "data")!;
    expect(data).toMatchObject({ promotions: data.trials, mean_gain: null, supported: 0, refuted: 0 });
    expect(unwrapped(open.markdown)).toContain("mean gain of edits (pp)");
  });

  it("names the best by what it is and the path that made it, with no spread for one seed", () => {
    const best = open.json.outcome.best_trial!;
    expect(best.what).toBe("vgg-cnn+widen, 381,266 parameters, adam lr 0.002, cosine schedule, batch 128, 3 epochs on 30,000 examples");
    expect(best.path.map((p) => p.trial_id.slice(-4))).toEqual(["t000", "t006", "t007"]);
    expect(best.path.map((p) => p.step)).toEqual([expect.stringMatching(/^start: vgg-cnn/), expect.stringMatching(/^widen every layer/), "promotion"]);
    expect(unwrapped(open.markdown)).toContain("- Validation accuracy: 91.77% (95% CI 90.73% – 92.70%); the interval counts 1 seed x 3,000 validation examples");
    // A training the clock stopped says how far it got, not its upper bound of epochs.
    expect(reportOf("h200-5.5min-open-ea238f7.jsonl").json.outcome.best_trial!.what).toBe(
      "resnet9+deepen, 3,179,722 parameters, sgd lr 0.2, onecycle schedule, batch 512, 57 epochs in 2.2 min on the whole training split",
    );
    // Three seeds: the spread is there.
    expect(unwrapped(reportOf("fmnist-reach90-f823c5b.jsonl").markdown)).toContain("- Validation accuracy: 91.92% (95% CI 91.19% – 92.60%), std 0.06 pp; the interval counts 3 seeds");
  });

  it("says a one-seed best cannot meet a target, and what an interrupted run needs to go on", () => {
    // The README's run (reach 90%) cut before its confirmation: its best so far is a one-seed probe.
    const events = readFileSync(join(import.meta.dirname, "..", "fixtures", "runs", "fmnist-reach90-f823c5b.jsonl"), "utf8").split("\n").filter(Boolean);
    const cut = events.findIndex((l) => l.includes('"trialJudged"') && l.includes("t005"));
    const r = reportOf("fmnist-reach90-f823c5b.jsonl", cut + 1);
    expect(unwrapped(r.markdown)).toMatch(/- The 90\.00% target cannot be met by a one-seed trial: the goal needs the 95% CI lower bound over 2 seeds or more \(this trial's, over its one seed, is \d+\.\d+%\)/);
    const next = r.json.next_steps;
    expect(next.budget_left_s).toBeGreaterThan(0);
    expect(next.confirmation).toMatch(/^the best has 1 seed: a claim needs it trained again with the run's 3 seeds/);
    expect(next.weights).toBe("not saved yet: the best trial's weights are fetched from the runner when the run ends");
    expect(next.command).toBe(`research-agent launch --resume ${r.state.runId} --workspace WORKSPACE`);
    expect(unwrapped(r.markdown)).toContain(`- To go on: \`research-agent launch --resume ${r.state.runId} --workspace WORKSPACE\``);
    // A finished run: nothing pending, the best confirmed, and the command keeps improving from its best.
    const done = reportOf("fmnist-reach90-f823c5b.jsonl").json.next_steps;
    expect(done).toMatchObject({ pending: [], confirmation: "confirmed: the best was measured once on the test split" });
    expect(done.command).toMatch(/^research-agent launch --from r[\w-]+\/t008 --goal "fashion-mnist: reach 90% validation accuracy"/);
  });
});

describe("a report's findings and the experiments they suggest", () => {
  it("names the edits that held and hurt, and the promising unresolved ones with the factor that would resolve them", () => {
    const { state, json, markdown } = reportOf("friedman-4min-open-3baeb1f.jsonl");
    const rows = json.trials.filter((r) => r.hypothesis_outcome);
    const by = (outcome: string) => rows.filter((r) => r.hypothesis_outcome!.outcome === outcome);
    const kinds = json.next_steps.findings.map((f) => f.kind);
    // Recomputed from the events: each edit against its parent by the rule, at the pair compared.
    for (const r of rows) {
      const [own, theirs] = r.hypothesis_outcome!.trial_ids.map((id) => valMetricOf(state.trials.get(id)!)!);
      expect(r.hypothesis_outcome!.outcome).toBe(hypothesisOutcome(own!, theirs!, state.objective).outcome);
    }
    const finding = (kind: string) => json.next_steps.findings.find((f) => f.kind === kind)?.finding ?? "";
    expect(kinds.includes("held")).toBe(by("supported").length > 0);
    expect(kinds.includes("hurt")).toBe(by("refuted").length > 0);
    for (const r of by("supported").slice(0, 3)) expect(finding("held")).toContain(r.trial_id);
    for (const r of by("refuted").slice(0, 3)) expect(finding("hurt")).toContain(r.trial_id);
    const promising = by("inconclusive").filter((r) => r.hypothesis_outcome!.change >= r.hypothesis_outcome!.detectable / 4 && r.hypothesis_outcome!.change > 0);
    expect(promising.length).toBeGreaterThan(0);
    const top = promising.sort((a, b) => b.hypothesis_outcome!.change - a.hypothesis_outcome!.change)[0]!.hypothesis_outcome!;
    const unresolved = json.next_steps.findings.find((f) => f.kind === "unresolved")!;
    expect(unresolved.next).toContain(`about ${Math.ceil((top.detectable / top.change) ** 2)} times the seeds times validation examples`);
    // A regression run has no classes, and its best's convergence decides the training finding.
    expect(kinds).not.toContain("weak_class");
    const best = state.trials.get(json.outcome.best_trial_id!)!;
    expect(kinds.includes("still_improving")).toBe(best.evaluated!.result!.convergence!.state === "improving");
    expect(unwrapped(markdown)).toContain("What the run found, and the experiment each suggests:");
  });

  it("names a classification run's weakest class and what it is taken for", () => {
    const { json, markdown } = reportOf("fmnist-reach90-4f3f5b9-seed1.jsonl");
    const weakest = json.outcome.best_trial!.classes!.rows[0]!;
    const f = json.next_steps.findings.find((x) => x.kind === "weak_class")!;
    expect(f.finding).toBe(`${weakest.name} is the best's weakest class: recall ${(100 * weakest.recall).toFixed(1)}%, taken for ${weakest.taken_for!.name} in ${(100 * weakest.taken_for!.share).toFixed(1)}% of its examples`);
    expect(unwrapped(markdown)).toContain(`- ${f.finding}: ${f.next}.`);
  });
});

describe("a classifier's edits, compared example by example", () => {
  // A real digits run whose seeds say which validation examples they got right (SeedResult.val_correct).
  const digits = reportOf("digits-2min-open-f51d0fe.jsonl");
  const evaluation = (id: string) => {
    const t = digits.state.trials.get(id)!;
    return { ...valMetricOf(t)!, seedResults: t.evaluated!.result!.seedResults };
  };

  it("judges each edit on the examples both trials scored, by the rule, and resolves more than their intervals alone", () => {
    const rows = digits.json.trials.filter((r) => r.hypothesis_outcome);
    const o = digits.state.objective;
    let apartResolved = 0;
    for (const r of rows) {
      const h = r.hypothesis_outcome!;
      const [own, theirs] = h.trial_ids.map(evaluation);
      // Recomputed from the events' bits: the same outcome, change and interval.
      const again = hypothesisOutcome(own!, theirs!, o);
      expect(h).toMatchObject({ outcome: again.outcome, change: again.change, ci_95: again.ci95, detectable: again.detectable, paired_examples: own!.seedResults[0]!.valExamples });
      const apart = hypothesisOutcome({ mean: own!.mean, ci95: own!.ci95 }, { mean: theirs!.mean, ci95: theirs!.ci95 }, o);
      expect(again.detectable).toBeLessThan(apart.detectable);
      if (apart.outcome !== "inconclusive") apartResolved++;
    }
    const resolved = rows.filter((r) => r.hypothesis_outcome!.outcome !== "inconclusive");
    // Nine edits, all on the same 431 examples as their parents: three refuted (-1.9 to -2.3 pp
    // against about ±1.7), where their intervals alone resolved none.
    expect([rows.length, resolved.length, apartResolved]).toEqual([9, 3, 0]);
    expect(unwrapped(digits.markdown)).toMatch(/\| (supported|refuted) \([+-]\d\.\d\d pp; ±\d\.\d\d pp over \d{3} examples paired\) \|/);
    // The table's legend says the rule as it was applied.
    expect(unwrapped(digits.markdown)).toContain("from the examples the two disagree on (McNemar's test) with each trial's seed spread, else from the two trials' intervals");
  });
});
