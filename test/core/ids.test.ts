import { describe, expect, it } from "vitest";
import { isId, shortTrialId, toId, trialId } from "../../core/ids.js";
import { experimentDir } from "../../lineage-store/artifacts.js";
import { runFilter } from "../../bus/subjects.js";

describe("ids", () => {
  it("are letters, digits, _ and - only: safe as subject tokens and directory names", () => {
    for (const ok of ["r20261123-090000-ab12", "run_1", "-", "T9"]) expect(isId(ok), ok).toBe(true);
    for (const bad of ["", ".", "..", "a.b", "a/b", "a*", "a>", "a b", "é"]) expect(isId(bad), bad).toBe(false);
  });

  it("are made from free text by replacing everything else", () => {
    expect(toId("host.example.org")).toBe("host-example-org");
    expect(isId(toId(""))).toBe(true);
  });

  it("number a run's trials, and read the number back", () => {
    const id = trialId("r1", 7);
    expect(id).toBe("r1-t007");
    expect(isId(id)).toBe(true);
    expect(shortTrialId(id)).toBe("t007");
    expect(shortTrialId(trialId("r1", 1234))).toBe("t1234");
    // The judge's test-split confirmation is not a numbered trial.
    expect(shortTrialId(`${id}-test`)).toBe("r1-t007-test");
  });

  it("are checked by one rule on the bus and on disk", () => {
    expect(experimentDir("r1-t007")).toBe("experiments/r1-t007");
    for (const bad of ["a.b", ".."]) {
      expect(() => experimentDir(bad)).toThrow(/directory name/);
      expect(() => runFilter(bad)).toThrow(/NATS subject/);
    }
  });
});
