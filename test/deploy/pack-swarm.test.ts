/**
 * The whole swarm packed for an offline GPU host (scripts/pack-swarm.sh): its
 * parts, extracted into one clean folder outside the repository, take a goal
 * to its end with the packed Node (a `node` on PATH refuses to run), the
 * packed nats-server and LanceDB, and no node_modules, tsx or sources of the
 * repository. --fast packs with xz -0: the parts are larger than at the real
 * levels and still held to the 60 MB limit.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";

import { run } from "../helpers/run.js";

const ROOT = resolve(import.meta.dirname, "../..");

const FASHION = "/usr/share/datasets/fashion-mnist";
const PARTS = ["swarm-app.tar.xz", "swarm-lancedb.tar.xz", "swarm-node.tar.xz", "swarm-tools.tar.xz", ...(existsSync(FASHION) ? ["swarm-data-fashion-mnist.tar.xz"] : [])];
let dir: string;
let pack: string;
let env: Record<string, string>;
let nodeCalls: string;
/** What tar extracted from each part, file by file. */
const extracted = new Map<string, string>();

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "pack-swarm-test-"));
  const packed = await run("bash", [join(ROOT, "scripts/pack-swarm.sh"), "--out", join(dir, "parts"), "--fast", ...(existsSync(FASHION) ? ["--dataset", "fashion-mnist"] : [])], {
    // About 40 s when idle; more than 240 s at a load of 20 on 2 cores (bundling, then xz).
    timeout: 600_000,
  });
  expect(packed.status, packed.stderr).toBe(0);
  pack = join(dir, "swarm");
  mkdirSync(pack);
  // In reverse order: no part may depend on another having been extracted first.
  for (const part of [...PARTS].reverse()) {
    // Listed as it is extracted: decompressing each part a second time to list it cost 15 s of CPU.
    const untar = await run("tar", ["-C", pack, "-xvf", join(dir, "parts", part)], { timeout: 120_000 });
    expect(untar.status, untar.stderr).toBe(0);
    extracted.set(part, untar.stdout);
  }
  // The host's node, if it had one, would fail: every process must run the packed one.
  const fake = join(dir, "fake-bin");
  mkdirSync(fake);
  nodeCalls = join(dir, "node-calls");
  writeFileSync(join(fake, "node"), `#!/bin/sh\necho "$@" >> ${nodeCalls}\necho "node: not on this host" >&2\nexit 1\n`, { mode: 0o755 });
  env = { PATH: `${fake}:/usr/bin:/bin`, HOME: dir, RUNNER_PYTHON: join(ROOT, ".venv", "bin", "python"), LOG_LEVEL: "warn" };
}, 900_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

it("makes parts of at most 60 MB, each its own archive, listed in the manifest", () => {
  expect(readdirSync(join(dir, "parts")).filter((f) => f.endsWith(".tar.xz")).sort()).toEqual([...PARTS].sort());
  const manifest = readFileSync(join(dir, "parts", "MANIFEST.txt"), "utf8");
  const listed = (part: string) => manifest.split(/^## /m).find((s) => s.startsWith(`${part} `))?.trim().split("\n").slice(1) ?? [];
  for (const part of PARTS) {
    expect(statSync(join(dir, "parts", part)).size, part).toBeLessThanOrEqual(60_000_000);
    expect(extracted.get(part)!.trim().split("\n").sort(), part).toEqual(listed(part).sort());
  }
  const holds = (part: string, file: string) => listed(part).includes(file);
  expect(holds("swarm-node.tar.xz", "bin/node")).toBe(true);
  expect(holds("swarm-lancedb.tar.xz", "node_modules/@lancedb/lancedb-linux-x64-gnu/lancedb.linux-x64-gnu.node")).toBe(true);
  expect(holds("swarm-app.tar.xz", "cli/research-agent.mjs")).toBe(true);
  expect(holds("swarm-tools.tar.xz", "bin/nats-server")).toBe(true);
});

it("holds no source and no node_modules but LanceDB's, and none is reachable from it", () => {
  expect(existsSync(join(pack, "node_modules", "tsx"))).toBe(false);
  expect(existsSync(join(pack, "cli", "research-agent.ts"))).toBe(false);
  for (let d = dirname(pack); d !== "/"; d = dirname(d)) expect(existsSync(join(d, "node_modules")), d).toBe(false);
  expect(existsSync("/node_modules")).toBe(false);
});

it("answers --help from the pack", async () => {
  const r = await run(join(pack, "research-agent"), ["--help"], { cwd: dir, env, timeout: 120_000 });
  expect(r.status, r.stderr).toBe(0);
  expect(r.stdout).toContain("research-agent launch --goal");
});

it("takes a digits goal to its end from the pack", async () => {
  const workspace = join(dir, "workspace");
  const r = await run(join(pack, "research-agent"), ["launch", "--goal", "digits: reach 90% validation accuracy", "--time-budget", "2m", "--workspace", workspace, "--json"], { cwd: dir, env, timeout: 300_000 });
  const logs = existsSync(join(workspace, "logs")) ? readdirSync(join(workspace, "logs")).map((f) => `--- ${f}\n${readFileSync(join(workspace, "logs", f), "utf8").slice(-1500)}`).join("\n") : "";
  expect(r.status, `${r.stderr}\n${logs}`).toBe(0);
  const summary = JSON.parse(r.stdout.trim().split("\n").pop()!) as { status: string; best_trial?: { trial_id: string; val_accuracy: number; test_accuracy: number }; report: string };
  expect(summary.status).toBe("goal_achieved");
  expect(summary.best_trial?.val_accuracy).toBeGreaterThanOrEqual(0.9);
  expect(summary.best_trial?.test_accuracy).toBeGreaterThan(0);
  // After the title a trial goes by its number in the run.
  expect(readFileSync(summary.report, "utf8")).toContain(`**Best trial:** \`${summary.best_trial!.trial_id.slice(summary.best_trial!.trial_id.lastIndexOf("-") + 1)}\``);
  expect(existsSync(nodeCalls), existsSync(nodeCalls) ? readFileSync(nodeCalls, "utf8") : "").toBe(false);
}, 360_000);

it.skipIf(!existsSync(FASHION))("finds the packed Fashion-MNIST at datasets/fashion-mnist", async () => {
  const model = join(dir, "mlp.py");
  writeFileSync(model, "import torch.nn as nn\n\nclass Mlp(nn.Module):\n    def __init__(self, num_classes=10):\n        super().__init__()\n        self.net = nn.Sequential(nn.Flatten(), nn.Linear(784, num_classes))\n\n    def forward(self, x):\n        return self.net(x)\n");
  const r = await run(
    join(pack, "quick-evaluator"),
    ["--model", model, "--class", "Mlp", "--dataset", "fashion-mnist", "--data-dir", join(pack, "datasets", "fashion-mnist"), "--subset", "2000", "--epochs", "1", "--seeds", "1", "--json"],
    { cwd: dir, env, timeout: 180_000 },
  );
  expect(r.status, r.stderr).toBe(0);
  expect((JSON.parse(r.stdout) as { aggregated: { val_accuracy: { mean: number } } }).aggregated.val_accuracy.mean).toBeGreaterThan(0.5);
}, 200_000);

it("runs its bubblewrap and openssl with their packed libraries", () => {
  const out = execFileSync(join(pack, "bin", "bwrap"), ["--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin", "--unshare-net", "--proc", "/proc", "--dev", "/dev", "/usr/bin/echo", "sandboxed"], { encoding: "utf8" });
  expect(out.trim()).toBe("sandboxed");
  // As a launch makes its credentials (core/secrets.ts), on a host with no openssl of its own.
  const work = mkdtempSync(join(dir, "openssl-"));
  execFileSync(join(pack, "bin", "openssl"), ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "key.pem", "-out", "ca.pem", "-days", "1", "-subj", "/CN=pack test"], {
    cwd: work,
    env: { PATH: "/usr/bin:/bin" },
    stdio: "pipe",
  });
  expect(readFileSync(join(work, "ca.pem"), "utf8")).toContain("BEGIN CERTIFICATE");
});
