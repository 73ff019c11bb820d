/**
 * Deep research: the built-in corpus, the user's notes and live arXiv
 * results in one LanceDB index, retrieved by hybrid search, then ranked and
 * written up by the same code as the offline brief (research.ts), so every
 * suggestion still comes from a real entry and every source is citable.
 *
 * One DeepResearch per index directory: the index has one safe writer.
 */
import type { Brief } from "../core/brief.js";
import { ResearchError } from "../core/failure.js";
import { datasetModality } from "../core/goal-words.js";
import { createLogger, type Logger } from "../core/logger.js";
import { toCorpusEntries, type ArxivClient } from "./arxiv.js";
import { CORPUS, type CorpusEntry } from "./corpus.js";
import { CorpusIndex, type CorpusSource, type ExtraSource } from "./corpus-index.js";
import { loadNotes } from "./notes.js";
import { composeBrief, rankCorpus, STOPWORDS, type RankedEntry, type ResearchOptions, type RetrievedEntry } from "./research.js";

export interface DeepResearchOptions {
  /** The index directory. */
  dir: string;
  /** A folder of the user's papers and notes (see notes.ts). */
  notesDir?: string;
  /** Without it, research stays offline. */
  arxiv?: ArxivClient;
  logger?: Logger;
}

export type SourceCounts = Record<CorpusSource, number>;

interface Retrieval {
  /** Undefined when nothing was found: a query of stop words, say. The offline ranking then still orders the corpus by prior. */
  retrieved: RetrievedEntry[] | undefined;
  sourceOf: ReadonlyMap<string, CorpusSource>;
}

export interface DeepBrief {
  brief: Brief;
  /** The entries behind the brief's suggestions (cited or not), by where they came from. */
  sources: SourceCounts;
}

// Deep enough that off-modality and unbuildable entries still leave a full pool for the suggestions.
const SEARCH_K = 30;
const ARXIV_RESULTS = 10;
// arXiv ANDs every term, so a whole goal sentence matches nothing; a handful of content words finds papers.
const ARXIV_WORDS = 6;
// Goal words too: they say what to measure, which abstracts rarely repeat.
const ARXIV_STOPWORDS = new Set([...STOPWORDS, ..."val validation accuracy params parameters min minutes hours budget".split(" ")]);

const BUILTIN = new Map(CORPUS.map((e) => [e.id, e]));

/** The content words of a query for arXiv: no stop words, no numbers or budgets ("92%", "200k"), each once, in order. */
export function arxivQuery(query: string): string {
  const seen = new Set<string>();
  const words: string[] = [];
  for (const word of query.split(/[^\p{L}\p{N}-]+/u)) {
    const key = word.toLowerCase();
    if (!/^\p{L}/u.test(word) || ARXIV_STOPWORDS.has(key) || seen.has(key)) continue;
    seen.add(key);
    words.push(word);
  }
  return words.slice(0, ARXIV_WORDS).join(" ");
}

export class DeepResearch {
  // Entries added by this process. The index may also hold rows from an earlier process on the same directory; those are not returned, since their note may be gone and their text is not the entry.
  private readonly added = new Map<string, CorpusEntry>();

  private constructor(
    private readonly index: CorpusIndex,
    private readonly arxiv: ArxivClient | undefined,
    private readonly log: Logger,
  ) {}

  static async open(opts: DeepResearchOptions): Promise<DeepResearch> {
    const log = opts.logger ?? createLogger("researcher");
    const index = await CorpusIndex.open(opts.dir);
    const research = new DeepResearch(index, opts.arxiv, log);
    if (opts.notesDir) {
      try {
        const { entries } = await loadNotes(opts.notesDir, { logger: log });
        await research.add(entries, "notes");
        log.info({ notes: opts.notesDir, entries: entries.length }, "notes indexed");
      } catch (err) {
        await index.close();
        throw err;
      }
    }
    return research;
  }

  /** The candidates a brief for this query would be chosen from, one per concept, best first. */
  async rank(query: string, opts: { dataset?: string } = {}): Promise<RankedEntry[]> {
    return rankCorpus(query, opts, (await this.retrieve(query, opts.dataset)).retrieved);
  }

  async brief(query: string, opts: ResearchOptions = {}): Promise<DeepBrief> {
    const { retrieved, sourceOf } = await this.retrieve(query, opts.dataset);
    const { brief, drawnFrom } = composeBrief(query, opts, retrieved);
    const sources: SourceCounts = { builtin: 0, notes: 0, arxiv: 0 };
    for (const e of drawnFrom) sources[sourceOf.get(e.id) ?? "builtin"]++;
    return { brief, sources };
  }

  close(): Promise<void> {
    return this.index.close();
  }

  /** Candidates from every source, relevance relative to the best hit. */
  private async retrieve(query: string, dataset: string | undefined): Promise<Retrieval> {
    if (this.arxiv) await this.searchArxiv(query);
    const modality = dataset ? datasetModality(dataset) : undefined;
    const hits = await this.index.search(query, { k: SEARCH_K, modality });
    const top = hits[0]?.score ?? 0;
    const retrieved: RetrievedEntry[] = [];
    const sourceOf = new Map<string, CorpusSource>();
    for (const hit of hits) {
      const entry = hit.source === "builtin" ? BUILTIN.get(hit.id) : this.added.get(hit.id);
      if (!entry) continue;
      retrieved.push({ entry, relevance: hit.score / top });
      sourceOf.set(entry.id, hit.source);
    }
    return { retrieved: retrieved.length ? retrieved : undefined, sourceOf };
  }

  private async add(entries: readonly CorpusEntry[], source: ExtraSource): Promise<void> {
    await this.index.add(entries, source);
    for (const e of entries) this.added.set(e.id, e);
  }

  private async searchArxiv(query: string): Promise<void> {
    const words = arxivQuery(query);
    if (!words) return;
    let entries;
    try {
      ({ entries } = await this.arxiv!.search(words, { maxResults: ARXIV_RESULTS }));
    } catch (err) {
      const e = ResearchError.from(err);
      this.log.warn({ query: words, label: e.label, reason: e.reason, status: e.status, attempts: e.attempts, err: e.message }, "arXiv search failed; researching offline");
      return;
    }
    await this.add(toCorpusEntries(entries), "arxiv");
  }
}
