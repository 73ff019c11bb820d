import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createLogger } from "../../core/logger.js";

const dir = mkdtempSync(join(tmpdir(), "logger-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("createLogger", () => {
  it("writes a launcher's JSON lines to its log file, not to the console it shares with a person", () => {
    const file = join(dir, "logs", "launcher.log");
    const log = createLogger("research-agent", {}, file);
    log.warn({ server: "127.0.0.1:4222" }, "bus disconnected; reconnecting");
    const line = JSON.parse(readFileSync(file, "utf8").trim()) as Record<string, unknown>;
    expect(line).toMatchObject({ component: "research-agent", msg: "bus disconnected; reconnecting", server: "127.0.0.1:4222" });
  });
});
