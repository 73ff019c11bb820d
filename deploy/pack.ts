/**
 * The JavaScript of the packed swarm (scripts/pack-swarm.sh does the rest):
 *
 * - every process's entry as one ESM bundle at its own path, `<entry>.mjs`
 *   (cli/research-agent.mjs, agents/judge/main.mjs, ...), run by plain Node;
 * - the dashboard's app, bundled now into dashboard/web-dist/ (dashboard/build.ts);
 * - node_modules/ with only what cannot be bundled: LanceDB (a native module,
 *   loaded by a computed require) and apache-arrow (whose classes LanceDB must
 *   share with the bundles), with the packages they need.
 *
 * The pack keeps the repository's layout for every file read at run time, so a
 * bundle finds its assets where its source would (deploy/bundle.ts).
 *
 *   node --import tsx deploy/pack.ts OUT
 */
import { cpSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { bundleWeb } from "../dashboard/build.js";
import { ResearchError } from "../core/failure.js";
import { bundleEntry, ENTRIES, EXTERNAL, ROOT } from "./bundle.js";
import { readJsonFile } from "../core/json.js";
import { z } from "zod";

/** What the pack reads of a package's manifest: its name and what it needs. */
const PackageSchema = z.object({ name: z.string(), dependencies: z.record(z.string(), z.string()).optional(), optionalDependencies: z.record(z.string(), z.string()).optional() });

/** Where Node finds `name` from the package in `from` (a folder under node_modules). */
function resolvePackage(name: string, from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, "node_modules", name);
    if (existsSync(join(candidate, "package.json"))) return candidate;
    if (dir === ROOT) throw new ResearchError("invalid_config", `pack: ${name}, needed by ${relative(ROOT, from)}, is not installed (npm install)`);
  }
}

/**
 * The externals with everything they load: their dependencies, recursively, and
 * the native builds among LanceDB's optional ones that are installed here (this
 * platform's). Other optional dependencies (an old openai, transformers) serve
 * embedding functions the swarm does not use, and type packages nothing at run time.
 */
function externalPackages(): string[] {
  const found = new Set<string>();
  const visit = (dir: string) => {
    if (found.has(dir)) return;
    found.add(dir);
    const pkg = readJsonFile(join(dir, "package.json"), PackageSchema);
    if (!pkg) throw new ResearchError("invalid_config", `${join(dir, "package.json")} is not a package manifest`);
    const native = Object.keys(pkg.optionalDependencies ?? {}).filter((d) => d.startsWith(`${pkg.name}-`) && existsSync(join(ROOT, "node_modules", d)));
    for (const dep of [...Object.keys(pkg.dependencies ?? {}).filter((d) => !d.startsWith("@types/")), ...native]) visit(resolvePackage(dep, dir));
  };
  for (const name of EXTERNAL.filter((e) => e !== "esbuild")) visit(resolvePackage(name, ROOT));
  return [...found].map((dir) => relative(ROOT, dir)).sort();
}

async function main(out: string): Promise<void> {
  for (const entry of ENTRIES) await bundleEntry(entry, out, true);
  const web = join(out, "dashboard", "web-dist");
  mkdirSync(web, { recursive: true });
  for (const { name, body } of await bundleWeb()) writeFileSync(join(web, name), body);
  for (const pkg of externalPackages()) {
    cpSync(join(ROOT, pkg), join(out, pkg), { recursive: true, filter: (src) => !src.slice(join(ROOT, pkg).length).includes(`${sep}node_modules`) });
  }
}

const out = process.argv[2];
if (!out) {
  process.stderr.write("usage: node --import tsx deploy/pack.ts OUT\n");
  process.exit(1);
}
await main(resolve(out));
