/**
 * The sandbox with a Python outside /usr, as GPU hosts have it (a venv under
 * /opt). On an H100 every sandboxed trial failed at its first lazy import:
 * bubblewrap created the venv's missing ancestors with mode 0700, so the
 * trial's process (uid 65534) could not reach what the worker (root) had
 * imported already. Here a venv under /tmp (which the sandbox replaces with
 * a tmpfs) holds a module only the trial imports.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../../core/logger.js";
import { connectRunner, evaluateToResult, type RunnerClient } from "../../gpu-runner/client.js";
import { startRunner, type RunningRunner } from "../../gpu-runner/server.js";
import { datasetFixtures } from "../helpers/fixtures.js";

const CHILD_ONLY_MODEL = `
import torch.nn as nn

class ChildOnly(nn.Module):
    def __init__(self):
        super().__init__()
        import childonly  # in the venv's own site-packages, never imported by the worker
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(64, childonly.WIDTH), nn.ReLU(), nn.Linear(childonly.WIDTH, 10))

    def forward(self, x):
        return self.net(x)
`;

let dir: string;
let runner: RunningRunner;
let client: RunnerClient;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "prefix-test-"));
  const venv = join(dir, "deep", "venv");
  execFileSync("/usr/bin/python3", ["-m", "venv", "--system-site-packages", "--without-pip", venv]);
  const python = join(venv, "bin", "python3");
  const site = execFileSync(python, ["-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], { encoding: "utf8" }).trim();
  writeFileSync(join(site, "childonly.py"), "WIDTH = 32\n");
  const logger = createLogger("test-prefix");
  logger.level = "warn";
  runner = await startRunner({ slots: 1, python, dataRoots: [datasetFixtures()], logger });
  client = connectRunner(runner.address);
});

afterAll(async () => {
  client?.close();
  await runner?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

it("a trial imports from a venv outside /usr inside the sandbox", async () => {
  const health = await client.health({});
  expect(health.device?.sandboxed).toBe(true);
  // A venv over Debian's python: the torch 1.13 fallback, end to end.
  expect(health.device?.torchVersion).toMatch(/^1\.13/);
  const result = await evaluateToResult(client, {
    trialId: "t-prefix",
    model: { code: CHILD_ONLY_MODEL, className: "ChildOnly" },
    dataset: { name: "digits", subset: 600 },
    recipe: { epochs: 5, batchSize: 32, lr: 0.01 },
    seeds: 1,
    budget: { timeBudgetS: 60 },
  });
  expect(result.aggregated.val_accuracy?.mean).toBeGreaterThan(0.3);
});
