import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterAll, expect, it } from "vitest";

const COMMITTED = "proto/gen";
const fresh = mkdtempSync(join(tmpdir(), "proto-gen-"));
afterAll(() => rmSync(fresh, { recursive: true, force: true }));

function tree(root: string): Map<string, string> {
  const files = readdirSync(root, { recursive: true, withFileTypes: true }).filter((d) => d.isFile());
  return new Map(files.map((d) => [relative(root, join(d.parentPath, d.name)), readFileSync(join(d.parentPath, d.name), "utf8")]));
}

it("the committed proto/gen is what the .proto files generate", () => {
  const gen = spawnSync("bash", ["scripts/gen-proto.sh", join(fresh, "gen")], { encoding: "utf8" });
  expect(gen.status, `scripts/gen-proto.sh failed:\n${gen.stderr}`).toBe(0);
  const want = tree(join(fresh, "gen"));
  const have = tree(COMMITTED);
  const stale = [...new Set([...want.keys(), ...have.keys()])].filter((f) => want.get(f) !== have.get(f)).sort();
  expect(stale, `proto/gen is stale (${stale.join(", ")}): run npm run gen and commit proto/gen`).toEqual([]);
});
