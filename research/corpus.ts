/**
 * The offline corpus: well-known techniques for small-model classification,
 * summarised in our own words, each tied to the coder vocabulary so a
 * suggestion can say whether the pipeline can build it today.
 *
 * arxiv_id is set only where the identifier is certain; a few classics have
 * a stable publisher url instead, and some have neither (they still inform
 * suggestions but are not cited as sources).
 *
 * The entries live in corpus.jsonl, one per line, and are checked when this
 * module loads: a bad entry stops every process that reads the corpus, with
 * the line that broke it, rather than surfacing later as an odd suggestion.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { SURFACE } from "../core/enums.js";
import type { Modality } from "../core/goal-words.js";
import { ResearchError } from "../core/failure.js";

const SurfaceSchema = z.enum(SURFACE.names);
export type Surface = z.infer<typeof SurfaceSchema>;

const ModalitySchema = z.enum(["vision", "tabular", "text"]) satisfies z.ZodType<Modality>;

const CorpusEntrySchema = z.strictObject({
  id: z.string().min(1),
  /** Entries that describe one idea share a concept and collapse into one suggestion. */
  concept: z.string().min(1).optional(),
  /** Short name used as the suggestion name. */
  name: z.string().min(1),
  title: z.string().min(1),
  arxiv_id: z.string().min(1).optional(),
  url: z.url().optional(),
  year: z.number().int(),
  summary: z.string().min(1),
  /** How the planner would apply it, naming building blocks in backticks. */
  usage: z.string().min(1),
  modalities: z.array(ModalitySchema).min(1).readonly(),
  surface: SurfaceSchema,
  /** Retrieval keywords beyond the title and summary. */
  tags: z.array(z.string().min(1)).readonly(),
  building_blocks: z.array(z.string().min(1)).readonly(),
  /** How often the idea pays off for small classifiers (0..1); orders vague queries. Default 0.3. */
  prior: z.number().min(0).max(1).optional(),
});
export type CorpusEntry = z.infer<typeof CorpusEntrySchema>;

export function sourceUrl(entry: CorpusEntry): string | undefined {
  return entry.arxiv_id ? `https://arxiv.org/abs/${entry.arxiv_id}` : entry.url;
}

const CORPUS_FILE = fileURLToPath(new URL("./corpus.jsonl", import.meta.url));

/** Parses corpus.jsonl's text; `file` only names the source in errors. */
export function parseCorpus(text: string, file: string): CorpusEntry[] {
  const entries: CorpusEntry[] = [];
  const firstLine = new Map<string, number>();
  text.split("\n").forEach((line, i) => {
    const lineNo = i + 1;
    if (line.trim() === "") return;
    const fail: (problem: string) => never = (problem) => {
      throw new ResearchError("invalid_config", `${file}:${lineNo}: ${problem}`);
    };
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch (err) {
      fail(`not JSON (${(err as Error).message})`);
    }
    const parsed = CorpusEntrySchema.safeParse(json);
    if (!parsed.success) {
      fail(parsed.error.issues.map((issue) => `${issue.path.join(".") || "entry"}: ${issue.message}`).join("; "));
    }
    const entry = parsed.data;
    const seen = firstLine.get(entry.id);
    if (seen !== undefined) fail(`duplicate id "${entry.id}" (first on line ${seen})`);
    firstLine.set(entry.id, lineNo);
    entries.push(entry);
  });
  return entries;
}

export const CORPUS: readonly CorpusEntry[] = parseCorpus(readFileSync(CORPUS_FILE, "utf8"), CORPUS_FILE);
