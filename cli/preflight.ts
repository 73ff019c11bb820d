/**
 * What the CLIs check before they start any process (nats-server, runner,
 * agents): the goal's data files, a user's model file, the device asked
 * for. Each answer is one line naming the user's own input, or undefined
 * when the check passes. The runner stays the authority: these only catch,
 * in seconds, what would otherwise fail after the whole swarm came up.
 */
import { execFileSync } from "node:child_process";
import { statSync } from "node:fs";
import { datasetNamed } from "../core/tasks/index.js";

/**
 * Why `python` (the runner's) would refuse `--device cuda`, asked the way the runner
 * asks: whether its torch sees a CUDA device. Undefined when it does, or when the
 * question cannot be put here (the runner then answers it).
 */
export function cudaProblem(python: string): string | undefined {
  // The runner's workers never see the caller's CUDA_VISIBLE_DEVICES (gpu-runner/sandbox.ts), so neither does the question.
  const { CUDA_VISIBLE_DEVICES: _, ...env } = process.env;
  let out: string;
  try {
    out = execFileSync(python, ["-c", "import torch; print(torch.__version__, torch.cuda.is_available())"], {
      env,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
      timeout: 60_000,
    });
  } catch {
    return undefined;
  }
  const [torch, available] = out.trim().split(/\s+/);
  return available === "True" ? undefined : `--device cuda: this host has no CUDA device that ${python} can use (torch ${torch}); use --device cpu or auto`;
}

/**
 * Why the dataset named by a goal or by flags cannot be read, as far as the
 * files tell: a data path that does not exist, a CSV whose header lacks the
 * target column. An empty dataDir is the dataset's standard location (the runner's to check).
 */
export function dataProblem(d: { dataset: string; dataDir: string; targetColumn: string }): string | undefined {
  if (!d.dataDir) return undefined;
  const stat = statSync(d.dataDir, { throwIfNoEntry: false });
  if (!stat) return `${d.dataset}: no file or folder ${d.dataDir}`;
  return datasetNamed(d.dataset)?.file?.dataProblem(d.dataDir, d.targetColumn);
}

/**
 * What is wrong with the user's Python model file before any runner starts: a syntax error,
 * named by the user's path and line (the runner compiles the source as "model.py"), or no
 * top-level class `className`. `python` parses the file without running it, so its grammar
 * is the runner's. Undefined when the file is fine or `python` cannot be started (the runner
 * then reports it).
 */
export function modelFileProblem(python: string, path: string, className: string): string | undefined {
  const script = [
    "import ast, sys",
    "p, cls = sys.argv[1], sys.argv[2]",
    "try:",
    "    tree = compile(open(p, 'rb').read(), p, 'exec', ast.PyCF_ONLY_AST, dont_inherit=True)",
    "except SyntaxError as e:",
    "    print(f'{p}, line {e.lineno}: {type(e).__name__}: {e.msg}')",
    "except ValueError as e:",
    "    print(f'{p}: {e}')",
    "else:",
    "    names = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]",
    // A name bound otherwise at the top level (imported, assigned) may be the class too: the runner decides.
    "    bound = {a.asname or a.name for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}",
    "    bound |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}",
    "    if cls not in names and cls not in bound:",
    "        print(f'{p}: no class {cls} at its top level' + (f' (it has {\", \".join(names)})' if names else ' (it has no class)'))",
  ].join("\n");
  try {
    return execFileSync(python, ["-c", script, path, className], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"], timeout: 30_000 }).trim() || undefined;
  } catch {
    return undefined;
  }
}
