/**
 * Before any test: the bundles the CLI and the swarm's processes run
 * (deploy/build.ts) are current, as the README's commands leave them, so a test
 * that starts a process runs what a user's launch runs, and none sees set-up's
 * build message on its stderr.
 */
import { execFileSync } from "node:child_process";

export default function setup(): void {
  execFileSync("bash", ["scripts/setup.sh"], { env: { ...process.env, SETUP_QUIET: "1" }, stdio: "inherit" });
}
