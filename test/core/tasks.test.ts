/** The task registry: what every task must declare, on both sides of the wire, and the signal task through it. */
import { describe, expect, it } from "vitest";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compileModel } from "../../core/compiler/compile.js";
import { DEFAULT_PYTHON } from "../../core/config.js";
import { parseGoal } from "../../core/goal.js";
import { DATASETS } from "../../core/goal-words.js";
import { DATASET_TABLE, TASKS, datasetNamed, templatesFor } from "../../core/tasks/index.js";
import { dataProblem } from "../../cli/preflight.js";
import { compileOptions } from "../../core/compiler/options.js";
import { DatasetInfoSchema, Task } from "../../proto/gen/research/v1/runner_pb.js";
import { run } from "../helpers/run.js";

const PYTHON = process.env.RUNNER_PYTHON ?? DEFAULT_PYTHON;
const WORKER = join(import.meta.dirname, "..", "..", "gpu-runner", "python");

/** Data of each module's kind as the runner describes it: a module without one here fails the test below. */
const SAMPLES: Record<string, MessageInitShape<typeof DatasetInfoSchema>[]> = {
  images: [{ inputShape: [1, 28, 28], numClasses: 10, inputDtype: "float32" }, { inputShape: [3, 32, 32], numClasses: 100, inputDtype: "float32" }, { inputShape: [1, 8, 8], numClasses: 10, inputDtype: "float32" }],
  tabular: [{ inputShape: [13], numClasses: 3, inputDtype: "float32" }, { inputShape: [10], numClasses: 0, inputDtype: "float32", task: Task.REGRESSION }],
  text: [{ inputShape: [128], numClasses: 4, inputDtype: "int64", vocabSize: 16384 }, { inputShape: [256], numClasses: 0, inputDtype: "int64", vocabSize: 256, task: Task.LANGUAGE_MODELLING }],
  synthetic: [{ inputShape: [3, 16, 16], numClasses: 5, inputDtype: "float32" }, { inputShape: [20], numClasses: 5, inputDtype: "float32" }],
  signal: [{ inputShape: [40, 2], numClasses: 5, inputDtype: "float32" }],
};

describe("the task registry", () => {
  it("has every module and dataset on both sides: the runner's twin loads each dataset the swarm names, in a module of the same name", async () => {
    const script = "import tasks, json; print(json.dumps({m.__name__.split('.')[-1]: sorted(m.LOADERS) for m in tasks.MODULES}))";
    const r = await run(PYTHON, ["-c", script], { cwd: WORKER, timeout: 60_000 });
    expect(JSON.parse(r.stdout), r.stderr).toEqual(Object.fromEntries(TASKS.map((t) => [t.name, t.datasets.map((d) => d.name).sort()])));
  });

  it("gives each dataset a goal the parser reads and a name the runner takes, and each module templates that compile for its data", () => {
    expect(new Set(DATASET_TABLE.map((d) => d.name)).size, "a dataset in two modules").toBe(DATASET_TABLE.length);
    for (const d of DATASET_TABLE) {
      expect(DATASETS).toContain(d.name);
      const words = d.file ? d.file.example(d.serves[0]) : d.name;
      const parsed = parseGoal(`${words}: best model you can in 30 minutes`);
      expect(parsed.ok ? parsed.goal.dataset : parsed.error, words).toBe(d.name);
      if (d.file) expect(parsed.ok && parsed.goal.dataDir, words).toBeTruthy();
    }
    for (const task of TASKS) {
      expect(SAMPLES[task.name], `no sample data for the module ${task.name}`).toBeDefined();
      for (const sample of SAMPLES[task.name]!) {
        const info = create(DatasetInfoSchema, { name: task.datasets[0].name, task: Task.CLASSIFICATION, ...sample });
        for (const device of ["cpu", "cuda"] as const) {
          const templates = templatesFor(info, device);
          expect(templates.length, `${task.name} ${device}`).toBeGreaterThan(0);
          for (const t of templates) {
            const compiled = compileModel(t.build(info, 1), compileOptions(info));
            expect(compiled.ok, `${task.name}/${t.name}: ${compiled.ok ? "" : compiled.error}`).toBe(true);
          }
        }
      }
    }
  });

  it("trains every template's seeds together on a GPU under bf16 (the CUDA stand-in), none falling back to a process each", async () => {
    // A template whose seeds cannot be stacked trains them a process each on a GPU: slower, and
    // on an H200 every batch-norm template did (test/python/cuda_standin.py, CudaAutocast).
    const models = new Map<string, Record<string, unknown>>();
    for (const task of TASKS) {
      for (const sample of SAMPLES[task.name]!) {
        const info = create(DatasetInfoSchema, { name: task.datasets[0].name, task: Task.CLASSIFICATION, ...sample });
        for (const t of templatesFor(info, "cuda")) {
          const compiled = compileModel(t.build(info, 1), compileOptions(info));
          if (!compiled.ok) throw new Error(`${t.name}: ${compiled.error}`);
          const name = `${task.name}/${t.name} [${info.inputShape.join("x")}]`;
          models.set(name, { name, code: compiled.code, class_name: compiled.className, input_shape: info.inputShape, input_dtype: info.inputDtype, vocab_size: info.vocabSize });
        }
      }
    }
    const r = await run(PYTHON, [join(import.meta.dirname, "..", "python", "stack_templates.py")], { input: JSON.stringify([...models.values()]), timeout: 240_000 });
    expect(r.status, r.stderr).toBe(0);
    const verdicts = JSON.parse(r.stdout) as Record<string, string>;
    expect(Object.keys(verdicts).sort()).toEqual([...models.keys()].sort());
    // Recurrent templates alone train a seed a process, by design (stack.Stack.of says why); a
    // new template that cannot be stacked fails here.
    const recurrent = "a recurrent layer (SeqGRU) has no batched form: its fused kernel trains a seed a process";
    expect(Object.entries(verdicts).filter(([, v]) => v !== "together")).toEqual([
      ["text/byte-gru [256]", recurrent],
      ["signal/gru1d [40x2]", recurrent],
    ]);
  }, 300_000);

  it("refuses a dataset no module has", () => {
    expect(() => templatesFor(create(DatasetInfoSchema, { name: "imagenet" }))).toThrow(/no task module has a dataset named "imagenet"/);
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
    // A quoted header field holds its delimiter: one column, as the runner's CSV reader has it.
    const quoted = join(dir, "quoted.csv");
    writeFileSync(quoted, '"price, usd";"kind"\n1.5;a\n');
    expect(dataProblem({ dataset: "signal", dataDir: quoted, targetColumn: "kind" })).toBeUndefined();
    expect(dataProblem({ dataset: "signal", dataDir: quoted, targetColumn: "usd" })).toBe(`signal: no column "usd" in ${quoted}; its header has "price, usd", "kind"`);
    mkdirSync(arrays);
    writeFileSync(join(arrays, "x.npy"), "");
    expect(datasetNamed("signal")!.file!.missingTarget(arrays)).toBeUndefined();
    expect(dataProblem({ dataset: "signal", dataDir: arrays, targetColumn: "" })).toBeUndefined();
    const goal = parseGoal(`signal:${arrays}: maximise accuracy`);
    expect(goal.ok && goal.goal.dataset).toBe("signal");
  });

  it("starts from a CNN whose every output sees the whole window, however long, so that where two patterns sit relative to each other can be a class", () => {
    const fieldOf = (length: number) => {
      const info = create(DatasetInfoSchema, { name: "signal", inputShape: [length, 1], numClasses: 12, inputDtype: "float32", nTrain: 3000, nVal: 300 });
      const cnn = templatesFor(info, "cpu").find((t) => t.name === "cnn1d")!.build(info);
      expect(compileModel(cnn, compileOptions(info)).ok, `${length} steps`).toBe(true);
      let [field, jump, pools] = [1, 1, 0];
      for (const l of cnn.layers) {
        if (l.type !== "conv1d" && l.type !== "maxpool") continue;
        const [kernel, stride] = l.type === "maxpool" ? [l.kernel_size ?? 2, l.stride ?? l.kernel_size ?? 2] : [l.kernel_size ?? 3, l.stride ?? 1];
        field += (kernel - 1) * jump;
        jump *= stride;
        pools += l.type === "maxpool" ? 1 : 0;
      }
      return { field, pools };
    };
    for (const length of [12, 40, 80, 300]) expect(fieldOf(length).field, `${length} steps`).toBeGreaterThanOrEqual(length);
    // Never fewer than two downsampling stages, and never a pool past a length of one.
    expect(fieldOf(12).pools).toBe(2);
    expect(fieldOf(80).pools).toBe(4);
    expect(fieldOf(3).pools).toBe(1);
  });
});
