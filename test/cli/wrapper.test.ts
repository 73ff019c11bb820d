/**
 * The research-agent script: every verb runs set-up first (idempotent), but asking for help or
 * the version installs nothing. Run here on a copy of the script beside a set-up that leaves a
 * mark and a bundle that echoes, so the test sees which ran without installing anything.
 */
import { describe, expect, it } from "vitest";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { run } from "../helpers/run.js";

function copy(withBundle: boolean): string {
  const dir = mkdtempSync(join(tmpdir(), "wrapper-"));
  copyFileSync(join(import.meta.dirname, "..", "..", "research-agent"), join(dir, "research-agent"));
  mkdirSync(join(dir, "scripts"));
  writeFileSync(join(dir, "scripts", "setup.sh"), `touch "${join(dir, "set-up-ran")}"\n`);
  writeFileSync(join(dir, "package.json"), '{\n  "name": "x",\n  "version": "9.8.7",\n}\n');
  if (withBundle) {
    mkdirSync(join(dir, "dist", "entries", "cli"), { recursive: true });
    writeFileSync(join(dir, "dist", "entries", "cli", "research-agent.mjs"), 'process.stdout.write("bundle " + process.argv.slice(2).join(" ") + "\\n");\n');
  }
  return dir;
}

describe("the research-agent script", () => {
  it("answers help and the version without set-up, and runs set-up before any verb", async () => {
    const dir = copy(true);
    const say = (...argv: string[]) => run("bash", [join(dir, "research-agent"), ...argv], { timeout: 30_000 });
    for (const argv of [[], ["--help"], ["-h"], ["help", "launch"], ["--version"], ["-V"], ["launch", "--help"], ["runs", "-h"]]) {
      const r = await say(...argv);
      expect(r.stdout, argv.join(" ")).toBe(`bundle ${argv.join(" ")}\n`);
      expect(existsSync(join(dir, "set-up-ran")), argv.join(" ")).toBe(false);
    }
    const r = await say("runs", "--json");
    expect(r.stdout).toBe("bundle runs --json\n");
    expect(existsSync(join(dir, "set-up-ran"))).toBe(true);
  });

  it("says what set-up will do where it never ran, and installs nothing", async () => {
    const dir = copy(false);
    const r = await run("bash", [join(dir, "research-agent"), "--version"], { timeout: 30_000 });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^research-agent 9\.8\.7: not set up on this machine yet\./);
    expect(existsSync(join(dir, "set-up-ran"))).toBe(false);
    rmSync(dir, { recursive: true, force: true });
  });
});
