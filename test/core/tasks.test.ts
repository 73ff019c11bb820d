/** The task registry: what every task must declare, on both sides of the wire, and the signal task through it. */
import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compileModel } from "../../core/compiler/compile.js";
import { DEFAULT_PYTHON } from "../../core/config.js";
import { DATASETS, parseGoal } from "../../core/goal.js";
import { TASKS, taskFor } from "../../core/tasks/index.js";
import { templatesFor } from "../../agents/planner/templates.js";
import { dataProblem } from "../../cli/preflight.js";
import { DatasetInfoSchema, Task } from "../../proto/gen/research/v1/runner_pb.js";
import { run } from "../helpers/run.js";

const PYTHON = process.env.RUNNER_PYTHON ?? DEFAULT_PYTHON;
const WORKER = join(import.meta.dirname, "..", "..", "gpu-runner", "python");

describe("the task registry", () => {
  it("has every task on both sides: the runner's twin loads each dataset the swarm names", async () => {
    const r = await run(PYTHON, ["-c", "import tasks, json; print(json.dumps(sorted(tasks.LOADERS)))"], { cwd: WORKER, timeout: 60_000 });
    expect(JSON.parse(r.stdout), r.stderr).toEqual(TASKS.map((t) => t.dataset).sort());
  });

  it("gives each task a goal the parser reads, a name the runner takes, and templates that compile for its data", () => {
    for (const task of TASKS) {
      expect(DATASETS).toContain(task.dataset);
      const parsed = parseGoal(`${task.example}: maximise accuracy`);
      expect(parsed.ok && [parsed.goal.dataset, parsed.goal.dataDir, parsed.goal.targetColumn], task.dataset).toEqual([task.dataset, expect.any(String), expect.any(String)]);
      const info = create(DatasetInfoSchema, { name: task.dataset, inputShape: [40, 2], numClasses: 5, inputDtype: "float32", task: Task.CLASSIFICATION });
      const templates = templatesFor(info, "cpu");
      expect(templates.length, task.dataset).toBeGreaterThan(0);
      for (const t of templates) {
        const compiled = compileModel(t.build(info, 1), { inputShape: [40, 2], numClasses: 5 });
        expect(compiled.ok, `${t.name}: ${compiled.ok ? "" : compiled.error}`).toBe(true);
      }
    }
  });
});

describe("the signal task", () => {
  const dir = mkdtempSync(join(tmpdir(), "signal-task-"));
  const csv = join(dir, "s.csv");
  writeFileSync(csv, "x0,x1,x2,label\n0.1,0.2,0.3,a\n0.3,0.2,0.1,b\n");
  const arrays = join(dir, "arrays");

  it("reads signal:PATH target=COLUMN, and says what a goal lacks in one line", () => {
    const goal = parseGoal(`signal:${csv} target=label: maximise accuracy`);
    expect(goal.ok && { dataset: goal.goal.dataset, dataDir: goal.goal.dataDir, targetColumn: goal.goal.targetColumn, openEnded: goal.goal.openEnded }).toEqual({
      dataset: "signal",
      dataDir: csv,
      targetColumn: "label",
      openEnded: true,
    });
    const noColumn = parseGoal(`signal:${csv}: maximise accuracy`);
    expect(noColumn.ok ? "" : noColumn.error).toContain(`signal needs its class column for ${csv}, e.g. "signal:/data/signals.csv target=label"`);
    const noPath = parseGoal("signal: reach 90% accuracy");
    expect(noPath.ok).toBe(false);
  });

  it("checks a CSV's class column before anything starts, and takes a folder of arrays without one", () => {
    expect(dataProblem({ dataset: "signal", dataDir: csv, targetColumn: "label" })).toBeUndefined();
    expect(dataProblem({ dataset: "signal", dataDir: csv, targetColumn: "kind" })).toBe(`signal: no column "kind" in ${csv}; its header has "x0", "x1", "x2", "label"`);
    expect(dataProblem({ dataset: "signal", dataDir: join(dir, "none"), targetColumn: "label" })).toBe(`signal: no file or folder ${join(dir, "none")}`);
    mkdirSync(arrays);
    writeFileSync(join(arrays, "x.npy"), "");
    expect(taskFor("signal")!.needsTarget(arrays)).toBe(false);
    expect(dataProblem({ dataset: "signal", dataDir: arrays, targetColumn: "" })).toBeUndefined();
    const goal = parseGoal(`signal:${arrays}: maximise accuracy`);
    expect(goal.ok && goal.goal.dataset).toBe("signal");
  });
});
