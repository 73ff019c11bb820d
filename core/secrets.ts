/**
 * A deployment's credentials, one folder of files (mode 0700, each 0600):
 *
 * - `nats.json`: the user and password every bus client presents;
 * - `runner-token`: the bearer token every RunnerService call carries;
 * - `ca.pem`: the deployment's own certificate authority, the only one its
 *   clients trust; `tls.pem` + `tls-key.pem`: the certificate nats-server and
 *   the runner present, signed by it (localhost, 127.0.0.1 and this host).
 *
 * A client of one deployment therefore cannot talk to another's servers (its
 * CA does not vouch for them) nor authenticate to them (another password and
 * token). The local launch makes the folder in its workspace; a deployment on
 * several hosts brings its own (docs/DEPLOY.md, "Security model").
 */
import { execFileSync } from "node:child_process";
import { randomBytes, timingSafeEqual } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { ResearchError } from "./failure.js";
import { readJsonFile } from "./json.js";

const FILES = { nats: "nats.json", token: "runner-token", ca: "ca.pem", cert: "tls.pem", key: "tls-key.pem" } as const;
const NatsCredentials = z.object({ user: z.string().min(1), password: z.string().min(16) });

export interface Secrets {
  dir: string;
  nats: { user: string; password: string };
  runnerToken: string;
  /** PEM files: the CA clients trust, the servers' certificate and its key. */
  files: { ca: string; cert: string; key: string };
}

export function loadSecrets(dir: string): Secrets {
  const missing = Object.values(FILES).filter((f) => !existsSync(join(dir, f)));
  if (missing.length) {
    throw new ResearchError("invalid_config", `the secrets folder ${dir} lacks ${missing.join(", ")} (a local launch makes them; docs/DEPLOY.md says what goes there)`);
  }
  // Not JSON, or not the credentials: the one line below, never a parser's exception.
  const nats = readJsonFile(join(dir, FILES.nats), NatsCredentials);
  const runnerToken = readFileSync(join(dir, FILES.token), "utf8").trim();
  if (!nats || runnerToken.length < 16) {
    throw new ResearchError("invalid_config", `the secrets folder ${dir}: ${FILES.nats} needs a user and a password of 16+ characters, ${FILES.token} a token of 16+`);
  }
  return { dir, nats, runnerToken, files: { ca: join(dir, FILES.ca), cert: join(dir, FILES.cert), key: join(dir, FILES.key) } };
}

/**
 * The folder's secrets, made first when any is missing (all of them anew, so
 * they always belong together). `hostNames`: the names clients reach the
 * servers by, besides localhost, 127.0.0.1 and this host.
 */
export function ensureSecrets(dir: string, hostNames: string[] = []): Secrets {
  if (Object.values(FILES).some((f) => !existsSync(join(dir, f)))) createSecrets(dir, hostNames);
  return loadSecrets(dir);
}

function createSecrets(dir: string, hostNames: string[]): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const work = mkdtempSync(join(dir, ".new-"));
  try {
    const openssl = (...args: string[]) => execFileSync("openssl", args, { cwd: work, stdio: "pipe" });
    const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    const tag = randomBytes(4).toString("hex");
    openssl("req", "-x509", ...ec, "-keyout", "ca-key.pem", "-out", FILES.ca, "-days", "3650", "-subj", `/CN=research-swarm CA ${tag}`);
    openssl("req", ...ec, "-keyout", FILES.key, "-out", "tls.csr", "-subj", "/CN=research-swarm");
    const dns = ["localhost", hostname(), ...hostNames].filter((n) => /^[A-Za-z0-9*.-]+$/.test(n));
    const names = ["IP:127.0.0.1", "IP:::1", ...new Set(dns.map((n) => `DNS:${n}`))];
    writeFileSync(join(work, "ext.cnf"), `subjectAltName=${names.join(",")}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n`);
    openssl("x509", "-req", "-in", "tls.csr", "-CA", FILES.ca, "-CAkey", "ca-key.pem", "-CAcreateserial", "-out", FILES.cert, "-days", "3650", "-extfile", "ext.cnf");
    const secret = () => randomBytes(24).toString("hex");
    writeFileSync(join(work, FILES.nats), `${JSON.stringify({ user: "swarm", password: secret() })}\n`);
    writeFileSync(join(work, FILES.token), `${secret()}\n`);
    // The CA's key signs nothing more: without it no certificate can join this deployment.
    for (const f of Object.values(FILES)) {
      chmodSync(join(work, f), 0o600);
      renameSync(join(work, f), join(dir, f));
    }
  } catch (err) {
    const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim();
    throw new ResearchError("invalid_config", `cannot make the deployment's secrets in ${dir}: ${stderr || (err as Error).message}`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Constant-time check of a presented runner token. */
export function tokenMatches(secrets: Secrets, presented: string): boolean {
  const a = Buffer.from(secrets.runnerToken);
  const b = Buffer.from(presented);
  return a.length === b.length && timingSafeEqual(a, b);
}

const LOOPBACK = /^([a-z]+:\/\/)?(127\.0\.0\.1|localhost|\[::1\])(:\d+)?$/;

/**
 * The TLS server name to check for servers on loopback: "localhost", which the
 * certificate names; undefined elsewhere. Node warns when a TLS server name is
 * an IP address, and clients would otherwise use the address as given.
 */
export function loopbackServerName(addresses: string[]): string | undefined {
  return addresses.length > 0 && addresses.every((a) => LOOPBACK.test(a)) ? "localhost" : undefined;
}
