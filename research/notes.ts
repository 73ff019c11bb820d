/**
 * A user's folder of papers and notes as corpus entries, so the researcher
 * can cite what the user already knows next to the built-in corpus
 * (`CorpusIndex.add(entries, "notes")`). Markdown and plain text are read
 * directly; PDFs only through `pdftotext` (poppler-utils) when it is
 * installed, since a PDF text layer needs a real parser.
 */
import { execFile } from "node:child_process";
import { constants } from "node:fs";
import { access, readdir, readFile, stat } from "node:fs/promises";
import { delimiter, extname, join, relative, sep } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { createLogger, type Logger } from "../core/logger.js";
import type { CorpusEntry } from "./corpus.js";
import { inferBlocks, inferModalities, inferSurface, inferTags } from "./keywords.js";

const run = promisify(execFile);

export interface LoadNotesOptions {
  /** Path of the pdftotext binary; null treats it as missing. Default: looked up on PATH. */
  pdftotext?: string | null;
  logger?: Logger;
}

export interface SkippedNote {
  /** Relative to the folder. */
  path: string;
  reason: string;
}

export interface LoadedNotes {
  entries: CorpusEntry[];
  skipped: SkippedNote[];
}

const TEXT_EXTENSIONS = new Set([".md", ".markdown", ".txt"]);
// Enough to reach two short paragraphs; a summary that runs on is cut at a sentence.
const SUMMARY_TARGET = 240;
const SUMMARY_MAX = 600;
// A paper's related-work section names every technique in the field; infer from its opening only.
const INFER_CHARS = 6000;
const PDF_TIMEOUT_MS = 30_000;

/** Reads every .md, .markdown, .txt and (with pdftotext) .pdf file under `folder`, in path order. */
export async function loadNotes(folder: string, options: LoadNotesOptions = {}): Promise<LoadedNotes> {
  const log = options.logger ?? createLogger("researcher");
  const pdftotext = options.pdftotext === undefined ? await findOnPath("pdftotext") : options.pdftotext;
  const entries: CorpusEntry[] = [];
  const unreadable: SkippedNote[] = [];
  const missingPdfTool: string[] = [];

  for (const file of await walk(folder)) {
    const rel = relative(folder, file).split(sep).join("/");
    const ext = extname(file).toLowerCase();
    let text: string;
    if (TEXT_EXTENSIONS.has(ext)) {
      text = await readFile(file, "utf8");
    } else if (ext === ".pdf") {
      if (!pdftotext) {
        missingPdfTool.push(rel);
        continue;
      }
      try {
        text = (await run(pdftotext, ["-q", "-enc", "UTF-8", file, "-"], { timeout: PDF_TIMEOUT_MS, maxBuffer: 64 << 20 })).stdout;
      } catch (err) {
        unreadable.push({ path: rel, reason: `pdftotext failed: ${(err as Error).message.split("\n")[0]}` });
        continue;
      }
    } else {
      continue;
    }
    const entry = noteEntry(rel, ext, text, (await stat(file)).mtime, file);
    if (entry) entries.push(entry);
    else unreadable.push({ path: rel, reason: "no text" });
  }

  const noTool = "pdftotext not found on PATH (Debian/Ubuntu: apt-get install poppler-utils)";
  if (missingPdfTool.length) log.warn({ folder, files: missingPdfTool }, `skipped ${missingPdfTool.length} PDF file(s): ${noTool}`);
  if (unreadable.length) log.warn({ folder, skipped: unreadable }, `skipped ${unreadable.length} unreadable note(s)`);
  return { entries, skipped: [...missingPdfTool.map((path) => ({ path, reason: noTool })), ...unreadable] };
}

/** The first executable called `name` in the PATH directories, as a shell would find it. */
export async function findOnPath(name: string, pathEnv = process.env.PATH ?? ""): Promise<string | null> {
  for (const dir of pathEnv.split(delimiter).filter(Boolean)) {
    const candidate = join(dir, name);
    try {
      await access(candidate, constants.X_OK);
      if ((await stat(candidate)).isFile()) return candidate;
    } catch {
      // Not in this directory.
    }
  }
  return null;
}

async function walk(dir: string): Promise<string[]> {
  const out: string[] = [];
  const items = (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name));
  for (const item of items) {
    // Hidden entries are tool state (.git, .obsidian), not notes. Symlinks are not followed, so cycles cannot occur.
    if (item.name.startsWith(".")) continue;
    const path = join(dir, item.name);
    if (item.isDirectory()) out.push(...(await walk(path)));
    else if (item.isFile()) out.push(path);
  }
  return out;
}

function noteEntry(rel: string, ext: string, raw: string, mtime: Date, file: string): CorpusEntry | undefined {
  const markdown = ext === ".md" || ext === ".markdown";
  const body = markdown ? raw.replace(/^---\r?\n[\s\S]*?\r?\n---\r?\n/, "").replace(/```[\s\S]*?```/g, "") : raw;
  const title = (markdown ? firstHeading(body) : undefined) ?? titleFromFileName(rel);
  const paragraphs = body
    // pdftotext breaks words at line ends ("excita-\ntion").
    .replace(/(\p{L})-\r?\n(\p{Ll})/gu, "$1$2")
    .split(/\r?\n\s*\r?\n/)
    .map((p) => (markdown ? plainMarkdown(p) : p))
    .map((p) => p.replace(/\s+/g, " ").trim())
    .filter((p) => p.length > 0 && p !== title);
  if (body.trim() === "") return undefined;

  const summary = summarise(paragraphs) || title;
  const sample = `${title}\n${paragraphs.join("\n")}`.slice(0, INFER_CHARS);
  const blocks = inferBlocks(sample);
  const dirs = rel.split("/").slice(0, -1);
  return {
    id: `notes/${rel}`,
    name: title,
    title,
    url: pathToFileURL(file).href,
    year: yearOf(`${title} ${summary}`) ?? mtime.getFullYear(),
    summary,
    usage: blocks.length
      ? `From the user's notes (${rel}); it mentions ${blocks.map((b) => `\`${b}\``).join(", ")}.`
      : `From the user's notes (${rel}).`,
    modalities: inferModalities(sample),
    surface: inferSurface(sample),
    // Folder names come first: they are the user's own filing of the note ("papers/attention").
    tags: [...new Set([...dirs, ...inferTags(sample)])],
    building_blocks: blocks,
  };
}

function firstHeading(markdown: string): string | undefined {
  const atx = /^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$/m.exec(markdown);
  const setext = /^(\S.*)\r?\n {0,3}(?:=+|-+)[ \t]*$/m.exec(markdown);
  const first = [atx, setext].filter((m) => m !== null).sort((a, b) => a.index - b.index)[0];
  return first ? plainMarkdown(first[1]!).trim() || undefined : undefined;
}

function titleFromFileName(rel: string): string {
  const base = rel.split("/").pop()!.replace(/\.[^.]+$/, "");
  return base.replace(/[-_]+/g, " ").trim() || base;
}

function plainMarkdown(text: string): string {
  return text
    .replace(/^ {0,3}#{1,6}[ \t]+.*$/gm, "")
    .replace(/^(\S.*)\r?\n {0,3}(?:=+|-+)[ \t]*$/gm, "")
    .replace(/<!--[\s\S]*?-->/g, "")
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/\[([^\]]+)\]\([^)]*\)/g, "$1")
    .replace(/^ {0,3}>[ \t]?/gm, "")
    .replace(/[*_`]+/g, "");
}

function summarise(paragraphs: readonly string[]): string {
  let out = "";
  for (const p of paragraphs) {
    if (out.length >= SUMMARY_TARGET) break;
    out = out ? `${out} ${p}` : p;
  }
  if (out.length <= SUMMARY_MAX) return out;
  const cut = out.slice(0, SUMMARY_MAX);
  const sentenceEnd = cut.search(/[.!?](?=[^.!?]*$)/);
  return sentenceEnd > SUMMARY_TARGET / 2 ? cut.slice(0, sentenceEnd + 1) : `${cut.replace(/\s+\S*$/, "")}…`;
}

/** The first plausible publication year in the text; "2048 units" is not one. */
function yearOf(text: string): number | undefined {
  const now = new Date().getFullYear();
  return [...text.matchAll(/\b(?:19[89]\d|20\d\d)\b/g)].map((m) => Number(m[0])).find((y) => y <= now);
}
