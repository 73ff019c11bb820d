import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { randomInt } from "node:crypto";
import { createServer, connect as tcpConnect } from "node:net";
import { basename, join } from "node:path";
import type { Secrets } from "../core/secrets.js";
import { ResearchError } from "../core/failure.js";

export interface NatsServerOptions {
  /** JetStream store directory; reuse it to keep the stream across restarts. */
  dataDir: string;
  /** Fixed port (needed to restart on the same address); a free one when omitted. */
  port?: number;
  /** Defaults to /usr/sbin/nats-server, then nats-server on PATH. */
  binary?: string;
  readyTimeoutMs?: number;
  /** Require the deployment's user and password, over TLS with its certificate (core/secrets.ts). */
  secrets?: Secrets;
  /** The address it listens on (default 127.0.0.1): 0.0.0.0 for runners on other hosts, with `secrets` only. */
  host?: string;
  /** A node of a JetStream cluster on loopback: its name, its route port and every node's route port (its own included). */
  cluster?: { name: string; port: number; routes: number[] };
}

export interface NatsServer {
  url: string;
  port: number;
  pid: number;
  stop(): Promise<void>;
}

const STDERR_TAIL = 4096;

export async function startNatsServer(opts: NatsServerOptions): Promise<NatsServer> {
  const port = opts.port ?? (await freePort());
  const binary = opts.binary ?? defaultBinary();
  const timeoutMs = opts.readyTimeoutMs ?? 10_000;
  mkdirSync(opts.dataDir, { recursive: true });

  const config = opts.secrets ? ["-c", writeAuthConfig(opts.dataDir, opts.secrets)] : [];
  const c = opts.cluster;
  const cluster = c
    ? ["--server_name", c.name, "--cluster_name", "research", "--cluster", `nats://127.0.0.1:${c.port}`, "--routes", c.routes.map((p) => `nats://127.0.0.1:${p}`).join(",")]
    : [];
  const child = spawn(binary, [...config, ...cluster, "-js", "-sd", opts.dataDir, "-a", opts.host ?? "127.0.0.1", "-p", String(port)], {
    stdio: ["ignore", "ignore", "pipe"],
    // Its own process group, like the swarm's other processes (deploy/supervisor.ts): a Ctrl-C in
    // the launcher's terminal must not stop the bus under the launcher while it writes its report
    // (its client then logged "bus disconnected" into the console); the launcher stops it in order.
    detached: true,
  });
  let stderr = "";
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (chunk: string) => {
    stderr = (stderr + chunk).slice(-STDERR_TAIL);
  });
  let exited: string | undefined;
  const exit = new Promise<void>((resolve) => {
    child.once("exit", (code, signal) => {
      exited = signal ? `signal ${signal}` : `code ${code}`;
      resolve();
    });
    child.once("error", (err) => {
      exited = err.message;
      resolve();
    });
  });

  const deadline = Date.now() + timeoutMs;
  // "Server is ready" is printed after JetStream has recovered its store, so
  // a client that connects afterwards can use the stream straight away.
  while (!stderr.includes("Server is ready") || !(await accepts(port))) {
    if (exited !== undefined || Date.now() > deadline) {
      await kill(child, exit);
      const why = exited !== undefined ? `exited (${exited})` : `not ready after ${timeoutMs} ms`;
      throw new ResearchError("crash", `nats-server on port ${port} ${why}; stderr tail:\n${stderr.trim()}`);
    }
    await sleep(50);
  }

  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    pid: child.pid!,
    stop: () => kill(child, exit),
  };
}

/**
 * nats-server's configuration for the deployment's credentials (pass it with
 * `-c`): its user and password, TLS with its certificate. `filesDir` is where
 * the server sees the secrets folder (a container's mount point).
 */
export function natsAuthConfig(secrets: Secrets, filesDir = secrets.dir): string {
  const q = JSON.stringify;
  return (
    `authorization {\n  user: ${q(secrets.nats.user)}\n  password: ${q(secrets.nats.password)}\n}\n` +
    `tls {\n  cert_file: ${q(join(filesDir, basename(secrets.files.cert)))}\n  key_file: ${q(join(filesDir, basename(secrets.files.key)))}\n  timeout: 5\n}\n`
  );
}

/** 0600: it holds the password. */
function writeAuthConfig(dataDir: string, secrets: Secrets): string {
  const path = join(dataDir, "auth.conf");
  writeFileSync(path, natsAuthConfig(secrets), { mode: 0o600 });
  return path;
}

function defaultBinary(): string {
  return existsSync("/usr/sbin/nats-server") ? "/usr/sbin/nats-server" : "nats-server";
}

async function kill(child: ChildProcess, exit: Promise<void>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exit;
  clearTimeout(timer);
}

/** Where freePort draws from: up to the kernel's ephemeral range, which starts at 32768 by default. */
const DRAWN_FROM = 20_000;
const handedOut = new Set<number>();

/**
 * A port that was free a moment ago, for a server that another process starts next (a nats-server,
 * a swarm's runner, which binds only once its workers are up, seconds later). Drawn below the
 * kernel's ephemeral range: a port the kernel picks for a listener on :0 is one it may give any
 * other listener on :0, or an outgoing connection, before ours binds it, and a runner that cannot
 * bind its port fails every restart until its swarm's start deadline. Below the range only this
 * function's callers draw, and this process never hands out the same port twice.
 */
export async function freePort(): Promise<number> {
  const low = ephemeralLow();
  for (let tries = 0; low > DRAWN_FROM + 1000 && tries < 100; tries++) {
    const port = randomInt(DRAWN_FROM, low);
    if (handedOut.has(port) || !(await listenOn(port).then(() => true, () => false))) continue;
    handedOut.add(port);
    return port;
  }
  // A host whose ephemeral range covers the low ports, or no port free below it: the kernel's pick.
  return listenOn(0);
}

function ephemeralLow(): number {
  try {
    return Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]) || 0;
  } catch {
    return 32_768;
  }
}

/** Listens on 127.0.0.1:`port` and closes again: the port it got. */
function listenOn(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      const address = server.address();
      const got = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(got));
    });
  });
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = tcpConnect({ port, host: "127.0.0.1" });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
