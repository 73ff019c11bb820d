/**
 * How a process entry runs: in the packed swarm, its bundle; in a checkout, its
 * bundle in dist/entries/ (deploy/build.ts) while that is current, else the
 * TypeScript source through tsx. "Current": none of the files it was built from
 * changed after its build began, so an edited source never runs stale.
 */
import { statSync } from "node:fs";
import { z } from "zod";
import { readJsonFile } from "../core/json.js";
import { join, resolve } from "node:path";
import { PACKED } from "../core/packed.js";

/** The repository, or the folder the packed swarm was extracted to (its layout is the repository's). */
export const REPO_ROOT = resolve(import.meta.dirname, "..");
const TSX = join(REPO_ROOT, "node_modules", "tsx", "dist", "esm", "index.mjs");

/** A checkout's bundles, and the record of what each was built from (written by deploy/build.ts). */
const bundlesIn = (root: string) => join(root, "dist", "entries");
export const BUILT_FROM_FILE = "built-from.json";
export const DEV_BUNDLES = bundlesIn(REPO_ROOT);

/** Per entry: when its build began (ms since the epoch) and its input files, relative to the repository. */
const BuiltFromSchema = z.record(z.string(), z.object({ startedMs: z.number(), inputs: z.array(z.string()) }));
export type BuiltFrom = z.infer<typeof BuiltFromSchema>;

const bundleOf = (dir: string, entry: string) => join(dir, entry.replace(/\.ts$/, ".mjs"));

/** `entry`'s bundle under `root` (a checkout) when it is current, else undefined. */
export function currentBundle(entry: string, root = REPO_ROOT): string | undefined {
  const dir = bundlesIn(root);
  const built = readJsonFile(join(dir, BUILT_FROM_FILE), BuiltFromSchema)?.[entry];
  if (!built) return undefined;
  for (const input of built.inputs) {
    const stat = statSync(join(root, input), { throwIfNoEntry: false });
    if (!stat || stat.mtimeMs >= built.startedMs) return undefined;
  }
  return bundleOf(dir, entry);
}

/** Node's arguments for an entry (a .ts path relative to the repository). */
export function entryArgs(entry: string): string[] {
  if (PACKED) return [bundleOf(REPO_ROOT, entry)];
  const bundle = currentBundle(entry);
  return bundle ? [bundle] : ["--import", TSX, join(REPO_ROOT, entry)];
}
