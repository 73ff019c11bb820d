/**
 * A live source for the researcher: the arXiv API (Atom over HTTP), with
 * the politeness arXiv asks for (one request every 3 s), bounded retries,
 * and an on-disk cache so repeated and offline runs stay reproducible.
 *
 * Share one ArxivClient per process: the rate limit is arXiv's per-caller
 * limit, but each client keeps its own clock, so two clients side by side
 * would together send requests faster than allowed. The disk cache, by
 * contrast, may be shared by any number of clients and processes.
 */
import { createHash } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { ResearchError } from "../core/failure.js";
import type { Modality } from "../core/goal-words.js";
import { CORPUS, type CorpusEntry } from "./corpus.js";
import { childOf, childrenOf, parseXml, type XmlElement } from "./xml.js";
import { inferBlocks, inferSurface, inferTags, mentionedModalities } from "./keywords.js";

export const ARXIV_API_URL = "https://export.arxiv.org/api/query";

const MAX_ATTEMPTS = 3;
// The API refuses slices larger than this.
const MAX_RESULTS_LIMIT = 2000;
const DAY_MS = 24 * 60 * 60 * 1000;

// Entries are validated on the way out of the cache too, so a file from an older layout is refetched, not trusted.
const ArxivEntrySchema = z.object({
  /** Versioned identifier, e.g. "1512.03385v1" or "hep-th/9901001v2". */
  id: z.string().min(1),
  /** The same without the version, as papers are cited. */
  arxivId: z.string().min(1),
  title: z.string().min(1),
  summary: z.string(),
  /** ISO 8601 timestamps as arXiv gives them. */
  published: z.string().min(1),
  updated: z.string().optional(),
  authors: z.array(z.string()),
  primaryCategory: z.string().optional(),
  /** Primary category first. */
  categories: z.array(z.string()),
  /** Versionless abs page. */
  url: z.string(),
  pdfUrl: z.string().optional(),
});
export type ArxivEntry = z.infer<typeof ArxivEntrySchema>;

const ArxivSearchResultSchema = z.object({
  /** Matches in the whole index, not just this page. */
  total: z.number().int().nonnegative(),
  entries: z.array(ArxivEntrySchema),
});
export type ArxivSearchResult = z.infer<typeof ArxivSearchResultSchema>;

const CacheFileSchema = z.object({ url: z.string(), fetched_at: z.string(), result: ArxivSearchResultSchema });
type CacheFile = z.infer<typeof CacheFileSchema>;

export type ArxivSortBy = "relevance" | "lastUpdatedDate" | "submittedDate";

export interface ArxivSearchOptions {
  maxResults?: number;
  start?: number;
  sortBy?: ArxivSortBy;
}

export interface ArxivClientOptions {
  baseUrl?: string;
  /** Without it nothing is cached. */
  cacheDir?: string;
  /** Older cache entries are refetched (default 7 days). */
  maxAgeMs?: number;
  /** Serve from the cache only, whatever its age; a miss fails with reason "offline". */
  offline?: boolean;
  /** Between the starts of two requests (default 3000, arXiv's stated limit). */
  minIntervalMs?: number;
  /** Per attempt, headers and body together (default 15000). */
  timeoutMs?: number;
  /** A Retry-After longer than this fails at once rather than stalling the run (default 60000). */
  maxRetryWaitMs?: number;
  fetch?: typeof globalThis.fetch;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

// ---------------------------------------------------------------------------
// Query building

const OPERATORS = new Set(["and", "or", "andnot"]);

function cleanWords(text: string): string {
  // arXiv's query parser reads punctuation as syntax ("-", ":", parentheses), so only letters and digits reach it.
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, " ")
    .trim();
}

/**
 * The search_query for free text: every term must match anywhere ("all:"),
 * quoted phrases stay phrases, and a hyphenated word is searched as the
 * phrase it spells ("squeeze-and-excitation").
 */
export function buildSearchQuery(query: string): string {
  const parts: string[] = [];
  for (const [, phrase, word] of query.matchAll(/"([^"]*)"|([^\s"]+)/g)) {
    const words = cleanWords(phrase ?? word ?? "");
    if (!words) continue;
    if (words.includes(" ")) parts.push(`all:"${words}"`);
    // The query is always an AND of terms, so a user's own operator words would only break the chain.
    else if (phrase !== undefined || !OPERATORS.has(words)) parts.push(`all:${words}`);
  }
  if (!parts.length) throw new TypeError(`arXiv query has no searchable words: ${JSON.stringify(query)}`);
  return parts.join(" AND ");
}

function searchUrl(baseUrl: string, query: string, opts: ArxivSearchOptions): string {
  const { maxResults = 10, start = 0, sortBy = "relevance" } = opts;
  if (!Number.isInteger(maxResults) || maxResults < 1 || maxResults > MAX_RESULTS_LIMIT) {
    throw new RangeError(`maxResults must be an integer in 1..${MAX_RESULTS_LIMIT}, got ${maxResults}`);
  }
  if (!Number.isInteger(start) || start < 0) throw new RangeError(`start must be a non-negative integer, got ${start}`);
  const params = new URLSearchParams({
    search_query: buildSearchQuery(query),
    start: String(start),
    max_results: String(maxResults),
    sortBy,
    sortOrder: "descending",
  });
  return `${baseUrl}?${params}`;
}

const ATOM = "http://www.w3.org/2005/Atom";
const OPENSEARCH = "http://a9.com/-/spec/opensearch/1.1/";
const ARXIV = "http://arxiv.org/schemas/atom";

function parseFail(message: string): ResearchError {
  return new ResearchError("crash", `arXiv response is not valid Atom: ${message}`, "", { reason: "invalid_output" });
}

/** Titles and abstracts arrive hard-wrapped and indented. */
function squash(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

function readFeed(xml: string): XmlElement {
  const root = parseXml(xml, parseFail);
  if (root.ns !== ATOM || root.local !== "feed") throw parseFail(`root element is <${root.local}> in "${root.ns}", not an Atom <feed>`);
  return root;
}

/** arXiv reports a rejected request as a feed whose one entry is an error, with any HTTP status. */
function apiErrorOf(feed: XmlElement): string | undefined {
  const entry = childrenOf(feed, ATOM, "entry").find((e) => /\/api\/errors\b/.test(childOf(e, ATOM, "id")?.text ?? ""));
  return entry && squash(childOf(entry, ATOM, "summary")?.text ?? childOf(entry, ATOM, "title")?.text ?? "unspecified error");
}

function parseEntry(entry: XmlElement, index: number): ArxivEntry {
  const field = (local: string): string => {
    const value = squash(childOf(entry, ATOM, local)?.text ?? "");
    if (!value) throw parseFail(`entry ${index} has no <${local}>`);
    return value;
  };
  const idUrl = field("id");
  const id = /arxiv\.org\/abs\/(.+)$/.exec(idUrl)?.[1];
  if (!id) throw parseFail(`entry ${index} has an id that is not an arXiv abs url: ${idUrl}`);
  const arxivId = id.replace(/v\d+$/, "");
  const primaryCategory = childOf(entry, ARXIV, "primary_category")?.attrs.get("term");
  const categories = [primaryCategory, ...childrenOf(entry, ATOM, "category").map((c) => c.attrs.get("term"))].filter((c): c is string => !!c);
  const pdfUrl = childrenOf(entry, ATOM, "link").find((l) => l.attrs.get("title") === "pdf")?.attrs.get("href");
  const updated = squash(childOf(entry, ATOM, "updated")?.text ?? "");
  return {
    id,
    arxivId,
    title: field("title"),
    summary: squash(childOf(entry, ATOM, "summary")?.text ?? ""),
    published: field("published"),
    ...(updated ? { updated } : {}),
    authors: childrenOf(entry, ATOM, "author")
      .map((a) => squash(childOf(a, ATOM, "name")?.text ?? ""))
      .filter(Boolean),
    ...(primaryCategory ? { primaryCategory } : {}),
    categories: [...new Set(categories)],
    // Versionless https, the form the shipped corpus cites, so the same paper from both sources is one source.
    url: `https://arxiv.org/abs/${arxivId}`,
    ...(pdfUrl ? { pdfUrl } : {}),
  };
}

/** Parses one page of an arXiv API response. Throws a ResearchError with reason "invalid_output" on anything else, "http" on an API error feed. */
export function parseArxivFeed(xml: string): ArxivSearchResult {
  const feed = readFeed(xml);
  const apiError = apiErrorOf(feed);
  if (apiError) throw new ResearchError("invalid_config", `arXiv API error: ${apiError}`, "", { reason: "http" });
  const totalText = childOf(feed, OPENSEARCH, "totalResults")?.text.trim() ?? "";
  if (!/^\d+$/.test(totalText)) throw parseFail(`opensearch:totalResults is ${totalText ? `"${totalText}"` : "missing"}`);
  return { total: Number(totalText), entries: childrenOf(feed, ATOM, "entry").map(parseEntry) };
}

// ---------------------------------------------------------------------------
// The client

function retryAfterMs(header: string | null, now: number): number | undefined {
  if (!header) return undefined;
  const value = header.trim();
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

function snippet(body: string): string {
  const text = squash(body.replace(/<[^>]*>/g, " "));
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

export class ArxivClient {
  private readonly baseUrl: string;
  private readonly cacheDir: string | undefined;
  private readonly maxAgeMs: number;
  private readonly offline: boolean;
  private readonly minIntervalMs: number;
  private readonly timeoutMs: number;
  private readonly maxRetryWaitMs: number;
  private readonly fetchFn: typeof globalThis.fetch;
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  private lastRequestAt = -Infinity;
  private queue: Promise<void> = Promise.resolve();
  // Identical concurrent searches share one request instead of spending two turns of the rate limit.
  private readonly inFlight = new Map<string, Promise<ArxivSearchResult>>();

  constructor(opts: ArxivClientOptions = {}) {
    if (opts.offline && !opts.cacheDir) throw new TypeError("ArxivClient: offline mode needs a cacheDir to serve from");
    this.baseUrl = opts.baseUrl ?? ARXIV_API_URL;
    this.cacheDir = opts.cacheDir;
    this.maxAgeMs = opts.maxAgeMs ?? 7 * DAY_MS;
    this.offline = opts.offline ?? false;
    this.minIntervalMs = opts.minIntervalMs ?? 3000;
    this.timeoutMs = opts.timeoutMs ?? 15_000;
    this.maxRetryWaitMs = opts.maxRetryWaitMs ?? 60_000;
    this.fetchFn = opts.fetch ?? globalThis.fetch;
    this.now = opts.now ?? Date.now;
    this.sleep = opts.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  /** The request URL a search would use; also its cache key. */
  searchUrl(query: string, opts: ArxivSearchOptions = {}): string {
    return searchUrl(this.baseUrl, query, opts);
  }

  async search(query: string, opts: ArxivSearchOptions = {}): Promise<ArxivSearchResult> {
    const url = this.searchUrl(query, opts);
    const cached = await this.readCache(url);
    // Offline, a stale answer beats none: the point is to replay what an earlier run saw.
    if (cached && (this.offline || this.now() - Date.parse(cached.fetched_at) <= this.maxAgeMs)) return cached.result;
    if (this.offline) {
      throw new ResearchError("invalid_config", `offline and nothing cached for ${url} (run once online to fill ${this.cacheDir})`, "", { reason: "offline" });
    }

    let pending = this.inFlight.get(url);
    if (!pending) {
      pending = this.fetchAndStore(url, opts.start ?? 0).finally(() => this.inFlight.delete(url));
      this.inFlight.set(url, pending);
    }
    return pending;
  }

  private async fetchAndStore(url: string, start: number): Promise<ArxivSearchResult> {
    const result = await this.request(url, start);
    await this.writeCache(url, result);
    return result;
  }

  private async request(url: string, start: number): Promise<ArxivSearchResult> {
    for (let attempt = 1; ; attempt++) {
      await this.turn();
      try {
        return await this.fetchOnce(url, start);
      } catch (err) {
        const failure = ResearchError.from(err);
        failure.attempts = attempt;
        const wait = failure.retryAfterMs ?? this.minIntervalMs * 2 ** (attempt - 1);
        if (!failure.retryable || attempt >= MAX_ATTEMPTS || wait > this.maxRetryWaitMs) throw failure;
        await this.sleep(wait);
      }
    }
  }

  /** Waits until this client may start its next request; calls queue up in order. */
  private turn(): Promise<void> {
    const mine = this.queue.then(async () => {
      const wait = this.lastRequestAt + this.minIntervalMs - this.now();
      if (wait > 0) await this.sleep(wait);
      this.lastRequestAt = this.now();
    });
    // A rejected injected sleep must not stall every later caller.
    this.queue = mine.catch(() => undefined);
    return mine;
  }

  private async fetchOnce(url: string, start: number): Promise<ArxivSearchResult> {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.timeoutMs);
    const unreachable = (err: unknown): ResearchError =>
      controller.signal.aborted
        ? new ResearchError("runner_unavailable", `arXiv did not answer within ${this.timeoutMs} ms: ${url}`, "", { reason: "timeout", cause: err })
        : new ResearchError("runner_unavailable", `could not reach arXiv (${(err as Error).message}): ${url}`, "", { reason: "network", cause: err });
    try {
      let response: Response;
      let body: string;
      try {
        response = await this.fetchFn(url, { signal: controller.signal });
        body = await response.text();
      } catch (err) {
        throw unreachable(err);
      }
      if (!response.ok) {
        const status = response.status;
        let detail = snippet(body);
        try {
          detail = apiErrorOf(readFeed(body)) ?? detail;
        } catch {
          // Not a feed (an HTML error page, say): the text snippet is the best detail there is.
        }
        // Throttling and server faults pass; any other status would answer the same request the same way.
        const passes = status === 429 || status >= 500;
        throw new ResearchError(passes ? "runner_unavailable" : "invalid_config", `arXiv answered HTTP ${status}${detail ? `: ${detail}` : ""} (${url})`, "", {
          reason: status === 429 ? "rate_limited" : "http",
          status,
          retryAfterMs: retryAfterMs(response.headers.get("retry-after"), this.now()),
        });
      }
      let result: ArxivSearchResult;
      try {
        result = parseArxivFeed(body);
      } catch (err) {
        const failure = ResearchError.from(err);
        throw new ResearchError(failure.label, `${failure.message} (${url})`, failure.detail, { reason: failure.reason, status: response.status, cause: err });
      }
      // A known arXiv fault: now and then a page comes back empty although results exist; a retry usually fills it.
      if (!result.entries.length && result.total > start) {
        throw new ResearchError("runner_unavailable", `arXiv returned an empty page although ${result.total} results exist (${url})`, "", {
          reason: "http",
          status: response.status,
        });
      }
      return result;
    } finally {
      clearTimeout(timer);
    }
  }

  private cachePath(url: string): string | undefined {
    return this.cacheDir && join(this.cacheDir, `${createHash("sha256").update(url).digest("hex")}.json`);
  }

  private async readCache(url: string): Promise<CacheFile | undefined> {
    const path = this.cachePath(url);
    if (!path) return undefined;
    let text: string;
    try {
      text = await readFile(path, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw err;
    }
    try {
      const file = CacheFileSchema.parse(JSON.parse(text));
      // A sha256 collision is not a worry, but a file copied in from elsewhere is: trust only an exact url match.
      return file.url === url && !Number.isNaN(Date.parse(file.fetched_at)) ? file : undefined;
    } catch {
      // A damaged file is a miss; the next fetch overwrites it.
      return undefined;
    }
  }

  private async writeCache(url: string, result: ArxivSearchResult): Promise<void> {
    const path = this.cachePath(url);
    if (!path || !this.cacheDir) return;
    await mkdir(this.cacheDir, { recursive: true });
    const file: CacheFile = { url, fetched_at: new Date(this.now()).toISOString(), result };
    // Write then rename, so a process reading the cache never sees half a file.
    const partial = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.partial`;
    await writeFile(partial, `${JSON.stringify(file, null, 2)}\n`);
    await rename(partial, path);
  }
}

// ---------------------------------------------------------------------------
// Results as corpus entries, so live papers rank alongside the shipped corpus.

// arXiv's own subject classes, on top of what the abstract says: an image paper rarely repeats "image" often enough for the keyword count alone.
const CATEGORY_MODALITIES: readonly (readonly [Modality, readonly string[]])[] = [
  ["vision", ["cs.CV", "eess.IV"]],
  ["text", ["cs.CL", "cs.IR"]],
];

const ALL_MODALITIES: readonly Modality[] = ["vision", "tabular", "text"];

const CURATED_BY_ARXIV_ID = new Map(CORPUS.filter((e) => e.arxiv_id).map((e) => [e.arxiv_id!, e]));

function modalitiesOf(text: string, categories: readonly string[]): readonly Modality[] {
  const fromCategories = CATEGORY_MODALITIES.filter(([, cs]) => categories.some((c) => cs.includes(c))).map(([m]) => m);
  const found = new Set([...mentionedModalities(text), ...fromCategories]);
  // Nothing named and no telling category: a generic technique, as inferModalities reads such a text.
  return found.size ? ALL_MODALITIES.filter((m) => found.has(m)) : ALL_MODALITIES;
}

function shortName(title: string): string {
  // "MobileNets: Efficient ..." is known as "MobileNets"; the corpus uses such short names for suggestions.
  const head = title.split(":")[0]!.trim();
  return head && head.length <= 40 && head !== title ? head : title;
}

/**
 * Search results in the shape of the shipped corpus. Tags, modalities,
 * building blocks and surface are keyword guesses from title and abstract;
 * prior is 0 because nothing is known yet about how often the idea pays
 * off. A paper the corpus already holds shares its concept, so the two
 * collapse into one suggestion.
 */
export function toCorpusEntries(entries: readonly ArxivEntry[]): CorpusEntry[] {
  return entries.map((e) => {
    const text = `${e.title}. ${e.summary}`;
    const curated = CURATED_BY_ARXIV_ID.get(e.arxivId);
    const year = Number(e.published.slice(0, 4));
    return {
      id: `arxiv-${e.arxivId.toLowerCase().replace(/[^a-z0-9]+/g, "-")}`,
      ...(curated ? { concept: curated.concept ?? curated.id } : {}),
      name: shortName(e.title),
      title: e.title,
      arxiv_id: e.arxivId,
      year,
      summary: e.summary,
      usage: `Uncurated arXiv result (${e.categories.join(", ") || "uncategorised"}, ${year}): check the abstract before planning with it.`,
      modalities: modalitiesOf(text, e.categories),
      surface: inferSurface(text),
      tags: inferTags(text),
      // Blocks the coder lacks stay in, as in the curated corpus, so isBuildable says no for a paper built on one.
      building_blocks: inferBlocks(text),
      prior: 0,
    };
  });
}
