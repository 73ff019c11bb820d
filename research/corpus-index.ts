/**
 * The corpus in a LanceDB table for hybrid retrieval: a vector search and a
 * full-text (BM25) search over the same text, fused by reciprocal rank. The
 * two retrievers fail differently (the vector side matches meaning, or with
 * the hashing embedder "excite" to "excitation", BM25 rewards rare exact terms), and rank
 * fusion needs no score calibration between them.
 *
 * The built-in corpus is written once per content: the table carries a hash
 * of the entries, the embedder and the row format in its schema metadata, and
 * `open` rebuilds only when that hash changes. Entries added later (user
 * notes, arXiv results) survive a rebuild and are re-embedded with it.
 * One writer per directory: LanceDB has one safe writer per table.
 */
import { createHash } from "node:crypto";
import * as lancedb from "@lancedb/lancedb";
import { Field, FixedSizeList, Float32, Int32, List, Schema, Utf8 } from "apache-arrow";
import type { Modality } from "../core/goal-words.js";
import type { Embedder } from "../core/embedder.js";
import { configuredEmbedder } from "../core/embedder-select.js";
import { CORPUS, sourceUrl, type CorpusEntry, type Surface } from "./corpus.js";
import { ResearchError } from "../core/failure.js";

export type CorpusSource = "builtin" | "notes" | "arxiv";
export type ExtraSource = Exclude<CorpusSource, "builtin">;

export interface CorpusRow {
  id: string;
  name: string;
  title: string;
  /** What both retrievers see: title, name, summary, usage and tags. */
  text: string;
  source: CorpusSource;
  /** "" when the entry has no citable address. */
  url: string;
  year: number;
  modalities: Modality[];
  surface: Surface;
  building_blocks: string[];
}

export interface CorpusHit extends CorpusRow {
  /** Reciprocal-rank-fusion score: the sum of 1/(60 + rank) over the retrievers that found it. */
  score: number;
  /** 1-based rank in each retriever's list, null where it did not retrieve the entry. */
  vectorRank: number | null;
  textRank: number | null;
}

export interface CorpusIndexOptions {
  /** Defaults to configuredEmbedder() (MiniLM when installed, else hashing). Changing it rebuilds the table. */
  embedder?: Embedder;
  /** The built-in entries; defaults to CORPUS. */
  entries?: readonly CorpusEntry[];
}

export interface CorpusSearchOptions {
  /** Default 10. */
  k?: number;
  /** Only entries tagged with this modality. */
  modality?: Modality;
}

const TABLE = "corpus";
const HASH_KEY = "corpus.content_hash";
// Part of the content hash: bump it when the row layout or the text recipe changes.
const FORMAT = 1;
// The constant of the original RRF paper; it damps the difference between the very top ranks.
const RRF_K = 60;
// How deep each retriever looks before fusion: an entry ranked deeper than this by both is not a hit.
const CANDIDATES = 50;
const MODALITIES: ReadonlySet<string> = new Set<Modality>(["vision", "tabular", "text"]);
const COLUMNS = ["id", "name", "title", "text", "source", "url", "year", "modalities", "surface", "building_blocks"] as const;
const FTS = { stem: true, removeStopWords: true, language: "English", asciiFolding: true, withPosition: false };

export class CorpusIndex {
  private writeChain: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly db: lancedb.Connection,
    private readonly table: lancedb.Table,
    readonly embedder: Embedder,
    /** Whether `open` (re)wrote the table rather than reusing it. */
    readonly rebuilt: boolean,
    private readonly builtinIds: ReadonlySet<string>,
  ) {}

  static async open(dir: string, options: CorpusIndexOptions = {}): Promise<CorpusIndex> {
    const embedder = options.embedder ?? configuredEmbedder();
    const builtin = (options.entries ?? CORPUS).map((e) => toRow(e, "builtin"));
    const builtinIds = new Set(builtin.map((r) => r.id));
    if (builtinIds.size !== builtin.length) throw new Error("corpus entries must have unique ids");
    const hash = contentHash(builtin, embedder);
    const db = await lancedb.connect(dir);

    let kept: CorpusRow[] = [];
    if ((await db.tableNames()).includes(TABLE)) {
      const existing = await db.openTable(TABLE);
      if ((await existing.schema()).metadata.get(HASH_KEY) === hash) {
        return new CorpusIndex(db, existing, embedder, false, builtinIds);
      }
      // A built-in entry that now claims an added entry's id wins: built-in ids are the stable ones.
      kept = (await rowsOf<CorpusRow>(existing.query().where("source != 'builtin'").select([...COLUMNS]))).filter(
        (r) => !builtinIds.has(r.id),
      );
      existing.close();
    }
    const rows = [...builtin, ...kept];
    const vectors = await embed(embedder, rows.map((r) => r.text));
    const table = await db.createEmptyTable(TABLE, corpusSchema(embedder.dim, hash), { mode: "overwrite" });
    if (rows.length > 0) await table.add(rows.map((r, i) => ({ ...r, vector: vectors[i] })));
    await table.createIndex("text", { config: lancedb.Index.fts(FTS), replace: true });
    return new CorpusIndex(db, table, embedder, true, builtinIds);
  }

  /**
   * Upserts extra entries by id (adding the same note twice changes nothing).
   * Built-in ids are refused: the next rebuild would silently overwrite them.
   */
  add(entries: readonly CorpusEntry[], source: ExtraSource): Promise<number> {
    const clashes = entries.filter((e) => this.builtinIds.has(e.id)).map((e) => e.id);
    if (clashes.length) return Promise.reject(new Error(`ids already used by the built-in corpus: ${clashes.join(", ")}`));
    // mergeInsert rejects a batch that names one key twice; the last version of an entry wins.
    const rows = [...new Map(entries.map((e) => [e.id, toRow(e, source)])).values()];
    const run = this.writeChain.then(async () => {
      if (rows.length === 0) return 0;
      const vectors = await embed(this.embedder, rows.map((r) => r.text));
      await this.table
        .mergeInsert("id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute(rows.map((r, i) => ({ ...r, vector: vectors[i] })));
      return rows.length;
    });
    this.writeChain = run.catch(() => undefined);
    return run;
  }

  async search(query: string, options: CorpusSearchOptions = {}): Promise<CorpusHit[]> {
    const k = options.k ?? 10;
    if (!Number.isInteger(k) || k < 1) throw new ResearchError("invalid_config", `k must be a positive integer, got ${k}`);
    if (options.modality !== undefined && !MODALITIES.has(options.modality)) throw new ResearchError("invalid_config", `unknown modality ${options.modality}`);
    // Only words reach the FTS parser, so quotes, colons or AND/OR syntax in a query are never interpreted.
    const words = query.match(/[\p{L}\p{N}]+/gu) ?? [];
    if (words.length === 0) return [];
    const where = options.modality ? `array_has(modalities, '${options.modality}')` : undefined;
    const depth = Math.max(CANDIDATES, k);

    const [vector] = await embed(this.embedder, [query]);
    // A query of stop words only embeds to the zero vector, which has no cosine direction.
    const byVector = vector!.some((x) => x !== 0)
      ? this.table.vectorSearch(vector!).distanceType("cosine").select([...COLUMNS, "_distance"]).limit(depth)
      : undefined;
    const byText = this.table.query().fullTextSearch(words.join(" "), { columns: "text" }).select([...COLUMNS, "_score"]).limit(depth);
    const [vectorRows, textRows] = await Promise.all([
      byVector ? rowsOf<CorpusRow>(where ? byVector.where(where) : byVector) : [],
      rowsOf<CorpusRow>(where ? byText.where(where) : byText),
    ]);

    const fused = new Map<string, CorpusHit>();
    const fuse = (rows: CorpusRow[], rankField: "vectorRank" | "textRank") =>
      rows.forEach((row, i) => {
        const hit = fused.get(row.id) ?? { ...pick(row), score: 0, vectorRank: null, textRank: null };
        hit.score += 1 / (RRF_K + i + 1);
        hit[rankField] = i + 1;
        fused.set(row.id, hit);
      });
    fuse(vectorRows, "vectorRank");
    fuse(textRows, "textRank");
    return [...fused.values()].sort((a, b) => b.score - a.score || a.id.localeCompare(b.id)).slice(0, k);
  }

  async count(source?: CorpusSource): Promise<number> {
    return this.table.countRows(source ? `source = '${source.replaceAll("'", "''")}'` : undefined);
  }

  /** Waits for queued writes, then releases the table. */
  async close(): Promise<void> {
    await this.writeChain;
    this.table.close();
    this.db.close();
  }
}

/**
 * The texts the built-in corpus is embedded from. Set-up embeds them once into the embedder's
 * cache (scripts/warm-corpus.ts), so a workspace's first index reads their vectors: computing
 * them took 24 s of the README command's first run on the CPU without bf16.
 */
export function builtinTexts(entries: readonly CorpusEntry[] = CORPUS): string[] {
  return entries.map((e) => toRow(e, "builtin").text);
}

function toRow(e: CorpusEntry, source: CorpusSource): CorpusRow {
  // The name often says what the title does not ("Residual connections" for "Deep Residual Learning ...").
  const heading = e.title.toLowerCase().includes(e.name.toLowerCase()) ? e.title : `${e.title}. ${e.name}`;
  return {
    id: e.id,
    name: e.name,
    title: e.title,
    text: [heading, e.summary, e.usage.replaceAll("`", ""), e.tags.join(", ")].filter(Boolean).join("\n"),
    source,
    url: sourceUrl(e) ?? "",
    year: e.year,
    modalities: [...e.modalities],
    surface: e.surface,
    building_blocks: [...e.building_blocks],
  };
}

function contentHash(rows: readonly CorpusRow[], embedder: Embedder): string {
  return createHash("sha256")
    .update(JSON.stringify({ format: FORMAT, embedder: embedder.name, dim: embedder.dim, rows }))
    .digest("hex");
}

function corpusSchema(dim: number, hash: string): Schema {
  const text = (name: string) => new Field(name, new Utf8(), false);
  const textList = (name: string) => new Field(name, new List(new Field("item", new Utf8(), true)), false);
  return new Schema(
    [
      text("id"), text("name"), text("title"), text("text"), text("source"), text("url"),
      new Field("year", new Int32(), false), textList("modalities"), text("surface"), textList("building_blocks"),
      new Field("vector", new FixedSizeList(dim, new Field("item", new Float32(), true)), false),
    ],
    new Map([[HASH_KEY, hash]]),
  );
}

async function embed(embedder: Embedder, texts: string[]): Promise<number[][]> {
  if (texts.length === 0) return [];
  const vectors = await embedder.embed(texts);
  return vectors.map((v) => {
    if (v.length !== embedder.dim) throw new ResearchError("crash", `embedder ${embedder.name} returned ${v.length} values, expected ${embedder.dim}`, "", { reason: "invalid_output" });
    return Array.from(v);
  });
}

function pick(row: CorpusRow): CorpusRow {
  return Object.fromEntries(COLUMNS.map((c) => [c, row[c]])) as unknown as CorpusRow;
}

/** Query results as plain objects: Arrow lists become arrays. */
async function rowsOf<R>(q: lancedb.Query | lancedb.VectorQuery): Promise<R[]> {
  const table = await q.toArrow();
  const columns = table.schema.fields.map((f) => [f.name, [...table.getChild(f.name)!].map(jsValue)] as const);
  return Array.from({ length: table.numRows }, (_, i) => Object.fromEntries(columns.map(([name, values]) => [name, values[i]])) as R);
}

function jsValue(v: unknown): unknown {
  if (v !== null && typeof v === "object" && "toArray" in v) return Array.from((v as { toArray(): ArrayLike<unknown> }).toArray());
  return v;
}
