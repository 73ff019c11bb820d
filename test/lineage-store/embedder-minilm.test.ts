import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { HashingEmbedder } from "../../core/embedder.js";
import { MINILM_NAME, MiniLmEmbedder, miniLmInstalled } from "../../core/embedder-minilm.js";
import { configuredEmbedder, embedderFor, embedderNamed } from "../../core/embedder-select.js";
import { ResearchError } from "../../core/failure.js";
import { trialId } from "../../core/ids.js";
import { lineageEmbedder } from "../../lineage-store/embedder.js";
import { LineageStore } from "../../lineage-store/store.js";
import { runEvents } from "./fixtures.js";

const root = mkdtempSync(join(tmpdir(), "lineage-minilm-"));
const dot = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
};

// scripts/setup.sh installs .venv, and scripts/test.sh runs it first, so this skips only
// where the tests run without set-up.
const installed = miniLmInstalled();
if (!installed) console.warn("skipping the MiniLM model tests: no .venv (run scripts/setup.sh)");

describe.skipIf(!installed)("MiniLmEmbedder", () => {
  // One model process for the file: loading it takes seconds. Its vectors file starts empty,
  // so every new text goes through the model.
  const cacheFile = join(root, "cache", "vectors.bin");
  const e = new MiniLmEmbedder({ cacheFile });
  afterAll(() => e.close());

  it("returns 384-dim unit vectors, and the zero vector for a text without content words", async () => {
    const vectors = await e.embed(["squeeze excitation block", "", "cosine schedule", "the of and"]);
    expect(vectors.map((v) => v.length)).toEqual([384, 384, 384, 384]);
    expect(dot(vectors[0]!, vectors[0]!)).toBeCloseTo(1, 5);
    expect(dot(vectors[2]!, vectors[2]!)).toBeCloseTo(1, 5);
    expect(dot(vectors[1]!, vectors[1]!)).toBe(0);
    expect(dot(vectors[3]!, vectors[3]!)).toBe(0);
    expect(e.name).toBe(MINILM_NAME);
  });

  it("ranks a sentence that means the same above one that shares no meaning", async () => {
    // No word in common with the query: the hashing embedder cannot see the relation.
    const [q, related, unrelated] = await e.embed([
      "the model ran out of GPU memory",
      "CUDA OOM: allocation failed while training a huge network",
      "label smoothing to reduce overconfident predictions",
    ]);
    expect(dot(q!, related!)).toBeGreaterThan(dot(q!, unrelated!) + 0.15);
  });

  it("keeps vectors in a file that later processes read instead of asking the model", async () => {
    const texts = ["cosine learning rate schedule", "random crop and flip"];
    const first = await e.embed(texts);
    // No python: only the file can answer.
    const later = new MiniLmEmbedder({ cacheFile, python: join(root, "no-venv", "bin", "python") });
    const again = await later.embed([texts[1]!, texts[0]!, texts[1]!]);
    expect(again.map((v) => Array.from(v))).toEqual([first[1]!, first[0]!, first[1]!].map((v) => Array.from(v)));
    await expect(later.embed(["a text nobody embedded"])).rejects.toThrow(/scripts\/setup\.sh/);
  });

  it("closes in a process with nothing else pending: its await settles and the process ends cleanly", () => {
    // The child is unref'd between requests; a close that did not hold it left a script's
    // top-level await unsettled, and Node exited 13.
    const script = join(root, "close.mts");
    writeFileSync(script, `import { MiniLmEmbedder } from ${JSON.stringify(resolve("core/embedder-minilm.ts"))};
const e = new MiniLmEmbedder({ cacheFile: null });
await e.embed(["a residual block"]);
await e.close();
console.log("closed");
`);
    const r = spawnSync(process.execPath, ["--import", "tsx", script], { encoding: "utf8", timeout: 60_000 });
    expect([r.status, r.stdout.trim()], r.stderr.slice(-1000)).toEqual([0, "closed"]);
  });

  it("backs a LineageStore: similar trials by meaning", async () => {
    const store = await LineageStore.open(join(root, "store"), { embedder: e });
    try {
      await store.applyEvents(runEvents("net"));
      // Trial 4 is "label smoothing to reduce overconfident predictions": no word of the query.
      const [top] = await store.similarTrials({ text: "softer target labels", k: 1 });
      expect(top!.trial_id).toBe(trialId("net", 4));
    } finally {
      await store.close();
    }
    // A reader with no setting follows the directory.
    expect((await lineageEmbedder(join(root, "store"))).name).toBe(MINILM_NAME);
  });
});

describe("embedder choice", () => {
  it("fails clearly when the model's python is missing", async () => {
    const e = new MiniLmEmbedder({ python: join(root, "no-venv", "bin", "python") });
    const err = await e.embed(["x"]).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(ResearchError);
    expect((err as ResearchError).label).toBe("invalid_config");
    expect((err as ResearchError).message).toMatch(/scripts\/setup\.sh/);
  });

  it("defaults to MiniLM when installed, else hashing; names map back to their embedders", () => {
    expect(configuredEmbedder().name).toBe(installed ? MINILM_NAME : "hashing-v1-256");
    expect(configuredEmbedder({ choice: "hashing" }).name).toBe("hashing-v1-256");
    expect(embedderNamed("hashing-v1-64").dim).toBe(64);
    expect(embedderNamed("openai:nomic-embed-text:768").name).toBe("openai:nomic-embed-text:768");
    expect(() => embedderNamed("word2vec")).toThrow(/unknown embedder/);
    if (installed) expect(embedderNamed(MINILM_NAME)).toBe(embedderNamed("minilm"));
  });

  it("keeps a directory's embedder, and refuses a setting that would mix vectors", async () => {
    const dir = join(root, "hashing-store");
    const store = await LineageStore.open(dir, { embedder: new HashingEmbedder() });
    await store.close();
    expect((await lineageEmbedder(dir)).name).toBe("hashing-v1-256");
    expect((await lineageEmbedder(dir, { choice: "hashing" })).name).toBe("hashing-v1-256");
    expect((await lineageEmbedder(join(root, "new-store"))).name).toBe(configuredEmbedder().name);
    expect(() => embedderFor(dir, "hashing-v1-256", { choice: "hashing-v1-64" as string })).toThrow(/holds vectors from embedder hashing-v1-256/);
    if (installed) await expect(lineageEmbedder(dir, { choice: "minilm" })).rejects.toThrow(/unset EMBEDDER to keep using hashing-v1-256/);
  });
});

afterAll(() => rmSync(root, { recursive: true, force: true }));
