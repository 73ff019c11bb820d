/**
 * Which embedder a process uses: EMBEDDER when set, else MiniLM when the project's
 * virtualenv is installed, else the hashing embedder (with one warning line). A
 * directory of vectors is tied to the embedder that made them, so the stores take
 * the embedder by the name they were built with (`embedderNamed`).
 */
import type { EmbedderSettings } from "./config.js";
import { HashingEmbedder, OpenAIEmbedder, type Embedder } from "./embedder.js";
import { MINILM_NAME, MiniLmEmbedder, miniLmInstalled } from "./embedder-minilm.js";
import { ResearchError } from "./failure.js";
import { createLogger, type Logger } from "./logger.js";

const HASHING_NAME = /^hashing-v1-(\d+)$/;
const OPENAI_NAME = /^openai:(.+):(\d+)$/;

// One model process per process, however many stores and indexes use it.
let sharedMiniLm: MiniLmEmbedder | undefined;
let warnedFallback = false;

/**
 * The embedder for a setting (`minilm`, `hashing`, `openai:MODEL:DIM`) or for the name an
 * embedder stores with its vectors (`hashing-v1-256`, MINILM_NAME, `openai:MODEL:DIM`).
 */
export function embedderNamed(name: string, settings: EmbedderSettings = {}): Embedder {
  if (name === "minilm" || name === MINILM_NAME) {
    if (!miniLmInstalled()) {
      throw new ResearchError("invalid_config", `embedder ${name} needs the project's .venv: run scripts/setup.sh, or set EMBEDDER=hashing`);
    }
    return (sharedMiniLm ??= new MiniLmEmbedder());
  }
  if (name === "hashing") return new HashingEmbedder();
  const hashing = HASHING_NAME.exec(name);
  if (hashing) return new HashingEmbedder({ dim: Number(hashing[1]) });
  const openai = OPENAI_NAME.exec(name);
  if (openai) {
    return new OpenAIEmbedder({ model: openai[1]!, dim: Number(openai[2]), baseURL: settings.baseUrl, apiKey: process.env.OPENAI_API_KEY });
  }
  throw new ResearchError("invalid_config", `unknown embedder ${name} (expected minilm, hashing or openai:MODEL:DIM)`);
}

/** The embedder for new vectors: the setting, or the best one installed. */
export function configuredEmbedder(settings: EmbedderSettings = {}, log?: Logger): Embedder {
  if (settings.choice) return embedderNamed(settings.choice, settings);
  if (miniLmInstalled()) return embedderNamed("minilm");
  if (!warnedFallback) {
    warnedFallback = true;
    (log ?? createLogger("embedder")).warn("no .venv with the MiniLM model (run scripts/setup.sh): similarity search uses the hashing embedder");
  }
  return new HashingEmbedder();
}

/**
 * The embedder for a directory whose vectors came from `stored` (undefined: none yet).
 * Unset EMBEDDER keeps the directory's embedder, so a workspace built before MiniLM was
 * installed stays searchable; an EMBEDDER that names another one is refused, since the two
 * kinds of vectors cannot be compared.
 */
export function embedderFor(where: string, stored: string | undefined, settings: EmbedderSettings = {}, log?: Logger): Embedder {
  if (stored === undefined) return configuredEmbedder(settings, log);
  if (settings.choice) {
    const chosen = embedderNamed(settings.choice, settings);
    if (chosen.name !== stored) {
      throw new ResearchError(
        "invalid_config",
        `${where} holds vectors from embedder ${stored}, and EMBEDDER=${settings.choice} makes ${chosen.name}: unset EMBEDDER to keep using ${stored}, or move ${where} away to start it again`,
      );
    }
    return chosen;
  }
  const kept = embedderNamed(stored, settings);
  if (miniLmInstalled() && kept.name !== MINILM_NAME) {
    (log ?? createLogger("embedder")).info({ where, embedder: stored }, "keeping the embedder this directory was built with");
  }
  return kept;
}
