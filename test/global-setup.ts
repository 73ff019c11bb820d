/**
 * Before any test: the bundles the CLI and the swarm's processes run
 * (deploy/build.ts) are current, as the README's commands leave them, so a test
 * that starts a process runs what a user's launch runs, and none sees set-up's
 * build message on its stderr.
 *
 * Then the suite's own TMPDIR, which every test worker and every process a test
 * starts inherits, removed when the suite ends: what lands there goes with the
 * suite (the directory LanceDB keeps per in-process connection, a killed
 * process's scratch, a test's files after a failed assertion skipped its
 * clean-up), not into the machine's /tmp. A suite that was itself killed leaves
 * it behind for the next suite to remove (ownTempDir).
 */
import { execFileSync } from "node:child_process";
import { chmodSync, rmSync } from "node:fs";
import { ownTempDir } from "../core/process.js";

export default function setup(): () => void {
  execFileSync("bash", ["scripts/setup.sh"], { env: { ...process.env, SETUP_QUIET: "1" }, stdio: "inherit" });
  const dir = ownTempDir("research-agent-suite");
  // As /tmp is: a sandboxed trial runs as another user and must reach what a test puts here.
  chmodSync(dir, 0o1777);
  process.env.TMPDIR = dir;
  return () => rmSync(dir, { recursive: true, force: true });
}
