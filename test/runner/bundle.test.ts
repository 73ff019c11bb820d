/**
 * The runner packed for an offline GPU host (scripts/pack-runner.sh): the
 * bundle starts with its own Node, answers over gRPC and trains in the
 * sandbox; its bubblewrap runs with the libraries packed beside it.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { connectRunner, evaluateToResult, type RunnerClient } from "../../gpu-runner/client.js";
import { DIGITS_CNN } from "../helpers/models.js";
import { datasetFixtures } from "../helpers/fixtures.js";
import { run } from "../helpers/run.js";

const ROOT = resolve(import.meta.dirname, "../..");
let dir: string;
let proc: ChildProcess;
let client: RunnerClient;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "bundle-test-"));
  const packed = await run("bash", [join(ROOT, "scripts/pack-runner.sh"), "--out", join(dir, "runner"), "--no-archive"], { timeout: 240_000 });
  expect(packed.status, packed.stderr).toBe(0);
  // No node_modules, no tsx, no source: only what the bundle holds (and the host's Python).
  proc = spawn(join(dir, "runner", "gpu-runner"), ["--address", "127.0.0.1:0", "--slots", "1", "--data-root", datasetFixtures()], {
    cwd: dir,
    env: { PATH: "/usr/bin:/bin", RUNNER_PYTHON: "/usr/bin/python3", LOG_LEVEL: "warn" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const address = await new Promise<string>((ok, fail) => {
    createInterface({ input: proc.stdout! }).on("line", (l) => {
      const m = /^runner listening on (\S+)$/.exec(l);
      if (m) ok(m[1]!);
    });
    proc.once("exit", (code) => fail(new Error(`the bundled runner exited with ${code}`)));
  });
  client = connectRunner(address);
});

afterAll(async () => {
  client?.close();
  if (proc && proc.exitCode === null) {
    const exited = new Promise((ok) => proc.once("exit", ok));
    proc.kill("SIGTERM");
    await exited;
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

it("the bundled runner trains a model in its sandbox", async () => {
  expect((await client.health({})).device?.sandboxed).toBe(true);
  const result = await evaluateToResult(client, {
    trialId: "t-bundle",
    model: { code: DIGITS_CNN, className: "DigitsNet" },
    dataset: { name: "digits", subset: 600 },
    recipe: { epochs: 1, batchSize: 64 },
    seeds: 1,
    budget: { timeBudgetS: 60 },
  });
  expect(result.aggregated.val_accuracy?.mean).toBeGreaterThan(0.2);
});

it("the bundled bubblewrap runs with its packed libraries", () => {
  const out = execFileSync(join(dir, "runner", "bin", "bwrap"), ["--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin", "--unshare-net", "--proc", "/proc", "--dev", "/dev", "/usr/bin/echo", "sandboxed"], { encoding: "utf8" });
  expect(out.trim()).toBe("sandboxed");
});
