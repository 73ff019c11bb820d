import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { pino } from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { CORPUS } from "../../research/corpus.js";
import { CorpusIndex } from "../../research/corpus-index.js";
import { inferBlocks, inferModalities, inferSurface } from "../../research/keywords.js";
import { findOnPath, loadNotes } from "../../research/notes.js";

const root = mkdtempSync(join(tmpdir(), "notes-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function notesFolder(): string {
  const dir = join(root, "notes");
  mkdirSync(join(dir, "lab", "sweeps"), { recursive: true });
  mkdirSync(join(dir, ".obsidian"), { recursive: true });
  writeFileSync(
    join(dir, "lab", "sweeps", "width-sweep.md"),
    [
      "---",
      "tags: [ignored]",
      "---",
      "# Width sweep on Fashion-MNIST",
      "",
      "Widening the **inverted residual** blocks from 16 to 48 channels bought 1.2 points on the images, run in 2021.",
      "Adding [squeeze-and-excitation](https://example.org) on top gave a further 0.3 points at 4k extra parameters.",
      "",
      "```python",
      "x = layer_norm(x)  # code is not summary text",
      "```",
      "",
      "Next: try the same sweep with a cosine schedule.",
    ].join("\n"),
  );
  writeFileSync(
    join(dir, "sentiment_baselines.txt"),
    "Bag-of-words baselines for sentiment of movie reviews.\nWord embeddings averaged, then dropout and a linear layer.\n\nNotes from a reading group.\n",
  );
  writeFileSync(join(dir, "scan.pdf"), "%PDF-1.4 not a real pdf");
  writeFileSync(join(dir, "figure.png"), "not text");
  writeFileSync(join(dir, ".obsidian", "workspace.md"), "# Tool state");
  return dir;
}

function capture() {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: "warn" }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) });
  return { logger, lines };
}

describe("loadNotes", () => {
  it("reads markdown and text recursively, and skips PDFs with a warning when pdftotext is missing", async () => {
    const dir = notesFolder();
    const { logger, lines } = capture();
    const { entries, skipped } = await loadNotes(dir, { pdftotext: null, logger });

    expect(entries.map((e) => e.id)).toEqual(["notes/lab/sweeps/width-sweep.md", "notes/sentiment_baselines.txt"]);
    const [md, txt] = entries;
    expect(md!.title).toBe("Width sweep on Fashion-MNIST");
    expect(md!.summary).toMatch(/^Widening the inverted residual blocks from 16 to 48 channels bought 1\.2 points on the images, run in 2021\. Adding squeeze-and-excitation on top/);
    expect(md!.summary).not.toMatch(/layer_norm|tags:/);
    expect(md!.year).toBe(2021);
    expect(md!.tags).toEqual(["lab", "sweeps"]);
    expect(md!.modalities).toEqual(["vision"]);
    expect(md!.building_blocks).toEqual(expect.arrayContaining(["mbconv", "se", "residual"]));
    expect(md!.building_blocks).not.toContain("layernorm");
    expect(md!.url).toMatch(/^file:\/\/.*width-sweep\.md$/);

    expect(txt!.title).toBe("sentiment baselines");
    expect(txt!.summary).toMatch(/^Bag-of-words baselines for sentiment of movie reviews\. Word embeddings averaged/);
    expect(txt!.modalities).toEqual(["text"]);
    expect(txt!.building_blocks).toEqual(expect.arrayContaining(["embedding", "dropout", "linear"]));

    expect(skipped).toEqual([{ path: "scan.pdf", reason: expect.stringMatching(/pdftotext not found/) }]);
    expect(lines).toHaveLength(1);
    expect(lines[0]!.files).toEqual(["scan.pdf"]);
    expect(String(lines[0]!.msg)).toMatch(/skipped 1 PDF/);
  });

  it("extracts PDF text through pdftotext when it is there", async () => {
    const dir = join(root, "pdf");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "ghost.pdf"), "%PDF-1.4");
    writeFileSync(join(dir, "empty.md"), "\n\n");
    // A stand-in binary: the contract is `pdftotext -q -enc UTF-8 FILE -` printing text on stdout.
    const bin = join(root, "bin");
    mkdirSync(bin, { recursive: true });
    const fake = join(bin, "pdftotext");
    writeFileSync(fake, "#!/bin/sh\nprintf 'Ghost modules generate feature maps from cheap depthwise convolutions on images.\\n\\nMore text.\\n'\n");
    chmodSync(fake, 0o755);
    expect(await findOnPath("pdftotext", ["/nonexistent", bin].join(delimiter))).toBe(fake);

    const { entries, skipped } = await loadNotes(dir, { pdftotext: fake, logger: capture().logger });
    expect(skipped).toEqual([{ path: "empty.md", reason: "no text" }]);
    expect(entries).toHaveLength(1);
    expect(entries[0]!.title).toBe("ghost");
    expect(entries[0]!.building_blocks).toEqual(expect.arrayContaining(["ghost", "depthwise_conv2d"]));
  });

  it("makes notes searchable once added to the corpus index", async () => {
    const { entries } = await loadNotes(notesFolder(), { pdftotext: null, logger: capture().logger });
    const index = await CorpusIndex.open(join(root, "index"));
    try {
      expect(await index.add(entries, "notes")).toBe(2);
      const [hit] = await index.search("width sweep fashion-mnist", { k: 3 });
      expect(hit!.id).toBe("notes/lab/sweeps/width-sweep.md");
      expect(hit!.source).toBe("notes");
      const text = await index.search("sentiment movie reviews reading group", { k: 5, modality: "text" });
      expect(text.map((h) => h.id)).toContain("notes/sentiment_baselines.txt");
      expect(await index.count()).toBe(CORPUS.length + 2);
    } finally {
      await index.close();
    }
  });
});

describe("keyword rules", () => {
  it("infer blocks, modalities and surface from free text", () => {
    expect(inferBlocks("A CNN with batch norm, ReLU and global average pooling, trained with AdamW and cosine annealing.")).toEqual([
      "conv2d", "batchnorm", "activation:relu", "avgpool", "global_avgpool", "adamw", "cosine_schedule",
    ]);
    expect(inferBlocks("Adam with warm-up")).toEqual(["adam", "warmup"]);
    expect(inferModalities("nothing in particular")).toEqual(["vision", "tabular", "text"]);
    expect(inferModalities("tabular data in csv tables, and one image")).toEqual(["tabular"]);
    expect(inferSurface("random crop and flip augmentation of the dataset")).toBe("data");
    expect(inferSurface("learning rate schedule with warmup and momentum")).toBe("optimisation");
    expect(inferSurface("")).toBe("architecture");
  });
});
