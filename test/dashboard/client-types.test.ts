/**
 * The Python client's types (clients/python/src/research_swarm/types.py) against the one
 * description of the dashboard's JSON, dashboard/api.ts, read with the TypeScript compiler:
 * every field the API sends is a field of the client's dataclass for it, and every dataclass
 * field is one the API sends. A field added on one side only fails here.
 */
import { describe, expect, it } from "vitest";
import { join } from "node:path";
import ts from "typescript";
import { DEFAULT_PYTHON } from "../../core/config.js";
import { METRIC } from "../../core/enums.js";
import { run } from "../helpers/run.js";

const ROOT = join(import.meta.dirname, "..", "..");
const PYTHON = process.env.RUNNER_PYTHON ?? DEFAULT_PYTHON;

/** Each dataclass and where its JSON is described: an exported type, a property's type in it (`[]`: an array's element), or a union's member by its `type`. */
const PAIRS: Record<string, string> = {
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
  Brief: "RunDetail.briefs[]",
  Suggestion: "RunDetail.briefs[].suggestions[]",
  PairedGain: "PairedGain",
  PathStep: "AgainstStart.path[]",
  AgainstStart: "AgainstStart",
  RunDetail: "RunDetail",
  WarmStartRow: "WarmStartRow",
  PastTrial: "PastTrial",
  PastPrior: "PastPrior",
  Estimate: "Estimate",
  FrontAxis: "FrontAxis",
  FrontTrial: "FrontTrial",
  Front: "FrontJson",
  Limits: "LimitsJson",
  SeedCurves: "SeedCurves",
  ModelSummary: "TrialDetail.summary",
  LayerSummary: "TrialDetail.summary.layers[]",
  ClassScores: "TrialDetail.per_class[]",
  Analysis: "TrialDetail.analysis",
  Failure: "TrialDetail.failure",
  SeedScore: "HeldOutTest.seeds[]",
  HeldOutTest: "HeldOutTest",
  InferenceCost: "HeldOutTest.inference",
  InferenceTiming: "HeldOutTest.inference.batch_1",
  TrialDetail: "TrialDetail",
  SearchHit: "SearchHit",
  InterventionReply: "InterventionReply",
  RunTaken: "StartRunReply",
  QueuedRun: "QueuedRun",
  Queue: "QueueJson",
  Change: "LiveMessage(change)",
  Progress: "LiveMessage(progress)",
};

/** The properties the API's JSON has at `path`: for a union, its members' together (a reply's ok and error branches alike). */
function apiFields(): Record<string, string[]> {
  const file = join(ROOT, "dashboard", "api.ts");
  const program = ts.createProgram([file], { strict: true, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022 });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(file)!;
  const exports = new Map(checker.getExportsOfModule(checker.getSymbolAtLocation(source)!).map((s) => [s.name, s]));
  const declared = (name: string) => {
    const symbol = exports.get(name)!;
    const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
    return checker.getDeclaredTypeOfSymbol(target);
  };
  const parts = (t: ts.Type): ts.Type[] => (t.isUnion() ? t.types.filter((u) => !(u.flags & (ts.TypeFlags.Null | ts.TypeFlags.Undefined))) : [t]);
  const propertyType = (t: ts.Type, name: string): ts.Type => {
    for (const part of parts(t)) {
      const p = part.getProperty(name);
      if (p) return checker.getNonNullableType(checker.getTypeOfSymbol(p));
    }
    throw new Error(`no property ${name}`);
  };
  const at = (path: string): ts.Type[] => {
    const member = /^(\w+)\((\w+)\)$/.exec(path);
    if (member) return parts(declared(member[1]!)).filter((u) => checker.typeToString(checker.getTypeOfSymbol(u.getProperty("type")!)) === `"${member[2]}"`);
    const [head, ...rest] = path.split(".");
    let t = declared(head!);
    for (const step of rest) {
      const [name, array] = [step.replace(/\[\]$/, ""), step.endsWith("[]")];
      t = propertyType(t, name);
      if (array) t = checker.getTypeArguments(t as ts.TypeReference)[0]!;
    }
    return parts(t);
  };
  return Object.fromEntries(Object.entries(PAIRS).map(([cls, path]) => [cls, [...new Set(at(path).flatMap((t) => t.getProperties().map((p) => p.name)))].sort()]));
}

describe("the Python client's types", () => {
  it("have every field of dashboard/api.ts's JSON and no other", async () => {
    const script = [
      "import dataclasses, json, sys",
      "sys.path.insert(0, 'clients/python/src')",
      "from research_swarm import types as t",
      "print(json.dumps({c.__name__: {'fields': [f.name for f in dataclasses.fields(c)], 'metric': c._metric}",
      "  for c in vars(t).values() if isinstance(c, type) and dataclasses.is_dataclass(c)}))",
    ].join("\n");
    const r = await run(PYTHON, ["-c", script], { cwd: ROOT, timeout: 60_000 });
    const python = JSON.parse(r.stdout) as Record<string, { fields: string[]; metric: Record<string, string> }>;
    expect(Object.keys(python).sort(), r.stderr).toEqual(Object.keys(PAIRS).sort());
    const api = apiFields();
    const metricNamed = (prefix: string) => METRIC.names.map((m) => `${prefix}${m}`);
    for (const [cls, { fields, metric }] of Object.entries(python)) {
      // A field named by the run's metric in the JSON is one field here, named by its prefix.
      const expected = [...fields.filter((f) => !(f in metric)), ...Object.values(metric).flatMap(metricNamed)].sort();
      // A reply's `ok` and `error`: the client raises DashboardError on a refusal, and keeps neither.
      const dispatched = /Reply$/.test(PAIRS[cls]!) ? ["ok", "error"] : [];
      const sent = api[cls]!.filter((f) => !dispatched.includes(f));
      expect(sent, `${cls} (${PAIRS[cls]})`).toEqual(expected);
    }
  });
});
