/**
 * The coder's tools for an LLM's tool-calling loop. File tools work in one
 * trial directory (<workspace>/runs/<run>/coder/<trial>/) and refuse every
 * path that leads out of it, by ".." or through a symbolic link. Code never
 * runs on the agent's machine: python_run and bash_run send the directory's
 * files to the runner's sandbox (RunScript) and copy the text files the script
 * wrote back into the directory.
 */
import { lstatSync, mkdirSync, readdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { z } from "zod";
import { labelName, ResearchError } from "../../core/failure.js";
import { isId } from "../../core/ids.js";
import type { ToolDef } from "../../core/llm/client.js";
import type { ModelConfig } from "../../core/model-config.js";
import type { RunnerClient } from "../../gpu-runner/client.js";
import { ScriptLanguage } from "../../proto/gen/research/v1/runner_pb.js";

const READ_CHARS = 64 * 1024;
const LIST_ENTRIES = 500;

export function trialDir(workspace: string, runId: string, trialId: string): string {
  // Ids come from events; one with "/" or ".." must not pick the directory.
  for (const id of [runId, trialId]) {
    if (!isId(id)) throw new ResearchError("invalid_config", `"${id}" cannot name a trial directory`);
  }
  return resolve(workspace, "runs", runId, "coder", trialId);
}

function within(root: string, path: string): boolean {
  return path === root || path.startsWith(root + sep);
}

/** A directory that file operations cannot leave. */
export class Confined {
  readonly root: string;

  constructor(dir: string) {
    mkdirSync(dir, { recursive: true });
    this.root = realpathSync(dir);
  }

  /** The absolute path for `path`; throws when it lies outside, directly or through a link. */
  resolve(path: string): string {
    const target = resolve(this.root, path);
    if (!within(this.root, target)) throw new ResearchError("sandbox_violation", `"${path}" is outside the trial directory`);
    // The deepest part that exists decides where the path really leads; what is missing is created as plain directories.
    let existing = target;
    while (!lstatSync(existing, { throwIfNoEntry: false })) existing = dirname(existing);
    let real: string;
    try {
      real = realpathSync(existing);
    } catch {
      throw new ResearchError("sandbox_violation", `"${path}" goes through a broken symbolic link`);
    }
    if (!within(this.root, real)) throw new ResearchError("sandbox_violation", `"${path}" leads outside the trial directory through a symbolic link`);
    return target;
  }

  relative(absolute: string): string {
    return relative(this.root, absolute) || ".";
  }

  read(path: string): string {
    return readFileSync(this.resolve(path), "utf8");
  }

  write(path: string, text: string): void {
    const target = this.resolve(path);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, text);
  }

  /** Every regular file below the root by relative path; links are not followed. */
  files(): Record<string, string> {
    const out: Record<string, string> = {};
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) walk(path);
        else if (entry.isFile()) out[relative(this.root, path)] = readFileSync(path, "utf8");
      }
    };
    walk(this.root);
    return out;
  }
}

/** The module to write: one that implements a model_config, or an edit of existing source. */
export type CoderTask = { modelConfig: ModelConfig } | { source: string; initKwargs: Record<string, number | boolean>; edit: string };

/** What the scaffold's module, README and check script are written for. */
export interface ProjectInfo {
  className: string;
  inputShape: number[];
  inputDtype: string;
  numClasses: number;
  vocabSize?: number;
  task: CoderTask;
}

export interface CoderToolsOptions {
  dir: string;
  runner: RunnerClient;
  project: ProjectInfo;
}

const TIMEOUT = z.number().positive().max(120).optional().describe("wall-clock seconds, default 30, at most 120");

function listing(dir: Confined, start: string): string {
  const lines: string[] = [];
  const walk = (path: string, depth: number) => {
    const entries = readdirSync(path, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name));
    for (const entry of entries) {
      if (lines.length >= LIST_ENTRIES) return;
      const full = join(path, entry.name);
      const indent = "  ".repeat(depth);
      if (entry.isDirectory()) {
        lines.push(`${indent}${entry.name}/`);
        walk(full, depth + 1);
      } else if (entry.isSymbolicLink()) lines.push(`${indent}${entry.name} (symbolic link)`);
      else lines.push(`${indent}${entry.name} (${lstatSync(full).size} bytes)`);
    }
  };
  walk(start, 0);
  const header = `${dir.relative(start)}/`;
  if (lines.length === 0) return `${header} is empty`;
  return [header, ...lines, ...(lines.length >= LIST_ENTRIES ? [`(stopped after ${LIST_ENTRIES} entries)`] : [])].join("\n");
}

function scaffold(p: ProjectInfo): Record<string, string> {
  const batch = p.inputDtype === "int64" ? `torch.randint(0, ${p.vocabSize ?? 2}, (2, *INPUT_SHAPE))` : "torch.randn(2, *INPUT_SHAPE)";
  const edit = "source" in p.task ? p.task : undefined;
  // A Python string literal of the arguments' JSON: JSON's escapes are Python's too.
  const kwargs = edit ? `**json.loads(${JSON.stringify(JSON.stringify(edit.initKwargs))})` : "";
  return {
    "README.md": `# ${p.className}

${
  edit
    ? `- \`src/models/model.py\`: the module to edit, \`class ${p.className}(nn.Module)\`; the trial builds it as \`${p.className}(${kwargs})\`.
- The change to make: ${edit.edit}`
    : `- \`src/models/model.py\`: the module, \`class ${p.className}(nn.Module)\`; its constructor takes no required arguments.
- \`configs/model_config.json\`: the architecture to implement, layers in order.`
}
- \`experiments/check_model.py\`: builds the model and runs one forward pass on a dummy batch of shape
  [2, ${p.inputShape.join(", ")}] (${p.inputDtype}), expecting logits of shape [2, ${p.numClasses}].
  Run it with bash_run: \`python3 experiments/check_model.py\`.

Scripts run in the runner's sandbox on a copy of this directory (no network); the text files they
write are copied back here. The final answer is the module's source as JSON: {"code": "..."}.
`,
    "src/__init__.py": "",
    "src/models/__init__.py": "",
    "src/models/model.py":
      edit?.source ??
      `import torch
import torch.nn as nn
import torch.nn.functional as F


class ${p.className}(nn.Module):
    """Implements configs/model_config.json."""

    def __init__(self):
        super().__init__()
        # TODO: the layers of configs/model_config.json

    def forward(self, x):
        # TODO: return logits of shape [batch, ${p.numClasses}]
        raise NotImplementedError
`,
    ...("modelConfig" in p.task && { "configs/model_config.json": `${JSON.stringify(p.task.modelConfig, null, 2)}\n` }),
    "experiments/check_model.py": `"""One forward pass on a dummy batch: the check the runner makes before training."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch

from src.models.model import ${p.className}

INPUT_SHAPE = ${JSON.stringify(p.inputShape)}
NUM_CLASSES = ${p.numClasses}

model = ${p.className}(${kwargs})
model.eval()
with torch.no_grad():
    logits = model(${batch})
assert tuple(logits.shape) == (2, NUM_CLASSES), f"logits have shape {tuple(logits.shape)}, expected (2, {NUM_CLASSES})"
print("ok: logits", tuple(logits.shape), "parameters", sum(p.numel() for p in model.parameters()))
`,
  };
}

/** Infers each tool's argument type from its schema. */
function tool<A>(def: ToolDef<A>): ToolDef {
  return def;
}

/** A script run in the runner's sandbox on the trial directory's files, the text files it made written back: its exit, what came back and its output, for the model. */
async function runInSandbox(runner: RunnerClient, dir: Confined, language: ScriptLanguage, source: string, timeoutS: number | undefined): Promise<string> {
  const r = await runner.runScript({ language, source, timeoutS: timeoutS ?? 0, files: dir.files() });
  if (r.failure) return `error: the sandbox could not run the script (${labelName(r.failure.label)}): ${r.failure.message}`;
  const copied: string[] = [];
  const refused: string[] = [];
  for (const [path, text] of Object.entries(r.files)) {
    try {
      dir.write(path, text);
      copied.push(path);
    } catch (err) {
      refused.push(`${path} (${(err as Error).message})`);
    }
  }
  return [
    r.timedOut ? `timed out; exit code ${r.exitCode}` : `exit code ${r.exitCode}`,
    ...(copied.length ? [`files written back: ${copied.join(", ")}`] : []),
    ...(refused.length ? [`files not written back: ${refused.join(", ")}`] : []),
    "output:",
    r.stdout || "(none)",
  ].join("\n");
}

/** The project's scaffold written where its files are missing; those that exist are kept. */
function scaffoldInto(dir: Confined, project: ProjectInfo): string {
  const created: string[] = [];
  const kept: string[] = [];
  for (const [path, text] of Object.entries(scaffold(project))) {
    if (lstatSync(dir.resolve(path), { throwIfNoEntry: false })) kept.push(path);
    else {
      dir.write(path, text);
      created.push(path);
    }
  }
  return [`created: ${created.join(", ") || "nothing"}`, ...(kept.length ? [`kept existing: ${kept.join(", ")}`] : [])].join("\n");
}

export function coderTools(opts: CoderToolsOptions): ToolDef[] {
  const dir = new Confined(opts.dir);
  const run = (language: ScriptLanguage, source: string, timeoutS: number | undefined) => runInSandbox(opts.runner, dir, language, source, timeoutS);
  return [
    tool({
      name: "read_file",
      description: "Reads a text file of the trial directory (paths relative to it).",
      parameters: z.object({ path: z.string() }),
      run: async ({ path }) => {
        const text = dir.read(path);
        return text.length > READ_CHARS ? `${text.slice(0, READ_CHARS)}\n[... ${text.length - READ_CHARS} more characters]` : text;
      },
    }),
    tool({
      name: "write_file",
      description: "Writes a text file in the trial directory, creating its directories; replaces an existing file.",
      parameters: z.object({ path: z.string(), content: z.string() }),
      run: async ({ path, content }) => {
        dir.write(path, content);
        return `wrote ${Buffer.byteLength(content)} bytes to ${path}`;
      },
    }),
    tool({
      name: "list_directory",
      description: "Lists a directory of the trial directory recursively, with file sizes.",
      parameters: z.object({ path: z.string().default(".") }),
      run: async ({ path }) => listing(dir, dir.resolve(path)),
    }),
    tool({
      name: "python_run",
      description:
        "Runs Python source (python3 -c) with torch available, in the runner's sandbox (no network) with the trial directory's files as its working directory. Returns the exit code and the output; the text files it creates or changes are written back to the trial directory.",
      parameters: z.object({ code: z.string(), timeout_s: TIMEOUT }),
      run: ({ code, timeout_s }) => run(ScriptLanguage.PYTHON, code, timeout_s),
    }),
    tool({
      name: "bash_run",
      description:
        "Runs a bash command (bash -c) in the runner's sandbox (no network) with the trial directory's files as its working directory. Returns the exit code and the output; the text files it creates or changes are written back to the trial directory.",
      parameters: z.object({ command: z.string(), timeout_s: TIMEOUT }),
      run: ({ command, timeout_s }) => run(ScriptLanguage.BASH, command, timeout_s),
    }),
    tool({
      name: "create_pytorch_project_scaffold",
      description:
        "Creates src/models/model.py (a stub of the module to write, or the module to edit), configs/model_config.json (when implementing one), experiments/check_model.py (a forward-pass check) and a README in the trial directory. Existing files are kept.",
      parameters: z.object({}),
      run: async () => scaffoldInto(dir, opts.project),
    }),
  ];
}
