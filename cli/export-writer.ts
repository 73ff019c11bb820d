/**
 * The export writer's process (lineage-store/export_writer.py in `.venv-export`), for the
 * `export` verb (one document, one format) and for `launch --export tensorboard:DIR` (trials
 * as they are judged). Also the checks both make of a destination before anything is installed
 * or written.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { accessSync, constants, existsSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { ExportFormat } from "../lineage-store/export.js";
import { EXIT, fail } from "./args.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
export const EXPORT_PYTHON = join(ROOT, ".venv-export", "bin", "python");
const WRITER = join(ROOT, "lineage-store", "export_writer.py");
// What a failure quotes of the writer's stderr: the libraries warn freely, the writer's own verdict is its last line.
const STDERR_TAIL = 4_000;

/** A tracking server's address rather than a folder: only MLflow takes one. */
export const isUri = (dest: string) => /^[a-z][a-z0-9+.-]*:\/\//i.test(dest);

/**
 * The folder `dest` names, or the first line saying why it cannot be written (`flag` names
 * where it came from). It need not exist yet: its nearest existing ancestor must be a folder
 * this process may write in.
 */
export function writableFolder(dest: string, flag = ""): string {
  const dir = resolve(dest);
  let at = dir;
  while (!existsSync(at)) at = dirname(at);
  if (!statSync(at).isDirectory()) fail(`${flag}${at === dir ? `${dir} is not a folder` : `cannot make ${dir}: ${at} is not a folder`}`);
  try {
    accessSync(at, constants.W_OK | constants.X_OK);
  } catch {
    fail(`${flag}cannot write in ${at}`);
  }
  return dir;
}

/**
 * The export libraries' venv, installed when missing or out of date by set-up's own rule (its
 * stamp), which also announces a first install: minutes, once. A packed swarm has no set-up
 * script; there the venv must be there already.
 */
export async function ensureExportPython(): Promise<void> {
  const setup = join(ROOT, "scripts", "setup.sh");
  if (existsSync(setup)) {
    const code = await new Promise<number | null>((done) => spawn("bash", [setup, "export"], { stdio: ["ignore", "ignore", "inherit"] }).on("close", done));
    if (code !== 0) fail("could not install the export libraries (set-up's message above)", EXIT.cannotRun);
  }
  if (!existsSync(EXPORT_PYTHON)) fail(`no ${EXPORT_PYTHON}: run scripts/setup.sh export to install the export libraries`, EXIT.cannotRun);
}

/** What the writer says of each run it wrote (one JSON line each on its stdout). */
export interface Written {
  run_id: string;
  trials: number;
  where: string;
}

/** A writer's failure: its label (core/failure.ts's set) and its one line. */
export interface WriterFailure {
  label: string;
  message: string;
}

/** The writer's verdict, "export_writer: LABEL: message", is the last line of its stderr. */
function failureOf(stderr: string, code: number | null): WriterFailure {
  const verdict = /^export_writer: (\w+): (.*)$/.exec(stderr.trimEnd().split("\n").pop() ?? "");
  return verdict ? { label: verdict[1]!, message: verdict[2]! } : { label: "crash", message: `exit status ${code}` };
}

function startWriter(args: string[]): ChildProcessWithoutNullStreams {
  return spawn(EXPORT_PYTHON, [WRITER, ...args], {
    stdio: ["pipe", "pipe", "pipe"],
    // W&B offline, whatever the person's environment says: an export never touches the network.
    env: { ...process.env, WANDB_MODE: "offline", WANDB_SILENT: "true", WANDB_DISABLE_GIT: "true", WANDB_DISABLE_CODE: "true", PYTHONUNBUFFERED: "1" },
  });
}

/** Writes one document in one format: what was written, or the writer's failure. */
export function writeDocument(format: ExportFormat, where: string, project: string, doc: string): Promise<{ ok: true; written: Written[] } | { ok: false; failure: WriterFailure; stderr: string }> {
  return new Promise((done) => {
    const child = startWriter(["--to", format, "--dest", where, "--project", project]);
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err = (err + d.toString()).slice(-STDERR_TAIL)));
    child.on("error", (e) => done({ ok: false, failure: { label: "crash", message: `could not start ${EXPORT_PYTHON}: ${e.message}` }, stderr: "" }));
    child.on("close", (code) => {
      if (code !== 0) return done({ ok: false, failure: failureOf(err, code), stderr: err });
      done({ ok: true, written: out.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l) as Written) });
    });
    child.stdin.on("error", () => undefined); // a writer that died early: its exit says why
    child.stdin.end(doc);
  });
}

/**
 * A writer that follows a run (`--follow`): each line sent is one judged trial, or at the end
 * the whole run. It lives as long as the launch; a writer that fails stops following and says
 * why once, and the run goes on without it.
 */
export class FollowingWriter {
  private readonly child: ChildProcessWithoutNullStreams;
  private err = "";
  private readonly closed: Promise<WriterFailure | undefined>;
  private failed = false;

  constructor(format: ExportFormat, where: string, onFailure: (f: WriterFailure) => void) {
    this.child = startWriter(["--to", format, "--dest", where, "--follow"]);
    this.child.stdout.resume();
    this.child.stderr.on("data", (d: Buffer) => (this.err = (this.err + d.toString()).slice(-STDERR_TAIL)));
    this.child.stdin.on("error", () => undefined);
    this.closed = new Promise((done) => {
      const end = (f: WriterFailure | undefined) => {
        if (f && !this.failed) {
          this.failed = true;
          onFailure(f);
        }
        done(f);
      };
      this.child.on("error", (e) => end({ label: "crash", message: `could not start ${EXPORT_PYTHON}: ${e.message}` }));
      this.child.on("close", (code) => end(code === 0 ? undefined : failureOf(this.err, code)));
    });
  }

  send(line: unknown): void {
    if (!this.failed && this.child.stdin.writable) this.child.stdin.write(`${JSON.stringify(line)}\n`);
  }

  /** Ends the input and waits for the writer to finish what it has. */
  async close(): Promise<WriterFailure | undefined> {
    this.child.stdin.end();
    return this.closed;
  }
}
