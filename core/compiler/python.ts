/**
 * The Python file a compiled model is: the helper classes it uses, copied from blocks.py in a
 * fixed order, and the model's class around the layers compile.ts derived. Text only: every
 * shape and number was decided before it gets here.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { InputDtype } from "../model-config.js";

// Emission order, fixed so that the same config always yields byte-identical code; blocks.py keeps it too.
export const HELPERS = [
  "Residual",
  "SqueezeExcite",
  "GhostModule",
  "MBConv",
  "PatchEmbed",
  "TransformerBlock",
  "MixerBlock",
  "TokenPool",
  "TokenEmbedding",
  "NgramEmbedding",
  "ByteCounts",
  "SeqConv1d",
  "SeqPool1d",
  "TokenBatchNorm",
  "ChannelLayerNorm",
  "SeqGRU",
] as const;
export type Helper = (typeof HELPERS)[number];

/** A Python expression, one string per line, indented relative to its first line. */
export type Expr = string[];

export interface Item {
  label: string;
  comment: string;
  exprs: Expr[];
  shape: number[];
  params: number;
  /** Of `params`, the rows of lookup tables (embeddings): an example reads a few, multiplies by none. */
  lookup?: number;
}

export const INDENT = "    ";

export function fmt(shape: readonly number[]): string {
  return `[${shape.join(", ")}]`;
}

export function count(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

export function pyFloat(x: number): string {
  const s = String(x);
  return /[.e]/.test(s) ? s : `${s}.0`;
}

export function pyPad(pad: number | "same"): string {
  return pad === "same" ? '"same"' : String(pad);
}

export function withComma(expr: Expr): Expr {
  return expr.map((line, i) => (i === expr.length - 1 ? `${line},` : line));
}

export function sequential(items: readonly Item[]): Expr {
  const lines = ["nn.Sequential("];
  for (const it of items) {
    lines.push(`${INDENT}# ${it.comment}`);
    for (const e of it.exprs) lines.push(...withComma(e).map((l) => INDENT + l));
  }
  lines.push(")");
  return lines;
}

const HELPER_SOURCE = loadHelpers(fileURLToPath(new URL("./blocks.py", import.meta.url)));

/** Splits blocks.py into its top-level classes, checking that they are exactly HELPERS, in that order. */
function loadHelpers(file: string): Record<Helper, string> {
  // What precedes the first class is the module's docstring and imports; generated files have their own.
  const sections = readFileSync(file, "utf8").split(/^(?=class )/m).slice(1);
  const names = sections.map((section) => /^class (\w+)\(/.exec(section)?.[1] ?? section.split("\n")[0]);
  if (names.join() !== HELPERS.join()) {
    throw new Error(`${file}: top-level classes are ${names.join(", ")}; python.ts expects ${HELPERS.join(", ")}`);
  }
  const source = {} as Record<Helper, string>;
  HELPERS.forEach((helper, i) => {
    const text = sections[i]!.trim();
    const stray = text.split("\n").find((line, j) => j > 0 && /^\S/.test(line));
    if (stray !== undefined) throw new Error(`${file}: ${JSON.stringify(stray)} would be copied into generated code as part of ${helper}`);
    source[helper] = text;
  });
  return source;
}

export interface RenderInput {
  name: string;
  className: string;
  inputShape: number[];
  inputDtype: InputDtype;
  outputShape: number[];
  params: number;
  items: Item[];
  helpers: Set<Helper>;
  /** The statements that tie the head to the embedding, if the config asks. */
  tie?: string[];
  /** A byte-level language model's own n-gram, mixed into its predictions in eval mode. */
  counts?: { orders: number; weight: number };
}

export function render(r: RenderInput): string {
  const header = [
    `# ${r.className}: compiled from model_config ${JSON.stringify(r.name)} by core/compiler/compile.ts.`,
    `# Input ${fmt(r.inputShape)} ${r.inputDtype} -> ${fmt(r.outputShape)} logits, ${count(r.params)} parameters.`,
    "# Edit the model_config, not this file: the lineage treats the config as the source.",
    "import torch",
    "import torch.nn as nn",
    "import torch.nn.functional as F",
  ].join("\n");
  const helpers = HELPERS.filter((h) => r.helpers.has(h)).map((h) => HELPER_SOURCE[h]);
  const layers = sequential(r.items).map((l, i) => (i === 0 ? l : INDENT + INDENT + l));
  const model = [
    `class ${r.className}(nn.Module):`,
    "    def __init__(self):",
    "        super().__init__()",
    `        self.layers = ${layers.join("\n")}`,
    ...(r.tie ?? []).map((line) => `        ${line}`),
    ...(r.counts ? [`        self.counts = ByteCounts(${r.counts.orders}, weight=${pyFloat(r.counts.weight)})`] : []),
    "",
    "    def forward(self, x):",
    ...(r.counts
      ? [
          "        logits = self.layers(x)",
          "        # The network trains alone; evaluation and exports see its mixture with the counts.",
          "        return logits if self.training else self.counts(logits, x)",
        ]
      : ["        return self.layers(x)"]),
  ].join("\n");
  return `${[header, ...helpers, model].join("\n\n\n")}\n`;
}
