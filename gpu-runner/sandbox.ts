/**
 * How a worker process is started: inside bubblewrap (the default) or, only
 * when the user asks for it explicitly, directly.
 *
 * The sandbox gives the worker no network, a read-only view of the system,
 * a private PID namespace (so the worker can sweep every process a trial left
 * behind), a private writable scratch directory and an environment without
 * the runner's secrets. When the runner is root the worker keeps just the
 * capabilities it needs to drop each trial to uid 65534 and to kill it;
 * rlimits are set per trial by the worker (see python/zygote.py).
 *
 * Datasets are seen only as the referee published them (inputs and split
 * indices, mounted at /data; python/datasets.py publish): the data roots,
 * labels and all, are hidden, so no trial can read a validation or test label.
 * The referee itself runs outside the sandbox: it runs no model code.
 */
import { existsSync, lstatSync, readdirSync, readlinkSync, realpathSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { ResearchError } from "../core/failure.js";

export const PYTHON_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "python");
const SANDBOX_CODE_DIR = "/runner";
const SANDBOX_SCRATCH = "/scratch";
const SANDBOX_DATA = "/data";

export interface LaunchOptions {
  python: string;
  /** Host directory the worker may write to. */
  scratchDir: string;
  /** Where the referee publishes datasets; the worker reads it (read-only). */
  publishedDir: string;
  /** Host directories holding datasets with their labels: never visible to the worker. */
  dataRoots: string[];
  sandbox: boolean;
  /** CUDA_VISIBLE_DEVICES for the worker: "" hides every GPU (a CPU runner on a GPU host), "1" pins it to one; undefined leaves all visible. */
  visibleGpus?: string;
}

export interface Launch {
  command: string;
  args: string[];
  env: Record<string, string>;
}

const BASE_ENV = {
  PATH: "/usr/local/bin:/usr/bin:/bin",
  PYTHONDONTWRITEBYTECODE: "1",
  PYTHONUNBUFFERED: "1",
  // Each seed is its own process; thread counts are set per trial.
  OMP_NUM_THREADS: "1",
  MKL_NUM_THREADS: "1",
};

export function bubblewrapPath(): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(":").concat(["/usr/bin", "/bin"])) {
    const p = join(dir, "bwrap");
    if (dir && existsSync(p)) return p;
  }
  return undefined;
}

function isRoot(): boolean {
  return typeof process.getuid === "function" && process.getuid() === 0;
}

/** Top-level system directories: merged-/usr systems have symlinks, others real directories. */
function systemMounts(): string[] {
  const args = ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"];
  for (const name of ["bin", "sbin", "lib", "lib32", "lib64", "libx32"]) {
    const p = `/${name}`;
    if (!existsSync(p)) continue;
    if (lstatSync(p).isSymbolicLink()) args.push("--symlink", readlinkSync(p), p);
    else args.push("--ro-bind", p, p);
  }
  return args;
}

/**
 * A read-only bind at the same path, its missing ancestors created
 * traversable. bubblewrap creates them with mode 0700 otherwise: the worker
 * (root) could still read below them, but a trial's process, dropped to uid
 * 65534, could not, and failed at its first lazy import from a venv under
 * /opt (torch._dynamo, on a GPU host).
 */
function roBind(path: string): string[] {
  const ancestors: string[] = [];
  for (let d = dirname(path); d !== "/" && d !== "."; d = dirname(d)) ancestors.unshift(d);
  return [...ancestors.flatMap((d) => ["--perms", "0755", "--dir", d]), "--ro-bind", path, path];
}

/**
 * A Python outside /usr (a conda or venv on a GPU host) must be visible
 * inside. A venv's python is a symlink into its base installation, so both
 * the venv and the resolved prefix are mounted.
 */
function pythonPrefixes(python: string): string[] {
  const prefixes = new Set<string>();
  for (const p of [python, (() => { try { return realpathSync(python); } catch { return python; } })()]) {
    if (p.startsWith("/") && !p.startsWith("/usr/")) prefixes.add(dirname(dirname(p)));
  }
  return [...prefixes];
}

/**
 * Datasets that ship inside a Python package, labels included: scikit-learn's
 * digits, iris, wine and breast cancer, under each site- or dist-packages
 * the worker's Python can see. Hidden like the data roots.
 */
export function packagedDataDirs(python: string): string[] {
  const out: string[] = [];
  for (const prefix of [...pythonPrefixes(python), "/usr", "/usr/local"]) {
    const lib = join(prefix, "lib");
    if (!existsSync(lib)) continue;
    for (const version of readdirSync(lib).filter((d) => d.startsWith("python3"))) {
      for (const packages of ["site-packages", "dist-packages"]) {
        const dir = join(lib, version, packages, "sklearn", "datasets", "data");
        if (existsSync(dir)) out.push(dir);
      }
    }
  }
  return out;
}

function gpuMounts(): string[] {
  if (!existsSync("/dev")) return [];
  const devices = readdirSync("/dev").filter((d) => d.startsWith("nvidia"));
  if (devices.length === 0) return [];
  // CUDA's driver initialisation reads /sys; without it cuInit fails.
  return [...devices.flatMap((d) => ["--dev-bind", `/dev/${d}`, `/dev/${d}`]), "--ro-bind", "/sys", "/sys"];
}

export function workerLaunch(opts: LaunchOptions): Launch {
  const gpuEnv: Record<string, string> = opts.visibleGpus === undefined ? {} : { CUDA_VISIBLE_DEVICES: opts.visibleGpus };
  if (!opts.sandbox) {
    return {
      command: opts.python,
      args: ["-u", join(PYTHON_DIR, "zygote.py")],
      env: { ...BASE_ENV, ...gpuEnv, HOME: opts.scratchDir, RUNNER_SCRATCH: opts.scratchDir, RUNNER_DATA: opts.publishedDir },
    };
  }
  const bwrap = bubblewrapPath();
  if (!bwrap) throw new ResearchError("invalid_config", "bubblewrap (bwrap) is not installed");
  const args = [
    "--unshare-pid",
    "--unshare-net",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--die-with-parent",
    "--new-session",
    ...systemMounts(),
    "--ro-bind",
    PYTHON_DIR,
    SANDBOX_CODE_DIR,
    "--proc",
    "/proc",
    "--dev",
    "/dev",
    ...(opts.visibleGpus === "" ? [] : gpuMounts()),
    "--tmpfs",
    "/tmp",
    // After the tmpfs: a Python or a data root under /tmp must not be hidden by it.
    ...pythonPrefixes(opts.python).flatMap(roBind),
    // Last, so that no mount above shows them (the default root is under /usr).
    ...[...opts.dataRoots, ...packagedDataDirs(opts.python)].filter((d) => existsSync(d)).flatMap((d) => ["--tmpfs", d]),
    "--ro-bind",
    opts.publishedDir,
    SANDBOX_DATA,
    "--bind",
    opts.scratchDir,
    SANDBOX_SCRATCH,
    ...(isRoot()
      ? ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_KILL"]
      : ["--unshare-user"]),
    "--clearenv",
    ...Object.entries({ ...BASE_ENV, ...gpuEnv, HOME: SANDBOX_SCRATCH, RUNNER_SCRATCH: SANDBOX_SCRATCH, RUNNER_DATA: SANDBOX_DATA }).flatMap(([k, v]) => [
      "--setenv",
      k,
      v,
    ]),
    "--chdir",
    SANDBOX_SCRATCH,
    opts.python,
    "-u",
    `${SANDBOX_CODE_DIR}/zygote.py`,
    "--pidns",
  ];
  return { command: bwrap, args, env: { PATH: BASE_ENV.PATH } };
}

/**
 * The referee (python/referee.py): trusted, unsandboxed, the only process
 * that reads the data roots' labels. It publishes into `publishedDir` and
 * keeps each split's training labels in `privateDir`, which no worker mounts.
 */
export function refereeLaunch(python: string, publishedDir: string, privateDir: string): Launch {
  return {
    command: python,
    args: ["-u", join(PYTHON_DIR, "referee.py"), publishedDir, privateDir],
    env: { ...BASE_ENV, HOME: privateDir },
  };
}

/** Fails fast with a useful message when the sandbox cannot start here. */
export function checkSandbox(): string | undefined {
  const bwrap = bubblewrapPath();
  if (!bwrap) return "bubblewrap (bwrap) is not installed";
  try {
    execFileSync(bwrap, ["--unshare-pid", "--unshare-net", ...systemMounts(), "--proc", "/proc", "--dev", "/dev", "true"], {
      stdio: "pipe",
      timeout: 10_000,
    });
    return undefined;
  } catch (err) {
    const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim();
    return `bubblewrap cannot create a sandbox here: ${stderr || (err as Error).message}`;
  }
}
