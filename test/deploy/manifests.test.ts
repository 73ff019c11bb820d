/**
 * deploy/ against the engines' own schemas, offline: every Kubernetes manifest with
 * kubernetes-validate (Kubernetes' OpenAPI-derived schemas, strict: an unknown field fails) and
 * the Compose files with check-jsonschema's copy of the Compose specification; then what a
 * deployment of this swarm must have, read from the same files: the GPU request, the
 * credentials mounted, a three-node NATS cluster, the runner's health probes.
 */
import { describe, expect, it } from "vitest";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseAllDocuments, parse } from "yaml";
import { run } from "../helpers/run.js";

const ROOT = join(import.meta.dirname, "..", "..");
const K8S = join(ROOT, "deploy", "k8s");
const BIN = join(ROOT, ".venv", "bin");
const KUBERNETES = "1.33.0";
const manifests = readdirSync(K8S).filter((f) => f.endsWith(".yaml") && f !== "kustomization.yaml");
const compose = ["compose.yaml", "compose.gpu.yaml"].map((f) => join(ROOT, "deploy", f));

const kubeValidate = (files: string[]) => run(join(BIN, "kubernetes-validate"), ["-k", KUBERNETES, "--strict", "--quiet", ...files], { timeout: 120_000 });
const composeValidate = (files: string[]) => run(join(BIN, "check-jsonschema"), ["--builtin-schema", "vendor.compose-spec", ...files], { timeout: 120_000 });

type Doc = { kind: string; metadata: { name: string }; spec?: Record<string, any> };
const docs: Doc[] = manifests.flatMap((f) => parseAllDocuments(readFileSync(join(K8S, f), "utf8")).map((d) => d.toJS() as Doc)).filter(Boolean);
const workload = (name: string) => docs.find((d) => ["StatefulSet", "Deployment"].includes(d.kind) && d.metadata.name === name)!;

describe("deploy/", () => {
  it("validates against Kubernetes' and Compose's own schemas, and a broken copy does not", async () => {
    const [k8s, cmp] = await Promise.all([kubeValidate(manifests.map((f) => join(K8S, f))), composeValidate(compose)]);
    expect(k8s.status, k8s.stdout + k8s.stderr).toBe(0);
    expect(cmp.status, cmp.stdout + cmp.stderr).toBe(0);
    // The validators do validate: a replica count as words fails each.
    const dir = mkdtempSync(join(tmpdir(), "deploy-broken-"));
    writeFileSync(join(dir, "nats.yaml"), readFileSync(join(K8S, "nats.yaml"), "utf8").replace("replicas: 3", 'replicas: "three"'));
    writeFileSync(join(dir, "compose.yaml"), readFileSync(compose[0]!, "utf8").replace("restart: unless-stopped", "restart: [sometimes]"));
    const [badK8s, badCmp] = await Promise.all([kubeValidate([join(dir, "nats.yaml")]), composeValidate([join(dir, "compose.yaml")])]);
    expect(badK8s.status).not.toBe(0);
    expect(badCmp.status).not.toBe(0);
  }, 180_000);

  it("lists every manifest in its kustomization", () => {
    const kustomization = parse(readFileSync(join(K8S, "kustomization.yaml"), "utf8")) as { resources: string[] };
    expect([...kustomization.resources].sort()).toEqual([...manifests].sort());
  });

  it("asks for a GPU for the runner, with health probes, and mounts the credentials in every workload", () => {
    const runner = workload("gpu-runner").spec!.template.spec.containers[0];
    expect(runner.resources.limits["nvidia.com/gpu"]).toBe(1);
    for (const probe of ["startupProbe", "readinessProbe", "livenessProbe"]) expect(runner[probe], probe).toBeDefined();
    const gpuCompose = parse(readFileSync(compose[1]!, "utf8")) as { services: { "gpu-runner": { deploy: { resources: { reservations: { devices: { capabilities: string[] }[] } } } } } };
    expect(gpuCompose.services["gpu-runner"].deploy.resources.reservations.devices[0]!.capabilities).toEqual(["gpu"]);
    const workloads = docs.filter((d) => ["StatefulSet", "Deployment"].includes(d.kind));
    expect(workloads.length).toBeGreaterThanOrEqual(7);
    for (const w of workloads) {
      const volumes = (w.spec!.template.spec.volumes ?? []) as { secret?: { secretName: string } }[];
      expect(volumes.some((v) => v.secret?.secretName === "swarm-secrets"), w.metadata.name).toBe(true);
    }
  });

  it("runs NATS as a three-node JetStream cluster with a route to each node", () => {
    const nats = workload("nats");
    expect(nats.spec!.replicas).toBe(3);
    const config = docs.find((d) => d.kind === "ConfigMap" && JSON.stringify(d).includes("routes"));
    const routes = JSON.stringify(config).match(/nats:\/\/nats-\d\.nats-headless:6222/g) ?? [];
    expect(new Set(routes)).toEqual(new Set([0, 1, 2].map((i) => `nats://nats-${i}.nats-headless:6222`)));
    expect(JSON.stringify(config)).toContain("jetstream");
  });
});
