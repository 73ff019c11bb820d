/**
 * A goal posted to serve names paths on the serving machine (its data, --from, --recipe): each must
 * lie under a --data-root once symlinks and ".." are resolved, and is refused before it is read.
 */
import { describe, expect, it } from "vitest";
import { mkdirSync, mkdtempSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CliFailure } from "../../cli/args.js";
import { confineTo, prepareGoal, type RunArgs } from "../../cli/run-flags.js";

const top = realpathSync(mkdtempSync(join(tmpdir(), "confine-")));
const root = join(top, "root");
mkdirSync(join(root, "data"), { recursive: true });
writeFileSync(join(root, "data", "people.csv"), "age,bought\n30,1\n40,0\n");
writeFileSync(join(root, "recipe.yaml"), "lr: 0.01\n");
// Outside the root: a file whose text would fail to parse as a model, so a refusal that quotes it would show it was read.
writeFileSync(join(top, "secret.yaml"), "password: hunter2\n");
symlinkSync("/etc", join(root, "etc"));
symlinkSync(join(top, "secret.yaml"), join(root, "model.yaml"));
symlinkSync(root, join(top, "root-link"));

const refusal = (a: Partial<RunArgs>, roots = [root]) => {
  try {
    prepareGoal({ workspace: top, goal: "digits: maximise accuracy", ...a } as RunArgs, top, confineTo(roots));
  } catch (err) {
    if (err instanceof CliFailure) return err.message;
    throw err;
  }
  return "accepted";
};
const outside = (what: string, path: string) => `${what} ${path} is outside the folders this swarm reads (${root}): serve it with --data-root`;

describe("a posted goal's paths", () => {
  it("are taken under the root, a symlinked root included", () => {
    expect(refusal({ goal: `csv:${join(root, "data", "people.csv")} target=bought: maximise accuracy` })).toBe("accepted");
    expect(refusal({ goal: `csv:${join(top, "root-link", "data", "people.csv")} target=bought: maximise accuracy` })).toBe("accepted");
  });

  it("are refused outside it, by a symlink, by .. or by an absolute path, before anything is read", () => {
    const cases: [Partial<RunArgs>, string][] = [
      [{ goal: "csv:/etc/passwd target=x: maximise accuracy" }, outside("the goal's data", "/etc/passwd")],
      [{ goal: `csv:${join(root, "etc", "passwd")} target=x: maximise accuracy` }, outside("the goal's data", join(root, "etc", "passwd"))],
      [{ "data-dir": join(root, "..") }, outside("the goal's data", top)],
      [{ from: join(root, "model.yaml") }, outside("--from", join(root, "model.yaml"))],
      [{ from: join(root, "..", "secret.yaml") }, outside("--from", join(top, "secret.yaml"))],
      [{ from: join(root, "etc", "hostname"), class: "Net" }, outside("--from", join(root, "etc", "hostname"))],
      [{ from: "r20990101-000000-0000/t001", recipe: join(root, "etc", "passwd") }, "--from r20990101-000000-0000/t001: no trial r20990101-000000-0000-t001 in " + join(top, "runs") + " (a run's trials are in its folder once it has stored them)"],
      [{ from: join(root, "nowhere.py"), class: "Net" }, `--from: no such file: ${join(root, "nowhere.py")}`],
      // Whether a file outside exists is never told: a missing one is outside all the same.
      [{ from: join(root, "etc", "no-such-file.py"), class: "Net" }, outside("--from", join(root, "etc", "no-such-file.py"))],
      [{ from: join(top, "no-such-file.py"), class: "Net" }, outside("--from", join(top, "no-such-file.py"))],
    ];
    for (const [a, message] of cases) expect(refusal(a), JSON.stringify(a)).toBe(message);
    // A model_config under the root whose recipe is outside it.
    writeFileSync(join(root, "small.yaml"), "name: small\nlayers:\n  - {type: flatten}\n  - {type: linear, out_features: 10}\n");
    expect(refusal({ from: join(root, "small.yaml"), recipe: join(root, "etc", "passwd") })).toBe(outside("--recipe", join(root, "etc", "passwd")));
    expect(refusal({ from: join(root, "small.yaml"), recipe: join(root, "recipe.yaml") })).toBe("accepted");
    // No root at all: no path is taken.
    expect(refusal({ goal: `csv:${join(root, "data", "people.csv")} target=bought: maximise accuracy` }, [])).toBe(
      `the goal's data ${join(root, "data", "people.csv")} is outside the folders this swarm reads: serve it with --data-root`,
    );
  });
});
