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
 * module finds its assets where its source would: each project module's
 * `import.meta.url`, `.dirname` and `.filename` are rewritten to the place of
 * its source file relative to the bundle it ends up in (in a bundle they would
 * all be the bundle's own).
 *
 *   node --import tsx deploy/pack.ts OUT
 */
import { build, type Plugin } from "esbuild";
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { bundleWeb } from "../dashboard/build.js";
import { ROLES } from "./swarm.js";
import { ResearchError } from "../core/failure.js";

const ROOT = resolve(import.meta.dirname, "..");

/** What runs as a process: the CLIs, what the launcher supervises (deploy/swarm.ts), and the runner benchmark a GPU host is checked with. */
const ENTRIES = [
  "cli/research-agent.ts",
  "cli/quick-evaluator.ts",
  "gpu-runner/main.ts",
  "lineage-store/main.ts",
  ...ROLES.map((role) => `agents/${role}/main.ts`),
  "bench/runner-bench.ts",
];

/** Left out of the bundles: shipped in node_modules/, or (esbuild) never loaded in the pack (dashboard/build.ts). */
const EXTERNAL = ["@lancedb/lancedb", "apache-arrow", "esbuild"];
const META = /\bimport\.meta\b(?:\.(\w+))?/g;

/** `import.meta` of each project module as its source file's, for a bundle written to `bundle`. */
function sourceMeta(bundle: string): Plugin {
  return {
    name: "source-import-meta",
    setup(b) {
      b.onLoad({ filter: /\.tsx?$/ }, (args) => {
        const file = args.path;
        if (!file.startsWith(ROOT + sep) || file.includes(`${sep}node_modules${sep}`)) return undefined;
        let text = readFileSync(file, "utf8");
        if (!text.includes("import.meta")) return undefined;
        const from = JSON.stringify(relative(dirname(bundle), file).split(sep).join("/"));
        const url = `new URL(${from}, import.meta.url)`;
        const replaced = text.replace(META, (whole, field?: string) => {
          if (field === "url") return `${url}.href`;
          if (field === "filename") return `__packFileURLToPath(${url})`;
          if (field === "dirname") return `__packDirname(__packFileURLToPath(${url}))`;
          throw new Error(`${relative(ROOT, file)}: ${whole} has no equivalent in the pack (deploy/pack.ts maps url, filename and dirname)`);
        });
        if (replaced.includes("__packFileURLToPath")) {
          text = `import { fileURLToPath as __packFileURLToPath } from "node:url";\nimport { dirname as __packDirname } from "node:path";\n${replaced}`;
        } else text = replaced;
        return { contents: text, loader: file.endsWith(".tsx") ? "tsx" : "ts" };
      });
    },
  };
}

async function bundle(entry: string, out: string): Promise<void> {
  const outfile = join(out, entry.replace(/\.ts$/, ".mjs"));
  await build({
    entryPoints: [join(ROOT, entry)],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    external: EXTERNAL,
    define: { __RESEARCH_PACKED__: "true" },
    // Bundled CommonJS packages call require(); an ES module has none of its own.
    banner: { js: "import { createRequire as __packCreateRequire } from 'node:module'; const require = __packCreateRequire(import.meta.url);" },
    plugins: [sourceMeta(join(ROOT, entry))],
    legalComments: "none",
    logLevel: "warning",
  });
}

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
    const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { name: string; dependencies?: Record<string, string>; optionalDependencies?: Record<string, string> };
    const native = Object.keys(pkg.optionalDependencies ?? {}).filter((d) => d.startsWith(`${pkg.name}-`) && existsSync(join(ROOT, "node_modules", d)));
    for (const dep of [...Object.keys(pkg.dependencies ?? {}).filter((d) => !d.startsWith("@types/")), ...native]) visit(resolvePackage(dep, dir));
  };
  for (const name of EXTERNAL.filter((e) => e !== "esbuild")) visit(resolvePackage(name, ROOT));
  return [...found].map((dir) => relative(ROOT, dir)).sort();
}

async function main(out: string): Promise<void> {
  for (const entry of ENTRIES) await bundle(entry, out);
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
