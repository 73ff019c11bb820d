/** The registry of learning (core/learning/): a module per proto Task, and the runner's twin alike. */
import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { join } from "node:path";
import { DEFAULT_PYTHON } from "../../core/config.js";
import { TASK } from "../../core/enums.js";
import { LEARNINGS, learningOf } from "../../core/learning/index.js";
import { METRIC } from "../../core/enums.js";
import { metricRange, objectiveNamed } from "../../core/objective.js";
import { DatasetInfoSchema, MetricStatsSchema, Task } from "../../proto/gen/research/v1/runner_pb.js";
import { run } from "../helpers/run.js";

const PYTHON = process.env.RUNNER_PYTHON ?? DEFAULT_PYTHON;
const WORKER = join(import.meta.dirname, "..", "..", "gpu-runner", "python");

describe("the registry of learning", () => {
  it("has a module for every proto Task, under its name, and the runner's twin has the same", async () => {
    expect(Object.keys(LEARNINGS)).toEqual(TASK.names);
    for (const [name, l] of Object.entries(LEARNINGS)) expect(l.name).toBe(name);
    // A run from before regression has no task: a classifier's.
    expect(learningOf(Task.UNSPECIFIED).name).toBe("classification");
    expect(learningOf(Task.LANGUAGE_MODELLING)).toBe(LEARNINGS.language_modelling);
    const r = await run(PYTHON, ["-c", "import learning, json; print(json.dumps(learning.NAMES))"], { cwd: WORKER, timeout: 60_000 });
    expect(JSON.parse(r.stdout), r.stderr).toEqual(TASK.names);
  });

  it("gives every metric a goal can decide on to exactly one task, and each reported name one range", () => {
    const owners = METRIC.names.map((m) => Object.values(LEARNINGS).filter((l) => m in l.metrics).map((l) => l.name));
    expect(owners.every((o) => o.length === 1), JSON.stringify(owners)).toBe(true);
    expect(objectiveNamed("rmse")).toMatchObject({ task: "regression", higherIsBetter: false, label: "RMSE" });
    // A name several tasks report (loss) must mean the same range in each.
    for (const l of Object.values(LEARNINGS)) {
      for (const [name, range] of Object.entries(l.ranges)) expect(metricRange(`val_${name}`), `${l.name} ${name}`).toBe(range);
      // The metrics a goal decides on are reported, so they have ranges too.
      for (const m of Object.keys(l.metrics)) expect(l.ranges, `${l.name} ${m}`).toHaveProperty(m);
    }
  });

  it("answers the model's output and the judge's gate by task", () => {
    const info = create(DatasetInfoSchema, { numClasses: 10, vocabSize: 256 });
    expect(Object.values(LEARNINGS).map((l) => l.outputWidth(info))).toEqual([10, 1, 256]);
    const stats = (mean: number) => create(MetricStatsSchema, { mean });
    expect(LEARNINGS.classification.gateMiss({ val_accuracy: stats(0.15) }, 10)?.reason).toBe("below the accuracy gate");
    expect(LEARNINGS.classification.gateMiss({ val_accuracy: stats(0.25) }, 10)).toBeUndefined();
    expect(LEARNINGS.regression.gateMiss({ val_r2: stats(0) }, 0)?.reason).toBe("no better than the mean");
    expect(LEARNINGS.language_modelling.gateMiss({ val_bits_per_byte: stats(7.9) }, 0)).toBeUndefined();
    expect(LEARNINGS.language_modelling.gateMiss({}, 0)?.reason).toBe("no better than a uniform guess");
  });
});
