import { describe, expect, it } from "vitest";
import { pairedTTest, tCritical975, tTwoSidedP } from "../../core/stats.js";

describe("Student's t", () => {
  it("critical values match the tables", () => {
    expect(tCritical975(1)).toBeCloseTo(12.706, 3);
    expect(tCritical975(2)).toBeCloseTo(4.303, 3);
    expect(tCritical975(30)).toBeCloseTo(2.042, 3);
    expect(tCritical975(60)).toBeCloseTo(2.0003, 3);
    expect(tCritical975(1000)).toBeCloseTo(1.9623, 3);
  });

  it("two-sided p-values match the tables and invert the critical values", () => {
    expect(tTwoSidedP(0, 5)).toBeCloseTo(1, 6);
    expect(tTwoSidedP(2.571, 5)).toBeCloseTo(0.05, 3);
    expect(tTwoSidedP(12.706, 1)).toBeCloseTo(0.05, 3);
    expect(tTwoSidedP(3.169, 10)).toBeCloseTo(0.01, 3);
    expect(tTwoSidedP(-2.228, 10)).toBeCloseTo(0.05, 3);
  });

  it("paired t-test on a known example", () => {
    // Differences 1, 2, 3, 4: mean 2.5, sd 1.291, t = 3.873 with 3 df, p = 0.0305.
    const r = pairedTTest([10, 10, 10, 10], [11, 12, 13, 14]);
    expect(r.meanDiff).toBeCloseTo(2.5, 6);
    expect(r.t).toBeCloseTo(3.873, 3);
    expect(r.p).toBeCloseTo(0.0305, 3);
    expect(r.ci95[0]).toBeGreaterThan(0);
    expect(() => pairedTTest([1], [2])).toThrow();
  });
});
