/**
 * The offline researcher: ranks the shipped corpus against a query with
 * BM25, or ranks the entries a retriever found (deep-research.ts), and turns
 * the best entries into a brief. Deterministic by design (no clock, no
 * randomness, stable tie-breaks), so a replayed run gets the same brief and
 * briefs can be compared across runs.
 */
import { z } from "zod";
import { SURFACE } from "../core/enums.js";
import { BriefSchema, isCoderBlock, type ArchitecturalSuggestion, type Brief } from "../core/brief.js";
import { datasetModality, normaliseDataset, readGoalText, type Modality } from "../core/goal-words.js";
import { datasetNamed } from "../core/tasks/index.js";
import { CORPUS, sourceUrl, type CorpusEntry, type Surface } from "./corpus.js";

export const ResearchOptionsSchema = z
  .object({
    /** Dataset name or alias; when absent the query text is searched for one. */
    dataset: z.string().optional(),
    maxSuggestions: z.number().int().positive().default(6),
    /** Size of the ranked pool (after de-duplication) the suggestions are chosen from. */
    k: z.number().int().positive().default(20),
    /** Only suggestions on these recipe surfaces. */
    surfaces: z.array(z.enum(SURFACE.names)).min(1).optional(),
    maxInsights: z.number().int().positive().optional(),
    maxSources: z.number().int().positive().optional(),
  })
  .strict();
export type ResearchOptions = z.input<typeof ResearchOptionsSchema>;

/** A corpus entry some retriever found for the query, with its relevance in [0, 1]. */
export interface RetrievedEntry {
  entry: CorpusEntry;
  relevance: number;
}

export interface RankedEntry {
  entry: CorpusEntry;
  /** Every corpus entry of the same concept, best first (all are cited). */
  siblings: CorpusEntry[];
  score: number;
  /** BM25 relevance as a fraction of its ceiling for the query, in [0, 1), or the retriever's relevance when given. */
  relevance: number;
  buildable: boolean;
}

export const STOPWORDS: ReadonlySet<string> = new Set(
  "a an and are as at be but by can could do for from has have how i in into is it its may more most my no not of on or our over please reach should so than that the their them then there these this those to under up use using via want was we what when which while will with within without would you your get hit achieve least".split(
    " ",
  ),
);

// Abbreviations that must meet their spelled-out form in the index.
const SYNONYMS = new Map<string, string>([
  ["params", "parameter"],
  ["param", "parameter"],
  ["cnn", "convolution"],
  ["cnns", "convolution"],
  ["convnet", "convolution"],
  ["conv", "convolution"],
  ["acc", "accuracy"],
  ["lr", "learning"],
  ["tiny", "small"],
  ["lightweight", "efficient"],
  ["compact", "efficient"],
  ["pictures", "image"],
  ["nlp", "text"],
]);

function stem(token: string): string {
  // British -ise/-isation spellings (the project's own) fold onto the -ize forms most papers use.
  let t = token.replace(/is(ations?|ers?|ing|ed|es|e)$/, "iz$1");
  for (let pass = 0; pass < 2 && t.length > 4; pass++) {
    const next = t.replace(/(?:izations?|ations?|izing|ized|izes|ize|ings?|ers?|ies|es|s|al|e)$/, "");
    if (next.length < 3 || next === t) break;
    t = next;
  }
  return t.replace(/iz$/, "");
}

export function tokenize(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((t) => t.length > 1 && !STOPWORDS.has(t) && !/^\d/.test(t))
    .map((t) => stem(SYNONYMS.get(t) ?? t));
}

const MODALITY_WORDS: Record<Modality, readonly string[]> = {
  vision: ["image", "vision", "visual", "pixel", "photo", "convolution", "cnn"],
  tabular: ["tabular", "table", "csv", "column", "row"],
  text: ["text", "sentence", "document", "word", "token", "review", "sentiment", "language"],
};

function modalityFromQuery(tokens: readonly string[]): Modality | undefined {
  const hits = (Object.keys(MODALITY_WORDS) as Modality[])
    .map((m) => ({ m, n: tokenize(MODALITY_WORDS[m].join(" ")).filter((w) => tokens.includes(w)).length }))
    .filter((h) => h.n > 0)
    .sort((a, b) => b.n - a.n);
  // A tie means the query mixes modalities; guessing one would hide the other's techniques.
  return hits.length && (hits.length === 1 || hits[0]!.n > hits[1]!.n) ? hits[0]!.m : undefined;
}

function documentText(e: CorpusEntry): string {
  // Name, title and tags count twice: they are the most deliberate words of an entry.
  const blocks = e.building_blocks.map((b) => b.replace(/[:_]/g, " ")).join(" ");
  return [e.name, e.name, e.title, e.title, e.tags.join(" "), e.tags.join(" "), e.summary, e.usage, blocks, e.modalities.join(" "), e.surface].join(" ");
}

interface Index {
  docs: Map<string, number>[];
  lengths: number[];
  avgLength: number;
  df: Map<string, number>;
}

function buildIndex(entries: readonly CorpusEntry[]): Index {
  const docs = entries.map((e) => {
    const tf = new Map<string, number>();
    for (const t of tokenize(documentText(e))) tf.set(t, (tf.get(t) ?? 0) + 1);
    return tf;
  });
  const lengths = docs.map((d) => [...d.values()].reduce((a, b) => a + b, 0));
  const df = new Map<string, number>();
  for (const d of docs) for (const t of d.keys()) df.set(t, (df.get(t) ?? 0) + 1);
  return { docs, lengths, avgLength: lengths.reduce((a, b) => a + b, 0) / lengths.length, df };
}

const INDEX = buildIndex(CORPUS);
const K1 = 1.2;
const B = 0.75;

function idf(token: string): number {
  const df = INDEX.df.get(token) ?? 0;
  return Math.log(1 + (CORPUS.length - df + 0.5) / (df + 0.5));
}

function bm25(queryTokens: ReadonlySet<string>, doc: number): number {
  const tf = INDEX.docs[doc]!;
  let score = 0;
  for (const t of queryTokens) {
    const f = tf.get(t);
    if (!f) continue;
    score += (idf(t) * f * (K1 + 1)) / (f + K1 * (1 - B + (B * INDEX.lengths[doc]!) / INDEX.avgLength));
  }
  return score;
}

/**
 * The BM25 ceiling for this query: every known term, saturated. Dividing by
 * it (rather than by the best hit) keeps a single weak match, such as
 * "short" in "Long Short-Term Memory", from counting as full relevance.
 */
function ceiling(queryTokens: ReadonlySet<string>): number {
  let total = 0;
  for (const t of queryTokens) if (INDEX.df.has(t)) total += idf(t) * (K1 + 1);
  return total;
}

export function isBuildable(entry: CorpusEntry): boolean {
  return entry.building_blocks.length > 0 && entry.building_blocks.every(isCoderBlock);
}

interface QueryContext {
  tokens: string[];
  modality: Modality | undefined;
  dataset: string | undefined;
  maxParams: number | undefined;
  timeBudgetS: number | undefined;
}

function queryContext(query: string, dataset: string | undefined): QueryContext {
  const reading = readGoalText(query);
  // An empty dataset is how an unset proto field arrives; it means "not given".
  const ds = dataset ? (normaliseDataset(dataset) ?? dataset) : reading.datasets.length === 1 ? reading.datasets[0] : undefined;
  const tokens = tokenize(query);
  const maxParams = reading.maxParams.length === 1 ? reading.maxParams[0] : undefined;
  const timeBudgetS = reading.timeBudgets.length === 1 ? reading.timeBudgets[0] : undefined;
  // A budget in the goal is a request for efficiency even when the words are not there.
  if (maxParams !== undefined) tokens.push(...tokenize("efficient small parameter budget"));
  if (timeBudgetS !== undefined) tokens.push(...tokenize("fast training few epochs time budget"));
  return { tokens, modality: (ds && datasetModality(ds)) || modalityFromQuery(tokens), dataset: ds, maxParams, timeBudgetS };
}

/**
 * Score = relevance (BM25 over its ceiling) + a prior for ideas that
 * usually pay off + modality fit + a nudge for what the coder can build.
 * Off-modality entries sink rather than vanish, so a large k still sees them.
 */
function score(e: CorpusEntry, relevance: number, modality: Modality | undefined, buildable: boolean): number {
  let fit = 0;
  if (modality) {
    if (!e.modalities.includes(modality)) fit = -1;
    else fit = e.modalities.length === 1 ? 0.2 : 0.1;
  }
  return relevance + 0.25 * (e.prior ?? 0.3) + fit + (buildable ? 0.1 : 0);
}

function byScore(a: RankedEntry, b: RankedEntry): number {
  return b.score - a.score || a.entry.id.localeCompare(b.entry.id);
}

function bm25Relevance(ctx: QueryContext): RetrievedEntry[] {
  const terms = new Set(ctx.tokens);
  const top = ceiling(terms);
  return CORPUS.map((entry, i) => ({ entry, relevance: top > 0 ? bm25(terms, i) / top : 0 }));
}

function rank(ctx: QueryContext, retrieved: readonly RetrievedEntry[] = bm25Relevance(ctx)): RankedEntry[] {
  const scored = retrieved
    .map(({ entry, relevance }) => {
      const buildable = isBuildable(entry);
      return { entry, siblings: [entry], relevance, buildable, score: score(entry, relevance, ctx.modality, buildable) };
    })
    .sort(byScore);

  // A concept ranks by its best-scoring entry but speaks through its canonical one (highest prior, then corpus order).
  const byConcept = new Map<string, RankedEntry>();
  for (const r of scored) {
    const key = r.entry.concept ?? r.entry.id;
    const best = byConcept.get(key);
    if (!best) {
      byConcept.set(key, r);
      continue;
    }
    best.siblings.push(r.entry);
    if ((r.entry.prior ?? 0.3) > (best.entry.prior ?? 0.3)) {
      best.entry = r.entry;
      best.buildable = r.buildable;
    }
  }
  return [...byConcept.values()];
}

/**
 * The corpus ranked for a query, one entry per concept, best first. With
 * `retrieved`, only those entries rank, on the retriever's relevance instead
 * of BM25 over the built-in corpus.
 */
export function rankCorpus(query: string, opts: { dataset?: string } = {}, retrieved?: readonly RetrievedEntry[]): RankedEntry[] {
  return rank(queryContext(query, opts.dataset), retrieved);
}

// Each further pick from an already-chosen surface counts for less, so one brief feeds several specialists.
const SURFACE_DECAY = 0.8;

function pickDiverse(pool: readonly RankedEntry[], n: number): RankedEntry[] {
  const chosen: RankedEntry[] = [];
  const perSurface = new Map<Surface, number>();
  const left = [...pool];
  while (chosen.length < n && left.length) {
    let bestIndex = 0;
    let bestValue = -Infinity;
    left.forEach((r, i) => {
      const value = r.score * SURFACE_DECAY ** (perSurface.get(r.entry.surface) ?? 0);
      if (value > bestValue) {
        bestValue = value;
        bestIndex = i;
      }
    });
    const [pick] = left.splice(bestIndex, 1);
    chosen.push(pick!);
    perSurface.set(pick!.entry.surface, (perSurface.get(pick!.entry.surface) ?? 0) + 1);
  }
  return chosen;
}

function code(names: readonly string[]): string {
  return names.map((n) => `\`${n}\``).join(", ");
}

function suggestion(r: RankedEntry): ArchitecturalSuggestion {
  const e = r.entry;
  const missing = e.building_blocks.filter((b) => !isCoderBlock(b));
  const note = [`${e.usage}`, `Building blocks: ${code(e.building_blocks)}.`];
  if (missing.length) note.push(`Not buildable yet: the coder vocabulary lacks ${code(missing)}.`);
  return {
    name: e.name,
    description: `${e.summary} (${e.title}, ${e.year}; surface: ${e.surface})`,
    implementation_note: note.join(" "),
    building_blocks: [...e.building_blocks],
    buildable: r.buildable,
  };
}

function formatCount(n: number): string {
  if (n >= 1e6 && n % 1e5 === 0) return `${n / 1e6}M`;
  if (n >= 1e3 && n % 100 === 0) return `${n / 1e3}k`;
  return String(n);
}

function formatSeconds(s: number): string {
  if (s >= 3600) return `${Number((s / 3600).toFixed(2))} h`;
  if (s >= 60) return `${Number((s / 60).toFixed(1))} min`;
  return `${s} s`;
}

function insights(ctx: QueryContext, chosen: readonly RankedEntry[]): string[] {
  const out: string[] = [];
  const goal = [
    ctx.dataset ? `dataset ${ctx.dataset}` : undefined,
    ctx.modality ? `modality ${ctx.modality}` : undefined,
    ctx.maxParams !== undefined ? `at most ${formatCount(ctx.maxParams)} parameters` : undefined,
    ctx.timeBudgetS !== undefined ? `${formatSeconds(ctx.timeBudgetS)} of wall-clock` : undefined,
  ].filter(Boolean);
  if (goal.length) out.push(`Ranked for ${goal.join(", ")}.`);
  out.push(
    ctx.modality
      ? `Techniques for other modalities than ${ctx.modality} were ranked last.`
      : "No dataset or modality recognised; ranking is by text relevance and general usefulness only.",
  );

  if (ctx.modality === "vision") {
    out.push(
      ctx.dataset && !datasetNamed(ctx.dataset)?.mirrors
        ? "Do not use `hflip` on this data: a mirrored image can carry another label (a mirrored digit is a different or invalid symbol); `random_crop` with small padding is safe."
        : "`random_crop` with padding plus `hflip` is the near-free augmentation baseline for small natural or clothing images.",
    );
    if (ctx.maxParams !== undefined) {
      out.push(
        `Under a ${formatCount(ctx.maxParams)}-parameter budget, spend parameters on convolutions, not the head: use \`global_avgpool\` → \`linear\`, and \`depthwise_conv2d\` + \`pointwise_conv2d\`, \`ghost\` or \`mbconv\` where 3x3 convs are too costly.`,
      );
    }
  } else if (ctx.modality === "tabular") {
    out.push("For small tables a regularised MLP (batchnorm, dropout, weight decay) is the neural baseline; judge it against gradient-boosted trees and standardise inputs from the training split only.");
    if (ctx.maxParams !== undefined) out.push(`An MLP of width w over d features costs about d·w + w² per extra layer; choose w so the ${formatCount(ctx.maxParams)} budget holds.`);
  } else if (ctx.modality === "text") {
    out.push("A pooled bag of embeddings (`embedding` → `sequence_pool` → `linear`) is the small-text baseline to beat before adding attention.");
    if (ctx.maxParams !== undefined) out.push(`The \`embedding\` table dominates small text models; shrink its dimension first to stay within ${formatCount(ctx.maxParams)} parameters.`);
  }
  if (ctx.timeBudgetS !== undefined) {
    out.push(`With ${formatSeconds(ctx.timeBudgetS)} in total, prefer schedules that converge in few epochs (\`onecycle_schedule\`, or \`cosine_schedule\` with \`warmup\`) over long step schedules.`);
  }

  const surfaces = new Map<Surface, string[]>();
  for (const r of chosen) surfaces.set(r.entry.surface, [...(surfaces.get(r.entry.surface) ?? []), r.entry.name]);
  for (const [surface, names] of surfaces) out.push(`${surface[0]!.toUpperCase()}${surface.slice(1)}: ${names.join("; ")}.`);

  const unbuildable = chosen.filter((r) => !r.buildable).map((r) => r.entry.name);
  if (unbuildable.length) out.push(`Not buildable with today's coder vocabulary (kept as leads): ${unbuildable.join("; ")}.`);
  return out;
}

function sources(chosen: readonly RankedEntry[]): Brief["sources"] {
  const seen = new Set<string>();
  const out: Brief["sources"] = [];
  for (const r of chosen) {
    for (const e of r.siblings) {
      const url = sourceUrl(e);
      if (!url || seen.has(url)) continue;
      seen.add(url);
      out.push({ title: e.title, url });
    }
  }
  return out;
}

export interface ComposedBrief {
  brief: Brief;
  /** The entries behind the suggestions, siblings included, whether or not they have a citable url. */
  drawnFrom: CorpusEntry[];
}

/** researchBrief, also saying which entries it drew on (to count the sources that contributed). */
export function composeBrief(query: string, opts: ResearchOptions = {}, retrieved?: readonly RetrievedEntry[]): ComposedBrief {
  const o = ResearchOptionsSchema.parse(opts);
  const ctx = queryContext(query, o.dataset);
  const ranked = rank(ctx, retrieved).filter((r) => !o.surfaces || o.surfaces.includes(r.entry.surface));
  const chosen = pickDiverse(ranked.slice(0, Math.max(o.k, o.maxSuggestions)), o.maxSuggestions);
  const subject = ctx.dataset ?? ctx.modality ?? (query.trim() || "small-model classification");
  const brief = BriefSchema.parse({
    summary_title: `Offline research brief for ${subject}: ${chosen
      .slice(0, 3)
      .map((r) => r.entry.name)
      .join(", ")}`,
    insights: insights(ctx, chosen).slice(0, o.maxInsights),
    architectural_suggestions: chosen.map(suggestion),
    sources: sources(chosen).slice(0, o.maxSources),
  });
  return { brief, drawnFrom: chosen.flatMap((r) => r.siblings) };
}

/** A brief from the offline corpus, or from `retrieved` as rankCorpus takes it; always valid against BriefSchema. */
export function researchBrief(query: string, opts: ResearchOptions = {}, retrieved?: readonly RetrievedEntry[]): Brief {
  return composeBrief(query, opts, retrieved).brief;
}

/**
 * The seed's `output_format`, in plain words or key=value pairs: "3
 * suggestions, 2 insights, architecture and regularisation only",
 * "suggestions=5 sources=4 surfaces=data". Unrecognised words are ignored;
 * the result is validated like any other options.
 */
export function parseOutputFormat(text: string): ResearchOptions {
  const t = text.toLowerCase();
  const count = (word: string) => {
    // key=value first: in "suggestions=5 sources=4", "5 sources" is not a count of sources.
    const m = new RegExp(`\\b${word}s?\\s*=\\s*(\\d+)`).exec(t) ?? new RegExp(`(\\d+)\\s*${word}s?\\b`).exec(t);
    return m ? Number(m[1]) : undefined;
  };
  const surfaces = (
    [
      ["architecture", /architecture/],
      ["optimisation", /optimi[sz]ation/],
      ["regularisation", /regulari[sz]ation/],
      ["data", /\bdata\b/],
    ] as const
  )
    .filter(([, re]) => re.test(t))
    .map(([s]) => s);
  return ResearchOptionsSchema.parse({
    maxSuggestions: count("suggestion"),
    maxInsights: count("insight"),
    maxSources: count("source"),
    surfaces: surfaces.length ? surfaces : undefined,
  });
}
