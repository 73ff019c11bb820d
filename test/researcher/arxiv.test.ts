import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { isCoderBlock } from "../../core/brief.js";
import { ResearchError } from "../../core/failure.js";
import { sourceUrl } from "../../research/corpus.js";
import { MISSING_BLOCKS } from "../../research/keywords.js";
import { isBuildable } from "../../research/research.js";
import { ArxivClient, buildSearchQuery, parseArxivFeed, toCorpusEntries, type ArxivClientOptions } from "../../research/arxiv.js";

const FIXTURES = resolve("test/fixtures/arxiv");
const fixture = (name: string): string => readFileSync(join(FIXTURES, `${name}.xml`), "utf8");
const SE = fixture("squeeze-excitation");
const LABEL_SMOOTHING = fixture("label-smoothing");
const EMPTY = fixture("empty");

interface Answer {
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  /** Never answer, to exercise the client's timeout. */
  hang?: boolean;
}

// The recorded arXiv: each test scripts its answers in order; the last one repeats.
let answers: Answer[] = [];
let requests: { rawUrl: string; url: URL }[] = [];
let server: Server;
let baseUrl: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    requests.push({ rawUrl: req.url!, url: new URL(req.url!, "http://localhost") });
    const answer = answers.length > 1 ? answers.shift()! : answers[0]!;
    if (answer.hang) return;
    res.writeHead(answer.status ?? 200, { "content-type": "application/atom+xml; charset=utf-8", ...answer.headers });
    res.end(answer.body ?? "");
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/query`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((done) => server.close(done));
});

let cacheDir: string;
let clock: { now: number; sleeps: number[]; stamps: number[] };

beforeEach(() => {
  answers = [{ body: SE }];
  requests = [];
  cacheDir = mkdtempSync(join(tmpdir(), "arxiv-cache-"));
  clock = { now: Date.UTC(2025, 0, 15), sleeps: [], stamps: [] };
});

afterEach(() => rmSync(cacheDir, { recursive: true, force: true }));

/** A client on the fake clock: sleeping advances time instantly, and each request records when it started. */
function client(opts: ArxivClientOptions = {}): ArxivClient {
  return new ArxivClient({
    baseUrl,
    now: () => clock.now,
    sleep: async (ms) => {
      clock.sleeps.push(ms);
      clock.now += ms;
    },
    fetch: (input, init) => {
      clock.stamps.push(clock.now);
      return fetch(input, init);
    },
    ...opts,
  });
}

async function arxivError(promise: Promise<unknown>): Promise<ResearchError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ResearchError);
  return err as ResearchError;
}

describe("parseArxivFeed", () => {
  it("reads a recorded response in the legacy layout (namespaces declared per element)", () => {
    const { total, entries } = parseArxivFeed(SE);
    expect(total).toBe(1264);
    expect(entries).toHaveLength(3);
    const [se, scse, ge] = entries;
    expect(se).toMatchObject({
      id: "1709.01507v4",
      arxivId: "1709.01507",
      title: "Squeeze-and-Excitation Networks",
      published: "2017-09-05T17:59:58Z",
      updated: "2019-05-16T15:37:36Z",
      authors: ["Jie Hu", "Li Shen", "Samuel Albanie", "Gang Sun", "Enhua Wu"],
      primaryCategory: "cs.CV",
      categories: ["cs.CV"],
      url: "https://arxiv.org/abs/1709.01507",
      pdfUrl: "http://arxiv.org/pdf/1709.01507v4",
    });
    expect(se!.summary).toMatch(/^The central building block of convolutional neural networks \(CNNs\) is the convolution operator, which/);
    expect(se!.summary).toContain('we term the "Squeeze-and-Excitation" (SE) block, that adaptively');
    expect(se!.summary).not.toMatch(/\s{2}|\n/);
    // An entity and a hard-wrapped, indented title line.
    expect(scse!.title).toBe("Concurrent Spatial and Channel Squeeze & Excitation in Fully Convolutional Networks");
    expect(scse!.summary).toContain("squeeze & excitation (SE) module");
    expect(ge!.title).toBe("Gather-Excite: Exploiting Feature Context in Convolutional Neural Networks");
  });

  it("reads the current layout (namespaces on the feed, fields in another order) and UTF-8 names", () => {
    const { total, entries } = parseArxivFeed(LABEL_SMOOTHING);
    expect(total).toBe(612);
    expect(entries.map((e) => e.arxivId)).toEqual(["1906.02629", "1512.00567", "2003.02819"]);
    expect(entries[0]).toMatchObject({
      id: "1906.02629v3",
      title: "When Does Label Smoothing Help?",
      authors: ["Rafael Müller", "Simon Kornblith", "Geoffrey Hinton"],
      primaryCategory: "cs.LG",
      categories: ["cs.LG", "cs.CV", "stat.ML"],
      published: "2019-06-06T15:17:55Z",
    });
  });

  it("reads an empty result", () => {
    expect(parseArxivFeed(EMPTY)).toEqual({ total: 0, entries: [] });
  });

  it("decodes character references and old-style identifiers", () => {
    const xml = `<feed xmlns="http://www.w3.org/2005/Atom" xmlns:os="http://a9.com/-/spec/opensearch/1.1/"><os:totalResults>1</os:totalResults>
      <entry><id>http://arxiv.org/abs/hep-th/9901001v2</id><title>Caf&#233; &#x3b1; &lt;b&gt; &quot;q&quot; &apos;a&apos;</title>
      <published>1999-01-01T00:00:00Z</published><summary/></entry></feed>`;
    const [entry] = parseArxivFeed(xml).entries;
    expect(entry).toMatchObject({ id: "hep-th/9901001v2", arxivId: "hep-th/9901001", title: `Café α <b> "q" 'a'`, summary: "", authors: [], categories: [] });
    expect(entry!.url).toBe("https://arxiv.org/abs/hep-th/9901001");
  });

  it.each([
    ["a truncated response", SE.slice(0, SE.length / 2), /never closed/],
    ["mismatched tags", '<feed xmlns="http://www.w3.org/2005/Atom"><title>x</feed>', /does not close <title>/],
    ["a bare ampersand", '<feed xmlns="http://www.w3.org/2005/Atom"><title>R&D</title></feed>', /bare "&"/],
    ["an unknown entity", '<feed xmlns="http://www.w3.org/2005/Atom"><title>&nbsp;</title></feed>', /unknown entity &nbsp;/],
    ["an HTML error page", "<html><body>Service Unavailable</body></html>", /not an Atom <feed>/],
    ["a feed without totalResults", '<feed xmlns="http://www.w3.org/2005/Atom"></feed>', /totalResults is missing/],
    ["an undeclared prefix", '<feed xmlns="http://www.w3.org/2005/Atom"><os:totalResults>1</os:totalResults></feed>', /undeclared namespace prefix "os"/],
    ["an entry without an id", SE.replace("<id>http://arxiv.org/abs/1709.01507v4</id>", ""), /entry 0 has no <id>/],
    ["text after the root", `${EMPTY}trailing`, /text outside the root/],
    ["plain text", "not xml at all", /text outside the root/],
  ])("rejects %s as a parse error", (_, xml, message) => {
    let err: unknown;
    try {
      parseArxivFeed(xml);
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ label: "crash", reason: "invalid_output" });
    expect((err as ResearchError).message).toMatch(message);
  });
});

describe("query building", () => {
  it("ANDs terms over all fields and keeps quoted phrases", () => {
    expect(buildSearchQuery("squeeze excitation")).toBe("all:squeeze AND all:excitation");
    expect(buildSearchQuery('"Label Smoothing"  calibration')).toBe('all:"label smoothing" AND all:calibration');
    expect(buildSearchQuery("Squeeze-and-Excitation (SE) networks")).toBe('all:"squeeze and excitation" AND all:se AND all:networks');
    expect(buildSearchQuery("resnet AND cifar OR mnist")).toBe("all:resnet AND all:cifar AND all:mnist");
    expect(buildSearchQuery('title:"vision transformer" "unclosed')).toBe('all:title AND all:"vision transformer" AND all:unclosed');
    expect(() => buildSearchQuery(' "" -- ')).toThrow(TypeError);
  });

  it("sends it URL-encoded with paging and sort parameters", async () => {
    await client().search('"label smoothing" calibration', { maxResults: 5, start: 20, sortBy: "submittedDate" });
    expect(requests).toHaveLength(1);
    expect(requests[0]!.rawUrl).toBe("/api/query?search_query=all%3A%22label+smoothing%22+AND+all%3Acalibration&start=20&max_results=5&sortBy=submittedDate&sortOrder=descending");
    expect(requests[0]!.url.searchParams.get("search_query")).toBe('all:"label smoothing" AND all:calibration');
  });

  it("uses the documented defaults and refuses out-of-range paging", async () => {
    await client().search("squeeze excitation");
    expect(Object.fromEntries(requests[0]!.url.searchParams)).toEqual({
      search_query: "all:squeeze AND all:excitation",
      start: "0",
      max_results: "10",
      sortBy: "relevance",
      sortOrder: "descending",
    });
    expect(() => client().searchUrl("x", { maxResults: 0 })).toThrow(RangeError);
    expect(() => client().searchUrl("x", { maxResults: 2001 })).toThrow(RangeError);
    expect(() => client().searchUrl("x", { start: -1 })).toThrow(RangeError);
  });
});

describe("ArxivClient", () => {
  it("spaces requests of one client at least minIntervalMs apart, also when called concurrently", async () => {
    const arxiv = client();
    await arxiv.search("squeeze excitation");
    await arxiv.search("label smoothing");
    expect(clock.sleeps).toEqual([3000]);
    await Promise.all([arxiv.search("mixup"), arxiv.search("cutout"), arxiv.search("mixup")]);
    // The repeated concurrent query shares one request.
    expect(requests).toHaveLength(4);
    for (let i = 1; i < clock.stamps.length; i++) expect(clock.stamps[i]! - clock.stamps[i - 1]!).toBeGreaterThanOrEqual(3000);
  });

  it("does not wait when the interval has already passed", async () => {
    const arxiv = client();
    await arxiv.search("squeeze excitation");
    clock.now += 5000;
    await arxiv.search("label smoothing");
    expect(clock.sleeps).toEqual([]);
  });

  it("caches by request url; a hit touches neither the network nor the rate limiter", async () => {
    const first = await client({ cacheDir }).search("squeeze excitation");
    const url = client().searchUrl("squeeze excitation");
    const file = join(cacheDir, `${createHash("sha256").update(url).digest("hex")}.json`);
    const stored = JSON.parse(readFileSync(file, "utf8"));
    expect(stored).toMatchObject({ url, fetched_at: new Date(clock.now).toISOString() });
    expect(stored.result).toEqual(first);

    clock.now += 6 * 24 * 3600 * 1000;
    const hit = await new ArxivClient({
      baseUrl,
      cacheDir,
      now: () => clock.now,
      fetch: () => Promise.reject(new Error("network used on a cache hit")),
      sleep: () => Promise.reject(new Error("rate limiter used on a cache hit")),
    }).search("squeeze excitation");
    expect(hit).toEqual(first);
    expect(requests).toHaveLength(1);
  });

  it("refetches entries older than maxAgeMs", async () => {
    await client({ cacheDir }).search("squeeze excitation");
    clock.now += 8 * 24 * 3600 * 1000;
    await client({ cacheDir }).search("squeeze excitation");
    expect(requests).toHaveLength(2);
    await client({ cacheDir, maxAgeMs: 1000 }).search("squeeze excitation");
    expect(requests).toHaveLength(2);
  });

  it("offline, serves the cache whatever its age and fails clearly on a miss", async () => {
    await client({ cacheDir }).search("squeeze excitation");
    clock.now += 365 * 24 * 3600 * 1000;
    const offline = client({ cacheDir, offline: true });
    expect((await offline.search("squeeze excitation")).total).toBe(1264);
    const err = await arxivError(offline.search("label smoothing"));
    expect(err).toMatchObject({ reason: "offline", retryable: false });
    expect(err.message).toMatch(/offline and nothing cached for .*all%3Alabel\+AND\+all%3Asmoothing/);
    expect(requests).toHaveLength(1);
    expect(() => new ArxivClient({ offline: true })).toThrow(/needs a cacheDir/);
  });

  it("treats a damaged cache file as a miss", async () => {
    await client({ cacheDir }).search("squeeze excitation");
    const [name] = readdirSync(cacheDir);
    writeFileSync(join(cacheDir, name!), "{ half a fi");
    expect((await client({ cacheDir }).search("squeeze excitation")).total).toBe(1264);
    expect(requests).toHaveLength(2);
  });

  it("honours Retry-After on 429, then succeeds", async () => {
    answers = [{ status: 429, headers: { "retry-after": "5" }, body: "Rate exceeded." }, { body: LABEL_SMOOTHING }];
    const result = await client({ cacheDir }).search('"label smoothing"');
    expect(result.entries).toHaveLength(3);
    expect(requests).toHaveLength(2);
    expect(clock.sleeps).toEqual([5000]);
    expect(clock.stamps[1]! - clock.stamps[0]!).toBeGreaterThanOrEqual(5000);
  });

  it("gives up at once when Retry-After is longer than maxRetryWaitMs", async () => {
    const retryAt = new Date(clock.now + 3600_000).toUTCString();
    answers = [{ status: 503, headers: { "retry-after": retryAt } }, { body: SE }];
    const err = await arxivError(client().search("squeeze excitation"));
    expect(err).toMatchObject({ reason: "http", status: 503, retryAfterMs: 3600_000, attempts: 1, retryable: true });
    expect(requests).toHaveLength(1);
  });

  it("stops after three attempts on server errors, caching nothing", async () => {
    answers = [{ status: 500, body: "<html><body><h1>Internal Server Error</h1></body></html>" }];
    const err = await arxivError(client({ cacheDir }).search("squeeze excitation"));
    expect(err).toMatchObject({ reason: "http", status: 500, attempts: 3 });
    expect(err.message).toMatch(/HTTP 500: Internal Server Error/);
    expect(requests).toHaveLength(3);
    // Backoff 3 s then 6 s when the server gives no Retry-After.
    expect(clock.sleeps).toEqual([3000, 6000]);
    expect(readdirSync(cacheDir)).toEqual([]);
  });

  it("reports an API error feed without retrying it", async () => {
    answers = [
      {
        status: 400,
        body: `<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <title type="html">ArXiv Query: search_query=&amp;id_list=&amp;start=-1&amp;max_results=10</title>
  <opensearch:totalResults xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">1</opensearch:totalResults>
  <entry>
    <id>http://arxiv.org/api/errors#start_must_be_an_integer_greater_than_or_equal_to_0</id>
    <title>Error</title>
    <summary>start must be an integer greater than or equal to 0</summary>
    <link href="http://arxiv.org/api/errors#start_must_be_an_integer_greater_than_or_equal_to_0" rel="alternate" type="text/html"/>
  </entry>
</feed>`,
      },
    ];
    const err = await arxivError(client().search("squeeze excitation"));
    expect(err).toMatchObject({ label: "invalid_config", reason: "http", status: 400, retryable: false });
    expect(err.message).toMatch(/HTTP 400: start must be an integer greater than or equal to 0/);
    expect(requests).toHaveLength(1);
  });

  it("reports malformed XML as a parse error, without retrying or caching", async () => {
    answers = [{ body: SE.slice(0, 2000) }];
    const err = await arxivError(client({ cacheDir }).search("squeeze excitation"));
    expect(err.reason).toBe("invalid_output");
    expect(err.message).toContain(baseUrl);
    expect(requests).toHaveLength(1);
    expect(readdirSync(cacheDir)).toEqual([]);
  });

  it("retries the sporadic empty page that arXiv serves although results exist", async () => {
    answers = [{ body: SE.replace(/<entry>[\s\S]*<\/entry>/, "") }, { body: SE }];
    expect((await client().search("squeeze excitation")).entries).toHaveLength(3);
    expect(requests).toHaveLength(2);
  });

  it("times out a request that never answers", async () => {
    answers = [{ hang: true }];
    const started = Date.now();
    const err = await arxivError(client({ timeoutMs: 100 }).search("squeeze excitation"));
    expect(err).toMatchObject({ reason: "timeout", attempts: 3, retryable: true });
    expect(requests).toHaveLength(3);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("reports an unreachable server as a network error", async () => {
    const closed = createServer();
    await new Promise<void>((done) => closed.listen(0, "127.0.0.1", done));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((done) => closed.close(done));
    const err = await arxivError(client({ baseUrl: `http://127.0.0.1:${port}/api/query` }).search("squeeze excitation"));
    expect(err).toMatchObject({ reason: "network", attempts: 3 });
  });
});

describe("toCorpusEntries", () => {
  it("maps results onto the corpus shape with the shared keyword rules' building blocks", () => {
    const entries = toCorpusEntries([...parseArxivFeed(SE).entries, ...parseArxivFeed(LABEL_SMOOTHING).entries]);
    for (const e of entries) {
      expect(e.id).toMatch(/^arxiv-[a-z0-9-]+$/);
      expect(e.prior).toBe(0);
      expect(e.modalities.length).toBeGreaterThan(0);
      expect(e.building_blocks.every((b) => isCoderBlock(b) || (MISSING_BLOCKS as readonly string[]).includes(b)), e.id).toBe(true);
      expect(e.summary.length).toBeGreaterThan(100);
    }
    const byId = new Map(entries.map((e) => [e.arxiv_id, e]));

    const se = byId.get("1709.01507")!;
    expect(se).toMatchObject({ id: "arxiv-1709-01507", concept: "se", name: "Squeeze-and-Excitation Networks", year: 2017, modalities: ["vision"], surface: "architecture" });
    expect(se.building_blocks).toEqual(expect.arrayContaining(["se", "conv2d"]));
    expect(isBuildable(se)).toBe(true);
    expect(se.tags).toEqual(expect.arrayContaining(["channel attention", "recalibration"]));
    expect(sourceUrl(se)).toBe("https://arxiv.org/abs/1709.01507");

    expect(byId.get("1810.12348")!.name).toBe("Gather-Excite");
    expect(byId.get("1810.12348")!.concept).toBeUndefined();

    const ls = byId.get("1906.02629")!;
    // The abstract is about distillation too; a block the coder lacks is kept, so the entry does not claim to be buildable.
    expect(ls).toMatchObject({ concept: "label-smoothing", surface: "regularisation", building_blocks: ["label_smoothing", "distillation"] });
    expect(isBuildable(ls)).toBe(false);
    expect(ls.modalities).toEqual(expect.arrayContaining(["vision", "text"]));
    expect(ls.tags).toEqual(expect.arrayContaining(["calibration", "distillation"]));

    const noise = byId.get("2003.02819")!;
    expect(noise).toMatchObject({ surface: "regularisation", modalities: ["vision", "tabular", "text"] });
    expect(noise.tags).toContain("label noise");
  });
});
