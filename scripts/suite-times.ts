/**
 * What the suite's run took: each file's seconds (from vitest's JSON report), the whole run's wall
 * time and the machine (bench/machine.py: CPU, cores, native bf16, a calibration step), written to
 * a JSON beside the report (bench/out/, never committed) and summed up in a few lines on stdout.
 *
 *   npx tsx scripts/suite-times.ts VITEST_JSON OUT_JSON WALL_SECONDS
 */
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { relative } from "node:path";

const [report, out, wall] = process.argv.slice(2);
if (!report || !out || !wall) throw new Error("usage: npx tsx scripts/suite-times.ts VITEST_JSON OUT_JSON WALL_SECONDS");
const root = process.cwd();
const j = JSON.parse(readFileSync(report, "utf8")) as {
  numTotalTests: number;
  numPassedTests: number;
  numFailedTests: number;
  testResults: { name: string; startTime: number; endTime: number; status: string }[];
};
const files = j.testResults
  .map((f) => ({ file: relative(root, f.name), seconds: Math.round((f.endTime - f.startTime) / 100) / 10, status: f.status }))
  .sort((a, b) => b.seconds - a.seconds);
let machine: unknown = null;
try {
  machine = JSON.parse(execFileSync(".venv/bin/python", ["bench/machine.py"], { encoding: "utf8", timeout: 60_000 }));
} catch {
  // A machine without the project's venv: the times alone.
}
const doc = { date: new Date().toISOString(), wall_s: Number(wall), tests: j.numTotalTests, passed: j.numPassedTests, failed: j.numFailedTests, machine, files };
writeFileSync(out, `${JSON.stringify(doc, null, 2)}\n`);
console.log(`suite: vitest ${doc.wall_s} s wall, ${doc.passed} of ${doc.tests} tests passed; longest files: ${files.slice(0, 6).map((f) => `${f.file.replace(/^test\//, "")} ${f.seconds} s`).join(", ")} (${out})`);
// The plain closing line any CI reads.
console.log(`${doc.passed} passed, ${doc.failed} failed`);
