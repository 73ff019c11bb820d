/**
 * Builds this checkout's bundles into dist/entries/ (deploy/entries.ts says
 * when one is current). scripts/setup.sh runs it when a source is newer than
 * the last build, so the CLI and every process a launch starts run as plain
 * Node. The new bundles are written beside the old and swapped in at the end:
 * a process starting meanwhile runs the old ones or, in the moment between,
 * its source through tsx.
 *
 *   node --import tsx deploy/build.ts
 */
import { mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { bundleEntry, ENTRIES } from "./bundle.js";
import { BUILT_FROM_FILE, DEV_BUNDLES, type BuiltFrom } from "./entries.js";

// Beside dist/entries, at the same depth: each bundle's paths to its sources stay right after the swap.
const next = `${DEV_BUNDLES}.next-${process.pid}`;
rmSync(next, { recursive: true, force: true });
mkdirSync(next, { recursive: true });
const builtFrom: BuiltFrom = {};
await Promise.all(
  ENTRIES.map(async (entry) => {
    const startedMs = Date.now();
    const inputs = (await bundleEntry(entry, next, false)).filter((f) => !f.startsWith("node_modules/"));
    // What it bundled from node_modules changes with the lock file.
    builtFrom[entry] = { startedMs, inputs: [...inputs, "package-lock.json"] };
  }),
);
writeFileSync(join(next, BUILT_FROM_FILE), JSON.stringify(builtFrom));
rmSync(DEV_BUNDLES, { recursive: true, force: true });
renameSync(next, DEV_BUNDLES);
