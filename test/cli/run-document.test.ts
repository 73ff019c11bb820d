/**
 * launch --goal run.yaml: a run written down once (its goal and run flags, the body serve's API
 * takes) starts as the same command line would, with the command line's own flags winning.
 */
import { describe, expect, it } from "vitest";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CliFailure } from "../../cli/args.js";
import { prepareGoal, prepareSwarm, withGoalDocument, type RunArgs } from "../../cli/run-flags.js";

const dir = mkdtempSync(join(tmpdir(), "run-document-"));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
const refusal = (a: RunArgs) => {
  try {
    prepareGoal(withGoalDocument(a), dir);
  } catch (err) {
    if (err instanceof CliFailure) return err.message;
    throw err;
  }
  return "accepted";
};

const RUN = `goal: "digits: reach 90% validation accuracy"
time_budget: 5m
max_params: 50000
seeds_per_trial: 2
last_epochs: 30
no_research: true
space:
  optimizer: adamw
  lr: {low: 0.001, high: 0.01}
`;

describe("a run document as the goal", () => {
  it("gives the goal, the run's flags and its space, as the same flags would", () => {
    const a = withGoalDocument({ goal: file("run.yaml", RUN), workspace: dir });
    expect(a).toMatchObject({ goal: "digits: reach 90% validation accuracy", "time-budget": "5m", "seeds-per-trial": "2", "last-epochs": "30", "no-research": true });
    const { goal, space } = prepareGoal(a, dir);
    expect(goal).toMatchObject({ dataset: "digits", target: 0.9, maxParams: 50_000n, timeBudgetS: 300 });
    expect(space).toEqual({ families: [], dims: { optimizer: { values: ["adamw"] }, lr: { low: 0.001, high: 0.01 } } });
    // JSON is the same document.
    const json = withGoalDocument({ goal: file("run.json", JSON.stringify({ goal: "digits: maximise accuracy", seeds_per_trial: 4 })), workspace: dir });
    expect(json).toMatchObject({ goal: "digits: maximise accuracy", "seeds-per-trial": "4" });
  });

  it("says where its runners run, checked as launch's --runners and --slurm-* are", () => {
    const doc = file("slurm.yaml", `${RUN}runners: slurm\nslurm_jobs: 3\nslurm_gres: gpu:1\nslurm_mem: 16G\n`);
    expect(prepareSwarm(withGoalDocument({ goal: doc, workspace: dir })).slurm).toEqual({ jobs: 3, gres: "gpu:1", mem: "16G", partition: undefined, account: undefined, cpus: undefined });
    const swarmRefusal = (text: string) => {
      try {
        prepareSwarm(withGoalDocument({ goal: file("bad-slurm.yaml", text), workspace: dir }));
      } catch (err) {
        if (err instanceof CliFailure) return err.message;
        throw err;
      }
      return "accepted";
    };
    expect(swarmRefusal(`${RUN}runners: kube\n`)).toBe('--runners must be local (a runner the launch starts) or slurm (runner jobs on the cluster), got "kube"');
    expect(swarmRefusal(`${RUN}slurm_jobs: 2\n`)).toBe("--slurm-jobs applies to runners that are Slurm jobs: add --runners slurm");
  });

  it("lets the command line's flags win over the document's", () => {
    const a = withGoalDocument({ goal: file("run.yaml", RUN), workspace: dir, "seeds-per-trial": "5", "time-budget": "2m" });
    expect(a).toMatchObject({ "seeds-per-trial": "5", "time-budget": "2m", "max-params": "50000" });
    expect(prepareGoal(a, dir).goal?.timeBudgetS).toBe(120);
  });

  it("refuses a document it cannot take in one line, as the flags' own checks do", () => {
    expect(refusal({ goal: join(dir, "none.yaml"), workspace: dir })).toBe(
      `--goal: no file ${join(dir, "none.yaml")} (a run document: goal: "fashion-mnist: reach 92% validation accuracy", with launch's flags in snake_case beside it)`,
    );
    expect(refusal({ goal: file("typo.yaml", `${RUN}sedes: 3\n`), workspace: dir })).toBe(`--goal ${join(dir, "typo.yaml")}: run document: Unrecognized key: "sedes"`);
    expect(refusal({ goal: file("nogoal.yaml", "max_trials: 3\n"), workspace: dir })).toMatch(/^--goal .*nogoal\.yaml: goal: /);
    expect(refusal({ goal: file("broken.yaml", "goal: [unclosed\n"), workspace: dir })).toMatch(/^--goal .*broken\.yaml: not valid JSON or YAML: /);
    // The values meet launch's checks: the same line as the flag.
    expect(refusal({ goal: file("seeds.yaml", `${RUN.replace("seeds_per_trial: 2", "seeds_per_trial: two")}`), workspace: dir })).toBe('--seeds-per-trial must be a positive integer, got "two"');
    expect(refusal({ goal: file("old.yaml", RUN.replace("seeds_per_trial: 2", "seeds: 2")), workspace: dir })).toBe(
      `--goal ${join(dir, "old.yaml")}: seeds is now seeds_per_trial (a trial's seeds; seed is the run's random seed)`,
    );
    expect(refusal({ goal: file("space.yaml", `${RUN.replace("low: 0.001", "low: 0.1")}`), workspace: dir })).toBe("--space: lr low 0.1 is above high 0.01");
  });

  it("reads prose as prose: a goal that only mentions a file is not a document", () => {
    const a = withGoalDocument({ goal: "csv:/data/people.csv target=y: reach 80% validation accuracy", workspace: dir });
    expect(a.goal).toBe("csv:/data/people.csv target=y: reach 80% validation accuracy");
  });
});
