/** core/json.ts readJsonFile: a file the project wrote, read against its schema or not at all. */
import { describe, expect, it } from "vitest";
import { mkdtempSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { readJsonFile } from "../../core/json.js";
import { swarmFile } from "../../cli/workspace.js";

const SWARM = z.object({ nats_url: z.string(), runner_address: z.string() });

describe("a JSON file read against its schema", () => {
  const dir = mkdtempSync(join(tmpdir(), "json-file-"));
  const file = (name: string, text: string) => (writeFileSync(join(dir, name), text), join(dir, name));

  it("gives the typed value of a file of its shape, and undefined for one missing, torn or of another shape", () => {
    expect(readJsonFile(file("ok.json", '{"nats_url": "nats://h:1", "runner_address": "h:2", "pid": 7}'), SWARM)).toEqual({ nats_url: "nats://h:1", runner_address: "h:2" });
    expect(readJsonFile(join(dir, "missing.json"), SWARM)).toBeUndefined();
    expect(readJsonFile(file("torn.json", '{"nats_url": "nats://h'), SWARM)).toBeUndefined();
    expect(readJsonFile(file("other.json", '{"nats_url": 5}'), SWARM)).toBeUndefined();
  });

  it("lets the CLI take a workspace whose swarm.json is torn for one with no swarm", () => {
    const ws = mkdtempSync(join(tmpdir(), "json-file-ws-"));
    writeFileSync(join(ws, "swarm.json"), '{"nats_url": ');
    expect(swarmFile(ws)).toBeUndefined();
  });

  it("lets the CLI take a workspace whose launcher has ended for one with no swarm, and one launched on another host for a live one", () => {
    const ws = mkdtempSync(join(tmpdir(), "json-file-ws-"));
    const swarm = (pid: number, host?: string) => writeFileSync(join(ws, "swarm.json"), JSON.stringify({ nats_url: "nats://127.0.0.1:1", runner_address: "127.0.0.1:2", pid, ...(host && { host }) }));
    // A pid past the kernel's limit (pid_max is at most 2^22) names no process.
    swarm(1 << 23, hostname());
    expect(swarmFile(ws)).toBeUndefined();
    swarm(1 << 23);
    expect(swarmFile(ws), "a file from before hosts were recorded: this host's").toBeUndefined();
    swarm(process.pid, hostname());
    expect(swarmFile(ws)?.nats_url).toBe("nats://127.0.0.1:1");
    swarm(1 << 23, `not-${hostname()}`);
    expect(swarmFile(ws)?.nats_url).toBe("nats://127.0.0.1:1");
  });
});
