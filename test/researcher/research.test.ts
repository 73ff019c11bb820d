import { describe, expect, it } from "vitest";
import { BriefSchema, isCoderBlock, parseBrief, type Brief } from "../../core/brief.js";
import { SURFACE } from "../../core/enums.js";
import { CORPUS, sourceUrl, type CorpusEntry } from "../../research/corpus.js";
import { isBuildable, parseOutputFormat, rankCorpus, researchBrief, tokenize } from "../../research/research.js";

const byName = new Map<string, CorpusEntry>();
for (const e of CORPUS) if (!byName.has(e.name)) byName.set(e.name, e);

function entriesOf(brief: Brief): CorpusEntry[] {
  return brief.architectural_suggestions.map((s) => {
    const e = byName.get(s.name);
    if (!e) throw new Error(`suggestion "${s.name}" is not a corpus entry`);
    return e;
  });
}

describe("offline corpus", () => {
  it("holds at least 60 distinct, well-formed entries", () => {
    expect(CORPUS.length).toBeGreaterThanOrEqual(60);
    expect(new Set(CORPUS.map((e) => e.id)).size).toBe(CORPUS.length);
    for (const e of CORPUS) {
      expect(e.id).toMatch(/^[a-z0-9-]+$/);
      if (e.arxiv_id) expect(e.arxiv_id, e.id).toMatch(/^\d{4}\.\d{4,5}$/);
      if (e.url) expect(e.url, e.id).toMatch(/^https?:\/\//);
      expect(e.year, e.id).toBeGreaterThan(1985);
      expect(e.year, e.id).toBeLessThanOrEqual(2025);
      expect(e.summary.split(/(?<=[.;])\s+/).length, e.id).toBeGreaterThanOrEqual(2);
      expect(e.modalities.length, e.id).toBeGreaterThan(0);
      expect(e.building_blocks.length, e.id).toBeGreaterThan(0);
      // Backticked names in a usage note are declared blocks or coder names (e.g. "instead of `maxpool`"), never typos.
      for (const [, named] of e.usage.matchAll(/`([^`]+)`/g)) {
        expect(e.building_blocks.includes(named!) || isCoderBlock(named!), `${e.id}: ${named}`).toBe(true);
      }
    }
  });

  it("covers every modality and recipe surface with buildable entries", () => {
    for (const modality of ["vision", "tabular", "text"] as const) {
      expect(CORPUS.filter((e) => e.modalities.includes(modality) && isBuildable(e)).length, modality).toBeGreaterThanOrEqual(5);
    }
    for (const surface of SURFACE.names) {
      expect(CORPUS.some((e) => e.surface === surface && isBuildable(e)), surface).toBe(true);
    }
  });

  it("cites the known arXiv ids of the landmark papers", () => {
    const ids = new Map(CORPUS.map((e) => [e.id, e.arxiv_id]));
    expect(ids.get("resnet")).toBe("1512.03385");
    expect(ids.get("batchnorm")).toBe("1502.03167");
    expect(ids.get("se")).toBe("1709.01507");
    expect(ids.get("mobilenet-v2")).toBe("1801.04381");
    expect(ids.get("ghostnet")).toBe("1911.11907");
    expect(ids.get("vit")).toBe("2010.11929");
    expect(ids.get("adamw")).toBe("1711.05101");
    expect(sourceUrl(CORPUS.find((e) => e.id === "dropout")!)).toBe("https://jmlr.org/papers/v15/srivastava14a.html");
  });
});

describe("researchBrief", () => {
  const visionQuery = "Fashion-MNIST, >= 92% val accuracy, < 200k params, 20 min";

  it("ranks vision techniques first for an image goal", () => {
    const brief = researchBrief(visionQuery);
    const entries = entriesOf(brief);
    expect(entries.length).toBe(6);
    for (const e of entries) expect(e.modalities, e.id).toContain("vision");
    expect(entries[0]!.modalities).toEqual(["vision"]);
    expect(brief.summary_title).toMatch(/fashion-mnist/);
    expect(brief.insights.join(" ")).toMatch(/200k/);
  });

  it("ranks tabular techniques first for a tabular goal", () => {
    const brief = researchBrief("small MLP for tabular classification of numeric features", { dataset: "breast-cancer" });
    const entries = entriesOf(brief);
    expect(entries[0]!.modalities).toContain("tabular");
    expect(entries.filter((e) => e.modalities.includes("tabular")).length).toBe(entries.length);
    expect(entries.some((e) => e.modalities.length === 1 && e.modalities[0] === "tabular")).toBe(true);
  });

  it("infers the modality from a csv goal in the query, also when the dataset arrives empty", () => {
    const brief = researchBrief("csv:/data/titanic.csv target=Survived 0.8", { dataset: "" });
    expect(brief.summary_title).toMatch(/^Offline research brief for csv: /);
    const entries = entriesOf(brief);
    expect(entries[0]!.modalities).toContain("tabular");
    for (const e of entries) expect(e.modalities, e.id).not.toEqual(["vision"]);
  });

  it("prefers text techniques for a text dataset", () => {
    const entries = entriesOf(researchBrief("sentiment of short reviews", { dataset: "text" }));
    expect(entries[0]!.modalities).toEqual(["text"]);
    for (const e of entries) expect(e.modalities, e.id).toContain("text");
  });

  it("follows the query words", () => {
    const top = rankCorpus("depthwise separable convolutions", { dataset: "cifar10" })[0]!;
    expect(top.entry.building_blocks).toContain("depthwise_conv2d");
    expect(rankCorpus("reduce overfitting with dropout")[0]!.entry.concept).toBe("dropout");
  });

  it("validates against the brief schema, buildable only within the coder vocabulary", () => {
    for (const [query, dataset] of [[visionQuery, undefined], ["tabular", "iris"], ["text classification", "text"], ["", undefined]] as const) {
      const brief = researchBrief(query, { dataset, maxSuggestions: 10 });
      expect(BriefSchema.safeParse(brief).success).toBe(true);
      expect(parseBrief(JSON.stringify(brief)).ok).toBe(true);
      for (const s of brief.architectural_suggestions) {
        expect(s.buildable).toBe(s.building_blocks!.every(isCoderBlock));
        for (const block of s.building_blocks!) expect(s.implementation_note).toContain(`\`${block}\``);
        if (!s.buildable) expect(s.implementation_note).toMatch(/Not buildable yet/);
      }
      expect(brief.sources.length).toBeGreaterThan(0);
      expect(new Set(brief.sources.map((s) => s.url)).size).toBe(brief.sources.length);
      for (const s of brief.sources) expect(s.url).toMatch(/^https:\/\/arxiv\.org\/abs\/\d{4}\.\d{4,5}$|^https?:\/\/(?!arxiv)/);
    }
  });

  it("is deterministic", () => {
    const a = researchBrief(visionQuery, { dataset: "fashion-mnist" });
    const b = researchBrief(visionQuery, { dataset: "fashion-mnist" });
    expect(JSON.stringify(b)).toBe(JSON.stringify(a));
    expect(rankCorpus("label smoothing").map((r) => r.entry.id)).toEqual(rankCorpus("label smoothing").map((r) => r.entry.id));
  });

  it("collapses entries of one concept into one suggestion that cites all of them", () => {
    const brief = researchBrief("label smoothing regularization", { maxSuggestions: 10 });
    expect(brief.architectural_suggestions.filter((s) => s.name === "Label smoothing")).toHaveLength(1);
    const urls = brief.sources.map((s) => s.url);
    expect(urls).toContain("https://arxiv.org/abs/1512.00567");
    expect(urls).toContain("https://arxiv.org/abs/1906.02629");
    expect(new Set(brief.architectural_suggestions.map((s) => s.name)).size).toBe(brief.architectural_suggestions.length);
  });

  it("spreads suggestions over recipe surfaces", () => {
    const entries = entriesOf(researchBrief(visionQuery, { maxSuggestions: 6 }));
    expect(new Set(entries.map((e) => e.surface)).size).toBeGreaterThanOrEqual(3);
  });

  it("honours maxSuggestions and k, and rejects nonsense options", () => {
    expect(researchBrief("cnn", { maxSuggestions: 2 }).architectural_suggestions).toHaveLength(2);
    expect(researchBrief("cnn", { maxSuggestions: 3, k: 3 }).architectural_suggestions).toHaveLength(3);
    expect(() => researchBrief("cnn", { maxSuggestions: 0 })).toThrow();
    expect(() => researchBrief("cnn", { k: 1.5 })).toThrow();
  });

  it("tokenises spelling variants onto the same terms", () => {
    expect(tokenize("regularisation")).toEqual(tokenize("regularization"));
    expect(tokenize("optimiser")).toEqual(tokenize("optimizer"));
    expect(tokenize("normalise")).toEqual(tokenize("normalization"));
    expect(tokenize("constructor toString")).toEqual(["constructor", "tostr"]);
    expect(tokenize("images")).toEqual(tokenize("image"));
    expect(tokenize("params")).toEqual(tokenize("parameters"));
    expect(tokenize("the 200k of a")).toEqual([]);
  });
});

describe("output_format", () => {
  it("shapes how many and which kind of items come back", () => {
    const opts = parseOutputFormat("3 suggestions, 2 insights, regularisation only");
    expect(opts).toMatchObject({ maxSuggestions: 3, maxInsights: 2, surfaces: ["regularisation"] });
    const brief = researchBrief("fashion-mnist small cnn", { dataset: "fashion-mnist", ...opts });
    expect(brief.architectural_suggestions).toHaveLength(3);
    expect(brief.insights.length).toBeLessThanOrEqual(2);
    expect(parseBrief(brief).ok).toBe(true);
    expect(parseOutputFormat("suggestions=5 sources=4 surfaces=data")).toMatchObject({ maxSuggestions: 5, maxSources: 4, surfaces: ["data"] });
  });
});
