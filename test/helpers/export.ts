/**
 * An export read back by each tracker's own reader (test/export-python/read_back.py, in
 * .venv-export) and held against a run's stored events: every trial, every seed's epochs, the
 * params, the tags a person filters by.
 */
import { expect } from "vitest";
import { join } from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import { flatten, type Flat } from "../../lineage-store/export.js";
import { LineageStore } from "../../lineage-store/store.js";
import { EventSchema } from "../../proto/gen/research/v1/events_pb.js";
import { foldRun, type RunState } from "../../swarm/run-state.js";
import { boundOf, confusionOf, metricCurves, rungOf, trialFailure, type TrialState } from "../../swarm/trial-state.js";
import { labelName } from "../../core/failure.js";
import { testLogger } from "../bus/helpers.js";
import { run } from "./run.js";

const ROOT = join(import.meta.dirname, "..", "..");

interface TensorBoardRead {
  scalars: Record<string, Record<string, [number, number][]>>;
  images: Record<string, string[]>;
  image_blobs: Record<string, { width: number; height: number; png_magic: string }>;
  text: Record<string, Record<string, string>>;
  sessions: Record<string, Flat>;
  experiments: Record<string, { hparams: string[]; metrics: string[] }>;
}

interface ReadBack {
  tensorboard: TensorBoardRead;
  /** A launch's live export (launch --export tensorboard:DIR), when one was read. */
  live?: TensorBoardRead;
  mlflow: Record<string, { name: string; status: string; params: Record<string, string>; tags: Record<string, string>; metrics: Record<string, [number, number][]>; artifacts: string[] }>;
  wandb: Record<string, { id: string; group: string; job_type: string; name: string; project: string; tags: string[]; config: Flat; history: Record<string, number>[]; summary: Record<string, unknown>; files: string[]; exit_code: number | null }>;
}

/** The run as the lineage stored it, folded. */
export async function storedRun(workspace: string, runId: string): Promise<RunState> {
  const store = await LineageStore.open(join(workspace, "lineage"), { readOnly: true, logger: testLogger });
  try {
    return foldRun(runId, (await store.eventsOf(runId)).map((r) => fromBinary(EventSchema, r.payload)));
  } finally {
    await store.close();
  }
}

/** What the three readers find, in one Python process (each library's import costs seconds). */
export async function readBack(dirs: { tensorboard: string; mlflow: string; wandb: string; live?: string }): Promise<ReadBack> {
  const live = dirs.live ? ["--live", dirs.live] : [];
  const r = await run(join(ROOT, ".venv-export", "bin", "python"), [join(ROOT, "test", "export-python", "read_back.py"), "--tensorboard", dirs.tensorboard, "--mlflow", dirs.mlflow, "--wandb", dirs.wandb, ...live], { timeout: 180_000 });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as ReadBack;
}

/** The trial's configs as the export's params: the fold's, defaults filled. */
const paramsOf = (t: TrialState): Flat => ({ ...flatten(t.model, "model"), ...flatten(t.train, "train") });

/** Each seed's stored per-epoch curves by the export's names. */
function curvesOf(t: TrialState): Map<number, Record<string, number[]>> {
  const out = new Map<number, Record<string, number[]>>();
  for (const s of t.evaluated?.result?.seedResults ?? []) {
    const c = s.learningCurve!;
    const { val, train } = metricCurves(t.objective, c);
    const m = t.objective.metric;
    const all: Record<string, number[]> = { train_loss: c.trainLoss, val_loss: c.valLoss, [`val_${m}`]: val, [`train_${m}`]: train, lr: c.lr };
    out.set(s.seed, Object.fromEntries(Object.entries(all).filter(([, v]) => v.length)));
  }
  return out;
}

/** MLflow keeps params as text (Python's str of the JSON value); compare them as values. */
function sameParams(got: Record<string, string>, want: Flat, what: string): void {
  expect(Object.keys(got).sort(), what).toEqual(Object.keys(want).sort());
  for (const [k, v] of Object.entries(want)) {
    if (typeof v === "number") expect(Number(got[k]), `${what} ${k}`).toBe(v);
    else expect(got[k], `${what} ${k}`).toBe(String(v));
  }
}

export function checkTensorBoard(tb: TensorBoardRead, state: RunState, report: string): void {
  const runId = state.runId;
  expect(tb.text[runId]?.["report"]).toBe(report);
  const keys = new Set<string>();
  let curves = 0;
  for (const id of state.order) {
    const t = state.trials.get(id)!;
    const params = paramsOf(t);
    Object.keys(params).forEach((k) => keys.add(k));
    // Its hparams session: the configs as stored, numbers as numbers.
    expect(tb.sessions[`${runId}/${id}`], id).toEqual(params);
    const score = boundOf(t);
    if (score !== undefined) expect(tb.scalars[`${runId}/${id}`]?.["score"], id).toEqual([[0, Math.fround(score)]]);
    // Every seed's every epoch, step = epoch (a scalar is a float32 in an event file).
    for (const [seed, named] of curvesOf(t)) {
      const got = tb.scalars[`${runId}/${id}/seed-${seed}`] ?? {};
      expect(Object.keys(got).sort(), `${id} seed ${seed}`).toEqual(Object.keys(named).sort());
      for (const [name, values] of Object.entries(named)) {
        expect(got[name], `${id} seed ${seed} ${name}`).toEqual(values.map((v, k) => [k + 1, Math.fround(v)]));
        curves++;
      }
    }
  }
  expect(curves).toBeGreaterThan(0);
  // The run's hparams experiment: every trial's param names, and the metrics to sort sessions by.
  expect(tb.experiments[runId]).toEqual({ hparams: [...keys].sort(), metrics: ["score", `val_${state.objective.metric}`].sort() });
  // The best trial's confusion matrix, as an image TensorBoard serves.
  const best = state.runFinished!.bestTrialId;
  expect(confusionOf(state.trials.get(best)!).length).toBeGreaterThan(1);
  expect(tb.images[`${runId}/${best}`]).toEqual(["confusion_matrix"]);
  expect(tb.image_blobs[`${runId}/${best}/confusion_matrix`]).toMatchObject({ png_magic: "89504e470d0a1a0a" });
  expect(tb.text[`${runId}/${best}`]?.["confusion_matrix_counts"]).toContain("rows: true class");
}

export function checkMlflow(ml: ReadBack["mlflow"], state: RunState): void {
  const runs = Object.entries(ml);
  const parents = runs.filter(([, r]) => r.name === state.runId && !r.tags["mlflow.parentRunId"]);
  expect(parents).toHaveLength(1);
  const [parentId, parent] = parents[0]!;
  expect(parent.artifacts).toContain("report.md");
  expect(parent.tags["research_swarm.run_id"]).toBe(state.runId);
  const children = new Map(runs.filter(([, r]) => r.tags["mlflow.parentRunId"] === parentId).map(([, r]) => [r.name, r]));
  expect([...children.keys()].sort()).toEqual([...state.order].sort());
  for (const id of state.order) {
    const t = state.trials.get(id)!;
    const r = children.get(id)!;
    sameParams(r.params, paramsOf(t), id);
    const f = trialFailure(t);
    expect(r.tags["failure_label"], id).toBe(f ? labelName(f.label) : "");
    expect(r.tags["fidelity.rung"], id).toBe(String(rungOf(t)));
    expect(r.tags["parent_trial"], id).toBe(t.proposed?.parentIds[0] ?? "");
    expect(r.status, id).toBe(f ? (["pruned", "cancelled"].includes(labelName(f.label)) ? "KILLED" : "FAILED") : "FINISHED");
    if (t.assembled?.code) expect(r.artifacts, id).toEqual(expect.arrayContaining(["model_code.py", "hypothesis.md"]));
    for (const [seed, named] of curvesOf(t)) {
      for (const [name, values] of Object.entries(named)) {
        expect(r.metrics[`seed_${seed}/${name}`], `${id} ${name} seed ${seed}`).toEqual(values.map((v, k) => [k + 1, v]));
      }
    }
  }
}

export function checkWandb(wb: ReadBack["wandb"], state: RunState): void {
  const runs = Object.values(wb).filter((r) => r.group === state.runId);
  expect(runs.filter((r) => r.job_type === "run").map((r) => r.name)).toEqual([state.runId]);
  const trials = new Map(runs.filter((r) => r.job_type === "trial").map((r) => [r.name, r]));
  expect([...trials.keys()].sort()).toEqual([...state.order].sort());
  for (const id of state.order) {
    const t = state.trials.get(id)!;
    const r = trials.get(id)!;
    expect(r.project).toBe("research-swarm");
    for (const [k, v] of Object.entries(paramsOf(t))) expect(r.config[k], `${id} ${k}`).toEqual(v);
    if (t.assembled?.code) expect(r.files, id).toEqual(expect.arrayContaining(["model_code.py", "hypothesis.md"]));
    // One history row per epoch, every seed's values in it.
    const byStep = new Map(r.history.map((row) => [row["_step"], row]));
    for (const [seed, named] of curvesOf(t)) {
      for (const [name, values] of Object.entries(named)) {
        values.forEach((v, k) => expect(byStep.get(k + 1)?.[`seed_${seed}/${name}`], `${id} ${name} seed ${seed} epoch ${k + 1}`).toBe(v));
      }
    }
  }
}
