/**
 * A full run driven by a scripted OpenAI-compatible endpoint (real HTTP, the
 * real `openai` client in every agent process): LLM-authored briefs,
 * proposals, code and narratives end up in the lineage, and every bad answer
 * — malformed JSON, a schema violation, buggy code, a refusal, a 429, a
 * narrative with invented numbers — is visible there with how it was handled.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseGoal } from "../../core/goal.js";
import { createLogger } from "../../core/logger.js";
import { runGoal, startSwarm, type RunOutcome, type Swarm } from "../../deploy/swarm.js";
import { runSettings } from "../../deploy/settings.js";
import { startFakeOpenAI, type FakeOpenAI, type RecordedRequest, type ScriptedReply } from "../helpers/fake-openai.js";
import { unwrapped } from "../helpers/markdown.js";

const BRIEF = {
  summary_title: "Brief for digits",
  insights: ["small convolutional networks with batch normalisation fit 8x8 digits"],
  architectural_suggestions: [
    {
      name: "BatchNorm CNN",
      description: "convolutions followed by batch normalisation",
      implementation_note: "conv2d, batchnorm, relu, then pool",
      building_blocks: ["conv2d", "batchnorm"],
      buildable: true,
    },
  ],
  sources: [{ title: "Batch Normalization", url: "https://arxiv.org/abs/1502.03167" }],
};

function proposal(width: number) {
  return {
    hypothesis: `a ${width}-channel conv net with batchnorm learns digits well`,
    rationale: "digits are 8x8 images; one conv stage and a linear head suffice",
    surface: "architecture",
    parent_ids: [],
    model_config: {
      name: `llm-cnn-${width}`,
      layers: [{ type: "conv2d", out_channels: width, kernel_size: 3 }, { type: "batchnorm" }, { type: "activation", fn: "relu" }, { type: "maxpool", kernel_size: 2 }, { type: "flatten" }],
    },
    train_config: { optimizer: "adam", lr: 0.003, epochs: 3, batch_size: 32 },
    adopted_concepts: ["BatchNorm CNN"],
    assessment: { progress: "starting out", strengths: [], weaknesses: [] },
  };
}

function code(className: string, hidden: number, inFeatures = 64) {
  return `import torch.nn as nn

class ${className}(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(${inFeatures}, ${hidden}), nn.ReLU(), nn.Linear(${hidden}, 10))

    def forward(self, x):
        return self.net(x)
`;
}

const json = (x: unknown): ScriptedReply => ({ content: JSON.stringify(x) });
const count: Record<string, number> = {};

/** Answers by role, read from the system prompt, with one kind of bad answer per role. */
function script(req: RecordedRequest): ScriptedReply {
  const system = String(req.body.messages.find((m) => m.role === "system")?.content ?? "");
  const user = req.body.messages.filter((m) => m.role === "user");
  const last = String(user[user.length - 1]?.content ?? "");
  const role = system.startsWith("You are the architect")
    ? "planner"
    : system.startsWith("You write PyTorch")
      ? "coder"
      : system.startsWith("You are the analyst")
        ? "analyst"
        : system.startsWith("You synthesise")
          ? "researcher"
          : "summary";
  const n = (count[role] = (count[role] ?? 0) + 1);
  switch (role) {
    case "researcher":
      return n === 1 ? { content: "Here is a brief about digits, hope it helps!" } : json(BRIEF);
    case "planner":
      if (n === 1) return json({ ...proposal(8), model_config: { name: "bad", layers: [{ type: "conv2d", out_channels: 8, kernel_size: -1 }] } });
      if (n === 3) return { refusal: "I cannot help with that." };
      return json(proposal(4 + 4 * n));
    case "coder": {
      const className = /class (\w+)\(nn\.Module\)/.exec(system)?.[1] ?? "Net";
      // The first program has a shape bug; the fix comes once the runner's error is fed back.
      return json({ code: n === 1 ? code(className, 32, 50) : code(className, 16 + n) });
    }
    case "analyst":
      if (n === 1) return { status: 429, retryAfter: 0 };
      // The second narrative never arrives in time: both requests time out.
      if (n === 3 || n === 4) return { delayMs: 4000, content: "too late" };
      return { content: "Validation accuracy is high and still rising; more epochs should help." };
    default: {
      const table = JSON.parse(last) as { total_params: number };
      return { content: n === 1 ? "It has 42 layers, give or take." : `The model has ${table.total_params} parameters.` };
    }
  }
}

let fake: FakeOpenAI;
let workspace: string;
let swarm: Swarm;
let outcome: RunOutcome;

beforeAll(async () => {
  fake = await startFakeOpenAI(script);
  workspace = mkdtempSync(join(tmpdir(), "llm-swarm-test-"));
  process.env.OPENAI_API_KEY = "sk-test";
  const logger = createLogger("llm-swarm-test");
  logger.level = "warn";
  // A short timeout for the analyst only, so its slow answer times out.
  const llmConfig = join(workspace, "llm-test.json");
  writeFileSync(llmConfig, JSON.stringify({ default: { provider: "openai", model: "fake-model", base_url: fake.baseURL }, roles: { analyst: { timeout_ms: 1500, max_retries: 1 } } }));
  swarm = await startSwarm({ workspace, slots: 2, logger, llm: { file: llmConfig } });
  const parsed = parseGoal("digits: reach 99.9% validation accuracy");
  if (!parsed.ok) throw new Error(parsed.error);
  outcome = await runGoal(swarm, {
    start: { goal: parsed.goal, settings: runSettings(parsed.goal, { maxTrials: 3, seeds: 2, parallel: 1, trialTimeBudgetS: 120, llm: "openai:fake-model" }, workspace) },
    log: logger,
  });
}, 600_000);

afterAll(async () => {
  await swarm?.stop();
  await fake?.close();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
});

const calls = (role: string, outcomeName?: string) =>
  outcome.state.llmCalls.filter((c) => c.role === role && (outcomeName === undefined || c.outcome === outcomeName));

describe("a run driven by a scripted LLM endpoint", () => {
  it("completes with LLM-authored brief, configs and code in the lineage", () => {
    expect(outcome.finished.trials).toBe(3);
    const trials = outcome.state.order.map((id) => outcome.state.trials.get(id)!);
    const byLlm = trials.filter((t) => t.proposed?.proposer === "llm:fake-model");
    expect(byLlm.length).toBeGreaterThanOrEqual(2);
    expect(byLlm[0]!.proposed!.promptVersion).toMatch(/^planner\.v1-[0-9a-f]{8}$/);
    expect(byLlm[0]!.proposed!.adoptedConcepts).toContain("BatchNorm CNN");
    expect(trials.filter((t) => t.assembled?.author === "llm:fake-model").length).toBeGreaterThanOrEqual(2);
    expect(outcome.state.briefs[0]?.summary_title).toBe("Brief for digits");
    expect(trials.every((t) => t.evaluated?.analysis?.narrative)).toBe(true);
  });

  it("repairs malformed JSON and schema violations by feeding the error back", () => {
    expect(calls("researcher", "repaired")).toHaveLength(1);
    expect(calls("planner", "repaired").length).toBeGreaterThanOrEqual(1);
    const plannerRetry = fake.requests.find((r) => JSON.stringify(r.body.messages).includes("kernel_size"));
    expect(plannerRetry).toBeDefined();
  });

  it("repairs buggy generated code through the runner's error", () => {
    const repaired = calls("coder", "repaired");
    expect(repaired).toHaveLength(1);
    const feedback = fake.requests.find((r) => JSON.stringify(r.body.messages).includes("Running your code in the sandbox failed"));
    expect(JSON.stringify(feedback?.body.messages)).toMatch(/shape_error/);
  });

  it("falls back to the built-in brain on a refusal and on invented numbers, and records why", () => {
    const refusal = calls("planner", "fallback");
    expect(refusal).toHaveLength(1);
    expect(refusal[0]!.error).toMatch(/refusal/);
    const fallbackTrial = outcome.state.order.map((id) => outcome.state.trials.get(id)!).find((t) => t.proposed?.proposer.includes("LLM fallback"));
    expect(fallbackTrial).toBeDefined();
    const narrative = calls("summary", "fallback");
    expect(narrative).toHaveLength(1);
    expect(narrative[0]!.error).toMatch(/42/);
  });

  it("retries a 429, falls back after timeouts, and records requests, tokens and cost per role", () => {
    const analyst = calls("analyst");
    expect(analyst.length).toBe(3);
    expect(analyst[0]!.outcome).toBe("ok");
    expect(analyst[0]!.requests).toBe(2);
    const timedOut = calls("analyst", "fallback");
    expect(timedOut).toHaveLength(1);
    expect(timedOut[0]!.error).toMatch(/^timeout/);
    expect(timedOut[0]!.requests).toBe(2);
    const report = unwrapped(readFileSync(outcome.finished.reportPath, "utf8"));
    expect(report).toContain("## LLM use");
    expect(report).toMatch(/\| planner \| \d+ \| \d+ \| \d+ \|/);
    expect(report).toContain("fell back to the built-in brain");
  });
});
