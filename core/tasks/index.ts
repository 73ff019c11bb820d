/**
 * The task registry: every task added through it, one module each (its Python twin in
 * gpu-runner/python/tasks/). The rest of the swarm asks here, never names one of them.
 * docs/ARCHITECTURE.md ("Extending") says what a module holds; test/core/tasks.test.ts
 * fails when one omits something the registry requires.
 */
import { SIGNAL } from "./signal.js";
import type { TaskModule } from "./task.js";

export const TASKS = [SIGNAL] as const satisfies readonly TaskModule[];

export type TaskDataset = (typeof TASKS)[number]["dataset"];

/** The registry's task for a dataset name, undefined for a built-in dataset. */
export function taskFor(dataset: string): TaskModule | undefined {
  return (TASKS as readonly TaskModule[]).find((t) => t.dataset === dataset);
}
