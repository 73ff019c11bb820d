import { describe, expect, it } from "vitest";
import { CORPUS, parseCorpus } from "../../research/corpus.js";

const good = JSON.stringify(CORPUS[0]);

describe("parseCorpus", () => {
  it("loads every entry of corpus.jsonl", () => {
    expect(CORPUS.length).toBeGreaterThan(300);
    expect(new Set(CORPUS.map((e) => e.id)).size).toBe(CORPUS.length);
  });

  it("names the file, the line and the problem in one line", () => {
    const bad = JSON.stringify({ ...CORPUS[1], surface: "vibes", prior: 2 });
    const text = `${good}\n\n${bad}\n`;
    expect(() => parseCorpus(text, "c.jsonl")).toThrow(/^c\.jsonl:3: surface: .*; prior: [^\n]*$/);
  });

  it("rejects lines that are not JSON, unknown keys and repeated ids", () => {
    expect(() => parseCorpus(`${good}\n{"id": `, "c.jsonl")).toThrow(/^c\.jsonl:2: not JSON/);
    const extra = JSON.stringify({ ...CORPUS[1], tgas: ["typo"] });
    expect(() => parseCorpus(extra, "c.jsonl")).toThrow(/^c\.jsonl:1: entry: Unrecognized key: "tgas"/);
    expect(() => parseCorpus(`${good}\n${good}`, "c.jsonl")).toThrow(`c.jsonl:2: duplicate id "${CORPUS[0]!.id}" (first on line 1)`);
  });
});
