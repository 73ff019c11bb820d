/** Small dataset files in the real on-disk formats, generated once per machine by test/fixtures/make_datasets.py. */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { gunzipSync, gzipSync } from "node:zlib";
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
  try {
    renameSync(partial, dir);
  } catch (err) {
    // Another test file made the same files meanwhile (its rename came first): theirs serve both.
    if ((err as NodeJS.ErrnoException).code !== "ENOTEMPTY" && (err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    rmSync(partial, { recursive: true, force: true });
  }
  return dir;
}

/** Where Debian's dataset-fashion-mnist puts Fashion-MNIST (the runner's default). */
const FASHION_DIR = "/usr/share/datasets/fashion-mnist";

/**
 * The first `train` and `test` examples of the real Fashion-MNIST as idx files in a folder of
 * their own (once per machine): a run on the real data small enough for a test's minutes.
 */
export function fashionSlice(train: number, test: number): string {
  const dir = join(tmpdir(), `research-swarm-fashion-${train}-${test}`);
  if (existsSync(dir)) return dir;
  const partial = `${dir}.partial-${process.pid}`;
  mkdirSync(partial, { recursive: true });
  for (const [prefix, n] of [["train", train], ["t10k", test]] as const) {
    for (const [kind, header, size] of [["images-idx3-ubyte", 16, 28 * 28], ["labels-idx1-ubyte", 8, 1]] as const) {
      const whole = gunzipSync(readFileSync(join(FASHION_DIR, `${prefix}-${kind}.gz`)));
      const out = Buffer.from(whole.subarray(0, header + n * size));
      out.writeUInt32BE(n, 4);
      writeFileSync(join(partial, `${prefix}-${kind}.gz`), gzipSync(out));
    }
  }
  renameSync(partial, dir);
  return dir;
}
