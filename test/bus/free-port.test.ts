/**
 * freePort's ports are ones no other listener on :0 or outgoing connection is given while the
 * server it is for starts: below the kernel's ephemeral range, and never twice from one process.
 */
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { describe, expect, it } from "vitest";
import { freePort } from "../../bus/index.js";

const ephemeralLow = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);

function listen(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve(server));
  });
}

describe("freePort", () => {
  it("hands out distinct ports below the ephemeral range that a server can then listen on", async () => {
    const ports = await Promise.all(Array.from({ length: 50 }, () => freePort()));
    expect(new Set(ports).size).toBe(ports.length);
    for (const port of ports) expect(port).toBeLessThan(ephemeralLow);
    const servers = await Promise.all(ports.slice(0, 5).map(listen));
    for (const s of servers) s.close();
  });
});
