import { expect, it } from "vitest";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../../core/logger.js";
import { Supervisor } from "../../deploy/supervisor.js";

it("keeps what a stopped process's helper writes after it exited, and writes nothing after the log has ended", async () => {
  const dir = mkdtempSync(join(tmpdir(), "supervisor-"));
  try {
    const supervisor = new Supervisor(dir, createLogger("supervisor-test"));
    supervisor.start({ name: "loud", entry: "test/fixtures/processes/loud-exit.mjs" });
    const log = join(dir, "loud.log");
    const t0 = Date.now();
    while (!(existsSync(log) && readFileSync(log, "utf8").includes("ready")) && Date.now() - t0 < 30_000) await new Promise((r) => setTimeout(r, 50));
    // Lines that came after the process's exit and were written to an ended log were an uncaught
    // error in the launcher (vitest reports it against this file).
    await supervisor.stopAll();
    const lines = readFileSync(log, "utf8").trimEnd().split("\n");
    expect(lines.at(-1)).toBe("helper's last line");
    expect(lines.length).toBe(52);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);
