/**
 * Built-in planner against the random baseline: the same goal, trial budget,
 * seeds and time budget, a fresh swarm per run. Reports the best validation
 * score reached (CI lower bound and mean), trials and seconds until the
 * target was first reached on the CI lower bound, and the orchestration
 * overhead per trial (everything from proposal to judgement that is not the
 * evaluation itself).
 *
 *   npx tsx bench/planner-bench.ts [--goal TEXT] [--max-trials N] [--repeats N]
 *       [--planners builtin,random] [--out bench/results/planner-<host>.json]
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { hostname, loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { RUN_STATUS } from "../core/enums.js";
import { parseGoal } from "../core/goal.js";
import { createLogger } from "../core/logger.js";
import { runGoal, startSwarm } from "../deploy/swarm.js";
import { runSettings } from "../deploy/settings.js";
import { Verdict, type Event } from "../proto/gen/research/v1/events_pb.js";
import { judgedTrials } from "../swarm/run-state.js";

const { values: a } = parseArgs({
  options: {
    goal: { type: "string", default: "fashion-mnist: reach 90% validation accuracy in 20 minutes" },
    "max-trials": { type: "string", default: "12" },
    repeats: { type: "string", default: "1" },
    planners: { type: "string", default: "builtin,random" },
    out: { type: "string", default: `bench/results/planner-${hostname()}.json` },
  },
});
const parsed = parseGoal(a.goal);
if (!parsed.ok) throw new Error(parsed.error);
const goal = parsed.goal;
const log = createLogger("planner-bench");
log.level = "warn";

interface RunRecord {
  planner: string;
  repeat: number;
  status: string;
  trials: number;
  seconds: number;
  bestCiLow: number;
  bestMean: number;
  trialsToTarget: number | null;
  secondsToTarget: number | null;
  failures: number;
  overheadPerTrialS: number;
  evalPerTrialS: number;
  loadavg: number[];
}

async function oneRun(planner: string, repeat: number): Promise<RunRecord> {
  const workspace = mkdtempSync(join(tmpdir(), `planner-bench-${planner}-`));
  const swarm = await startSwarm({ workspace, logger: log });
  const events: Event[] = [];
  const t0 = Date.now();
  try {
    const outcome = await runGoal(swarm, {
      start: { goal, settings: runSettings(goal, { planner, maxTrials: Number(a["max-trials"]), rngSeed: repeat }, workspace, swarm.runnerHealth) },
      log,
      onEvent: (e) => {
        events.push(e);
        if (e.body.case === "trialJudged") {
          process.stderr.write(`${planner}#${repeat} ${e.trialId.slice(-4)} ${e.body.value.reason.slice(0, 80)} (score ${e.body.value.score.toFixed(4)})\n`);
        }
      },
    });
    const judged = judgedTrials(outcome.state).sort((x, y) => x.judgedPosition! - y.judgedPosition!);
    const at = (id: string, kind: string) => Number(events.find((e) => e.trialId === id && e.body.case === kind)?.emittedAtMs ?? 0);
    const hit = judged.findIndex((t) => t.judged?.verdict === Verdict.ACCEPT && (t.judged?.ciLow ?? 0) >= goal.target);
    const accepted = judged.filter((t) => t.judged?.verdict === Verdict.ACCEPT);
    const evals = judged.map((t) => t.evaluated?.evalSeconds ?? 0);
    const walls = judged.map((t) => (at(t.id, "trialJudged") - at(t.id, "trialProposed")) / 1000);
    const mean = (xs: number[]) => (xs.length ? xs.reduce((p, q) => p + q, 0) / xs.length : 0);
    return {
      planner,
      repeat,
      status: RUN_STATUS.name(outcome.finished.status) ?? "",
      trials: judged.length,
      seconds: (Date.now() - t0) / 1000,
      bestCiLow: Math.max(0, ...accepted.map((t) => t.judged?.ciLow ?? 0)),
      bestMean: Math.max(0, ...accepted.map((t) => t.evaluated?.result?.aggregated.val_accuracy?.mean ?? 0)),
      trialsToTarget: hit >= 0 ? hit + 1 : null,
      secondsToTarget: hit >= 0 ? (at(judged[hit]!.id, "trialJudged") - t0) / 1000 : null,
      failures: judged.length - accepted.length,
      overheadPerTrialS: mean(walls.map((w, i) => w - evals[i]!)),
      evalPerTrialS: mean(evals),
      loadavg: loadavg(),
    };
  } finally {
    await swarm.stop();
    rmSync(workspace, { recursive: true, force: true });
  }
}

const records: RunRecord[] = [];
for (let r = 0; r < Number(a.repeats); r++) {
  for (const planner of a.planners.split(",")) {
    const rec = await oneRun(planner, r);
    records.push(rec);
    console.log(JSON.stringify(rec));
  }
}
mkdirSync(dirname(a.out), { recursive: true });
writeFileSync(a.out, `${JSON.stringify({ date: new Date().toISOString(), goal: a.goal, maxTrials: Number(a["max-trials"]), records }, null, 2)}\n`);
console.log(`\nplanner  status            trials  best CI-low  best mean  trials->target  s->target  overhead/trial  eval/trial`);
for (const r of records) {
  console.log(
    `${r.planner.padEnd(8)} ${r.status.padEnd(17)} ${String(r.trials).padStart(6)}  ${(100 * r.bestCiLow).toFixed(2).padStart(10)}%  ${(100 * r.bestMean).toFixed(2).padStart(8)}%  ${String(r.trialsToTarget ?? "-").padStart(14)}  ${String(r.secondsToTarget?.toFixed(0) ?? "-").padStart(9)}  ${r.overheadPerTrialS.toFixed(2).padStart(13)}s  ${r.evalPerTrialS.toFixed(1).padStart(9)}s`,
  );
}
console.log(`results written to ${a.out}`);
