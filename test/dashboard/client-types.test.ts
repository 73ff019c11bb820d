/**
 * The Python client's types (clients/python/src/research_swarm/types.py) are generated from the one
 * description of the dashboard's JSON, dashboard/api.ts, by scripts/gen-python-types.ts: the
 * committed file is what the script writes now, and the dataclasses Python makes of it have every
 * field the API sends and no other (a number of the run's metric one field, named by its prefix).
 */
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { DEFAULT_PYTHON } from "../../core/config.js";
import { METRIC } from "../../core/enums.js";
import { CLASSES, PYTHON_TYPES_FILE, pythonClasses, pythonTypesText } from "../../scripts/gen-python-types.js";
import { run } from "../helpers/run.js";

const ROOT = join(import.meta.dirname, "..", "..");
const PYTHON = process.env.RUNNER_PYTHON ?? DEFAULT_PYTHON;
const classes = pythonClasses();

describe("the Python client's types", () => {
  it("are what scripts/gen-python-types.ts writes from dashboard/api.ts", () => {
    expect(readFileSync(PYTHON_TYPES_FILE, "utf8"), "stale: run npx tsx scripts/gen-python-types.ts and commit the result").toBe(pythonTypesText(classes));
  });

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
    expect(Object.keys(python).sort(), r.stderr).toEqual(Object.keys(CLASSES).sort());
    const sent = new Map(classes.map((c) => [c.name, [...c.json].sort()]));
    for (const [cls, { fields, metric }] of Object.entries(python)) {
      // A field named by the run's metric in the JSON, one key per metric the swarm knows, is one field here.
      const expected = [...fields.filter((f) => !(f in metric)), ...Object.values(metric).flatMap((prefix) => METRIC.names.map((m) => `${prefix}${m}`))];
      expect(sent.get(cls), `${cls} (${CLASSES[cls]})`).toEqual(expected.sort());
    }
  });
});
