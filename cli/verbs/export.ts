/**
 * export: stored runs to TensorBoard, MLflow or W&B. The runs' events are folded here, once,
 * into one neutral document (lineage-store/export.ts), and one Python process writes it with
 * the trackers' own libraries (lineage-store/export_writer.py, in `.venv-export`, which
 * scripts/setup.sh installs on the first export). Every check of the input comes before that
 * install and before anything is written.
 */
import { spawn } from "node:child_process";
import { accessSync, constants, existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { RunStatus } from "../../proto/gen/research/v1/events_pb.js";
import { exportDocument, exportRun, EXPORT_FORMATS, type ExportFormat } from "../../lineage-store/export.js";
import { buildReport } from "../../lineage-store/report.js";
import { foldRun, runSoFar } from "../../swarm/run-state.js";
import { args, fail } from "../args.js";
import { quietLogger, storedRuns } from "../workspace.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const EXPORT_PYTHON = join(ROOT, ".venv-export", "bin", "python");
const WRITER = join(ROOT, "lineage-store", "export_writer.py");
// What a failure quotes of the writer's stderr: the libraries warn freely, the writer's own verdict is its last line.
const STDERR_TAIL = 4_000;

/** A tracking server's address rather than a folder: only MLflow takes one. */
const isUri = (dest: string) => /^[a-z][a-z0-9+.-]*:\/\//i.test(dest);

/**
 * The folder `dest` names, or the first line saying why it cannot be written. It need not exist
 * yet: its nearest existing ancestor must be a folder this process may write in.
 */
function writableFolder(dest: string): string {
  const dir = resolve(dest);
  let at = dir;
  while (!existsSync(at)) at = dirname(at);
  if (!statSync(at).isDirectory()) fail(at === dir ? `${dir} is not a folder` : `cannot make ${dir}: ${at} is not a folder`);
  try {
    accessSync(at, constants.W_OK | constants.X_OK);
  } catch {
    fail(`cannot write in ${at}`);
  }
  return dir;
}

/** What the writer says of each run it wrote (one JSON line each on its stdout). */
interface Written {
  run_id: string;
  trials: number;
  where: string;
}

/** How a person looks at what went to `where`. */
const VIEW: Record<ExportFormat, (where: string) => string> = {
  tensorboard: (where) => `tensorboard --logdir ${where}`,
  // MLflow 3 serves its file store only when asked to (export_writer.py says why it is one).
  mlflow: (where) => (isUri(where) ? `the MLflow server at ${where}` : `MLFLOW_ALLOW_FILE_STORE=true mlflow ui --backend-store-uri ${where}`),
  wandb: (where) => `wandb sync ${join(where, "wandb", "offline-run-*")}`,
};

export default async function exportRuns(argv: string[]): Promise<void> {
  const { values: a, positionals } = args(argv, {
    to: { type: "string" },
    all: { type: "boolean" },
    project: { type: "string", default: "research-swarm" },
  });
  const format = (a.to ?? fail(`export needs --to ${EXPORT_FORMATS.join("|")}`)) as ExportFormat;
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
  const written = await writeWith(format, where, String(a.project), JSON.stringify(doc));
  log.info({ format, where, runs: written.length }, "exported");
  for (const w of written) process.stdout.write(`${w.run_id}: ${w.trials} trials -> ${w.where}\n`);
  process.stdout.write(`view with: ${VIEW[format](where)}\n`);
}

/**
 * The export libraries' venv, installed when missing or out of date by set-up's own rule (its
 * stamp), which also announces a first install: minutes, once. A packed swarm has no set-up
 * script; there the venv must be there already.
 */
async function ensureExportPython(): Promise<void> {
  const setup = join(ROOT, "scripts", "setup.sh");
  if (existsSync(setup)) {
    const code = await new Promise<number | null>((done) => spawn("bash", [setup, "export"], { stdio: ["ignore", "ignore", "inherit"] }).on("close", done));
    if (code !== 0) fail("could not install the export libraries (set-up's message above)", 2);
  }
  if (!existsSync(EXPORT_PYTHON)) fail(`no ${EXPORT_PYTHON}: run scripts/setup.sh export to install the export libraries`, 2);
}

/** Runs the writer on the document; a failure is its one line, exit status 2. */
function writeWith(format: ExportFormat, where: string, project: string, doc: string): Promise<Written[]> {
  return new Promise((done) => {
    const child = spawn(EXPORT_PYTHON, [WRITER, "--to", format, "--dest", where, "--project", project], {
      stdio: ["pipe", "pipe", "pipe"],
      // W&B offline, whatever the person's environment says: an export never touches the network.
      env: { ...process.env, WANDB_MODE: "offline", WANDB_SILENT: "true", WANDB_DISABLE_GIT: "true", WANDB_DISABLE_CODE: "true", PYTHONUNBUFFERED: "1" },
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err = (err + d.toString()).slice(-STDERR_TAIL)));
    child.on("error", (e) => fail(`could not start ${EXPORT_PYTHON}: ${e.message}`, 2));
    child.on("close", (code) => {
      if (code !== 0) {
        quietLogger().debug({ stderr: err }, "export writer failed");
        // The writer's verdict, "export_writer: LABEL: message", is its last line.
        const verdict = /^export_writer: (\w+): (.*)$/.exec(err.trimEnd().split("\n").pop() ?? "");
        fail(verdict ? `export to ${format} failed [${verdict[1]}]: ${verdict[2]}` : `export to ${format} failed: exit status ${code}`, 2);
      }
      done(out.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l) as Written));
    });
    child.stdin.on("error", () => undefined); // a writer that died early: its exit says why
    child.stdin.end(doc);
  });
}
