import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HashingEmbedder, OpenAIEmbedder } from "../../core/embedder.js";
import { LineageStore } from "../../lineage-store/store.js";
import { trialId } from "../../core/ids.js";
import { runEvents } from "./fixtures.js";

const cosine = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let dot = 0;
  for (let i = 0; i < a.length; i++) dot += a[i]! * b[i]!;
  return dot;
};
const norm = (a: ArrayLike<number>) => Math.sqrt(cosine(a, a));

describe("HashingEmbedder", () => {
  const e = new HashingEmbedder();

  it("is deterministic, L2-normalised and sized as asked", async () => {
    const [a, b] = await e.embed(["Wider conv stack with BatchNorm", "wider conv stack with batchnorm"]);
    expect(a).toHaveLength(256);
    expect(Array.from(a!)).toEqual(Array.from(b!));
    expect(norm(a!)).toBeCloseTo(1, 5);
    expect(Array.from(new HashingEmbedder().embedOne("cosine schedule"))).toEqual(Array.from(e.embedOne("cosine schedule")));
    expect(new HashingEmbedder({ dim: 64 }).embedOne("x")).toHaveLength(64);
    expect(new HashingEmbedder({ dim: 64 }).name).not.toBe(e.name);
    expect(() => new HashingEmbedder({ dim: 3 })).toThrow();
  });

  it("puts similar texts closer than unrelated ones", () => {
    const q = e.embedOne("squeeze excitation block");
    const se = e.embedOne("add squeeze-excitation blocks after each conv stage");
    const sched = e.embedOne("cosine learning rate schedule with warmup");
    const aug = e.embedOne("random crop and horizontal flip augmentation");
    expect(cosine(q, se)).toBeGreaterThan(0.3);
    expect(cosine(q, se)).toBeGreaterThan(cosine(q, sched) + 0.2);
    expect(cosine(q, se)).toBeGreaterThan(cosine(q, aug) + 0.2);
    // Character trigrams bridge spellings that share no whole word.
    expect(cosine(e.embedOne("batchnorm"), e.embedOne("batch norm"))).toBeGreaterThan(0.2);
  });

  it("leaves an empty text at zero (similar to nothing)", () => {
    expect(norm(e.embedOne(""))).toBe(0);
    expect(norm(e.embedOne("the of and"))).toBe(0);
  });
});

/**
 * A real HTTP server speaking the OpenAI /v1/embeddings wire format. Its vectors come from a
 * HashingEmbedder, so similarity through the network behaves like the local default.
 */
describe("OpenAIEmbedder against a local /v1/embeddings server", () => {
  const inner = new HashingEmbedder({ dim: 32 });
  const requests: { body: Record<string, unknown>; headers: IncomingHttpHeaders }[] = [];
  let server: Server;
  let baseURL: string;
  const root = mkdtempSync(join(tmpdir(), "lineage-openai-"));

  beforeAll(async () => {
    server = createServer((req, res) => {
      let raw = "";
      req.on("data", (c: Buffer) => (raw += c.toString()));
      req.on("end", () => {
        const body = JSON.parse(raw) as { input: string[]; model: string };
        requests.push({ body, headers: req.headers });
        if (req.url !== "/v1/embeddings" || req.method !== "POST") {
          res.writeHead(404).end();
          return;
        }
        const dim = body.model === "short-model" ? 16 : 32;
        const data = body.input.map((text, index) => ({
          object: "embedding", index, embedding: Array.from(inner.embedOne(text)).slice(0, dim),
        }));
        // Servers may answer out of order; `index` is the contract.
        data.reverse();
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ object: "list", data, model: body.model, usage: { prompt_tokens: 1, total_tokens: 1 } }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    rmSync(root, { recursive: true, force: true });
  });

  it("sends float requests in batches and returns vectors in input order", async () => {
    requests.length = 0;
    const e = new OpenAIEmbedder({ baseURL, apiKey: "sk-test", model: "embed-model", dim: 32, batchSize: 2 });
    const texts = ["squeeze excitation", "cosine schedule", "", "random crop"];
    const vectors = await e.embed(texts);
    expect(requests).toHaveLength(2);
    expect(requests[0]!.body).toMatchObject({ model: "embed-model", input: ["squeeze excitation", "cosine schedule"], encoding_format: "float" });
    expect(requests[0]!.body).not.toHaveProperty("dimensions");
    expect(requests[1]!.body.input).toEqual([" ", "random crop"]);
    expect(requests[0]!.headers.authorization).toBe("Bearer sk-test");
    expect(vectors.map((v) => v.length)).toEqual([32, 32, 32, 32]);
    expect(vectors[0]).toEqual(Array.from(inner.embedOne("squeeze excitation")));
    expect(vectors[3]).toEqual(Array.from(inner.embedOne("random crop")));
    expect(e.name).toBe("openai:embed-model:32");
  });

  it("rejects vectors of the wrong size, and asks for a size only when told to", async () => {
    requests.length = 0;
    const wrong = new OpenAIEmbedder({ baseURL, model: "short-model", dim: 32, maxRetries: 0 });
    await expect(wrong.embed(["x"])).rejects.toThrow(/16-dim vector, expected 32/);
    await new OpenAIEmbedder({ baseURL, model: "embed-model", dim: 32, requestDimensions: true }).embed(["x"]);
    expect(requests.at(-1)!.body.dimensions).toBe(32);
  });

  it("backs a LineageStore end to end", async () => {
    const embedder = new OpenAIEmbedder({ baseURL, model: "embed-model", dim: 32 });
    const store = await LineageStore.open(join(root, "store"), { embedder });
    await store.applyEvents(runEvents("net"));
    const [top] = await store.similarTrials({ text: "squeeze excitation block", k: 1 });
    expect(top!.trial_id).toBe(trialId("net", 2));
    await store.close();
  });
});
