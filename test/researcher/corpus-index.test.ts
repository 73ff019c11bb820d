import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CORPUS, type CorpusEntry } from "../../research/corpus.js";
import { builtinTexts, CorpusIndex } from "../../research/corpus-index.js";
import { HashingEmbedder } from "../../core/embedder.js";

const root = mkdtempSync(join(tmpdir(), "corpus-index-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const note: CorpusEntry = {
  id: "notes/zebra.md",
  name: "Zebra-stripe augmentation",
  title: "Zebra-stripe augmentation",
  year: 2024,
  summary: "Painting zebra stripes over images is a made-up augmentation. It exists only in this test.",
  usage: "Not a real technique.",
  modalities: ["vision"],
  surface: "data",
  tags: ["zebra"],
  building_blocks: [],
};

describe("CorpusIndex", () => {
  it("builds the corpus table and ranks the SE entry first for its own words", async () => {
    const index = await CorpusIndex.open(join(root, "main"));
    try {
      expect(index.rebuilt).toBe(true);
      expect(await index.count()).toBe(CORPUS.length);
      const hits = await index.search("squeeze excitation channel attention", { k: 5 });
      expect(hits[0]!.id).toBe("se");
      expect(hits[0]!.source).toBe("builtin");
      expect(hits[0]!.url).toBe("https://arxiv.org/abs/1709.01507");
      expect(hits[0]!.building_blocks).toContain("se");
      // Found by both retrievers, so it fuses above anything only one of them found.
      expect(hits[0]!.vectorRank).not.toBeNull();
      expect(hits[0]!.textRank).not.toBeNull();
      expect(hits.map((h) => h.score)).toEqual([...hits.map((h) => h.score)].sort((a, b) => b - a));
      expect(await index.search("the of and", { k: 5 })).toEqual([]);
    } finally {
      await index.close();
    }
  });

  it("embeds the built-in corpus from exactly the texts set-up embeds ahead (scripts/warm-corpus.ts)", async () => {
    // Set-up fills the embedder's cache with builtinTexts(); a first index that embedded other
    // texts would compute every vector again.
    const hashing = new HashingEmbedder();
    const seen: string[] = [];
    const recording = { dim: hashing.dim, name: hashing.name, embed: (texts: string[]) => (seen.push(...texts), hashing.embed(texts)) };
    const index = await CorpusIndex.open(join(root, "recorded"), { embedder: recording });
    await index.close();
    expect(seen).toEqual(builtinTexts());
  });

  it("filters by modality", async () => {
    const index = await CorpusIndex.open(join(root, "main"));
    try {
      const all = await index.search("attention transformer embeddings", { k: 30 });
      expect(all.some((h) => !h.modalities.includes("tabular"))).toBe(true);
      const tabular = await index.search("attention transformer embeddings", { k: 30, modality: "tabular" });
      expect(tabular.length).toBeGreaterThan(3);
      for (const h of tabular) expect(h.modalities, h.id).toContain("tabular");
      await expect(index.search("attention", { modality: "audio" as never })).rejects.toThrow(/modality/);
    } finally {
      await index.close();
    }
  });

  it("skips the rebuild when nothing changed and rebuilds when the content or embedder does, keeping added entries", async () => {
    const dir = join(root, "rebuild");
    const entries = CORPUS.slice(0, 40);
    const first = await CorpusIndex.open(dir, { entries });
    expect(first.rebuilt).toBe(true);
    expect(await first.add([note], "notes")).toBe(1);
    await first.close();

    const same = await CorpusIndex.open(dir, { entries });
    expect(same.rebuilt).toBe(false);
    expect(await same.count()).toBe(41);
    await same.close();

    const edited = entries.map((e) => (e.id === "resnet" ? { ...e, summary: `${e.summary} Quokka.` } : e));
    const changed = await CorpusIndex.open(dir, { entries: edited });
    expect(changed.rebuilt).toBe(true);
    expect(await changed.count("builtin")).toBe(40);
    expect(await changed.count("notes")).toBe(1);
    expect((await changed.search("quokka", { k: 1 }))[0]!.id).toBe("resnet");
    expect((await changed.search("zebra stripes", { k: 1 }))[0]!.id).toBe(note.id);
    await changed.close();

    const otherEmbedder = await CorpusIndex.open(dir, { entries: edited, embedder: new HashingEmbedder({ dim: 64 }) });
    expect(otherEmbedder.rebuilt).toBe(true);
    expect((await otherEmbedder.search("zebra stripes", { k: 1 }))[0]!.id).toBe(note.id);
    await otherEmbedder.close();
  });

  it("upserts added entries by id and refuses built-in ids", async () => {
    const index = await CorpusIndex.open(join(root, "add"), { entries: CORPUS.slice(0, 10) });
    try {
      await index.add([note, { ...note, summary: "Painting zebra stripes, second version. Still made up." }], "notes");
      await index.add([{ ...note, title: "Zebra-stripe augmentation v2" }], "notes");
      expect(await index.count("notes")).toBe(1);
      const [hit] = await index.search("zebra", { k: 1 });
      expect(hit!.title).toBe("Zebra-stripe augmentation v2");
      await expect(index.add([{ ...note, id: CORPUS[0]!.id }], "arxiv")).rejects.toThrow(/built-in/);
    } finally {
      await index.close();
    }
  });
});
