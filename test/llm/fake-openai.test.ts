import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../helpers/fake-openai.js";

let f: FakeOpenAI | undefined;
afterEach(async () => {
  await f?.close();
  f = undefined;
});

describe("fake OpenAI server", () => {
  it("serves deterministic unit embeddings as floats and as base64", async () => {
    f = await startFakeOpenAI([]);
    const sdk = new OpenAI({ baseURL: f.baseURL, apiKey: "k", maxRetries: 0 });
    const floats = await sdk.embeddings.create({ model: "e", input: ["a cat", "a dog", "a cat"], encoding_format: "float", dimensions: 16 });
    const [cat, dog, cat2] = floats.data.map((d) => d.embedding);
    expect(cat).toHaveLength(16);
    expect(cat2).toEqual(cat);
    expect(dog).not.toEqual(cat);
    expect(Math.hypot(...cat!)).toBeCloseTo(1);
    // The SDK asks for base64 by default and decodes it itself.
    const decoded = await sdk.embeddings.create({ model: "e", input: "a cat", dimensions: 16 });
    decoded.data[0]!.embedding.forEach((x, i) => expect(x).toBeCloseTo(cat![i]!, 5));
    expect(f.embeddingRequests).toHaveLength(2);
  });

  it("answers an under-scripted request with a readable non-retryable error", async () => {
    f = await startFakeOpenAI([{ content: "one" }]);
    const sdk = new OpenAI({ baseURL: f.baseURL, apiKey: "k", maxRetries: 0 });
    await sdk.chat.completions.create({ model: "m", messages: [{ role: "user", content: "1" }] });
    await expect(sdk.chat.completions.create({ model: "m", messages: [{ role: "user", content: "2" }] })).rejects.toThrow(/script exhausted/);
  });
});
