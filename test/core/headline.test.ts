/**
 * The README's and docs/BENCHMARKS.md's headline figures come from bench/results, by
 * bench/headline.ts, never copied by hand: this fails when a doc's table differs from what the
 * result files say (run `npx tsx bench/headline.ts` after adding a result).
 */
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
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
});
