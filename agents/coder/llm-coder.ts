/**
 * LLM code for the coder, a module written from a model_config or a code edit
 * of a model in Python, always checked by the runner: the code must import,
 * construct with the trial's arguments, run a forward pass on a dummy batch
 * with the right output shape (Summarize does all of that in the sandbox) and
 * stay within the parameter limit. Each round is a bounded tool-calling
 * conversation in which the model may write and test its module in its trial
 * directory (agents/coder/tools.ts) before it answers. A failed check, or an
 * answer that is not the expected JSON, goes back to the model for another
 * round; after the last round the caller falls back to the compiler (a
 * model_config) or labels the trial (a code edit: the built-in brain makes none).
 *
 * And the model summary's narrative, whose numbers must all come from the
 * runner's Summarize: a narrative with any other number is refused.
 */
import { z } from "zod";
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";
import type { LlmClient } from "../../core/llm/client.js";
import { safeParseJson } from "../../core/json.js";
import { llmError } from "../../core/llm/errors.js";
import { addUsage, emptyUsage, type Usage } from "../../core/llm/usage.js";
import { labelName } from "../../core/failure.js";
import { int } from "../../core/format.js";
import type { RunnerClient } from "../../gpu-runner/client.js";
import type { DatasetInfo, SummarizeResponse } from "../../proto/gen/research/v1/runner_pb.js";
import type { Prompt } from "../../swarm/prompts.js";
import { coderTools, type CoderTask } from "./tools.js";
import { summaryInput } from "../../swarm/dataset-info.js";
import { outputWidth } from "../../core/learning/index.js";
import { kwargsMessage } from "../../core/config-wire.js";

const CodeSchema = z.object({ code: z.string().min(20) });
export const CODEGEN_ROUNDS = 3;
/** Model calls per round: room to scaffold, write, run and fix a module, then answer. */
export const CODEGEN_STEPS = 8;

/** The round's code, or why the answer gave none (the model's feedback). */
function parseAnswer(text: string | null): { ok: true; code: string } | { ok: false; error: string } {
  if (text === null) return { ok: false, error: `You used all ${CODEGEN_STEPS} steps of this round on tools without answering.` };
  const parsed = safeParseJson({ text, schema: CodeSchema });
  if (parsed.success) return { ok: true, code: parsed.value.code };
  return parsed.error.kind === "parse"
    ? { ok: false, error: `Your answer is not valid JSON: ${parsed.error.message}.` }
    : { ok: false, error: `Your answer does not match {"code": string}:\n${parsed.error.message}` };
}

/**
 * A module written (from a model_config) or edited (a code edit of a model in Python) by the
 * LLM, returned only once the runner has built it with the trial's arguments, run a forward pass
 * and counted its parameters within the limit.
 */
export async function writeWithRepair(opts: {
  client: LlmClient;
  prompt: Prompt;
  runner: RunnerClient;
  task: CoderTask;
  className: string;
  info: DatasetInfo;
  maxParams: number;
  /** The trial's directory for the model's file tools; code from it only ever runs in the runner's sandbox. */
  workDir: string;
}): Promise<{ value: { code: string; summary: SummarizeResponse }; usage: Usage; attempts: number }> {
  const { client, info, task } = opts;
  const project = { className: opts.className, inputShape: info.inputShape, inputDtype: info.inputDtype || "float32", numClasses: outputWidth(info), vocabSize: info.vocabSize || undefined };
  const tools = coderTools({ dir: opts.workDir, runner: opts.runner, project: { ...project, task } });
  const what =
    "modelConfig" in task ? { model_config: task.modelConfig } : { code_edit: task.edit, init_kwargs: task.initKwargs, source: task.source };
  const initKwargs = "initKwargs" in task ? kwargsMessage(task.initKwargs) : {};
  let messages: ChatCompletionMessageParam[] = [
    {
      role: "user",
      content: JSON.stringify({ class_name: project.className, input_shape: project.inputShape, input_dtype: project.inputDtype, num_classes: project.numClasses, vocab_size: project.vocabSize, ...what }),
    },
  ];
  const usage = emptyUsage("coder", client.endpoint.model);
  let lastError = "";
  for (let round = 1; round <= CODEGEN_ROUNDS; round++) {
    const r = await client.chatWithTools({
      role: "coder",
      system: opts.prompt.text.replace("{class_name}", opts.className),
      messages,
      tools,
      maxSteps: CODEGEN_STEPS,
    });
    addUsage(usage, r.usage);
    messages = r.messages;
    const answer = parseAnswer(r.text);
    if (!answer.ok) {
      lastError = answer.error;
      messages.push({ role: "user", content: `${answer.error}\nAnswer with only the JSON object {"code": "<the module source>"}.` });
      continue;
    }
    const summary = await opts.runner.summarize({
      model: { code: answer.code, className: opts.className, initKwargs },
      ...summaryInput(info),
    });
    const params = Number(summary.totalParams);
    if (!summary.failure && (opts.maxParams <= 0 || params <= opts.maxParams)) {
      return { value: { code: answer.code, summary }, usage, attempts: round };
    }
    lastError = summary.failure
      ? `${labelName(summary.failure.label)}: ${summary.failure.message}\n${summary.failure.traceback.split("\n").slice(-8).join("\n")}`
      : `the model has ${params} parameters; the limit is ${opts.maxParams}`;
    messages.push({ role: "user", content: `Running your code in the sandbox failed:\n${lastError}\nFix it and answer again.` });
  }
  throw llmError("invalid_output", `no working code after ${CODEGEN_ROUNDS} rounds; last error: ${lastError}`, { attempts: CODEGEN_ROUNDS });
}

/** Every number in the summary, as text, in the spellings a writer would use. */
function allowedNumbers(summary: SummarizeResponse): Set<string> {
  const out = new Set<string>();
  const add = (n: number | bigint) => {
    const v = Number(n);
    out.add(String(v));
    out.add(int(v));
    for (const d of [1, 2, 3]) out.add(v.toFixed(d));
  };
  add(summary.totalParams);
  add(summary.trainableParams);
  add(summary.flops);
  add(summary.sizeMb);
  add(summary.layers.length);
  for (const l of summary.layers) {
    add(l.params);
    add(l.flops);
    l.outputShape.forEach(add);
  }
  summary.outputShape.forEach(add);
  return out;
}

export function numbersNotFrom(text: string, summary: SummarizeResponse): string[] {
  const allowed = allowedNumbers(summary);
  // Digits inside identifiers (conv2d, layers.3) are names, not numbers.
  return [...text.matchAll(/(?<![\w.])\d[\d,]*(?:\.\d+)?(?![\w])/g)].map((m) => m[0].replace(/,$/, "")).filter((n) => !allowed.has(n));
}

export function builtinNarrative(summary: SummarizeResponse, className: string): string {
  const biggest = [...summary.layers].sort((a, b) => Number(b.params - a.params))[0];
  return `${className} has ${int(Number(summary.totalParams))} parameters (${int(Number(summary.trainableParams))} trainable, ${summary.sizeMb.toFixed(2)} MB) in ${summary.layers.length} layers, about ${int(Number(summary.flops))} FLOPs per sample${biggest ? `; the largest layer is ${biggest.name} (${biggest.type}) with ${int(Number(biggest.params))} parameters` : ""}.`;
}

export async function narrateSummary(client: LlmClient, prompt: Prompt, summary: SummarizeResponse, className: string) {
  const table = {
    class_name: className,
    total_params: Number(summary.totalParams),
    trainable_params: Number(summary.trainableParams),
    flops: Number(summary.flops),
    size_mb: summary.sizeMb,
    output_shape: summary.outputShape.map(Number),
    layers: summary.layers.map((l) => ({ name: l.name, type: l.type, output_shape: l.outputShape.map(Number), params: Number(l.params), flops: Number(l.flops) })),
  };
  const r = await client.generateText({ role: "summary", system: prompt.text, prompt: JSON.stringify(table) });
  const invented = numbersNotFrom(r.text, summary);
  if (invented.length) throw llmError("invalid_output", `the narrative has numbers that are not in the summary: ${invented.slice(0, 5).join(", ")}`, { raw: r.text });
  return { value: r.text.trim(), usage: r.usage, attempts: 1 };
}
