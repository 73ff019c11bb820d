/**
 * A real Slurm cluster of a test's own on this machine: its own munged (key, socket), slurmctld and
 * slurmd, every file of theirs in one temp folder and their ports free ones, so that clusters of
 * tests running side by side never meet and the system's /etc/munge and /etc/slurm are never read.
 * One node, this host, with `cpus` cores and `gpus` GPUs as gres: device files that are twins of
 * /dev/null, so jobs get CUDA_VISIBLE_DEVICES as on a GPU host. Needs root (slurmd runs jobs as
 * their user, mknod) and Debian's slurm-wlm and munge (/work/shared/FIELD-NOTES.md, "A real Slurm").
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { hostname, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { freePort } from "../../bus/index.js";
import { run } from "./run.js";

export interface SlurmCluster {
  dir: string;
  /** slurm.conf, absolute. */
  conf: string;
  /** What a client command (sbatch, squeue, scancel, sinfo) needs to reach this cluster, over process.env. */
  env: Record<string, string>;
  partition: string;
  /** The ids of the jobs still in the queue (pending, running, completing). */
  squeue(): string[];
  /** Cancels every job, stops the daemons and whatever they left, removes `dir`; again is a no-op. */
  stop(): Promise<void>;
}

const BIN = {
  munged: "/usr/sbin/munged",
  slurmctld: "/usr/sbin/slurmctld",
  slurmd: "/usr/sbin/slurmd",
  sinfo: "/usr/bin/sinfo",
  squeue: "/usr/bin/squeue",
  scancel: "/usr/bin/scancel",
  sbatch: "/usr/bin/sbatch",
};
const PARTITION = "test";
/** From the daemons' start to the node idle: about a second when idle. */
const READY_MS = 30_000;

/** What is still running, for the exit handler: a test process that ends without stop() leaves no daemon behind. */
const running = new Set<() => void>();
process.on("exit", () => running.forEach((kill) => kill()));

export async function startSlurm(opts: { gpus?: number; cpus?: number } = {}): Promise<SlurmCluster> {
  const gpus = opts.gpus ?? 2;
  const cpus = opts.cpus ?? 2;
  if (process.getuid?.() !== 0 || Object.values(BIN).some((bin) => !existsSync(bin))) {
    throw new Error("the Slurm tests need root and Debian's slurm-wlm and munge: SETUP_TESTS=1 bash scripts/setup.sh");
  }
  const dir = mkdtempSync(join(tmpdir(), "slurm-"));
  // munged refuses a socket in a folder that not everyone can enter.
  chmodSync(dir, 0o755);
  const conf = join(dir, "slurm.conf");
  const socket = join(dir, "munge.sock");
  const host = hostname().split(".")[0]!;
  writeFileSync(join(dir, "munge.key"), randomBytes(1024), { mode: 0o400 });
  for (let i = 0; i < gpus; i++) execFileSync("mknod", [join(dir, `gpu${i}`), "c", "1", "3"]);
  mkdirSync(join(dir, "state"));
  mkdirSync(join(dir, "spool"));
  writeFileSync(
    conf,
    [
      // Unique per start: a job's SLURM_CLUSTER_NAME says which cluster ran it.
      `ClusterName=t${randomBytes(6).toString("hex")}`,
      `SlurmctldHost=${host}`,
      `SlurmctldPort=${await freePort()}`,
      `SlurmdPort=${await freePort()}`,
      "SlurmUser=root",
      "AuthType=auth/munge",
      "CredType=cred/munge",
      // This cluster's munged, for the daemons and for every client that reads this file.
      `AuthInfo=socket=${socket}`,
      "ProctrackType=proctrack/linuxproc",
      "TaskPlugin=task/none",
      "JobAcctGatherType=jobacct_gather/none",
      "SelectType=select/cons_tres",
      "SelectTypeParameters=CR_Core",
      "ReturnToService=2",
      // The node as written here whatever this machine has: more cores than it has are fine.
      "SlurmdParameters=config_overrides",
      // Debian's default, /bin/mail, is not installed: an error in slurmctld's log otherwise.
      "MailProg=/bin/true",
      // Ended jobs leave squeue within seconds, and a cancelled one is killed 2 s after its SIGTERM.
      "MinJobAge=2",
      "KillWait=2",
      "InactiveLimit=0",
      // A loaded test machine may keep slurmd from answering for a while; its node stays up.
      "SlurmdTimeout=60",
      `StateSaveLocation=${dir}/state`,
      `SlurmdSpoolDir=${dir}/spool`,
      `SlurmctldPidFile=${dir}/slurmctld.pid`,
      `SlurmdPidFile=${dir}/slurmd.pid`,
      `SlurmctldLogFile=${dir}/slurmctld.log`,
      `SlurmdLogFile=${dir}/slurmd.log`,
      ...(gpus > 0 ? ["GresTypes=gpu"] : []),
      // Half of this machine's memory: a node that claims more than it has is drained.
      `NodeName=${host} CPUs=${cpus} RealMemory=${Math.floor(totalmem() / 2 ** 21)}${gpus > 0 ? ` Gres=gpu:${gpus}` : ""} State=UNKNOWN`,
      `PartitionName=${PARTITION} Nodes=${host} Default=YES MaxTime=INFINITE State=UP`,
    ].join("\n") + "\n",
  );
  // A GPU without a device file is dropped, and the node with it (INVAL).
  writeFileSync(join(dir, "gres.conf"), gpus > 0 ? `AutoDetect=off\nName=gpu File=${dir}/gpu[0-${gpus - 1}]\n` : "");
  const env = { SLURM_CONF: conf };

  // In the foreground, as children: their pids are known at once (the pid files say the same
  // later), and a daemon that exits early is seen. Each inherits SLURM_CONF, and so does every
  // slurmstepd and job process under slurmd: that is how the ones of this cluster are found.
  const daemons: ChildProcess[] = [];
  const daemon = (bin: string, args: string[]) => {
    const out = openSync(join(dir, `${bin.split("/").pop()}.out`), "w");
    const child = spawn(bin, args, { stdio: ["ignore", out, out], env: { ...process.env, ...env } });
    closeSync(out);
    daemons.push(child);
  };
  const killAll = () => {
    for (const child of daemons) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    for (const pid of ofCluster(conf)) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // exited meanwhile
      }
    }
    rmSync(dir, { recursive: true, force: true });
  };
  running.add(killAll);

  // In the foreground each daemon writes its log to its stderr too, after what it said before it
  // opened its log file (a configuration it refused).
  const tails = () =>
    readdirSync(dir)
      .filter((f) => f.endsWith(".out"))
      .map((f) => `--- ${f}\n${readFileSync(join(dir, f), "utf8").trimEnd().split("\n").slice(-10).join("\n")}`)
      .join("\n");
  try {
    // In the foreground munged logs to its stderr only (munged.out).
    daemon(BIN.munged, ["-F", `--socket=${socket}`, `--key-file=${dir}/munge.key`, `--pid-file=${dir}/munged.pid`, `--seed-file=${dir}/munged.seed`]);
    await until(() => existsSync(socket), daemons);
    // slurmd retries its registration until slurmctld answers.
    daemon(BIN.slurmctld, ["-D", "-f", conf]);
    daemon(BIN.slurmd, ["-D", "-f", conf]);
    await until(async () => (await run(BIN.sinfo, ["-h", "-N", "-o", "%T"], { env: { ...process.env, ...env }, timeout: 10_000 })).stdout.trim() === "idle", daemons);
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    const logs = tails();
    killAll();
    running.delete(killAll);
    throw new Error(`the Slurm cluster in ${dir} did not come up: ${why}\n${logs}`);
  }

  const squeue = (): string[] =>
    execFileSync(BIN.squeue, ["-h", "-o", "%i"], { env: { ...process.env, ...env }, encoding: "utf8", timeout: 10_000 })
      .split("\n")
      .filter(Boolean);
  let stopped: Promise<void> | undefined;
  const stop = async () => {
    // A slurmctld that is gone has no queue to empty: what it started is killed below.
    const ids = (() => {
      try {
        return squeue();
      } catch {
        return [];
      }
    })();
    if (ids.length) await run(BIN.scancel, ids, { env: { ...process.env, ...env }, timeout: 10_000 });
    await until(() => squeue().length === 0, [], 10_000).catch(() => {});
    // slurmd first: it would otherwise keep trying slurmctld, which needs munged.
    for (const child of daemons.slice().reverse()) await terminate(child);
    killAll();
    running.delete(killAll);
  };
  return { dir, conf, env, partition: PARTITION, squeue, stop: () => (stopped ??= stop()) };
}

/** Polls `ready` until it holds; fails after `ms`, or as soon as one of `daemons` has exited. */
async function until(ready: () => boolean | Promise<boolean>, daemons: ChildProcess[], ms = READY_MS): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await ready())) {
    const gone = daemons.find((child) => child.exitCode !== null || child.signalCode !== null);
    if (gone) throw new Error(`${gone.spawnfile} exited (${gone.signalCode ?? gone.exitCode})`);
    if (Date.now() > deadline) throw new Error(`not ready after ${ms / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** SIGTERM, then SIGKILL if it has not exited within 5 s. */
async function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(timer);
}

/** The live processes started with this cluster's SLURM_CONF: its daemons, slurmstepds and job processes. */
function ofCluster(conf: string): number[] {
  const mark = `SLURM_CONF=${conf}`;
  const pids: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${name}/environ`, "utf8").split("\0").includes(mark)) pids.push(Number(name));
    } catch {
      // gone between the listing and the read
    }
  }
  return pids;
}

/** One evaluation line of a runner job's log (`launch --runners slurm` writes each job's log as `<workspace>/slurm/runner-<job>.log`). */
export interface RunnerLogLine {
  job: string;
  /** The evaluation's idempotency key. */
  key: string;
  run: string;
  msg: "started" | "finished" | "failed" | "cancelled";
  /** A training, not an evaluation of kept weights (the test confirmation). */
  training: boolean;
  seeds: number;
  time: number;
}

/** Every runner job's evaluations in `dir`, from the jobs' own logs (pino JSON at info): what counts trainings. */
export function runnerJobLog(dir: string): RunnerLogLine[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => /^runner-\d+\.log$/.test(f))
    .flatMap((f) =>
      readFileSync(join(dir, f), "utf8")
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((e) => typeof e.key === "string" && /^evaluation (started|finished|failed|cancelled)$/.test(String(e.msg)))
        .map((e) => ({
          job: f.slice("runner-".length, -".log".length),
          key: String(e.key),
          run: String(e.run_id),
          msg: String(e.msg).slice("evaluation ".length) as RunnerLogLine["msg"],
          training: e.training !== false,
          seeds: Number(e.seeds) || 0,
          time: Number(e.time),
        })),
    );
}
