import { describe, expect, it } from "vitest";
import { unifiedDiff } from "../../core/diff.js";

const lines = (...xs: string[]) => xs.map((x) => `${x}\n`).join("");
const ALPHABET = "abcdefghijklmnop".split("");

describe("unifiedDiff", () => {
  it("is empty for identical texts", () => {
    expect(unifiedDiff("", "", "a", "b")).toBe("");
    expect(unifiedDiff(lines(...ALPHABET), lines(...ALPHABET), "a", "b")).toBe("");
  });

  it("prints one hunk with three lines of context around a change", () => {
    const newer = ALPHABET.map((x) => (x === "h" ? "H" : x));
    expect(unifiedDiff(lines(...ALPHABET), lines(...newer), "a/model.py", "b/model.py")).toBe(
      [
        "--- a/model.py",
        "+++ b/model.py",
        "@@ -5,7 +5,7 @@",
        " e",
        " f",
        " g",
        "-h",
        "+H",
        " i",
        " j",
        " k",
        "",
      ].join("\n"),
    );
  });

  it("splits changes more than six lines apart into separate hunks and merges closer ones", () => {
    const apart = ALPHABET.filter((x) => x !== "b").concat("q");
    expect(unifiedDiff(lines(...ALPHABET), lines(...apart), "old", "new")).toBe(
      [
        "--- old",
        "+++ new",
        "@@ -1,5 +1,4 @@",
        " a",
        "-b",
        " c",
        " d",
        " e",
        "@@ -14,3 +13,4 @@",
        " n",
        " o",
        " p",
        "+q",
        "",
      ].join("\n"),
    );
    const close = ALPHABET.slice(0, 10).map((x) => (x === "b" || x === "i" ? x.toUpperCase() : x));
    expect(unifiedDiff(lines(...ALPHABET.slice(0, 10)), lines(...close), "old", "new")).toBe(
      [
        "--- old",
        "+++ new",
        "@@ -1,10 +1,10 @@",
        " a",
        "-b",
        "+B",
        " c",
        " d",
        " e",
        " f",
        " g",
        " h",
        "-i",
        "+I",
        " j",
        "",
      ].join("\n"),
    );
  });

  it("handles files created from nothing and missing final newlines", () => {
    expect(unifiedDiff("", lines("x", "y"), "/dev/null", "b")).toBe(["--- /dev/null", "+++ b", "@@ -0,0 +1,2 @@", "+x", "+y", ""].join("\n"));
    expect(unifiedDiff("a\nb", "a\nb\n", "old", "new")).toBe(
      ["--- old", "+++ new", "@@ -1,2 +1,2 @@", " a", "-b", "\\ No newline at end of file", "+b", ""].join("\n"),
    );
  });

  it("finds a minimal edit script", () => {
    const older = lines("x", "a", "b", "c", "a", "b", "b", "a");
    const newer = lines("c", "b", "a", "b", "a", "c");
    const diff = unifiedDiff(older, newer, "old", "new");
    const edits = diff.split("\n").filter((l) => /^[-+][^-+]/.test(l));
    // LCS of xabcabba / cbabac has length 4, so 8 - 4 deletions and 6 - 4 insertions.
    expect(edits).toHaveLength(6);
  });
});
