/**
 * predict: a finished run's best model on new inputs, fed as the run fed its data (its
 * standardisation, its seeds' ensemble, flip averaging): lineage-store/predict_model.py in the
 * runner's Python prints or writes CSV, one example a row.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { cliConfig } from "../../core/config.js";
import { args, EXIT, fail } from "../args.js";
import { bestModelRun } from "../workspace.js";

const PREDICTOR = join(import.meta.dirname, "..", "..", "lineage-store", "predict_model.py");

export default async function predict(argv: string[]): Promise<void> {
  const { values: a, positionals } = args(argv, { seed: { type: "string" }, out: { type: "string" } }, { positionals: ["RUN", "INPUT"], noJson: "it writes CSV, one example a row" });
  if (positionals.length !== 2) fail("predict needs a RUN id and an INPUT (.npz, .csv, IDX or a folder of images)");
  const [runId, input] = positionals as [string, string];
  const { runDir, seedArgs } = bestModelRun(a.workspace, runId, a.seed);
  if (!existsSync(input)) fail(`no file or folder ${input}`);
  const extra = [...seedArgs, ...(a.out ? ["--out", resolve(a.out)] : [])];
  const r = spawnSync(cliConfig().runnerPython, [PREDICTOR, runDir, resolve(input), ...extra], { encoding: "utf8", stdio: ["ignore", "inherit", "pipe"], timeout: 3_600_000 });
  if (r.status !== 0) {
    const last = (r.stderr ?? "").trim().split("\n").at(-1) ?? "";
    fail(last.startsWith("predict: ") ? last.slice("predict: ".length) : `predict failed: ${last.slice(0, 300)}`, last.startsWith("predict: ") ? EXIT.badInput : EXIT.cannotRun);
  }
}
