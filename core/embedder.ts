import OpenAI from "openai";
import { ResearchError } from "./failure.js";

/**
 * Turns texts into fixed-size vectors for the lineage tables. `name` is stored
 * with the tables: vectors from two different embedders are not comparable,
 * so a store refuses to open with an embedder other than the one it was built with.
 */
export interface Embedder {
  readonly dim: number;
  readonly name: string;
  embed(texts: string[]): Promise<Float32Array[] | number[][]>;
}

/** Function words carry no meaning for "which trial is like this one" and only add collisions. */
const STOP_WORDS = new Set([
  "a", "an", "and", "as", "at", "by", "for", "from", "in", "into", "is", "it", "of", "on", "or",
  "over", "than", "that", "the", "this", "to", "with", "without",
]);

/**
 * Whether a text has a word that is not a function word. The local embedders (hashing,
 * MiniLM) map a text without one to the zero vector: it is similar to nothing, and LanceDB
 * leaves zero vectors out of cosine search, so a query of stop words finds nothing, not noise.
 */
export function hasContent(text: string): boolean {
  return (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).some((w) => !STOP_WORDS.has(w));
}

// Weights per feature family: whole words dominate, bigrams reward shared phrases, character
// trigrams make "batchnorm" / "batch norm" / "batchnorm2d" and "excite" / "excitation" overlap.
const UNIGRAM_WEIGHT = 1;
const BIGRAM_WEIGHT = 0.7;
const TRIGRAM_WEIGHT = 0.25;

/**
 * Feature hashing of lowercased word unigrams, word bigrams and character trigrams, with a
 * signed hash so collisions cancel in expectation instead of piling up, L2-normalised so
 * cosine distance is meaningful. No model, deterministic across processes and versions of
 * Node, and fast enough to embed every trial row on every update.
 */
export class HashingEmbedder implements Embedder {
  readonly dim: number;
  readonly name: string;

  constructor(options: { dim?: number } = {}) {
    const dim = options.dim ?? 256;
    if (!Number.isInteger(dim) || dim < 8) throw new ResearchError("invalid_config", `HashingEmbedder dim must be an integer >= 8, got ${dim}`);
    this.dim = dim;
    this.name = `hashing-v1-${dim}`;
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    return texts.map((t) => this.embedOne(t));
  }

  embedOne(text: string): Float32Array {
    const v = new Float32Array(this.dim);
    const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
    const content = words.filter((w) => !STOP_WORDS.has(w));
    for (const w of content) this.add(v, `w:${w}`, UNIGRAM_WEIGHT);
    for (let i = 1; i < content.length; i++) this.add(v, `b:${content[i - 1]} ${content[i]}`, BIGRAM_WEIGHT);
    for (const w of content) {
      const padded = `#${w}#`;
      for (let i = 0; i + 3 <= padded.length; i++) this.add(v, `c:${padded.slice(i, i + 3)}`, TRIGRAM_WEIGHT);
    }
    let norm = 0;
    for (const x of v) norm += x * x;
    norm = Math.sqrt(norm);
    // An empty text stays the zero vector: it is similar to nothing, and LanceDB leaves
    // zero vectors out of cosine search results instead of ranking them.
    if (norm > 0) for (let i = 0; i < v.length; i++) v[i]! /= norm;
    return v;
  }

  private add(v: Float32Array, feature: string, weight: number): void {
    const h = murmur3(feature);
    // The sign comes from the top bit and the bucket from the rest, so they are independent.
    const bucket = (h & 0x7fffffff) % this.dim;
    v[bucket]! += h & 0x80000000 ? -weight : weight;
  }
}

/** MurmurHash3 (x86, 32-bit) over the UTF-16 code units: stable, well mixed, no dependency. */
function murmur3(s: string, seed = 0x9747b28c): number {
  let h = seed >>> 0;
  for (let i = 0; i < s.length; i++) {
    let k = s.charCodeAt(i);
    k = Math.imul(k, 0xcc9e2d51);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, 0x1b873593);
    h ^= k;
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  h ^= s.length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

export interface OpenAIEmbedderOptions {
  /** Any OpenAI-compatible API root, e.g. http://localhost:11434/v1 for Ollama. */
  baseURL?: string;
  /** The caller's key (its OPENAI_API_KEY for OpenAI); local servers need none. */
  apiKey?: string;
  model: string;
  /** The vector size the model returns; checked on every response. */
  dim: number;
  /** Send `dimensions` to the endpoint (only models that can shorten their output accept it). */
  requestDimensions?: boolean;
  /** Inputs per request; endpoints cap the batch (OpenAI at 2048, many local servers lower). */
  batchSize?: number;
  timeoutMs?: number;
  maxRetries?: number;
}

/** Embeddings from an OpenAI-compatible `/embeddings` endpoint (OpenAI, vLLM, Ollama, llama.cpp, LM Studio). */
export class OpenAIEmbedder implements Embedder {
  readonly dim: number;
  readonly name: string;
  private readonly client: OpenAI;
  private readonly model: string;
  private readonly requestDimensions: boolean;
  private readonly batchSize: number;

  constructor(options: OpenAIEmbedderOptions) {
    this.dim = options.dim;
    this.model = options.model;
    this.name = `openai:${options.model}:${options.dim}`;
    this.requestDimensions = options.requestDimensions ?? false;
    this.batchSize = options.batchSize ?? 128;
    this.client = new OpenAI({
      baseURL: options.baseURL,
      // Local servers ignore the key but the client refuses to start without one.
      apiKey: options.apiKey ?? "unused",
      timeout: options.timeoutMs ?? 60_000,
      maxRetries: options.maxRetries ?? 2,
    });
  }

  async embed(texts: string[]): Promise<number[][]> {
    const out: number[][] = [];
    for (let start = 0; start < texts.length; start += this.batchSize) {
      // OpenAI rejects empty strings in `input`; a blank embeds to (almost) nothing instead.
      const input = texts.slice(start, start + this.batchSize).map((t) => (t.length > 0 ? t : " "));
      const res = await this.client.embeddings.create({
        model: this.model,
        input,
        // The client asks for base64 unless told otherwise, which several compatible servers
        // do not implement; plain floats work everywhere.
        encoding_format: "float",
        ...(this.requestDimensions ? { dimensions: this.dim } : {}),
      });
      if (res.data.length !== input.length) {
        throw new ResearchError("crash", `embeddings endpoint returned ${res.data.length} vectors for ${input.length} inputs`, "", { reason: "invalid_output" });
      }
      const byIndex = [...res.data].sort((a, b) => a.index - b.index);
      for (const d of byIndex) {
        if (d.embedding.length !== this.dim) {
          throw new ResearchError("crash", `model ${this.model} returned a ${d.embedding.length}-dim vector, expected ${this.dim}`, "", { reason: "invalid_output" });
        }
        out.push(d.embedding);
      }
    }
    return out;
  }
}
