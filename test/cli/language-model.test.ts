/**
 * Language modelling through the whole swarm: a bits-per-byte goal on a folder of text ranks,
 * stops and reports with fewer bits as better, writes a sample of the best model's text, and a
 * goal or corpus that cannot work is one line and an exit status before anything trains.
 */
import { describe, expect, it } from "vitest";
import { EXIT } from "../../cli/args.js";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { datasetFixtures } from "../helpers/fixtures.js";
import { reportOf, summaryOf } from "../helpers/report.js";
import { run } from "../helpers/run.js";
import { unwrapped } from "../helpers/markdown.js";

const { NODE_CHANNEL_FD: _ipc, ...inherited } = process.env;
// These runs test direction, not similarity: the hashing embedder spares each launch MiniLM's start.
const env = { ...inherited, LOG_LEVEL: "warn", EMBEDDER: "hashing" };
const launch = (args: string[], timeout = 300_000) => run("./research-agent", ["launch", ...args], { env, timeout });
const workspace = () => mkdtempSync(join(tmpdir(), "lm-ws-"));

describe("a language-modelling goal", () => {
  // One after the other: the refusals' four swarm starts beside the training would slow it by minutes on 2 cores.
  it("reaches a bits-per-byte target on a folder of text, met on the interval's upper end, and shows the best model's text", async () => {
    const corpus = join(datasetFixtures(), "corpus");
    const ws = workspace();
    // One epoch a trial: the target is met on the first confirmation (18 s alone, 34 s with the
    // default 3 epochs); the 6 minutes only bound it.
    const r = await launch(["--goal", `text:${corpus}: bits per byte below 3.6, 150k params`, "--time-budget", "360s", "--seeds-per-trial", "2", "--epochs", "1", "--no-research", "--workspace", ws, "--json"], 480_000);
    expect(r.status, r.stderr).toBe(0);
    const s = summaryOf(r.stdout);
    expect([s.status, s.metric]).toEqual(["goal_achieved", "val_bits_per_byte"]);
    const report = reportOf(s);
    expect(report.outcome.best_rule).toMatch(/^the accepted trial with the lowest 95% CI upper bound on validation bits per byte/);
    const best = report.trials.find((t) => t.best)!;
    // Met by the stated rule: the upper bound over 2 seeds at or below the target, and far below 8 bits (a uniform guess).
    expect(best.num_seeds).toBe(2);
    expect(best.val_bits_per_byte!.ci_95![1]).toBeLessThanOrEqual(3.6);
    // Met when met, not when the budget ran out: alone on an idle machine in under 20 s, beside the
    // suite's other swarms a few times that (the budget leaves room for more).
    expect(s.best_trial!.val_bits_per_byte).toBe(best.val_bits_per_byte!.mean);
    expect(s.best_trial!.test_bits_per_byte).toBeLessThan(4.5);
    const markdown = unwrapped(readFileSync(s.report, "utf8"));
    expect(markdown).toMatch(/- Validation bits per byte: \d\.\d+ \(95% CI \d(\.\d+)? – \d\.\d+\)/);
    expect(markdown).toMatch(/- Held-out test bits per byte \(one-time confirmation/);
    // The sample is the best model's own text: bytes of the corpus's alphabet, not noise.
    const sample = /continuing the first row of the test split:\n\n```text\n([^]*?)\n```/.exec(markdown)?.[1] ?? "";
    expect(sample.length).toBeGreaterThan(100);
    expect(sample.match(/[a-z .]/g)!.length / sample.length).toBeGreaterThan(0.8);

    // Exported as ONNX, onnxruntime (no torch) scores the test rows as the run did, in windows of
    // the model's context read afresh, its seeds' next-byte probabilities averaged: the report's ensemble.
    const out = join(ws, "onnx");
    const exported = await run("./research-agent", ["export", s.run_id, "--format", "onnx", out, "--workspace", ws], { env, timeout: 300_000 });
    expect(exported.status, exported.stderr).toBe(0);
    const read = await run(join(".venv-export", "bin", "python"), ["-c", `
import json, os, numpy as np, onnxruntime as ort
spec = json.load(open(${JSON.stringify(join(out, "inference.json"))}))
# The runner's corpus (gpu-runner/python/tasks/text.py): the .txt files in path order, rows of 257 bytes a stride of 256, the last fifth the test split.
files = sorted(os.path.join(d, f) for d, _, names in os.walk(${JSON.stringify(corpus)}) for f in names if f.endswith(".txt"))
data = np.frombuffer(b"\\n".join(open(f, "rb").read() for f in files), np.uint8)
rows = (len(data) - 1) // 256
x = data[np.arange(rows)[:, None] * 256 + np.arange(257)][-int(round(rows * 0.2)):].astype(np.int64)
n = spec["input"]["shape"][0]
session = ort.InferenceSession(${JSON.stringify(join(out, "model.onnx"))})
bits, sums = [], []
for w in range(0, 256, n):
    p = session.run(None, {"input": x[:, w:w + n]})[0]
    sums.append(float(abs(p.sum(-1) - 1).max()))
    bits.append(-np.log2(np.take_along_axis(p, x[:, w + 1:w + n + 1, None], -1)))
print(json.dumps({"spec": spec, "bits_per_byte": float(np.concatenate(bits, 1).mean()), "sums_off": max(sums)}))
`], { timeout: 120_000 });
    expect(read.status, read.stderr).toBe(0);
    const got = JSON.parse(read.stdout) as { spec: { input: { shape: number[]; dtype: string }; output: { per_position?: boolean; returns: string } }; bits_per_byte: number; sums_off: number };
    expect(got.spec.input.dtype).toBe("int64");
    expect(got.spec.output).toMatchObject({ per_position: true, returns: "at every position, the next byte's probabilities, the mean over its seeds" });
    expect(got.sums_off).toBeLessThan(1e-4);
    const { metrics } = (report.outcome as unknown as { best_trial: { test: { metrics: Record<string, { mean: number }> } } }).best_trial.test;
    expect(got.bits_per_byte, JSON.stringify(metrics)).toBeCloseTo(metrics.ensemble_test_bits_per_byte!.mean, 2);
    // predict gives, for each window of bytes, the byte most likely to follow it.
    const windows = join(ws, "windows.csv");
    const text = Buffer.from("the quick brown fox jumps over the lazy dog and then some more words follow it here ".repeat(4));
    writeFileSync(windows, [0, 1].map((i) => [...text.subarray(i, i + got.spec.input.shape[0]!)].join(",")).join("\n") + "\n");
    const predicted = await run("./research-agent", ["predict", s.run_id, windows, "--workspace", ws], { env, timeout: 300_000 });
    expect(predicted.status, predicted.stderr).toBe(0);
    const lines = predicted.stdout.trim().split("\n");
    expect(lines[0]).toBe("index,prediction,probability");
    expect(lines.slice(1).map((l) => l.split(",")[0])).toEqual(["0", "1"]);
    for (const l of lines.slice(1)) {
      const [, byte, p] = l.split(",").map(Number);
      expect(byte).toBeGreaterThanOrEqual(0);
      expect(byte).toBeLessThan(256);
      expect(p).toBeGreaterThan(0);
    }
  }, 540_000);

  it("that cannot work is one line with exit status 2, bad input, whether the goal's words or a corpus the runner cannot read", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lm-bad-"));
    mkdirSync(join(dir, "no-text"));
    writeFileSync(join(dir, "no-text", "notes.md"), "markdown is not read");
    writeFileSync(join(dir, "short.txt"), "too short to model");
    const cases: [string, number, RegExp][] = [
      ["fashion-mnist: bits per byte below 2", EXIT.badInput, /bits_per_byte needs a text corpus, e\.g\. "text:\/data\/corpus\.txt", not fashion-mnist/],
      [`text:${dir}/short.txt: bits per byte below 2`, EXIT.badInput, /holds 18 bytes; a language model needs at least 5,121/],
      [`text:${dir}/no-text: minimise bits per byte`, EXIT.badInput, /holds no \.txt file to model/],
      // Templates are narrowed to a limit, down to a point: below it the run would have nothing to start from.
      [`text:${datasetFixtures()}/corpus: minimise bits per byte, 5k params`, EXIT.badInput, /the goal's limit of 5,000 parameters is below every starting model for text \(the smallest, byte-\w+, narrowed, has [\d,]+\)/],
    ];
    for (const [goal, status, message] of cases) {
      const r = await launch(["--goal", goal, "--time-budget", "30s", "--no-research", "--workspace", workspace()]);
      expect(r.status, `${goal}: ${r.stderr}`).toBe(status);
      expect(r.stderr.trim().split("\n"), r.stderr).toHaveLength(1);
      expect(r.stderr).toMatch(message);
    }
  }, 400_000);
});
