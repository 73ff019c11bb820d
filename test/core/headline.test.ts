/**
 * The README's and docs/BENCHMARKS.md's headline figures come from bench/results, by
 * bench/headline.ts, never copied by hand: this fails when a doc's table differs from what the
 * result files say (run `npx tsx bench/headline.ts` after adding a result).
 */
import { describe, expect, it } from "vitest";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DOCS, END, headline, START } from "../../bench/headline.js";

describe("the headline table", () => {
  it("in each doc is the one the result files make", () => {
    const table = headline();
    expect(table.split("\n").length).toBeGreaterThan(4);
    for (const doc of DOCS) {
      const text = readFileSync(doc, "utf8");
      expect(text.split(START).length, doc).toBe(2);
      expect(text.slice(text.indexOf(START), text.indexOf(END) + END.length), doc).toBe(table);
    }
  });

  it("gives a figure and a task a row per machine class, each from that class's newest series", () => {
    const dir = mkdtempSync(join(tmpdir(), "headline-"));
    try {
      const file = (commit: string, date: string, bf16: boolean | undefined, mean: number) =>
        writeFileSync(
          join(dir, `search-series-${commit}.json`),
          JSON.stringify({ commit, date, machine: { cpu: "AMD EPYC", cores: 2, cpu_bf16: bf16 }, summary: { readme_seconds_to_goal: { n: 3, mean, min: mean - 10, max: mean + 10 } } }),
        );
      file("aaa1111", "2026-12-01T00:00:00Z", true, 300);
      file("bbb2222", "2026-12-02T00:00:00Z", true, 220);
      file("ccc3333", "2026-12-03T00:00:00Z", false, 410);
      file("ddd4444", "2026-12-04T00:00:00Z", undefined, 100);
      const task = (commit: string, date: string, bf16: boolean, mean: number) => {
        const stat = { n: 3, mean, min: mean - 0.01, max: mean + 0.01 };
        const cases = { digits: { metric: "accuracy", swarm_test: stat, swarm_ensemble_test: stat, peers_test: { optuna_cnn: stat }, pairs: [{ minutes: 3 }] } };
        writeFileSync(join(dir, `tasks-series-${commit}.json`), JSON.stringify({ commit, summarised_at: date, machine: { cpu: "AMD EPYC", cores: 2, cpu_bf16: bf16 }, cases }));
      };
      task("eee5555", "2026-12-01T00:00:00Z", true, 0.9);
      task("fff6666", "2026-12-02T00:00:00Z", true, 0.95);
      task("ggg7777", "2026-12-03T00:00:00Z", false, 0.8);
      const digits = headline(dir).split("\n").filter((l) => l.startsWith("| digits"));
      expect(digits.map((r) => [/previous series [^|]*? at \w+|no previous series/.exec(r)?.[0], r.split(" | ")[1], r.split(" | ")[4]])).toEqual([
        ["previous series 90.00% (89.00%-91.00%) at eee5555", "95.00% (94.00%-96.00%)", "fff6666 (2026-12-02)"],
        ["no previous series", "80.00% (79.00%-81.00%)", "ggg7777 (2026-12-03)"],
      ]);
      const rows = headline(dir).split("\n").filter((l) => l.startsWith("| README's first command"));
      expect(rows.map((r) => r.split(" | ").slice(1, 6))).toEqual([
        ["220 s (210 s-230 s)", "3", "—", "bbb2222 (2026-12-02)", "AMD EPYC, 2 cores, native bf16 |"],
        ["410 s (400 s-420 s)", "3", "—", "ccc3333 (2026-12-03)", "AMD EPYC, 2 cores, no native bf16 |"],
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
