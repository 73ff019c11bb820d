/** ablation: the same goal with research on and off over matched seeds (cli/ablation.ts), and the paired difference. */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pct, pp } from "../../core/format.js";
import { args, positiveInt } from "../args.js";
import { runAblation } from "../ablation.js";
import { sayer, withSwarm } from "../swarm-run.js";
import { prepareRun, RUN_FLAGS, withGoalDocument } from "../run-flags.js";

export default async function ablation(argv: string[]): Promise<void> {
  const a = withGoalDocument(args(argv, { ...RUN_FLAGS, runs: { type: "string" } }).values);
  const runs = positiveInt("runs", a.runs) ?? 3;
  const run = prepareRun(a);
  const say = sayer(a.json);
  await withSwarm(a, run, say, async (swarm, _interrupt, log) => {
    const result = await runAblation(swarm, {
      goal: run.goal!,
      start: run.start?.point,
      settings: (research, seed) => run.settings(swarm, research, seed),
      runs,
      log,
      onRun: (r) => say(`research ${r.research ? "on " : "off"} seed ${r.seed}: ${r.status}, best ${pct(r.bestMean)} (CI low ${pct(r.bestCiLow)}) in ${r.trials} trials, ${r.seconds.toFixed(0)} s`),
    });
    const dir = join(run.workspace, "ablations");
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `ablation-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
    writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    if (a.json) process.stdout.write(`${JSON.stringify({ ...result, file })}\n`);
    else {
      const t = result.meanTest;
      say(`briefs valid: ${pct(result.validBriefRate)}; first trial adopts a brief concept in ${pct(result.adoptionRate)} of research runs`);
      say(
        t
          ? `uplift (research on - off, best mean val accuracy, ${t.n} matched pairs): ${pp(t.meanDiff)}, 95% CI [${pp(t.ci95[0])}, ${pp(t.ci95[1])}], paired t = ${t.t.toFixed(2)}, p = ${t.p.toFixed(3)}`
          : "uplift: needs --runs 2 or more for a test",
      );
      say(`results: ${file}`);
    }
    return 0;
  });
}
