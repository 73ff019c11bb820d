/**
 * The coder's tools against a real sandboxed runner: file tools confined to
 * the trial directory, scripts run in the sandbox on a copy of it, and a
 * scripted tool-calling codegen round against the fake OpenAI server.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { pino } from "pino";
import type { ModelConfig } from "../../core/model-config.js";
import { writeWithRepair } from "../../agents/coder/llm-coder.js";
import { coderTools, trialDir, type ProjectInfo } from "../../agents/coder/tools.js";
import { loadPrompt } from "../../swarm/prompts.js";
import { LlmClient, type ToolDef } from "../../core/llm/client.js";
import { createLogger } from "../../core/logger.js";
import { connectRunner, type RunnerClient } from "../../gpu-runner/client.js";
import { startRunner, type RunningRunner } from "../../gpu-runner/server.js";
import { DatasetInfoSchema } from "../../proto/gen/research/v1/runner_pb.js";
import { startFakeOpenAI } from "../helpers/fake-openai.js";

const MODEL = `import torch.nn as nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))

    def forward(self, x):
        return self.net(x)
`;
const CONFIG: ModelConfig = { name: "mlp", layers: [{ type: "flatten" }, { type: "linear", out_features: 32, bias: true }] };
const PROJECT: ProjectInfo = { className: "Net", inputShape: [1, 8, 8], inputDtype: "float32", numClasses: 10, task: { modelConfig: CONFIG } };

let runner: RunningRunner;
let client: RunnerClient;
let root: string;

beforeAll(async () => {
  const logger = createLogger("test-coder-tools");
  logger.level = "warn";
  runner = await startRunner({ slots: 1, logger });
  client = connectRunner(runner.address);
  root = mkdtempSync(join(tmpdir(), "coder-tools-"));
});

afterAll(async () => {
  client?.close();
  await runner?.close();
  if (root) rmSync(root, { recursive: true, force: true });
});

function toolsIn(dir: string, project: ProjectInfo = PROJECT): Record<string, ToolDef> {
  return Object.fromEntries(coderTools({ dir, runner: client, project }).map((t) => [t.name, t]));
}

async function call(tools: Record<string, ToolDef>, name: string, args: unknown): Promise<string> {
  return tools[name]!.run(tools[name]!.parameters.parse(args));
}

describe("file tools", () => {
  it("keep every path inside the trial directory", async () => {
    const dir = trialDir(join(root, "ws"), "r1", "t000");
    expect(dir).toBe(join(root, "ws", "runs", "r1", "coder", "t000"));
    expect(() => trialDir(root, "..", "t000")).toThrow(/cannot name/);
    expect(() => trialDir(root, "r1", "a/b")).toThrow(/cannot name/);

    const tools = toolsIn(dir);
    const outside = join(root, "outside");
    mkdirSync(outside);
    writeFileSync(join(outside, "secret.txt"), "secret");
    symlinkSync(outside, join(dir, "link"));
    symlinkSync(join(outside, "secret.txt"), join(dir, "secret-link.txt"));
    symlinkSync(join(outside, "missing.txt"), join(dir, "dangling.txt"));

    await expect(call(tools, "read_file", { path: "../../../../../outside/secret.txt" })).rejects.toThrow(/outside the trial directory/);
    await expect(call(tools, "read_file", { path: "/etc/passwd" })).rejects.toThrow(/outside the trial directory/);
    await expect(call(tools, "read_file", { path: "src/../../t000-x/a" })).rejects.toThrow(/outside the trial directory/);
    await expect(call(tools, "read_file", { path: "link/secret.txt" })).rejects.toThrow(/symbolic link/);
    await expect(call(tools, "read_file", { path: "secret-link.txt" })).rejects.toThrow(/symbolic link/);
    await expect(call(tools, "write_file", { path: "link/new.txt", content: "x" })).rejects.toThrow(/symbolic link/);
    await expect(call(tools, "write_file", { path: "dangling.txt", content: "x" })).rejects.toThrow(/broken symbolic link/);
    await expect(call(tools, "list_directory", { path: "link" })).rejects.toThrow(/symbolic link/);
    expect(existsSync(join(outside, "new.txt"))).toBe(false);
    expect(existsSync(join(outside, "missing.txt"))).toBe(false);
  });

  it("write, read and list files", async () => {
    const tools = toolsIn(join(root, "rw"));
    expect(await call(tools, "write_file", { path: "src/models/a.py", content: "x = 1\n" })).toBe("wrote 6 bytes to src/models/a.py");
    expect(await call(tools, "read_file", { path: "src/models/a.py" })).toBe("x = 1\n");
    expect(await call(tools, "read_file", { path: "./src/../src/models/a.py" })).toBe("x = 1\n");
    expect(await call(tools, "list_directory", {})).toBe("./\nsrc/\n  models/\n    a.py (6 bytes)");
    await expect(call(tools, "read_file", { path: "nope.txt" })).rejects.toThrow(/ENOENT/);
  });
});

describe("script tools", () => {
  it("python_run sees the directory's files and its new files come back", async () => {
    const dir = join(root, "py");
    const tools = toolsIn(dir);
    await call(tools, "write_file", { path: "data.txt", content: "21" });
    const out = await call(tools, "python_run", {
      code: "import os\nn = int(open('data.txt').read())\nos.makedirs('out')\nopen('out/answer.txt', 'w').write(str(2 * n))\nprint('cwd', os.getcwd())",
    });
    expect(out).toMatch(/^exit code 0\nfiles written back: out\/answer\.txt\noutput:\ncwd \/scratch\//);
    expect(readFileSync(join(dir, "out/answer.txt"), "utf8")).toBe("42");
    expect(readFileSync(join(dir, "data.txt"), "utf8")).toBe("21");
  });

  it("bash_run reports a failing exit code and a timeout", async () => {
    const tools = toolsIn(join(root, "sh"));
    expect(await call(tools, "bash_run", { command: "echo oops >&2; exit 2" })).toBe("exit code 2\noutput:\noops\n");
    expect(await call(tools, "bash_run", { command: "sleep 30", timeout_s: 1 })).toBe("timed out; exit code 137\noutput:\n(none)");
  });

  it("the scaffold's check runs the stub in the sandbox, then the real module", async () => {
    const dir = join(root, "scaffold");
    const tools = toolsIn(dir);
    expect(await call(tools, "create_pytorch_project_scaffold", {})).toMatch(/^created: README\.md, .*src\/models\/model\.py, configs\/model_config\.json, experiments\/check_model\.py$/);
    expect(JSON.parse(readFileSync(join(dir, "configs/model_config.json"), "utf8"))).toEqual(CONFIG);
    expect(await call(tools, "bash_run", { command: "python3 experiments/check_model.py" })).toMatch(/exit code 1[\s\S]*NotImplementedError/);
    await call(tools, "write_file", { path: "src/models/model.py", content: MODEL });
    expect(await call(tools, "bash_run", { command: "python3 experiments/check_model.py" })).toMatch(/^exit code 0\noutput:\nok: logits \(2, 10\) parameters 2410/);
    expect(await call(tools, "create_pytorch_project_scaffold", {})).toMatch(/^created: nothing\nkept existing: README\.md/);
    expect(readFileSync(join(dir, "src/models/model.py"), "utf8")).toBe(MODEL);
  });

  it("scaffolds a code edit: the module as it is, checked with the trial's arguments", async () => {
    const dir = join(root, "edit");
    const source = MODEL.replace("def __init__(self):", "def __init__(self, hidden=8, bias=True):");
    const tools = toolsIn(dir, { ...PROJECT, task: { source, initKwargs: { hidden: 3, bias: false }, edit: "add a dropout layer" } });
    expect(await call(tools, "create_pytorch_project_scaffold", {})).toMatch(/^created: README\.md, .*src\/models\/model\.py, experiments\/check_model\.py$/);
    expect(readFileSync(join(dir, "src/models/model.py"), "utf8")).toBe(source);
    expect(readFileSync(join(dir, "README.md"), "utf8")).toContain("The change to make: add a dropout layer");
    // The arguments reach the constructor as Python values (false, not JSON's false).
    const check = readFileSync(join(dir, "experiments/check_model.py"), "utf8");
    expect(check).toContain(`model = Net(**json.loads("{\\"hidden\\":3,\\"bias\\":false}"))`);
    expect(await call(tools, "bash_run", { command: "python3 experiments/check_model.py" })).toMatch(/^exit code 0\noutput:\nok: logits \(2, 10\)/);
  });
});

describe("codegen with tools", () => {
  const info = create(DatasetInfoSchema, { inputShape: [1, 8, 8], numClasses: 10, inputDtype: "float32" });
  const silent = pino({ level: "silent" });
  const llm = (baseURL: string) =>
    new LlmClient(
      { provider: "openai", model: "fake-model", base_url: baseURL, api_key_env: "FAKE_KEY", timeout_ms: 10_000, max_retries: 0, concurrency: 1, price_per_1k_input: 0, price_per_1k_output: 0 },
      { logger: silent, env: { FAKE_KEY: "sk-test" } },
    );
  const codegen = (c: LlmClient, workDir: string) =>
    writeWithRepair({ client: c, prompt: loadPrompt("coder"), runner: client, task: { modelConfig: CONFIG }, className: "Net", info, maxParams: 0, workDir });

  it("lets the model write and test its module before it answers", async () => {
    const fake = await startFakeOpenAI([
      { toolCalls: [{ name: "write_file", arguments: { path: "src/models/model.py", content: MODEL } }] },
      { toolCalls: [{ name: "python_run", arguments: { code: "import sys, torch\nsys.path.insert(0, 'src/models')\nfrom model import Net\nprint(tuple(Net()(torch.zeros(2, 1, 8, 8)).shape))" } }] },
      { content: JSON.stringify({ code: MODEL }) },
    ]);
    try {
      const dir = join(root, "loop");
      const r = await codegen(llm(fake.baseURL), dir);
      expect(r.value.code).toBe(MODEL);
      expect(r.value.summary.totalParams).toBe(2410n);
      expect(r.attempts).toBe(1);
      expect(r.usage.calls).toBe(3);
      expect(readFileSync(join(dir, "src/models/model.py"), "utf8")).toBe(MODEL);
      const first = fake.requests[0]!.body;
      expect(String(first.messages[0]!.content)).toMatch(/^You write PyTorch code[\s\S]*class Net\(nn\.Module\)/);
      expect(first.tools!.map((t) => (t as { function: { name: string } }).function.name)).toEqual([
        "read_file",
        "write_file",
        "list_directory",
        "python_run",
        "bash_run",
        "create_pytorch_project_scaffold",
      ]);
      const results = fake.requests[2]!.body.messages.filter((m) => m.role === "tool").map((m) => String(m.content));
      expect(results[0]).toMatch(/^wrote \d+ bytes to src\/models\/model\.py$/);
      expect(results[1]).toBe("exit code 0\noutput:\n(2, 10)\n");
    } finally {
      await fake.close();
    }
  });

  it("feeds an answer that is not the JSON object back for another round", async () => {
    const fake = await startFakeOpenAI([{ content: "Here is the module you asked for." }, { content: "```json\n" + JSON.stringify({ code: MODEL }) + "\n```" }]);
    try {
      const r = await codegen(llm(fake.baseURL), join(root, "retry"));
      expect(r.value.code).toBe(MODEL);
      expect(r.attempts).toBe(2);
      const feedback = fake.requests[1]!.body.messages.at(-1)!;
      expect(feedback.role).toBe("user");
      expect(String(feedback.content)).toMatch(/not valid JSON[\s\S]*\{"code"/);
    } finally {
      await fake.close();
    }
  });
});
