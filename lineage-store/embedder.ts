import * as lancedb from "@lancedb/lancedb";
import type { EmbedderSettings } from "../core/config.js";
import type { Embedder } from "../core/embedder.js";
import { embedderFor } from "../core/embedder-select.js";
import type { Logger } from "../core/logger.js";
import { EMBEDDER_KEY } from "./schema.js";

/**
 * The embedder to open a lineage directory with: the one its vectors came from, or for a
 * new directory the configured one (core/embedder-select.ts). Readers pass no settings
 * and so always match what the writer built.
 */
export async function lineageEmbedder(dir: string, settings: EmbedderSettings = {}, log?: Logger): Promise<Embedder> {
  const db = await lancedb.connect(dir);
  try {
    const tables = await db.tableNames();
    let stored: string | undefined;
    if (tables.includes("trials")) {
      const trials = await db.openTable("trials");
      stored = (await trials.schema()).metadata.get(EMBEDDER_KEY);
      trials.close();
    }
    return embedderFor(dir, stored, settings, log);
  } finally {
    db.close();
  }
}
