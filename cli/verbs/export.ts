/**
 * export: stored runs to TensorBoard, MLflow or W&B. The runs' events are folded here, once,
 * into one neutral document (lineage-store/export.ts), and one Python process writes it with
 * the trackers' own libraries (lineage-store/export_writer.py, in `.venv-export`, which
 * scripts/setup.sh installs on the first export). Every check of the input comes before that
 * install and before anything is written.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { RunStatus } from "../../proto/gen/research/v1/events_pb.js";
import { exportDocument, exportRun, EXPORT_FORMATS, type ExportFormat } from "../../lineage-store/export.js";
import { buildReport } from "../../lineage-store/report.js";
import { foldRun, runSoFar } from "../../swarm/run-state.js";
import { args, EXIT, fail } from "../args.js";
import { ensureExportPython, isUri, writableFolder, writeDocument } from "../export-writer.js";
import { bestModelRun, quietLogger, storedRuns } from "../workspace.js";
import { cliConfig } from "../../core/config.js";
import { spawnSync } from "node:child_process";

/** How a person looks at what went to `where`. */
const VIEW: Record<ExportFormat, (where: string) => string> = {
  tensorboard: (where) => `tensorboard --logdir ${where}`,
  // MLflow 3 serves its file store only when asked to (export_writer.py says why it is one).
  mlflow: (where) => (isUri(where) ? `the MLflow server at ${where}` : `MLFLOW_ALLOW_FILE_STORE=true mlflow ui --backend-store-uri ${where}`),
  wandb: (where) => `wandb sync ${join(where, "wandb", "offline-run-*")}`,
};

/** Where a run's best model comes out as one file with its preprocessing inside (lineage-store/export_model.py). */
const MODEL_EXPORTER = join(import.meta.dirname, "..", "..", "lineage-store", "export_model.py");

/** The best model's formats, and how a person loads each file. */
const MODEL_FORMATS: Record<string, (file: string) => string> = {
  torchscript: (file) => `torch.jit.load("${file}")`,
  onnx: (file) => `onnxruntime.InferenceSession("${file}") (no torch needed)`,
  python: (file) => `sys.path.insert(0, "${dirname(file)}"); from model import load; load() (an nn.Module; load(seed=N): one seed's)`,
};

/** `export RUN --format torchscript|onnx|python DIR`: the run's best model, its seeds' ensemble or one seed, self-contained. */
function exportModel(workspace: string, positionals: string[], format: string, seed: string | undefined, json: boolean): void {
  const loadWith = MODEL_FORMATS[format] ?? fail(`--format must be one of ${Object.keys(MODEL_FORMATS).join(", ")}, got "${format}"`);
  if (positionals.length !== 2) fail(`export --format ${format} needs a RUN id and a DIR`);
  const [runId, dest] = positionals as [string, string];
  const { runDir, seedArgs } = bestModelRun(workspace, runId, seed);
  // The CLI's process does nothing else meanwhile: it waits for the one child.
  const r = spawnSync(cliConfig().runnerPython, [MODEL_EXPORTER, runDir, writableFolder(dest), "--format", format, ...seedArgs], { encoding: "utf8", timeout: 600_000 });
  if (r.status !== 0) fail(`export to ${format} failed: ${(r.stderr.trim().split("\n").at(-1) ?? "").slice(0, 300)}`, EXIT.cannotRun);
  const written = JSON.parse(r.stdout.trim().split("\n").at(-1)!) as { model: string; seeds: number; inference: string };
  if (json) return void process.stdout.write(`${JSON.stringify({ format, ...written })}\n`);
  process.stdout.write(`${runId}: ${written.seeds === 1 ? "one seed's model" : `the ensemble of ${written.seeds} seeds`} -> ${written.model}\nload with: ${loadWith(written.model)} (${written.inference} says what it takes and returns)\n`);
}

export default async function exportRuns(argv: string[]): Promise<void> {
  const { values: a, positionals } = args(argv, {
    to: { type: "string" },
    all: { type: "boolean" },
    project: { type: "string", default: "research-swarm" },
    format: { type: "string" },
    seed: { type: "string" },
  }, { positionals: ["RUN", "DIR"] });
  if (a.format !== undefined) return exportModel(a.workspace, positionals, a.format, a.seed, !!a.json);
  const format = (a.to ?? fail(`export needs --to ${EXPORT_FORMATS.join("|")} (or --format torchscript|onnx|python for the best model)`)) as ExportFormat;
  if (!EXPORT_FORMATS.includes(format)) fail(`--to must be one of ${EXPORT_FORMATS.join(", ")}, got "${a.to}"`);
  if (a.all ? positionals.length !== 1 : positionals.length !== 2) fail(a.all ? "export --all takes one DIR and no RUN" : "export needs a RUN id and a DIR (or --all DIR)");
  const runIds = a.all ? undefined : [positionals[0]!];
  const dest = positionals.at(-1)!;
  if (isUri(dest) && format !== "mlflow") fail(`--to ${format} writes files: give a folder, not ${dest} (only --to mlflow takes a tracking server's URI)`);
  const where = isUri(dest) ? dest : writableFolder(dest);

  const runs = await storedRuns(a.workspace, runIds);
  if (runIds && !runs.has(runIds[0]!)) fail(`no run ${runIds[0]} in this workspace (research-agent runs lists them)`);
  if (!runs.size) fail("no runs in this workspace to export");
  const doc = exportDocument(
    [...runs].map(([id, events]) => {
      const state = foldRun(id, events);
      // The run folder's report is the one people read; a run without one yet gets its report so far.
      const file = join(resolve(a.workspace), "runs", id, "report.md");
      const report = existsSync(file) ? readFileSync(file, "utf8") : buildReport(state, runSoFar(state, RunStatus.RUNNING, "not finished: the report so far")).markdown;
      return exportRun(state, report);
    }),
  );

  await ensureExportPython();
  const log = quietLogger();
  const result = await writeDocument(format, where, String(a.project), JSON.stringify(doc));
  if (!result.ok) {
    log.debug({ stderr: result.stderr }, "export writer failed");
    fail(`export to ${format} failed [${result.failure.label}]: ${result.failure.message}`, EXIT.cannotRun);
  }
  log.info({ format, where, runs: result.written.length }, "exported");
  if (a.json) return void process.stdout.write(`${JSON.stringify({ format, written: result.written, view: VIEW[format](where) })}\n`);
  for (const w of result.written) process.stdout.write(`${w.run_id}: ${w.trials} trials -> ${w.where}\n`);
  process.stdout.write(`view with: ${VIEW[format](where)}\n`);
}
