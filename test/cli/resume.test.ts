/**
 * An interrupted run resumes from its workspace: the launcher is SIGKILLed
 * mid-run (its agents end with it), and `launch --resume` finishes the run
 * without redoing judged trials or duplicating the ones in flight.
 */
import { describe, expect, it } from "vitest";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { run, type Ran } from "../helpers/run.js";
import { duration } from "../../lineage-store/report-json.js";
import { storedEvents } from "../../cli/workspace.js";
import { foldRun } from "../../swarm/run-state.js";
import { trialLines } from "../helpers/report.js";
import { unwrapped } from "../helpers/markdown.js";

// Without NODE_CHANNEL_FD: vitest's worker has an IPC channel, and a child
// that inherits the variable would take an unrelated fd for its own channel.
const { NODE_CHANNEL_FD: _ipc, ...inherited } = process.env;
// The agents inherit AGENT_ACK_WAIT_S: what the killed launcher's analyst held comes back to the
// resumed one after 10 s, not after its 60 s default.
// The hashing embedder (EMBEDDER=hashing, a choice the product offers): these runs test interrupting
// and resuming, not similarity, and MiniLM's server costs a launch about 8 s of CPU (the CLI and
// swarm tests keep the default).
const env = { ...inherited, LOG_LEVEL: "warn", EMBEDDER: "hashing", AGENT_ACK_WAIT_S: "10" };

/** A CLI call that reads the workspace: 2 s when idle, and a start alone took 40 s at a load of 26. */
const CLI_TIMEOUT_MS = 180_000;

/** The agents' logs, for a failure message worth reading. */
function logsOf(workspace: string): string {
  const dir = join(workspace, "logs");
  return existsSync(dir) ? readdirSync(dir).map((f) => `--- ${f}\n${readFileSync(join(dir, f), "utf8").slice(-1500)}`).join("\n") : "";
}

/** The summary `launch --json` ends with; a launch that ended without one (an error, killed at the timeout) fails with why. */
async function summaryOf(launch: Ran, workspace: string, runId: string): Promise<unknown> {
  const last = launch.stdout.trim().split("\n").pop()!;
  if (!last.startsWith("{")) {
    const story = trialLines(foldRun(runId, await storedEvents(workspace, runId)));
    expect.fail(`exit ${launch.status}\n${story}\n${launch.stderr}\n${logsOf(workspace)}`);
  }
  return JSON.parse(last);
}

/** A failed test must not leave the killed launcher's nats-server behind (its resume would have stopped it). */
function cleanUp(workspace: string): void {
  const file = join(workspace, "swarm.json");
  const { nats_pid } = existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as { nats_pid?: number }) : {};
  // Only a nats-server: the pid may have been reused since the server stopped, as it should have.
  const comm = `/proc/${nats_pid}/comm`;
  if (nats_pid && existsSync(comm) && readFileSync(comm, "utf8").trim() === "nats-server") process.kill(nats_pid, "SIGKILL");
  rmSync(workspace, { recursive: true, force: true });
}

/** `ps` lines (pid, then the command line) of the processes that name `workspace`. */
function processesOf(workspace: string): string[] {
  return spawnSync("ps", ["-eo", "pid,args"], { encoding: "utf8" }).stdout.split("\n").filter((l) => l.includes(workspace));
}

// Side by side: each test mostly waits on its own swarm (its time budget, JetStream's redelivery).
describe.concurrent("launch --resume", () => {
  it("finishes a run whose launcher was killed, once per trial, in the space it was launched with", async () => {
    const workspace = mkdtempSync(join(tmpdir(), "resume-test-"));
    // The resumed run's agents read the space from the run's first event, as the killed ones did.
    const space = "{families: [bn-cnn, vgg-cnn, se-cnn], optimizer: {values: [adam, adamw]}, label_smoothing: default}";
    try {
      const first = spawn(
        "./research-agent",
        // Bounded by its work: 6 trials, a last long training of 10 epochs (launch --last-epochs,
        // which the resumed run keeps). Of 200, three seeds on the cores took about 200 s each on a
        // slow CPU beside the suite's other swarms (2026-12-03); the 3 minutes only bound it.
        ["launch", "--goal", "digits: reach 99.9% validation accuracy", "--max-trials", "6", "--time-budget", "3m", "--last-epochs", "10", "--seeds-per-trial", "3", "--epochs", "1", "--no-research", "--space", space, "--workspace", workspace],
        // Its own process group, signalled whole below, as a terminal's Ctrl-C is.
        { env, stdio: ["ignore", "pipe", "pipe"], detached: true },
      );
      let out = "";
      let err = "";
      first.stdout.on("data", (d: Buffer) => (out += d.toString()));
      first.stderr.on("data", (d: Buffer) => (err += d.toString()));
      const runId = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no progress:\n${out}\n${err}\n${logsOf(workspace)}`)), 120_000);
        first.stdout.on("data", () => {
          const m = /run (r[\w-]+) started/.exec(out);
          // Interrupt while both first trials are in flight and none is judged yet.
          if (m && /t001 assembled/.test(out)) {
            clearTimeout(timer);
            resolve(m[1]!);
          }
        });
      });
      first.kill("SIGKILL");
      await new Promise((r) => first.once("exit", r));

      const second = await run("./research-agent", ["launch", "--resume", runId, "--workspace", workspace, "--json"], { env, timeout: 300_000 });
      const summary = (await summaryOf(second, workspace, runId)) as { run_id: string; status: string; trials: number; registry: string };
      expect(summary.run_id).toBe(runId);
      // Three seeds can all score 100% on digits' small validation split, so the goal may be met early.
      expect(second.status, second.stderr).toBe(summary.status === "goal_achieved" ? 0 : 3);
      // Else it ended on its trial budget or on its time, after the last long training.
      if (summary.status !== "goal_achieved") {
        expect(summary.status).toBe("budget_exhausted");
        expect(summary.trials).toBeGreaterThanOrEqual(3);
        expect(summary.trials).toBeLessThanOrEqual(6);
      }
      const last = [...foldRun(runId, await storedEvents(workspace, runId)).trials.values()].find((t) => t.proposed?.lastTraining);
      if (last) expect(last.train?.epochs, "the resumed run keeps --last-epochs").toBe(10);
      const registry = JSON.parse(readFileSync(summary.registry, "utf8")) as { trial_id: string }[];
      const ids = registry.map((e) => e.trial_id);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids).toHaveLength(summary.trials);
      expect(unwrapped(readFileSync(join(workspace, "runs", runId, "report.md"), "utf8"))).toContain(
        "Narrowed with --space: families bn-cnn, vgg-cnn, se-cnn; optimizer one of adam, adamw; label_smoothing fixed at 0.",
      );
      for (const id of ids) {
        const folder = join(workspace, "runs", runId, "experiments", id);
        const train = parseYaml(readFileSync(join(folder, "train_config.yaml"), "utf8")) as { optimizer?: string; label_smoothing?: number };
        const model = parseYaml(readFileSync(join(folder, "model_config.yaml"), "utf8")) as { name: string };
        expect(["adam", "adamw"], id).toContain(train.optimizer ?? "adam");
        expect(train.label_smoothing ?? 0, id).toBe(0);
        expect(model.name, id).toMatch(/^(bn-cnn|vgg-cnn|se-cnn)\b/);
      }
    } finally {
      cleanUp(workspace);
    }
  }, 420_000);

  it("stops cleanly on a Ctrl-C (SIGINT to its process group) with a report so far, and resumes from there", async () => {
    const workspace = mkdtempSync(join(tmpdir(), "interrupt-test-"));
    try {
      const first = spawn(
        "./research-agent",
        // Budgets the run cannot spend before the signal, even on a loaded machine (at a load of 20 a
        // 75 s budget ended the run before its first judgement was read), nor on a quiet one in the
        // seconds the live reports take (20 one-epoch trials); the resumed run ends on its trial
        // budget, its last long training 10 epochs, or on the resume's own time budget.
        ["launch", "--goal", "digits: reach 99.9% validation accuracy", "--max-trials", "20", "--time-budget", "10m", "--last-epochs", "10", "--seeds-per-trial", "2", "--epochs", "1", "--no-research", "--workspace", workspace],
        // Its own process group, signalled whole below, as a terminal's Ctrl-C is.
        { env, stdio: ["ignore", "pipe", "pipe"], detached: true },
      );
      let out = "";
      let err = "";
      first.stdout.on("data", (d: Buffer) => (out += d.toString()));
      first.stderr.on("data", (d: Buffer) => (err += d.toString()));
      const exited = new Promise<number | null>((r) => first.once("exit", (code) => r(code)));
      const runId = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no judged trial:\n${out}\n${err}\n${logsOf(workspace)}`)), 120_000);
        first.stdout.on("data", () => {
          const m = /run (r[\w-]+) started/.exec(out);
          if (m && /t\d{3} \w+ -> /.test(out)) {
            clearTimeout(timer);
            resolve(m[1]!);
          }
        });
      });
      // A live run has no report yet; `report` renders the run so far.
      const live = await run("./research-agent", ["report", runId, "--workspace", workspace], { env, timeout: CLI_TIMEOUT_MS });
      expect(live.stdout, live.stderr).toContain("**Status:** running: still running: the report so far, after");
      const json = await run("./research-agent", ["report", runId, "--json", "--workspace", workspace], { env, timeout: CLI_TIMEOUT_MS });
      expect(JSON.parse(json.stdout), json.stderr).toMatchObject({ run_id: runId, outcome: { status: "running" } });
      process.kill(-first.pid!, "SIGINT");
      expect(await exited, `${out}\n${err}`).toBe(130);
      expect(err).not.toMatch(/Unhandled|DrainingConnectionError/);
      // The console is for people: the launcher's pino lines go to logs/launcher.log.
      expect(err).not.toMatch(/"level":\d+/);
      // The agents are in a group of their own: the launcher stops them, the Ctrl-C does not.
      expect(out).not.toContain("exited; restarted");
      expect(out).toContain(`status: interrupted after`);
      const report = unwrapped(readFileSync(join(workspace, "runs", runId, "report.md"), "utf8"));
      expect(report).toContain("**Status:** interrupted: interrupted by SIGINT after");
      expect(report).toContain(`launch --resume ${runId} continues it`);
      // Every process the launch started is gone, its nats-server included.
      const { nats_pid } = JSON.parse(readFileSync(join(workspace, "swarm.json"), "utf8")) as { nats_pid: number };
      expect(() => process.kill(nats_pid, 0)).toThrow();
      expect(processesOf(workspace)).toEqual([]);

      // With no swarm up, the workspace still lists the run, as interrupted.
      const listed = await run("./research-agent", ["runs", "--workspace", workspace, "--json"], { env, timeout: CLI_TIMEOUT_MS });
      expect(JSON.parse(listed.stdout)).toMatchObject([{ run_id: runId, status: "interrupted" }]);
      // Listed a while after the interrupt, with the run time its report states, written alike.
      const stated = (JSON.parse(readFileSync(join(workspace, "runs", runId, "report.json"), "utf8")) as { outcome: { seconds: number } }).outcome.seconds;
      expect(JSON.parse(listed.stdout)[0].seconds).toBe(stated);
      const line = (await run("./research-agent", ["runs", "--workspace", workspace], { env, timeout: CLI_TIMEOUT_MS })).stdout;
      expect(line).toContain(` ${duration(stated)} `);
      expect(report).toContain(`run time: ${duration(stated)}.`);

      // A new total budget of live time: the time the run was down is not spent from it.
      const second = await run("./research-agent", ["launch", "--resume", runId, "--workspace", workspace, "--json", "--time-budget", "75s"], { env, timeout: 300_000 });
      const summary = (await summaryOf(second, workspace, runId)) as { run_id: string; status: string; trials: number };
      // watch replays the finished run from the workspace, start to end.
      const replay = await run("./research-agent", ["watch", runId, "--workspace", workspace], { env, timeout: CLI_TIMEOUT_MS });
      expect(replay.status, replay.stderr).toBe(0);
      expect(replay.stdout).toContain(`${runId} run ${runId} started`);
      expect(replay.stdout).toMatch(new RegExp(`${runId} run finished: ${summary.status}`));
      expect(summary.run_id).toBe(runId);
      // However it ends (goal, time budget, plateau), it ends: the resumed run is not interrupted.
      expect(["goal_achieved", "budget_exhausted", "stopped"]).toContain(summary.status);
      const resumed = unwrapped(readFileSync(join(workspace, "runs", runId, "report.md"), "utf8"));
      expect(resumed).not.toContain("interrupted by SIGINT");
      expect(resumed).toMatch(/- Interrupted, then resumed at [\d.]+ s of live time after [\d.]+ (s|min) down; the time budget became 75\.0 s\./);
    } finally {
      cleanUp(workspace);
    }
  }, 600_000);
});

describe("a launch stopped while its swarm starts", () => {
  it("stops what it started and exits with the signal's code (SIGTERM to the launcher alone, as kill sends it)", async () => {
    const workspace = mkdtempSync(join(tmpdir(), "start-signal-test-"));
    try {
      const launch = spawn("./research-agent", ["launch", "--goal", "digits: reach 99% validation accuracy", "--time-budget", "2m", "--no-research", "--workspace", workspace], {
        env,
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      launch.stdout.on("data", (d: Buffer) => (out += d.toString()));
      launch.stderr.on("data", (d: Buffer) => (out += d.toString()));
      const exited = new Promise<number | null>((r) => launch.once("exit", (code) => r(code)));
      // The nats-server is up and the runner starting (its log exists), its workers not yet ready:
      // the launcher is still inside the swarm's start.
      const runnerLog = join(workspace, "logs", "gpu-runner.log");
      for (let i = 0; i < 1200 && !existsSync(runnerLog); i++) await new Promise((r) => setTimeout(r, 50));
      expect(existsSync(runnerLog), out).toBe(true);
      expect(out).not.toContain("runner:");
      launch.kill("SIGTERM");
      expect(await exited, out).toBe(143);
      expect(out).toContain("stopped by SIGTERM while the swarm started");
      expect(processesOf(workspace)).toEqual([]);
    } finally {
      // A failed test must not leave them either: the swarm wrote no swarm.json for cleanUp to read.
      for (const l of processesOf(workspace)) process.kill(Number(l.trim().split(" ")[0]), "SIGKILL");
      cleanUp(workspace);
    }
  }, 180_000);
});
