/** Small dataset files in the real on-disk formats, generated once per machine by test/fixtures/make_datasets.py. */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const SCRIPT = resolve("test/fixtures/make_datasets.py");

export function datasetFixtures(): string {
  const hash = createHash("sha256").update(readFileSync(SCRIPT)).digest("hex").slice(0, 12);
  const dir = join(tmpdir(), `research-swarm-fixtures-${hash}`);
  if (existsSync(dir)) return dir;
  const partial = `${dir}.partial-${process.pid}`;
  rmSync(partial, { recursive: true, force: true });
  execFileSync("/usr/bin/python3", [SCRIPT, partial], { stdio: "inherit" });
  renameSync(partial, dir);
  return dir;
}
