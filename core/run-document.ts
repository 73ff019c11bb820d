/**
 * A run as one document: the goal and launch's flags that shape a run, snake_case. It is the
 * body of serve's POST /api/runs (dashboard/intake.ts), what the Python client's start_run
 * sends, and a file `launch --goal run.yaml` reads (YAML or JSON), so a run written down once
 * starts the same way from all three (where its runners run, `runners` and `slurm_*`, only from a
 * file: a goal posted to serve runs on serve's runners). Its values are checked where launch
 * checks its flags; here only their shapes.
 */
import { z } from "zod";
import { decodeText } from "./model-config.js";

const count = z.union([z.number().int().positive(), z.string().max(20)]).transform(String);

export const RunDocumentSchema = z.strictObject({
  goal: z.string().min(1).max(2000),
  time_budget: z.string().max(20).optional(),
  target: z.union([z.number(), z.string().max(20)]).transform(String).optional(),
  max_params: count.optional(),
  max_trials: count.optional(),
  seeds_per_trial: count.optional(),
  parallel: count.optional(),
  subset: count.optional(),
  epochs: count.optional(),
  last_epochs: count.optional(),
  seed: z.union([z.number().int(), z.string().max(20)]).transform(String).optional(),
  planner: z.string().max(20).optional(),
  data_dir: z.string().max(4000).optional(),
  from: z.string().max(4000).optional(),
  class: z.string().max(200).optional(),
  recipe: z.string().max(4000).optional(),
  no_research: z.boolean().optional(),
  no_warm_start: z.boolean().optional(),
  // Run ids separated by commas, as --warm-start-from takes them.
  warm_start_from: z.string().max(2000).optional(),
  // The space document itself (launch --space's), as a mapping or as YAML or JSON text (the form's), never a path: serve reads no file for it.
  space: z.union([z.record(z.string(), z.unknown()), z.string().max(20000)]).optional(),
  // Where its runners run (launch --runners slurm and --slurm-*); launch's, not serve's, whose runners are its own.
  runners: z.string().max(20).optional(),
  slurm_jobs: count.optional(),
  slurm_partition: z.string().max(200).optional(),
  slurm_account: z.string().max(200).optional(),
  slurm_gres: z.string().max(200).optional(),
  slurm_cpus: count.optional(),
  slurm_mem: z.string().max(20).optional(),
});

export type RunDocument = z.input<typeof RunDocumentSchema>;
export type RunDocumentFields = z.output<typeof RunDocumentSchema>;

type Checked = { ok: true; value: RunDocumentFields } | { ok: false; error: string };

/** Keys renamed since they were first taken, each with its new name: a document with the old one is told. */
const RENAMED: Record<string, string> = { seeds: "seeds_per_trial (a trial's seeds; seed is the run's random seed)" };

/** A run document's fields, or the one line that says what is wrong with it (its first problem). */
export function checkRunDocument(value: unknown): Checked {
  const old = value && typeof value === "object" ? Object.keys(RENAMED).find((k) => k in value) : undefined;
  if (old) return { ok: false, error: `${old} is now ${RENAMED[old]}` };
  const parsed = RunDocumentSchema.safeParse(value);
  if (parsed.success) return { ok: true, value: parsed.data };
  const issue = parsed.error.issues[0]!;
  return { ok: false, error: `${issue.path.join(".") || "run document"}: ${issue.message}` };
}

/** The same from the document's YAML or JSON text. */
export function parseRunDocument(text: string): Checked {
  const doc = decodeText(text);
  return doc.ok ? checkRunDocument(doc.value) : doc;
}
