import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ResearchError } from "../../core/failure.js";
import { endpointFor, LLM_ROLES, llmConfigFromFlags, NO_LLM, usesLlm, type LlmConfig } from "../../core/llm/config.js";

function writeConfig(name: string, text: string): { dir: string; path: string } {
  const dir = mkdtempSync(join(tmpdir(), "llm-config-"));
  const path = join(dir, name);
  writeFileSync(path, text);
  return { dir, path };
}

const FILE = JSON.stringify({
  default: { provider: "openai", model: "file-model", base_url: "http://file.example/v1", price_per_1k_input: 0.5, price_per_1k_output: 1.5 },
  roles: { coder: "none", summary: { model: "summary-model", temperature: 0.2 } },
});

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error("expected a throw");
}

describe("llmConfigFromFlags", () => {
  it("defaults to the built-in brain for every role when nothing is configured", () => {
    const config = llmConfigFromFlags({}, {});
    expect(config).toEqual(NO_LLM);
    expect(usesLlm(config)).toBe(false);
    for (const role of LLM_ROLES) expect(endpointFor(config, role)).toBeUndefined();
  });

  it("does not switch an LLM on from an API key alone", () => {
    expect(usesLlm(llmConfigFromFlags({}, { OPENAI_API_KEY: "sk-x" }))).toBe(false);
  });

  it("--llm none wins over env and file", () => {
    const { path } = writeConfig("llm.json", FILE);
    const config = llmConfigFromFlags({ llm: "none", file: path }, { LLM_MODEL: "env-model" });
    expect(usesLlm(config)).toBe(false);
  });

  it("reads the file: defaults filled in, roles inherit from default, 'none' pins the built-in brain", () => {
    const { path } = writeConfig("llm.json", FILE);
    const config = llmConfigFromFlags({ file: path }, {});
    expect(endpointFor(config, "planner")).toEqual({
      provider: "openai",
      model: "file-model",
      base_url: "http://file.example/v1",
      api_key_env: "OPENAI_API_KEY",
      timeout_ms: 120_000,
      max_retries: 3,
      concurrency: 4,
      price_per_1k_input: 0.5,
      price_per_1k_output: 1.5,
    });
    expect(endpointFor(config, "coder")).toBeUndefined();
    expect(endpointFor(config, "summary")).toMatchObject({ model: "summary-model", base_url: "http://file.example/v1", temperature: 0.2 });
  });

  it("finds llm.yaml in the workspace", () => {
    const { dir } = writeConfig("llm.yaml", "roles:\n  researcher:\n    model: yaml-model\n    base_url: http://yaml.example/v1\n");
    const config = llmConfigFromFlags({ workspace: dir }, {});
    expect(endpointFor(config, "researcher")).toMatchObject({ model: "yaml-model", base_url: "http://yaml.example/v1" });
    expect(endpointFor(config, "planner")).toBeUndefined();
  });

  it("env overrides the file's default endpoint and keeps its other fields", () => {
    const { path } = writeConfig("llm.json", FILE);
    const config = llmConfigFromFlags({ file: path }, { LLM_MODEL: "env-model", LLM_BASE_URL: "http://env.example/v1" });
    expect(endpointFor(config, "planner")).toMatchObject({ model: "env-model", base_url: "http://env.example/v1", price_per_1k_input: 0.5 });
    // A role the file names explicitly keeps its model, and inherits the new base URL.
    expect(endpointFor(config, "summary")).toMatchObject({ model: "summary-model", base_url: "http://env.example/v1" });
    expect(endpointFor(config, "coder")).toBeUndefined();
  });

  it("flags override env, and a model name may contain a colon", () => {
    const config = llmConfigFromFlags(
      { llm: "openai:llama3.1:8b", baseUrl: "http://localhost:11434/v1" },
      { LLM_MODEL: "env-model", LLM_BASE_URL: "http://env.example/v1" },
    );
    for (const role of LLM_ROLES) expect(endpointFor(config, role)).toMatchObject({ model: "llama3.1:8b", base_url: "http://localhost:11434/v1" });
  });

  it("env alone configures every role", () => {
    const config = llmConfigFromFlags({}, { LLM_MODEL: "env-model" });
    expect(endpointFor(config, "analyst")).toMatchObject({ model: "env-model" });
    expect(endpointFor(config, "analyst")?.base_url).toBeUndefined();
  });

  it("rejects bad settings with invalid_config", () => {
    const badFlag = thrown(() => llmConfigFromFlags({ llm: "anthropic:claude" }, {}));
    expect(badFlag).toBeInstanceOf(ResearchError);
    expect((badFlag as ResearchError).label).toBe("invalid_config");

    const noModel = thrown(() => llmConfigFromFlags({ baseUrl: "http://localhost:8000/v1" }, {}));
    expect((noModel as ResearchError).message).toMatch(/without a model/);

    const { path } = writeConfig("llm.json", JSON.stringify({ default: { model: "m", timeout: 5 }, roles: { planner: { temperature: 1 } } }));
    const badFile = thrown(() => llmConfigFromFlags({ file: path }, {})) as ResearchError;
    expect(badFile.label).toBe("invalid_config");
    expect(badFile.message).toMatch(/timeout/);

    const { path: orphan } = writeConfig("llm.json", JSON.stringify({ roles: { planner: { temperature: 1 } } }));
    expect((thrown(() => llmConfigFromFlags({ file: orphan }, {})) as ResearchError).message).toMatch(/roles\.planner\.model/);
  });

  it("endpointFor treats a config without any model as the built-in brain", () => {
    const config: LlmConfig = { roles: { planner: "none" } };
    expect(endpointFor(config, "planner")).toBeUndefined();
    expect(endpointFor(config, "coder")).toBeUndefined();
  });
});
