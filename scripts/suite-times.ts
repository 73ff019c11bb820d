/**
 * What the suite's run took, as a vitest reporter beside the default one: each file's seconds (and
 * each test's over 5 s), the
 * run's wall time and the machine (bench/machine.py: CPU, cores, native bf16, a calibration step),
 * written to bench/out/suite/times.json (never committed) and summed up in a few lines on stdout.
 *
 *   vitest run --reporter=default --reporter=./scripts/suite-times.ts
 *
 * A file's seconds are its suite's own wall time, hooks included (what the default reporter prints
 * beside it): vitest's JSON report times a file from its first test to its last, so a file whose
 * work is a beforeAll (three swarms, a run the tests then read) counted as a few milliseconds there.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, relative } from "node:path";
import type { Reporter, TestModule } from "vitest/node";

const OUT = "bench/out/suite/times.json";

export default class SuiteTimes implements Reporter {
  private readonly start = Date.now();

  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const root = process.cwd();
    const files = modules
      .map((m) => ({ file: relative(root, m.moduleId), seconds: Math.round((m.task.result?.duration ?? 0) / 100) / 10, status: m.state() }))
      .sort((a, b) => b.seconds - a.seconds);
    const tests = modules.flatMap((m) => [...m.children.allTests()]);
    let machine: unknown = null;
    try {
      machine = JSON.parse(execFileSync(".venv/bin/python", ["bench/machine.py"], { encoding: "utf8", timeout: 60_000 }));
    } catch {
      // A machine without the project's venv: the times alone.
    }
    const doc = {
      date: new Date().toISOString(),
      wall_s: Math.round((Date.now() - this.start) / 1000),
      tests: tests.length,
      passed: tests.filter((t) => t.result().state === "passed").length,
      failed: tests.filter((t) => t.result().state === "failed").length,
      machine,
      files,
      // The tests worth shortening: each over 5 s, longest first.
      slow_tests: tests
        .map((t) => ({ file: relative(root, t.module.moduleId), test: t.fullName, seconds: Math.round((t.diagnostic()?.duration ?? 0) / 100) / 10 }))
        .filter((t) => t.seconds > 5)
        .sort((a, b) => b.seconds - a.seconds),
    };
    mkdirSync(dirname(OUT), { recursive: true });
    writeFileSync(OUT, `${JSON.stringify(doc, null, 2)}\n`);
    console.log(`suite: vitest ${doc.wall_s} s wall, ${doc.passed} of ${doc.tests} tests passed; longest files: ${files.slice(0, 6).map((f) => `${f.file.replace(/^test\//, "")} ${f.seconds} s`).join(", ")} (${OUT})`);
    // The plain closing line any CI reads.
    console.log(`${doc.passed} passed, ${doc.failed} failed`);
  }
}
