/**
 * With an LLM, a run from a model in Python also changes the model's code: the planner's LLM
 * asks for a change in words (code_edit), the coder's LLM makes it, the runner checks the edited
 * module before it trains (its first answer fails the check and is repaired from the runner's
 * error), the edit is a diff in the lineage, and the trials after it build on the edited code.
 * A real swarm and runner on digits; the endpoint is a scripted OpenAI-compatible server.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { run } from "../helpers/run.js";
import { startFakeOpenAI, type FakeOpenAI, type RecordedRequest, type ScriptedReply } from "../helpers/fake-openai.js";
import { unwrapped } from "../helpers/markdown.js";

const NET = `import torch.nn as nn


class Net(nn.Module):
    def __init__(self, num_classes=10, width=16):
        super().__init__()
        self.body = nn.Sequential(nn.Flatten(), nn.Linear(64, width), nn.ReLU())
        self.head = nn.Linear(width, num_classes)

    def forward(self, x):
        return self.head(self.body(x))
`;
const EDIT = "add batch normalisation between the hidden linear layer and its ReLU";
const json = (x: unknown): ScriptedReply => ({ content: JSON.stringify(x) });

interface Context {
  trials_so_far: { id: string; model_config?: { code_edit?: string; init_kwargs?: Record<string, number> }; params?: number }[];
}

const count: Record<string, number> = {};

function script(req: RecordedRequest): ScriptedReply {
  const system = String(req.body.messages.find((m) => m.role === "system")?.content ?? "");
  const user = req.body.messages.filter((m) => m.role === "user");
  const first = String(user[0]?.content ?? "");
  const role = system.startsWith("You are the architect") ? "planner" : system.startsWith("You edit PyTorch") ? "edit" : system.startsWith("You are the analyst") ? "analyst" : "summary";
  const n = (count[role] = (count[role] ?? 0) + 1);
  const proposal = (parent: string, model: Record<string, unknown>, hypothesis: string) => ({
    hypothesis,
    rationale: "the digits model is small; its hidden layer is where to look",
    surface: "architecture",
    parent_ids: [parent],
    model_config: { name: "net", class_name: "Net", ...model },
    train_config: { optimizer: "adam", lr: 0.01, epochs: 2, batch_size: 64 },
    assessment: { progress: "early", strengths: [], weaknesses: [] },
  });
  switch (role) {
    case "planner": {
      const trials = (JSON.parse(first) as Context).trials_so_far;
      const anchor = trials.find((t) => t.id.endsWith("-t001"))!;
      const edited = trials.find((t) => t.model_config?.code_edit);
      if (!edited) return json(proposal(anchor.id, { code_edit: EDIT }, "batch normalisation steadies the hidden layer of the digits net"));
      // Once the edit is built, a wider hidden layer on top of it (the edited code, not the run's source).
      const parent = edited.params ? edited.id : anchor.id;
      return json(proposal(parent, { init_kwargs: { width: 16 + 8 * n } }, `a hidden layer of ${16 + 8 * n} units on top of ${parent} learns more`));
    }
    case "edit": {
      const { source } = JSON.parse(first) as { source: string };
      // The first edit feeds the head one feature too many: the runner's forward pass refuses it.
      const bug = n === 1 ? "nn.Linear(width + 1, num_classes)" : "nn.Linear(width, num_classes)";
      return json({ code: source.replace("nn.Linear(64, width), nn.ReLU()", "nn.Linear(64, width), nn.BatchNorm1d(width), nn.ReLU()").replace("nn.Linear(width, num_classes)", bug) });
    }
    case "analyst":
      return { content: "Validation accuracy is rising; the model is small." };
    default: {
      const table = JSON.parse(String(user[user.length - 1]?.content ?? "{}")) as { total_params: number };
      return { content: `The model has ${table.total_params} parameters.` };
    }
  }
}

let fake: FakeOpenAI;
let dir: string;
let workspace: string;
let runId: string;
let status: number | null;
let stderr: string;
const trialFile = (trial: string, file: string) => join(workspace, "runs", runId, "experiments", trial, file);
const modelOf = (trial: string) => parseYaml(readFileSync(trialFile(trial, "model_config.yaml"), "utf8")) as { code_edit?: string; source_trial?: string; init_kwargs?: Record<string, number> };

beforeAll(async () => {
  fake = await startFakeOpenAI(script);
  dir = mkdtempSync(join(tmpdir(), "llm-edit-test-"));
  workspace = join(dir, "workspace");
  writeFileSync(join(dir, "net.py"), NET);
  writeFileSync(join(dir, "recipe.yaml"), "optimizer: sgd\nlr: 0.05\nmomentum: 0\nepochs: 1\nbatch_size: 64\n");
  const { NODE_CHANNEL_FD: _ipc, ...inherited } = process.env;
  // Five trials end the run (about 25 s idle); the time budget is room for a loaded machine. One
  // trial at a time: the planner's next proposal comes once the edited trial is judged, so it builds
  // on the edited code; with two in flight it came while the coder still repaired the edit, on
  // the unedited parent, and the run's last proposal was its long training.
  const r = await run(
    "./research-agent",
    ["launch", "--goal", "digits: maximise accuracy", "--from", join(dir, "net.py"), "--class", "Net", "--recipe", join(dir, "recipe.yaml"), "--time-budget", "4m", "--seeds-per-trial", "2", "--max-trials", "5", "--parallel", "1", "--no-research", "--llm", "openai:fake-model", "--llm-base-url", fake.baseURL, "--workspace", workspace, "--json"],
    { env: { ...inherited, LOG_LEVEL: "warn", EMBEDDER: "hashing", OPENAI_API_KEY: "sk-test" }, timeout: 300_000 },
  );
  status = r.status;
  stderr = r.stderr;
  runId = (JSON.parse(r.stdout.trim().split("\n").pop()!) as { run_id: string }).run_id;
}, 360_000);

afterAll(async () => {
  await fake?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

it("makes the LLM's code edit, repaired once from the runner's check, trains it, and builds later trials on the edited code", () => {
  expect([0, 3], stderr).toContain(status);
  const trials = readdirSync(join(workspace, "runs", runId, "experiments"), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  const edited = trials.find((t) => modelOf(t).code_edit === EDIT);
  expect(edited, trials.join(", ")).toBeDefined();

  // The runner's check failed the first edit; its error went back to the model, which fixed it.
  const repair = fake.requests.find((r) => JSON.stringify(r.body.messages).includes("Running your code in the sandbox failed"));
  expect(JSON.stringify(repair?.body.messages)).toMatch(/shape_error/);
  const code = readFileSync(trialFile(edited!, "model_code.py"), "utf8");
  expect(code).toContain("nn.BatchNorm1d(width)");
  expect(code).toContain("nn.Linear(width, num_classes)");
  // The edit is a diff in the lineage against its parent's code, and it trained.
  expect(readFileSync(trialFile(edited!, "code.diff"), "utf8")).toMatch(/^\+.*nn\.BatchNorm1d\(width\)/m);
  const results = JSON.parse(readFileSync(trialFile(edited!, "results.json"), "utf8")) as { seed_results: unknown[]; failure?: unknown };
  expect(results.failure).toBeUndefined();
  expect(results.seed_results.length).toBeGreaterThan(0);
  expect(unwrapped(readFileSync(join(workspace, "runs", runId, "report.md"), "utf8"))).toMatch(/\| coder \| \d+ \|/);

  // Trials after it take its code, with their own arguments, and never make the edit again.
  const children = trials.filter((t) => modelOf(t).source_trial === edited);
  expect(children.length, trials.map((t) => `${t}: ${JSON.stringify(modelOf(t))}`).join("\n")).toBeGreaterThan(0);
  for (const child of children) {
    expect(modelOf(child).code_edit).toBeUndefined();
    expect(readFileSync(trialFile(child, "model_code.py"), "utf8")).toBe(code);
  }
  expect(fake.requests.filter((r) => String(r.body.messages[0]?.content).startsWith("You edit PyTorch"))).toHaveLength(2);
  expect(existsSync(trialFile(trials[0]!, "model_code.py")) && readFileSync(trialFile(trials[0]!, "model_code.py"), "utf8")).toBe(NET);
});
