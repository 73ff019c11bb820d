/**
 * secrets: a deployment's credentials folder for Compose or Kubernetes (a local launch makes its own):
 * the secrets, and nats-server's `nats-auth.conf` naming the files where the servers see them.
 */
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { natsAuthConfig } from "../../bus/index.js";
import { ensureSecrets } from "../../core/secrets.js";
import { args, fail } from "../args.js";

export default async function secrets(argv: string[]): Promise<void> {
  const { values: a, positionals } = args(argv, {
    "mounted-at": { type: "string", default: "/secrets" },
    // What deploy/compose.yaml and deploy/k8s call the servers.
    names: { type: "string", default: "nats,nats1,nats2,nats3,gpu-runner,*.gpu-runner" },
  }, { positionals: ["DIR"] });
  const dir = resolve(positionals[0] ?? fail("secrets needs a DIR to make them in"));
  const made = ensureSecrets(dir, String(a.names).split(",").map((n) => n.trim()).filter(Boolean));
  writeFileSync(join(dir, "nats-auth.conf"), natsAuthConfig(made, String(a["mounted-at"])), { mode: 0o600 });
  const files = ["nats.json", "runner-token", "ca.pem", "tls.pem", "tls-key.pem", "nats-auth.conf"];
  if (a.json) return void process.stdout.write(`${JSON.stringify({ dir, files, mounted_at: a["mounted-at"] })}\n`);
  process.stdout.write(`secrets in ${dir} (${files.join(", ")}); mount it at ${a["mounted-at"]} with RESEARCH_SECRETS=${a["mounted-at"]}\n`);
}
