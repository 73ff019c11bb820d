/**
 * The dashboard's single-page app (web/), bundled in memory when the
 * dashboard starts: one script and one stylesheet, nothing fetched from
 * elsewhere, so it works offline. Takes well under a second with esbuild.
 * The packed swarm has neither esbuild nor the app's sources: it reads the
 * files bundled when it was packed (deploy/pack.ts writes them to web-dist/).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { PACKED } from "../core/packed.js";
import type { WebAssets } from "./server.js";

const web = (file: string) => fileURLToPath(new URL(`./web/${file}`, import.meta.url));
/** The packed swarm's app, bundled by deploy/pack.ts. */
export const PREBUILT_WEB = fileURLToPath(new URL("./web-dist", import.meta.url));

const TYPES: Record<string, string> = { ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8" };

const INDEX = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>research swarm</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/assets/app.css">
</head>
<body>
<div id="app"></div>
<script type="module" src="/assets/app.js"></script>
</body>
</html>
`;

/** index.html and the files it loads, keyed by their name under /assets/ (as server.ts serves them). */
export async function buildWeb(): Promise<WebAssets> {
  const bodies = PACKED ? readdirSync(PREBUILT_WEB).map((name) => ({ name, body: readFileSync(join(PREBUILT_WEB, name)) })) : await bundleWeb();
  const files: WebAssets["files"] = {};
  for (const { name, body } of bodies) files[name] = { body, type: TYPES[name.slice(name.lastIndexOf("."))] ?? "application/octet-stream" };
  return { html: INDEX, files };
}

/** The app's script and stylesheet, bundled from web/. */
export async function bundleWeb(): Promise<{ name: string; body: Buffer }[]> {
  // Imported here, not at the top: the packed swarm's bundles leave esbuild out.
  const { build } = await import("esbuild");
  const result = await build({
    entryPoints: [
      { in: web("main.tsx"), out: "app" },
      { in: web("style.css"), out: "app" },
    ],
    outdir: "/assets",
    bundle: true,
    write: false,
    minify: true,
    format: "esm",
    target: "es2020",
    jsx: "automatic",
    jsxImportSource: "preact",
    legalComments: "none",
    logLevel: "silent",
  });
  return result.outputFiles.map((f) => ({ name: f.path.slice(f.path.lastIndexOf("/") + 1), body: Buffer.from(f.contents) }));
}
