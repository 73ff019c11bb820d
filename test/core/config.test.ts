import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { run } from "../helpers/run.js";
import { DEFAULT_PYTHON, ENV, parseAgentConfig, parseCliConfig, parseResearcherConfig, parseRunnerConfig, VARIABLE_DOCS } from "../../core/config.js";
import { entryArgs } from "../../deploy/entries.js";

describe("process config", () => {
  it("fills every default", () => {
    const c = parseAgentConfig({});
    expect(c).toMatchObject({
      logLevel: "info",
      workspace: "./workspace",
      natsServers: ["nats://127.0.0.1:4222"],
      streamReplicas: 1,
      runnerAddresses: ["127.0.0.1:50051"],
      concurrency: undefined,
      ackWaitS: undefined,
      llm: {},
    });
    expect(c.instance).toMatch(new RegExp(`-${process.pid}$`));
    expect(parseCliConfig({})).toMatchObject({ logLevel: "warn", runnerPython: DEFAULT_PYTHON });
    expect(parseResearcherConfig({ RESEARCH_ARXIV: "1", RESEARCH_NOTES: "/notes" })).toMatchObject({ arxiv: true, notesDir: "/notes" });
  });

  it("reads lists and numbers, and takes an empty value for unset", () => {
    const c = parseAgentConfig({ NATS_URL: "nats://a:4222, nats://b:4222", RUNNER_ADDRESS: "gpu-a:50051,[::1]:50052", NATS_STREAM_REPLICAS: "3", AGENT_CONCURRENCY: "", AGENT_ACK_WAIT_S: "10", LLM: "" });
    expect(c.natsServers).toEqual(["nats://a:4222", "nats://b:4222"]);
    expect(c.runnerAddresses).toEqual(["gpu-a:50051", "[::1]:50052"]);
    expect(c.streamReplicas).toBe(3);
    expect(c.concurrency).toBeUndefined();
    expect(c.ackWaitS).toBe(10);
    expect(c.llm.llm).toBeUndefined();
  });

  it("rejects a bad value with one line naming each bad variable", () => {
    expect(() => parseAgentConfig({ NATS_STREAM_REPLICAS: "three", LOG_LEVEL: "loud" })).toThrow(
      'invalid setting LOG_LEVEL="loud": expected one of fatal, error, warn, info, debug, trace, silent; NATS_STREAM_REPLICAS="three": expected a whole number from 1 to 5',
    );
    expect(() => parseAgentConfig({ RUNNER_ADDRESS: "gpu-a" })).toThrow('RUNNER_ADDRESS="gpu-a": expected host:port');
    expect(() => parseAgentConfig({ LLM: "gpt-4o" })).toThrow('LLM="gpt-4o": expected none or openai:MODEL');
    expect(() => parseResearcherConfig({ RESEARCH_ARXIV: "yes" })).toThrow('RESEARCH_ARXIV="yes": expected 1 (on) or 0 (off)');
    expect(() => parseAgentConfig({ INSTANCE_ID: "coder.1" })).toThrow('INSTANCE_ID="coder.1": expected letters, digits, _ and - only');
  });

  it("lets the runner's flags win and names them when they are bad", () => {
    // A shared config map gives every process the agents' list of runners.
    const env = { RUNNER_ADDRESS: "gpu-a:50051,gpu-b:50051" };
    expect(() => parseRunnerConfig(env)).toThrow("the runner listens on one host:port");
    expect(parseRunnerConfig(env, { address: "0.0.0.0:50051", python: "/opt/py" })).toMatchObject({ address: "0.0.0.0:50051", python: "/opt/py" });
    expect(() => parseRunnerConfig({}, { address: "50051" })).toThrow('--address="50051"');
  });

  it("stops a process at start with that line and status 2", async () => {
    const r = await run(process.execPath, entryArgs("gpu-runner/main.ts"), { env: { ...process.env, LOG_LEVEL: "loud" }, timeout: 60_000 });
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(`invalid setting LOG_LEVEL="loud": expected one of fatal, error, warn, info, debug, trace, silent\n`);
  });
});

function shownDefault(schema: (typeof ENV.shape)[keyof typeof ENV.shape]): string {
  const doc = VARIABLE_DOCS.get(schema)!;
  if (doc.shown) return doc.shown;
  const value: unknown = schema.parse(undefined);
  return `\`${Array.isArray(value) ? value.join(",") : String(value)}\``;
}

it("docs/DEPLOY.md documents every variable as core/config.ts defines it", () => {
  const rows = Object.entries(ENV.shape).map(([name, schema]) => {
    const doc = VARIABLE_DOCS.get(schema);
    expect(doc, `${name} has no VARIABLE_DOCS entry`).toBeDefined();
    return `| \`${name}\` | ${doc!.readBy} | ${shownDefault(schema)} | ${doc!.description} |`;
  });
  const table = ["| variable | read by | default | meaning |", "|---|---|---|---|", ...rows].join("\n");
  expect(readFileSync("docs/DEPLOY.md", "utf8").includes(`${table}\n`), `docs/DEPLOY.md must contain this table, generated from core/config.ts:\n\n${table}\n`).toBe(true);
});
