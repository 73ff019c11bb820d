/** The run's dataset as the runner sees it (shapes, classes, sizes), asked once per process. */
import { ResearchError } from "../core/failure.js";
import type { RunnerClient } from "../gpu-runner/client.js";
import type { Goal } from "../proto/gen/research/v1/events_pb.js";
import { Task, type DatasetInfo } from "../proto/gen/research/v1/runner_pb.js";
import { objective } from "../core/objective.js";
import { outputWidth } from "../core/learning/index.js";
import { TASK } from "../core/enums.js";

const cache = new Map<string, Promise<DatasetInfo>>();

/** The goal's dataset as the runner takes it: its task is the goal's metric's (a regression for RMSE, MAE, R²). */
export function datasetSpec(goal: Goal | undefined) {
  const task = TASK.value(objective(goal?.objective).task) ?? Task.UNSPECIFIED;
  return { name: goal?.dataset ?? "", dataDir: goal?.dataDir ?? "", targetColumn: goal?.targetColumn ?? "", task };
}

/** What a Summarize request takes from the dataset: the shape, dtype and vocabulary of one input, and the output that fits. */
export function summaryInput(info: DatasetInfo) {
  return { inputShape: info.inputShape, numClasses: outputWidth(info), inputDtype: info.inputDtype, vocabSize: info.vocabSize, task: info.task };
}

export function datasetInfo(runner: RunnerClient, goal: Goal | undefined): Promise<DatasetInfo> {
  const spec = datasetSpec(goal);
  const key = JSON.stringify(spec);
  let info = cache.get(key);
  if (!info) {
    info = runner.describe({ dataset: spec }).then(
      (d) => {
        if (d.failure) throw ResearchError.fromProto(d.failure);
        return d;
      },
      (err: unknown) => {
        throw new ResearchError("runner_unavailable", `describe ${spec.name}: ${(err as Error).message}`);
      },
    );
    // A failed lookup is not cached: the runner may be back on the next message.
    info.catch(() => cache.delete(key));
    cache.set(key, info);
  }
  return info;
}
