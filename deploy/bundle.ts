/**
 * Every process's entry as one ESM bundle, `<entry>.mjs`, run by plain Node: for the
 * packed swarm (deploy/pack.ts) and for this checkout (deploy/build.ts, kept in
 * dist/entries/ by scripts/setup.sh). A bundle starts in a quarter of the CPU time
 * tsx takes to load the same modules from source (0.4 against 1.6 CPU-s for the
 * agents' runtime), and a launch starts eight processes.
 *
 * A bundle keeps the repository's layout for every file read at run time, so a
 * module finds its assets where its source would: each project module's
 * `import.meta.url`, `.dirname` and `.filename` are rewritten to the place of
 * its source file relative to the bundle it ends up in (in a bundle they would
 * all be the bundle's own).
 */
import { build, type Plugin } from "esbuild";
import { readFileSync } from "node:fs";
import { basename, dirname, join, relative, sep } from "node:path";
import { REPO_ROOT as ROOT } from "./entries.js";
import { ROLES } from "./swarm.js";

export { ROOT };

/** What runs as a process: the CLIs, what the launcher supervises (deploy/swarm.ts), and the runner benchmarks a GPU host is checked with. */
export const ENTRIES = [
  "cli/research-agent.ts",
  "cli/quick-evaluator.ts",
  "gpu-runner/main.ts",
  "lineage-store/main.ts",
  ...ROLES.map((role) => `agents/${role}/main.ts`),
  "bench/runner-bench.ts",
  "bench/seeds-bench.ts",
];

/** Left out of the bundles: shipped in node_modules/, or (esbuild) never loaded in the pack (dashboard/build.ts). */
export const EXTERNAL = ["@lancedb/lancedb", "apache-arrow", "esbuild"];
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
          throw new Error(`${relative(ROOT, file)}: ${whole} has no equivalent in a bundle (deploy/bundle.ts maps url, filename and dirname)`);
        });
        if (replaced.includes("__packFileURLToPath")) {
          text = `import { fileURLToPath as __packFileURLToPath } from "node:url";\nimport { dirname as __packDirname } from "node:path";\n${replaced}`;
        } else text = replaced;
        return { contents: text, loader: file.endsWith(".tsx") ? "tsx" : "ts" };
      });
    },
  };
}

/**
 * Bundles `entry` to `<out>/<entry>.mjs`; `packed`: for the pack, where PACKED
 * (core/packed.ts) is true. Returns the files it was built from, relative to the repository.
 */
export async function bundleEntry(entry: string, out: string, packed: boolean): Promise<string[]> {
  const outfile = join(out, entry.replace(/\.ts$/, ".mjs"));
  const { metafile } = await build({
    entryPoints: [join(ROOT, entry)],
    // What an entry imports lazily (the CLI's verbs) in chunks beside it, loaded when imported:
    // one bundle of every verb took as long to parse as tsx took to load --help's modules.
    outdir: dirname(outfile),
    entryNames: "[name]",
    chunkNames: `${basename(outfile, ".mjs")}-[hash]`,
    outExtension: { ".js": ".mjs" },
    splitting: true,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    external: EXTERNAL,
    define: packed ? { __RESEARCH_PACKED__: "true" } : {},
    // Bundled CommonJS packages call require(); an ES module has none of its own.
    banner: { js: "import { createRequire as __packCreateRequire } from 'node:module'; const require = __packCreateRequire(import.meta.url);" },
    // The pack has the repository's layout, wherever it is extracted; a checkout's bundle
    // reads its sources' files where they are.
    plugins: [sourceMeta(packed ? join(ROOT, entry) : outfile)],
    metafile: true,
    legalComments: "none",
    logLevel: "warning",
  });
  return Object.keys(metafile!.inputs);
}
