/**
 * Writes the Python client's types, clients/python/src/research_swarm/types.py, from the one
 * description of the dashboard's JSON, dashboard/api.ts, read with the TypeScript compiler: a
 * frozen dataclass per row of CLASSES, its fields the JSON's, its docs api.ts's doc comments.
 * Run it (or npm run gen) after changing api.ts and commit the result;
 * test/dashboard/client-types.test.ts fails while the file is stale.
 *   npx tsx scripts/gen-python-types.ts [OUT]
 */
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { METRIC } from "../core/enums.js";

export const PYTHON_TYPES_FILE = fileURLToPath(new URL("../clients/python/src/research_swarm/types.py", import.meta.url));
const API_FILE = fileURLToPath(new URL("../dashboard/api.ts", import.meta.url));

/**
 * Each dataclass, in the file's order (a base before the class that extends it), and where api.ts
 * describes its JSON: an exported type, a property's type in it (`[]`: an array's element), or a
 * union's member by its `type`. A union of replies is its `ok: true` member: the client raises
 * DashboardError on the other.
 */
export const CLASSES: Record<string, string> = {
  Objective: "ObjectiveJson",
  Interval: "Interval",
  Best: "RunSummary.best",
  RunSummary: "RunSummary",
  Fidelity: "Fidelity",
  Epoch: "EpochJson",
  TrialRow: "TrialRow",
  BestSoFarPoint: "BestSoFarPoint",
  InterventionRow: "InterventionRow",
  LlmUse: "LlmUse",
  Suggestion: "RunDetail.briefs[].suggestions[]",
  Brief: "RunDetail.briefs[]",
  PairedGain: "PairedGain",
  PathStep: "AgainstStart.path[]",
  AgainstStart: "AgainstStart",
  PastTrial: "PastTrial",
  PastPrior: "PastPrior",
  Estimate: "Estimate",
  FrontAxis: "FrontAxis",
  FrontTrial: "FrontTrial",
  Front: "FrontJson",
  Limits: "LimitsJson",
  WarmStartRow: "WarmStartRow",
  RunDetail: "RunDetail",
  SeedCurves: "SeedCurves",
  LayerSummary: "TrialDetail.summary.layers[]",
  ModelSummary: "TrialDetail.summary",
  ClassScores: "TrialDetail.per_class[]",
  Analysis: "TrialDetail.analysis",
  Failure: "TrialDetail.failure",
  SeedScore: "HeldOutTest.seeds[]",
  InferenceTiming: "InferenceTimingJson",
  InferenceCost: "InferenceCostJson",
  HeldOutTest: "HeldOutTest",
  TrialDetail: "TrialDetail",
  SearchHit: "SearchHit",
  InterventionReply: "InterventionReply",
  RunTaken: "StartRunReply",
  QueuedRun: "QueuedRun",
  Queue: "QueueJson",
  Change: "LiveMessage(change)",
  Progress: "LiveMessage(progress)",
};

/** TypeScript has one number; these are the JSON's integers (counts, indices, sizes) by field name, at any depth, and `at`, `*_at` (milliseconds since the epoch). Any other number is a float. */
const INTEGERS = new Set(["n", "examples", "trials", "judged", "in_flight", "epoch", "epochs", "index", "params", "calls", "prompt_tokens", "completion_tokens", "seeds", "seed", "rung", "subset", "max_params", "output_shape", "total_params", "flops", "class_index", "support", "weak_classes", "confusion_matrix", "batch", "flops_per_sample", "position", "max_runs", "failures", "observations"]);
const isInteger = (field: string) => INTEGERS.has(field) || /(^|_)at$/.test(field);

interface PythonField {
  name: string;
  python: string;
  doc: string;
  /** A field named in the JSON by the run's metric: the JSON key's prefix ("val_" in `val_accuracy`). */
  metricPrefix?: string;
}

export interface PythonClass {
  name: string;
  base?: string;
  doc: string;
  /** Its own fields (a base's are the base's). */
  fields: PythonField[];
  /** Every key of its JSON the API sends, a base's included. */
  json: string[];
}

/** api.ts's JSON as the dataclasses of CLASSES. */
export function pythonClasses(): PythonClass[] {
  const api = new ApiTypes();
  const found = Object.entries(CLASSES).map(([name, path]) => ({ name, ...api.at(path) }));
  for (const c of found) api.classOf.set(c.type, c.name);
  return found.map((c) => api.dataclass(c.name, c.type, c.node, c.reply));
}

/** dashboard/api.ts through the TypeScript compiler's checker: its types at CLASSES' paths, and each as a Python type. */
class ApiTypes {
  private readonly checker: ts.TypeChecker;
  private readonly exports: Map<string, ts.Symbol>;
  /** The dataclass each of CLASSES' types becomes. */
  readonly classOf = new Map<ts.Type, string>();

  constructor() {
    const program = ts.createProgram([API_FILE], { strict: true, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022 });
    this.checker = program.getTypeChecker();
    this.exports = new Map(this.checker.getExportsOfModule(this.checker.getSymbolAtLocation(program.getSourceFile(API_FILE)!)!).map((s) => [s.name, s]));
  }

  private declaration(name: string): ts.Symbol {
    const symbol = this.exports.get(name);
    if (!symbol) throw new Error(`dashboard/api.ts exports no ${name}`);
    return symbol.flags & ts.SymbolFlags.Alias ? this.checker.getAliasedSymbol(symbol) : symbol;
  }

  private nonNull(t: ts.Type): ts.Type[] {
    return t.isUnion() ? t.types.filter((u) => !(u.flags & (ts.TypeFlags.Null | ts.TypeFlags.Undefined))) : [t];
  }

  private only(t: ts.Type): ts.Type {
    const [u, ...more] = this.nonNull(t);
    if (!u || more.length) throw new Error(`not one object: ${this.checker.typeToString(t)}`);
    return u;
  }

  private literal(t: ts.Type, property: string): string | undefined {
    const p = t.getProperty(property);
    return p && this.checker.typeToString(this.checker.getTypeOfSymbol(p));
  }

  /** Where CLASSES' `path` leads: the type, and the declaration whose doc comment is the class's. */
  at(path: string): { type: ts.Type; node: ts.Node; reply: boolean } {
    const checker = this.checker;
    const member = /^(\w+)\((\w+)\)$/.exec(path);
    if (member) {
      const union = (this.declaration(member[1]!).declarations![0] as ts.TypeAliasDeclaration).type as ts.UnionTypeNode;
      const node = union.types.find((n) => this.literal(checker.getTypeFromTypeNode(n), "type") === `"${member[2]}"`)!;
      return { type: checker.getTypeFromTypeNode(node), node, reply: false };
    }
    const [head, ...steps] = path.split(".");
    const symbol = this.declaration(head!);
    let [type, node] = [checker.getDeclaredTypeOfSymbol(symbol), symbol.declarations![0]!];
    for (const step of steps) {
      const property = this.only(type).getProperty(step.replace(/\[\]$/, ""))!;
      [type, node] = [this.only(checker.getTypeOfSymbol(property)), property.declarations![0]!];
      if (step.endsWith("[]")) type = checker.getTypeArguments(type as ts.TypeReference)[0]!;
    }
    const ok = type.isUnion() ? type.types.find((u) => this.literal(u, "ok") === "true") : undefined;
    return { type: ok ?? type, node, reply: ok !== undefined };
  }

  /** A field's Python annotation. */
  python(t: ts.Type, field: string): string {
    const checker = this.checker;
    const parts = this.nonNull(t);
    const one = (): string => {
      if (parts.every((p) => p.flags & ts.TypeFlags.StringLike)) return "str";
      if (parts.every((p) => p.flags & ts.TypeFlags.BooleanLike)) return "bool";
      const [u, ...more] = parts;
      if (!u || more.length) throw new Error(`${field}: no Python type for ${checker.typeToString(t)}`);
      if (u.flags & (ts.TypeFlags.Any | ts.TypeFlags.Unknown)) return "Any";
      if (u.flags & ts.TypeFlags.NumberLike) return isInteger(field) ? "int" : "float";
      if (checker.isTupleType(u)) return `tuple[${checker.getTypeArguments(u as ts.TypeReference).map((e) => this.python(e, field)).join(", ")}]`;
      if (checker.isArrayType(u)) return `list[${this.python(checker.getTypeArguments(u as ts.TypeReference)[0]!, field)}]`;
      const cls = this.classOf.get(u);
      if (cls) return cls;
      // Any other object (a Record, an unnamed shape) stays a dict, of its values' type where they share one.
      const values = new Set([...checker.getIndexInfosOfType(u).map((i) => this.python(i.type, field)), ...u.getProperties().map((p) => this.python(checker.getTypeOfSymbol(p), p.name))]);
      return `dict[str, ${values.size === 1 ? [...values][0] : "Any"}]`;
    };
    return parts.length < (t.isUnion() ? t.types.length : 1) ? `${one()} | None` : one();
  }

  /** The keys of a shape kept as a dict. */
  private dictKeys(t: ts.Type): string[] {
    const [u] = this.nonNull(t);
    if (!u || this.classOf.has(u) || this.checker.isTupleType(u) || !(u.flags & (ts.TypeFlags.Object | ts.TypeFlags.Intersection))) return [];
    return this.checker.isArrayType(u) ? this.dictKeys(this.checker.getTypeArguments(u as ts.TypeReference)[0]!) : u.getProperties().map((p) => p.name);
  }

  /** What a field's annotation cannot say: the keys of a shape kept as a dict, the strings a `str` may be. */
  private unsaid(t: ts.Type): string {
    const keys = this.dictKeys(t);
    if (keys.length) return `Keys: ${keys.map((k) => `\`${k}\``).join(", ")}.`;
    const strings = this.nonNull(t).flatMap((u) => (u.isStringLiteral() ? [u.value] : []));
    return strings.length > 1 ? `One of: ${strings.join(", ")}.` : "";
  }

  /** One of CLASSES as a dataclass: its base among them, its own fields, its doc. */
  dataclass(name: string, type: ts.Type, node: ts.Node, reply: boolean): PythonClass {
    const checker = this.checker;
    const bases = type.flags & ts.TypeFlags.Object && (type as ts.ObjectType).objectFlags & ts.ObjectFlags.Interface ? checker.getBaseTypes(type as ts.InterfaceType) : [];
    const base = bases.find((b) => this.classOf.has(b));
    const json = type.getProperties().filter((p) => !reply || p.name !== "ok");
    const keys = new Set(json.map((p) => p.name));
    // A number of the run's metric is one field per metric name in the JSON (`val_accuracy`, `val_rmse`): one field here.
    const prefixOf = (key: string) => METRIC.names.map((m) => (key.endsWith(m) ? key.slice(0, -m.length) : undefined)).find((prefix) => prefix !== undefined && METRIC.names.every((m) => keys.has(prefix + m)));
    const own = json.filter((p) => !base?.getProperty(p.name));
    const fields: PythonField[] = own.filter((p) => prefixOf(p.name) === undefined).map((p) => {
      const t = checker.getTypeOfSymbol(p);
      return { name: p.name, python: this.python(t, p.name), doc: [docOf(p.declarations![0]!), this.unsaid(t)].filter(Boolean).join(" ") };
    });
    for (const prefix of new Set(own.map((p) => prefixOf(p.name)).filter((x) => x !== undefined))) {
      const key = prefix + METRIC.names[0];
      fields.push({ name: prefix.replace(/_$/, "") || "value", python: this.python(checker.getTypeOfSymbol(type.getProperty(key)!), key), doc: `\`${prefix}<metric>\` in the JSON.`, metricPrefix: prefix });
    }
    const doc = [docOf(node), reply ? "A refusal raises DashboardError instead." : ""].filter(Boolean).join(" ");
    return { name, base: base && this.classOf.get(base), doc, fields, json: [...keys] };
  }
}

/** The `/** ... *\/` comment just before a declaration, as one line (on the line of a union's `|` too: a trailing comment to the compiler). */
function docOf(node: ts.Node): string {
  const text = node.getSourceFile().text;
  const comments = [...(ts.getTrailingCommentRanges(text, node.pos) ?? []), ...(ts.getLeadingCommentRanges(text, node.pos) ?? [])];
  const comment = comments.filter((c) => text.startsWith("/**", c.pos)).at(-1);
  if (!comment) return "";
  return text.slice(comment.pos + 3, comment.end - 2).split("\n").map((line) => line.replace(/^\s*\*?\s?/, "").trim()).join(" ").trim();
}

/** A TypeScript doc as Python's: ``code`` in reStructuredText's quotes, None for null. */
const pythonDoc = (doc: string) => doc.replace(/`([^`]+)`/g, "``$1``").replace(/\bnull\b/gi, "None");

const HEADER = `# Generated from dashboard/api.ts by \`npx tsx scripts/gen-python-types.ts\` (npm run gen): do not edit.
# test/dashboard/client-types.test.ts fails while this file is not what the script writes.
"""The dashboard's JSON as dataclasses: the types of dashboard/api.ts, fields named as the JSON names them.

One difference: a number of the run's metric is named in the JSON by the metric (\`\`val_accuracy\`\`,
\`\`test_rmse\`\`); here it is the field named by its prefix (\`\`val\`\`, \`\`test\`\`), and the run's
\`\`objective.metric\`\` says which metric it is. Values are in the metric's units (an accuracy as a
fraction), \`\`*_at\`\` milliseconds since the epoch, \`\`*_s\`\` and \`\`seconds\`\` seconds.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Union

from ._json import JsonRecord
`;

function classText(c: PythonClass): string {
  const lines = ["", "", "@dataclass(frozen=True)", `class ${c.name}(${c.base ?? "JsonRecord"}):`];
  if (c.doc) lines.push(`    """${pythonDoc(c.doc)}"""`, "");
  const metric = c.fields.filter((f) => f.metricPrefix !== undefined);
  if (metric.length) lines.push(`    _metric: ClassVar[dict[str, str]] = {${metric.map((f) => `"${f.name}": "${f.metricPrefix}"`).join(", ")}}`);
  for (const f of c.fields) lines.push(...(f.doc ? [`    #: ${pythonDoc(f.doc)}`] : []), `    ${f.name}: ${f.python}`);
  return lines.join("\n");
}

/** A union of CLASSES' members (`LiveMessage(change)`): the Union, and a function that builds the member its `type` names (the first for a type it does not know). */
function unionText(union: string, members: [string, string][]): string {
  const fn = union.replace(/(?<=[a-z])([A-Z])/g, "_$1").toLowerCase();
  const byType = members.map(([cls, type]) => `"${type}": ${cls}`).join(", ");
  return `\n\n${union} = Union[${members.map(([cls]) => cls).join(", ")}]\n\n\ndef ${fn}(d: dict[str, Any]) -> ${union}:\n    return {${byType}}.get(d.get("type"), ${members[0]![0]}).from_json(d)\n`;
}

/** types.py's text. */
export function pythonTypesText(classes = pythonClasses()): string {
  const unions = new Map<string, [string, string][]>();
  for (const [cls, path] of Object.entries(CLASSES)) {
    const member = /^(\w+)\((\w+)\)$/.exec(path);
    if (member) unions.set(member[1]!, [...(unions.get(member[1]!) ?? []), [cls, member[2]!]]);
  }
  return HEADER + classes.map(classText).join("\n") + "\n" + [...unions].map(([u, members]) => unionText(u, members)).join("");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) writeFileSync(process.argv[2] ?? PYTHON_TYPES_FILE, pythonTypesText());
