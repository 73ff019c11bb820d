/**
 * Every door that takes text from a person or a program, fed random and near-valid input
 * (fast-check): each answers with an accepted value or a refusal it returns, never a throw, and
 * the goal parser's refusal is one line. Each input is also timed: a regex that backtracks
 * catastrophically would show as one input taking far longer than the rest.
 */
import { describe, expect, it, vi } from "vitest";
import fc from "fast-check";
import { parseGoal } from "../../core/goal.js";
import { authoredTrialModel, decodeText, parseModelConfig, parseTrainConfig } from "../../core/model-config.js";
import { checkRunDocument, parseRunDocument } from "../../core/run-document.js";
import { parseSpace } from "../../core/space.js";

// The same inputs on every run: a failure is a bug to fix, never a run's luck.
fc.configureGlobal({ seed: 20261128 });

/** Inputs each property is tried with; the note of the issue states the totals. */
export const RUNS = 1500;

/** Words and numbers a goal is made of, so that random goals reach past the first check. */
const GOAL_WORDS = [
  "fashion-mnist", "digits", "cifar10", "mnist", "csv:/tmp/x.csv", "text:/tmp/c.txt", "signal:/tmp/s.csv", "target=y", "reach", "maximise",
  "best", "accuracy", "val", "test", "rmse", "mae", "r2", "bits per byte", "below", "above", "under", ">=", "<", "92%", "0.9", "1.5",
  "200k", "params", "parameters", "20 min", "2h", "90s", "in", "with", "at most", ":", ",", "minutes", "1e3", "-5", "∞", "..", "%",
];
const goalText = fc.oneof(fc.string({ maxLength: 200 }), fc.array(fc.constantFrom(...GOAL_WORDS), { maxLength: 14 }).map((w) => w.join(" ")));

/** JSON-ish values, shallow and deep, with the keys the documents know so that values meet their checks. */
const KEYS = ["goal", "time_budget", "target", "max_params", "seeds_per_trial", "space", "from", "name", "layers", "type", "lr", "optimizer", "epochs", "low", "high", "values", "families", "out_features", "class_name"];
const value = fc.letrec((tie) => ({
  leaf: fc.oneof(fc.string({ maxLength: 20 }), fc.double(), fc.integer(), fc.boolean(), fc.constant(null), fc.constantFrom("adam", "sgd", "linear", "conv2d", "vgg-cnn", "1e-3")),
  node: fc.oneof({ depthSize: "small" }, tie("leaf"), fc.array(tie("node"), { maxLength: 4 }), fc.dictionary(fc.constantFrom(...KEYS), tie("node"), { maxKeys: 5 })),
})).node;

/** Runs `f` on each input, counting them and keeping the slowest. */
function timed<T>(f: (x: T) => void) {
  const stats = { inputs: 0, slowestMs: 0 };
  return {
    stats,
    check: (x: T) => {
      const t0 = performance.now();
      f(x);
      stats.inputs++;
      stats.slowestMs = Math.max(stats.slowestMs, performance.now() - t0);
    },
  };
}

const refusedOrTaken = (r: { ok: boolean; error?: string }) => r.ok || (typeof r.error === "string" && r.error.length > 0);

describe("fuzzed doors", () => {
  it("the goal parser: a goal or one line, quickly", () => {
    const { stats, check } = timed((text: string) => {
      const r = parseGoal(text);
      expect(r.ok || !r.error.includes("\n"), JSON.stringify(text)).toBe(true);
    });
    fc.assert(fc.property(goalText, check), { numRuns: RUNS });
    // Overrides as flags give them, random too.
    fc.assert(fc.property(goalText, fc.record({ target: fc.string({ maxLength: 8 }), timeBudgetS: fc.string({ maxLength: 8 }), maxParams: fc.string({ maxLength: 8 }) }, { requiredKeys: [] }), (text, over) => {
      const r = parseGoal(text, over);
      expect(r.ok || !r.error.includes("\n")).toBe(true);
    }), { numRuns: RUNS });
    expect(stats.inputs).toBe(RUNS);
    expect(stats.slowestMs).toBeLessThan(250);
  });

  it("model and recipe files: a config or a refusal, from any text or value", () => {
    const text = fc.oneof(fc.string({ maxLength: 300 }), value.map((v) => JSON.stringify(v) ?? ""), value.map((v) => JSON.stringify(v)?.slice(0, 40) ?? ""));
    const { stats, check } = timed((t: string) => {
      expect(decodeText(t).ok !== undefined).toBe(true);
      for (const parse of [parseModelConfig, parseTrainConfig, authoredTrialModel]) expect(refusedOrTaken(parse(t)), t).toBe(true);
    });
    fc.assert(fc.property(text, check), { numRuns: RUNS });
    fc.assert(fc.property(value, (v) => [parseModelConfig, parseTrainConfig, authoredTrialModel].every((parse) => refusedOrTaken(parse(v)))), { numRuns: RUNS });
    expect(stats.inputs).toBe(RUNS);
    expect(stats.slowestMs).toBeLessThan(250);
    // An unknown tag or directive is a mistake in the file: one line, nothing printed to stderr.
    const warned = vi.spyOn(process, "emitWarning");
    expect(decodeText("!f91 layers: 3")).toEqual({ ok: false, error: "not valid JSON or YAML: Unresolved tag: !f91 at line 1, column 1" });
    expect(decodeText("%D/ x\n---\nlayers: 3")).toMatchObject({ ok: false, error: expect.stringMatching(/^not valid JSON or YAML: Unknown directive %D\/ at line 1, column 1$/) });
    expect(warned).not.toHaveBeenCalled();
    warned.mockRestore();
  });

  it("run documents and search spaces: taken or refused in one line", () => {
    const oneLine = (r: { ok: boolean; error?: string }) => r.ok || (!!r.error && !r.error.includes("\n"));
    fc.assert(fc.property(value, (v) => oneLine(checkRunDocument(v)) && oneLine(parseSpace(v))), { numRuns: RUNS });
    fc.assert(fc.property(fc.string({ maxLength: 300 }), (t) => oneLine(parseRunDocument(t))), { numRuns: RUNS });
    // Near-valid: a real goal beside random fields.
    fc.assert(fc.property(fc.dictionary(fc.constantFrom(...KEYS), value, { maxKeys: 4 }), (d) => oneLine(checkRunDocument({ goal: "digits: maximise accuracy", ...d }))), { numRuns: RUNS });
  });
});
