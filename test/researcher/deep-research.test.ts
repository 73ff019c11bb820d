import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { pino } from "pino";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { parseBrief, type Brief } from "../../core/brief.js";
import { ArxivClient } from "../../research/arxiv.js";
import { CORPUS } from "../../research/corpus.js";
import { arxivQuery, DeepResearch } from "../../research/deep-research.js";
import { run } from "../helpers/run.js";

const root = mkdtempSync(join(tmpdir(), "deep-research-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;
const indexDir = () => join(root, `index-${++dirs}`);

const SE_NAME = CORPUS.find((e) => e.id === "se")!.name;
const NOTE_TITLE = "Quill gating";

function notesFolder(): { dir: string; file: string } {
  const dir = join(root, "notes");
  mkdirSync(join(dir, "tricks"), { recursive: true });
  const file = join(dir, "tricks", "quill-gating.md");
  writeFileSync(
    file,
    [
      `# ${NOTE_TITLE}`,
      "",
      "Quill gating is our own channel attention trick for small image classifiers: an SE block (squeeze-and-excitation) after each convolution,",
      "with dropout on the excitation weights so the gate cannot overfit the quills.",
      "",
      "It gave a point on Fashion-MNIST images in 2024.",
    ].join("\n"),
  );
  return { dir, file };
}

function capture() {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: "warn" }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) });
  return { logger, lines };
}

function valid(brief: Brief): Brief {
  const parsed = parseBrief(JSON.parse(JSON.stringify(brief)));
  expect(parsed.ok, parsed.ok ? "" : parsed.error).toBe(true);
  return brief;
}

// The recorded arXiv, as in arxiv.test.ts: every request gets the current answer.
const FIXTURES = resolve("test/fixtures/arxiv");
let answer: { status: number; body: string };
let requests: URL[] = [];
let server: Server;
let baseUrl: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    requests.push(new URL(req.url!, "http://localhost"));
    res.writeHead(answer.status, { "content-type": "application/atom+xml; charset=utf-8" });
    res.end(answer.body);
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/query`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((done) => server.close(done));
});

beforeEach(() => {
  answer = { status: 200, body: readFileSync(join(FIXTURES, "squeeze-excitation.xml"), "utf8") };
  requests = [];
});

function arxivClient(): ArxivClient {
  return new ArxivClient({ baseUrl, minIntervalMs: 0, sleep: async () => undefined });
}

describe("DeepResearch", () => {
  it("writes a valid brief from the index, with the SE entry for an SE-ish query", async () => {
    const deep = await DeepResearch.open({ dir: indexDir() });
    try {
      const { brief, sources } = await deep.brief("squeeze and excitation channel attention for a small CNN", { dataset: "fashion-mnist" });
      valid(brief);
      expect(brief.architectural_suggestions.map((s) => s.name)).toContain(SE_NAME);
      expect(brief.sources.map((s) => s.url)).toContain("https://arxiv.org/abs/1709.01507");
      expect(sources).toMatchObject({ notes: 0, arxiv: 0 });
      expect(sources.builtin).toBeGreaterThanOrEqual(brief.architectural_suggestions.length);

      // Output options apply as in the offline brief.
      const short = valid((await deep.brief("squeeze and excitation", { dataset: "fashion-mnist", maxSuggestions: 2, surfaces: ["architecture"] })).brief);
      expect(short.architectural_suggestions).toHaveLength(2);
      expect(short.insights.some((i) => i.startsWith("Architecture:"))).toBe(true);

      // Nothing retrievable: the offline ranking still answers.
      expect(valid((await deep.brief("the of and")).brief).architectural_suggestions.length).toBeGreaterThan(0);
    } finally {
      await deep.close();
    }
  });

  it("suggests and cites the user's own notes", async () => {
    const { dir, file } = notesFolder();
    const deep = await DeepResearch.open({ dir: indexDir(), notesDir: dir, logger: capture().logger });
    try {
      const { brief, sources } = await deep.brief("quill gating channel attention", { dataset: "fashion-mnist" });
      valid(brief);
      const note = brief.architectural_suggestions.find((s) => s.name === NOTE_TITLE);
      expect(note).toBeDefined();
      expect(note!.building_blocks).toEqual(expect.arrayContaining(["se", "dropout"]));
      expect(note!.buildable).toBe(true);
      expect(brief.sources).toContainEqual({ title: NOTE_TITLE, url: pathToFileURL(file).href });
      expect(sources.notes).toBe(1);
    } finally {
      await deep.close();
    }
  });

  it("adds arXiv results to the index and cites them", async () => {
    const deep = await DeepResearch.open({ dir: indexDir(), arxiv: arxivClient() });
    try {
      const { brief, sources } = await deep.brief("gather excite feature context for convolutional networks", { dataset: "cifar10" });
      valid(brief);
      expect(requests).toHaveLength(1);
      expect(requests[0]!.searchParams.get("max_results")).toBe("10");
      expect(brief.sources.map((s) => s.url)).toContain("https://arxiv.org/abs/1810.12348");
      expect(sources.arxiv).toBeGreaterThanOrEqual(1);
    } finally {
      await deep.close();
    }
  });

  it("still writes a brief when arXiv is down", async () => {
    answer = { status: 500, body: "<html>internal error</html>" };
    const { logger, lines } = capture();
    const deep = await DeepResearch.open({ dir: indexDir(), arxiv: arxivClient(), logger });
    try {
      const { brief, sources } = await deep.brief("squeeze and excitation channel attention", { dataset: "fashion-mnist" });
      valid(brief);
      expect(brief.architectural_suggestions.map((s) => s.name)).toContain(SE_NAME);
      expect(sources.arxiv).toBe(0);
      expect(requests.length).toBeGreaterThan(1);
      expect(lines).toContainEqual(expect.objectContaining({ reason: "http", status: 500, msg: "arXiv search failed; researching offline" }));
    } finally {
      await deep.close();
    }
  });

  it("asks arXiv with the content words of a goal only", () => {
    expect(arxivQuery("small-model classification on fashion-mnist: Fashion-MNIST, >= 92% val accuracy, < 200k params, 20 min")).toBe(
      "small-model classification fashion-mnist",
    );
    expect(arxivQuery("the of and 42")).toBe("");
  });
});

describe("research-agent research", () => {
  it("takes --notes and says which sources the brief drew on", async () => {
    const { dir, file } = notesFolder();
    const r = await run("./research-agent", ["research", "quill gating channel attention", "--dataset", "fashion-mnist", "--notes", dir], {
      timeout: 30_000,
      env: { ...process.env, LOG_LEVEL: "warn" },
    });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain(`## ${NOTE_TITLE}`);
    expect(r.stdout).toContain(pathToFileURL(file).href);
    expect(r.stdout).toMatch(/drawn from: \d+ built-in, 1 from notes, 0 from arXiv \(not searched; add --arxiv\)/);
  });
});
