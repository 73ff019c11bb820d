/** A checkout's bundles run only while current: an edited source never runs stale (deploy/entries.ts). */
import { describe, expect, it } from "vitest";
import { mkdirSync, mkdtempSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { currentBundle, entryArgs, REPO_ROOT } from "../../deploy/entries.js";

describe("a process entry", () => {
  it("runs its bundle while none of the files it was built from changed, its source through tsx after", () => {
    const root = mkdtempSync(join(tmpdir(), "entries-"));
    mkdirSync(join(root, "dist", "entries", "agents", "judge"), { recursive: true });
    mkdirSync(join(root, "core"));
    writeFileSync(join(root, "core", "a.ts"), "");
    writeFileSync(join(root, "package-lock.json"), "{}");
    const past = new Date(Date.now() - 60_000);
    for (const f of ["core/a.ts", "package-lock.json"]) utimesSync(join(root, f), past, past);
    const startedMs = Date.now() - 30_000;
    writeFileSync(join(root, "dist", "entries", "built-from.json"), JSON.stringify({ "agents/judge/main.ts": { startedMs, inputs: ["core/a.ts", "package-lock.json"] } }));
    expect(currentBundle("agents/judge/main.ts", root)).toBe(join(root, "dist", "entries", "agents", "judge", "main.mjs"));
    // An entry it has no record of, an input edited after the build began, an input gone: not current.
    expect(currentBundle("agents/coder/main.ts", root)).toBeUndefined();
    utimesSync(join(root, "core", "a.ts"), new Date(), new Date());
    expect(currentBundle("agents/judge/main.ts", root)).toBeUndefined();
    utimesSync(join(root, "core", "a.ts"), past, past);
    writeFileSync(join(root, "dist", "entries", "built-from.json"), JSON.stringify({ "agents/judge/main.ts": { startedMs, inputs: ["core/gone.ts"] } }));
    expect(currentBundle("agents/judge/main.ts", root)).toBeUndefined();
  });

  it("in this checkout, runs the bundle set-up built (the suite starts after it)", () => {
    expect(entryArgs("agents/judge/main.ts")).toEqual([join(REPO_ROOT, "dist", "entries", "agents", "judge", "main.mjs")]);
  });
});
