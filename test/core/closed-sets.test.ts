import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { DEFAULT_PYTHON } from "../../core/config.js";
import { closedSet, OPTIMIZER, SCHEDULE, SCRIPT_LANGUAGE, SURFACE, TASK, TRIAL_STATUS } from "../../core/enums.js";
import { FAILURE_LABELS, labelFromName, labelName } from "../../core/failure.js";
import { DATASETS } from "../../core/goal-words.js";
import { InputDtypeSchema } from "../../core/model-config.js";
import { FailureLabel, FailureLabelSchema, Surface } from "../../proto/gen/research/v1/common_pb.js";
import { TRIAL_STAGES } from "../../swarm/trial-state.js";
import { DEFAULTS } from "../../gpu-runner/request.js";
import { SAMPLE_BYTES, TIMED_BATCH } from "../../swarm/budget.js";

const PYTHON = process.env.RUNNER_PYTHON ?? DEFAULT_PYTHON;
const WORKER_DIR = fileURLToPath(new URL("../../gpu-runner/python/", import.meta.url));

interface WorkerSets {
  optimizers: string[];
  schedules: string[];
  script_languages: string[];
  input_dtypes: string[];
  failure_labels: string[];
  datasets: string[];
  tasks: string[];
  max_together: number;
  eval_batch: number;
  sample_bytes: number;
}

/** The sandboxed worker has no protobuf runtime, so it keeps copies of the sets it checks. */
function workerSets(): WorkerSets {
  const code = [
    "import json, datasets, failures, specs, trainer",
    "from learning import language_modelling",
    "print(json.dumps({'optimizers': specs.OPTIMIZERS, 'schedules': specs.SCHEDULES, 'script_languages': specs.SCRIPT_LANGUAGES,",
    "  'input_dtypes': specs.INPUT_DTYPES, 'failure_labels': sorted(failures.LABELS), 'datasets': sorted(datasets.KNOWN), 'tasks': datasets.TASKS,",
    "  'max_together': specs.MAX_TOGETHER, 'eval_batch': trainer.EVAL_BATCH, 'sample_bytes': language_modelling.SAMPLE_BYTES}))",
  ].join("\n");
  const out = execFileSync(PYTHON, ["-c", code], { cwd: WORKER_DIR, encoding: "utf8", env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1" } });
  return JSON.parse(out) as WorkerSets;
}

describe("closed sets", () => {
  it("are the proto enums by snake_case name, without the zero value", () => {
    expect(FAILURE_LABELS).toHaveLength(FailureLabelSchema.values.length - 1);
    expect(FAILURE_LABELS).toContain("nan_loss");
    expect(labelName(FailureLabel.NAN_LOSS)).toBe("nan_loss");
    expect(labelName(FailureLabel.UNSPECIFIED)).toBe("unspecified");
    expect(labelFromName("runner_unavailable")).toBe(FailureLabel.RUNNER_UNAVAILABLE);
    expect(() => labelFromName("unspecified")).toThrow(/unknown failure label/);
    expect(SURFACE.names).toEqual(["architecture", "optimisation", "regularisation", "data"]);
    expect(SURFACE.value("data")).toBe(Surface.DATA);
    expect(SURFACE.name(Surface.UNSPECIFIED)).toBeUndefined();
    expect(SURFACE.name(99 as Surface)).toBeUndefined();
    expect(SURFACE.value("DATA")).toBeUndefined();
    expect(TRIAL_STAGES).toEqual(["proposed", "assembled", "evaluated", "judged"]);
    expect(TRIAL_STATUS.names).toEqual([...TRIAL_STAGES, "failed"]);
  });

  it("refuses an enum with nothing but its zero value", () => {
    const empty = { ...FailureLabelSchema, typeName: "x.Empty", values: FailureLabelSchema.values.slice(0, 1) };
    expect(() => closedSet<typeof FailureLabel>(empty)).toThrow(/x.Empty has no members/);
  });

  it("are the same in the Python worker", () => {
    const worker = workerSets();
    expect(worker.optimizers).toEqual(OPTIMIZER.names);
    expect(worker.schedules).toEqual(SCHEDULE.names);
    expect(worker.script_languages).toEqual(SCRIPT_LANGUAGE.names);
    expect(worker.input_dtypes).toEqual(InputDtypeSchema.options);
    // The worker labels only what it can see happen (never gate_miss or illegal, the judge's).
    expect(FAILURE_LABELS).toEqual(expect.arrayContaining(worker.failure_labels));
    expect(worker.datasets).toEqual([...DATASETS].sort());
    expect(worker.tasks).toEqual(TASK.names);
    expect(worker.max_together).toBe(DEFAULTS.maxTogether);
    // The planner's reserve for a job's end counts what the trainer does (swarm/budget.ts).
    expect(worker.eval_batch).toBe(TIMED_BATCH);
    expect(worker.sample_bytes).toBe(SAMPLE_BYTES);
  });
});
