/** The command-line tools as a user runs them: real processes, real runner, exit codes and output. */
import { describe, expect, it } from "vitest";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer, type AddressInfo } from "node:net";
import { once } from "node:events";
import { DIGITS_CNN } from "../helpers/models.js";
import { DEFAULT_PYTHON } from "../../core/config.js";
import { run as runFile } from "../helpers/run.js";
import { LineageStore } from "../../lineage-store/store.js";
import { runEvents } from "../lineage-store/fixtures.js";
import { testLogger } from "../bus/helpers.js";
import { verbHelp, VERBS as HELP_VERBS, type Verb } from "../../cli/help.js";
import { EXIT } from "../../cli/args.js";

// Without NODE_CHANNEL_FD: the CLI must not pick up vitest's IPC channel variable.
const { NODE_CHANNEL_FD: _ipc, ...inherited } = process.env;

async function run(tool: string, args: string[]) {
  const r = await runFile(`./${tool}`, args, { timeout: 180_000, env: { ...inherited, LOG_LEVEL: "warn" } });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const dir = mkdtempSync(join(tmpdir(), "cli-test-"));
const good = join(dir, "digits_cnn.py");
const broken = join(dir, "broken.py");
writeFileSync(good, DIGITS_CNN);
const raising = join(dir, "raising.py");
const people = join(dir, "people.csv");
const badYaml = join(dir, "model.yaml");
writeFileSync(broken, "import torch.nn as nn\nclass Net(nn.Module:\n    pass\n");
writeFileSync(raising, "import torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        undefined_layer\n");
// The runner sniffs the delimiter: a ';' file is as good as a ',' one.
writeFileSync(people, "age;city;bought\n31;Oslo;yes\n45;Bergen;no\n");
writeFileSync(badYaml, "name: wider\nlayers: [16, 32\nhead: linear\n");
const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const PYTHON = process.env.RUNNER_PYTHON ?? DEFAULT_PYTHON;

/** Whether the runner's Python sees a CUDA device: the tests of --device cuda's refusal need a host without one. */
async function hostHasCuda(): Promise<boolean> {
  const r = await runFile(PYTHON, ["-c", "import torch; print(torch.cuda.is_available())"], { timeout: 60_000 });
  return r.stdout.trim() === "True";
}

describe("quick-evaluator", () => {
  it("prints the result document with --json", async () => {
    const r = await run("quick-evaluator", ["--model", good, "--class", "DigitsNet", "--dataset", "digits", "--epochs", "500", "--train-seconds", "2", "--seeds", "2", "--target", "80", "--json",
      // GPU recipe flags are accepted everywhere (--amp applies only on CUDA, --channels-last on any device); --device cpu hides any GPU.
      "--amp", "--channels-last", "--deterministic", "--device", "cpu"]);
    expect(r.code, r.stderr).toBe(0);
    const json = JSON.parse(r.stdout) as Record<string, any>;
    expect(json.device.kind).toBe("cpu");
    expect(json.num_seeds).toBe(2);
    // Its time stopped each seed's training long before its 500 epochs.
    for (const seed of json.seed_results) expect(seed.epochs_completed).toBeLessThan(500);
    expect(json.aggregated.val_accuracy.mean).toBeGreaterThan(0.8);
    expect(json.aggregated.val_accuracy.ci_95).toHaveLength(2);
    expect(json.target).toBeCloseTo(0.8);
    expect(["GOAL_STATUS_ACHIEVED", "GOAL_STATUS_LIKELY"]).toContain(json.goal_status);
  });

  it("prints mean, CI and goal status for people", async () => {
    const r = await run("quick-evaluator", ["--model", good, "--class", "DigitsNet", "--dataset", "digits", "--epochs", "2", "--seeds", "2", "--target", "0.99"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/val_accuracy {2}mean \d+\.\d+% .* 95% CI \[/);
    expect(r.stdout).toMatch(/goal {10}99\.00% -> (NOT ACHIEVED|LIKELY|ACHIEVED)/);
    expect(r.stderr).toMatch(/seed 0 epoch 1\/2/);
  });

  it("names the user's file and line for a model with a syntax error, before any runner starts", async () => {
    const r = await run("quick-evaluator", ["--model", broken, "--class", "Net", "--dataset", "digits", "--seeds", "1"]);
    expect(r.code).toBe(EXIT.badInput);
    expect(r.stderr.trim()).toMatch(new RegExp(`^FAILED \\[codegen_error\\]: ${literal(broken)}, line 2: SyntaxError: [^\\n]+$`));
  });

  it("names the class a model file lacks, before any runner starts", async () => {
    const r = await run("quick-evaluator", ["--model", good, "--class", "Missing", "--dataset", "digits", "--seeds", "1"]);
    expect(r.code).toBe(EXIT.badInput);
    expect(r.stderr.trim()).toBe(`FAILED [codegen_error]: ${good}: no class Missing at its top level (it has DigitsNet)`);
  });

  it("exits 1 with the runner's failure label for a model that fails when built", async () => {
    const r = await run("quick-evaluator", ["--model", raising, "--class", "Net", "--dataset", "digits", "--seeds", "1"]);
    expect(r.code).toBe(EXIT.cannotRun);
    expect(r.stderr).toMatch(/^FAILED \[codegen_error\]: instantiating Net: NameError: name 'undefined_layer' is not defined$/m);
  });

  it("checks the data flags before it starts a runner", async () => {
    const base = ["--model", good, "--class", "DigitsNet", "--seeds", "1"];
    const cases: [string[], string][] = [
      [["--dataset", "csv", "--data-dir", people], "--dataset csv needs --target-column COL (the label column)"],
      [["--dataset", "text"], "--dataset text needs --data-dir PATH (its files have no standard place)"],
      [["--dataset", "csv", "--data-dir", people, "--target-column", "label"], `csv: no column "label" in ${people}; its header has "age", "city", "bought"`],
      [["--dataset", "digits", "--data-dir", join(dir, "nowhere")], `digits: no file or folder ${join(dir, "nowhere")}`],
      [["--dataset", "digits", "--subset", "some"], '--subset must be a positive integer, got "some"'],
      [["--dataset", "digits", "--train-seconds", "soon"], '--train-seconds must be a positive number, got "soon"'],
    ];
    const ran = await Promise.all(cases.map(([flags]) => run("quick-evaluator", [...base, ...flags])));
    cases.forEach(([flags, message], i) => {
      expect(ran[i]!.code, flags.join(" ")).toBe(EXIT.badInput);
      expect(ran[i]!.stderr, flags.join(" ")).toBe(`quick-evaluator: ${message}\nrun with --help for usage\n`);
    });
  }, 240_000);

  it("exits 2 with a usage message for bad flags", async () => {
    const [r, d] = await Promise.all([
      run("quick-evaluator", ["--model", good, "--class", "DigitsNet", "--dataset", "digits", "--seeds", "two"]),
      run("quick-evaluator", ["--model", good, "--class", "DigitsNet", "--dataset", "digits", "--device", "gpu"]),
    ]);
    expect(r.code).toBe(EXIT.badInput);
    expect(r.stderr).toContain('--seeds must be a positive integer, got "two"');
    expect(d.code).toBe(EXIT.badInput);
    expect(d.stderr).toContain('--device must be one of auto, cpu, cuda, got "gpu"');
  });
});

const VERBS: Verb[] = ["launch", "runs", "watch", "query", "report", "export", "predict", "status", "pause", "resume", "stop", "cancel", "propose", "research", "ablation", "secrets", "ui", "serve"];

describe("research-agent", () => {
  it("explains a goal it cannot understand", async () => {
    const r = await run("research-agent", ["launch", "--goal", "make it good please", "--workspace", dir]);
    expect(r.code).toBe(EXIT.badInput);
    expect(r.stderr).toContain("cannot understand the goal");
  });

  it("checks every flag before it starts or writes anything", async () => {
    const workspace = join(dir, "never-made");
    const cases: [string[], string][] = [
      [["--max-trials", "abc"], '--max-trials must be a positive integer, got "abc"'],
      [["--seeds-per-trial", "2x"], '--seeds-per-trial must be a positive integer, got "2x"'],
      [["--seeds", "2"], "--seeds is now --seeds-per-trial (a trial's seeds; --seed is the run's random seed)"],
      [["--parallel", "zero"], '--parallel must be a positive integer, got "zero"'],
      [["--last-epochs", "0"], '--last-epochs must be a positive integer, got "0"'],
      [["--seed", "abc"], '--seed must be a whole number from 0 to 4294967295, got "abc"'],
      [["--time-budget", "soon"], '--time-budget must be a duration such as 90s, 20m or 2h, got "soon"'],
      [["--resume", "nosuchrun"], `--resume: ${workspace} has no swarm data (nats/), so no run nosuchrun to resume`],
      [["--resume", "r1", "--seeds-per-trial", "2"], "--resume continues run r1 as it was set up; only --time-budget may change it (its new total of live time): drop --seeds-per-trial"],
      [["--export", "mlflow:out"], '--export: only tensorboard follows a run live (--export tensorboard:DIR), got "mlflow:out"; research-agent export writes mlflow and wandb after the run'],
      [["--export", `tensorboard:${good}/tb`], `--export: cannot make ${good}/tb: ${good} is not a folder`],
      [["--space", "{lr: {low: 0.1, high: 0.01}}"], "--space: lr low 0.1 is above high 0.01"],
      [["--space", join(dir, "no-space.yaml")], `--space: no file ${join(dir, "no-space.yaml")} (a YAML or JSON space, or the document itself: --space '{lr: {low: 1e-4, high: 1e-2}}')`],
      [["--slurm-gres", "gpu:1"], "--slurm-gres applies to runners that are Slurm jobs: add --runners slurm"],
      [["--runners", "kube"], '--runners must be local (a runner the launch starts) or slurm (runner jobs on the cluster), got "kube"'],
      [["--runners", "slurm", "--slurm-mem", "lots"], '--slurm-mem: "lots" is not a size such as 16G'],
      [["--space", "{epochs: 3}"], "--space: epochs is not searched (epochs are the scheduler's fidelity: --epochs sets the probes', the time budget and --last-epochs the last training's); set it with a --recipe or a flag instead"],
    ];
    // Side by side: each CLI start costs seconds of CPU, and a loaded machine shares more of it with more processes.
    const ran = await Promise.all(cases.map(([flags]) => {
      // A resume takes its goal from the run.
      const goal = flags[0] === "--resume" ? [] : ["--goal", "digits: reach 90% validation accuracy"];
      return run("research-agent", ["launch", ...goal, "--workspace", workspace, ...flags]);
    }));
    cases.forEach(([flags, message], i) => {
      expect(ran[i]!.code, flags.join(" ")).toBe(EXIT.badInput);
      expect(ran[i]!.stderr.trim(), flags.join(" ")).toBe(`research-agent: ${message}`);
      expect(ran[i]!.stdout, flags.join(" ")).toBe("");
    });
    expect(existsSync(workspace)).toBe(false);
  }, 240_000);

  it("checks a goal's data files and the device before it starts or writes anything", async () => {
    const workspace = join(dir, "never-made-data");
    const missing = join(dir, "missing.csv");
    const cases: [string[], string][] = [
      [["--goal", `csv:${missing} target=label: reach 80% validation accuracy`], `csv: no file or folder ${missing}`],
      [["--goal", `csv:${people} target=label: reach 80% validation accuracy`], `csv: no column "label" in ${people}; its header has "age", "city", "bought"`],
      [["--goal", "digits: reach 90% validation accuracy", "--data-dir", join(dir, "nowhere")], `digits: no file or folder ${join(dir, "nowhere")}`],
      [["--goal", "digits: reach 90% validation accuracy", "--device", "gpu"], '--device must be one of auto, cpu, cuda, got "gpu"'],
    ];
    const ran = await Promise.all([
      ...cases.map(([flags]) => run("research-agent", ["launch", "--workspace", workspace, ...flags])),
      run("research-agent", ["launch", "--workspace", workspace, "--goal", `csv:${people}: reach 80% validation accuracy`]),
    ]);
    cases.forEach(([flags, message], i) => {
      expect(ran[i]!.code, flags.join(" ")).toBe(EXIT.badInput);
      expect(ran[i]!.stderr.trim(), flags.join(" ")).toBe(`research-agent: ${message}`);
      expect(ran[i]!.stdout).toBe("");
    });
    const noTarget = ran[cases.length]!;
    expect(noTarget.code).toBe(EXIT.badInput);
    expect(noTarget.stderr).toMatch(new RegExp(`^research-agent: cannot understand the goal: csv needs its target column, e\\.g\\. "csv:${literal(people)} target=Survived"`));
    expect(existsSync(workspace)).toBe(false);
  }, 240_000);

  it("refuses --device cuda on a host without CUDA before anything starts", async (ctx) => {
    if (await hostHasCuda()) ctx.skip();
    const workspace = join(dir, "never-made-cuda");
    const [launch, quick] = await Promise.all([
      run("research-agent", ["launch", "--goal", "digits: reach 90% validation accuracy", "--device", "cuda", "--workspace", workspace]),
      run("quick-evaluator", ["--model", good, "--class", "DigitsNet", "--dataset", "digits", "--device", "cuda"]),
    ]);
    const refusal = `--device cuda: this host has no CUDA device that ${literal(PYTHON)} can use \\(torch [^)]+\\); use --device cpu or auto`;
    expect(launch.code).toBe(EXIT.badInput);
    expect(launch.stderr.trim()).toMatch(new RegExp(`^research-agent: ${refusal}$`));
    expect(existsSync(workspace)).toBe(false);
    expect(quick.code).toBe(EXIT.badInput);
    expect(quick.stderr).toMatch(new RegExp(`^quick-evaluator: ${refusal}\\n`));
  }, 240_000);

  it("starts its runner on the device asked for, and stops everything when the data fails the runner's own checks", async () => {
    const workspace = mkdtempSync(join(tmpdir(), "cli-device-"));
    // Passes the header check, fails the runner's: no feature column besides the label.
    const labelsOnly = join(dir, "labels-only.csv");
    writeFileSync(labelsOnly, "label\nyes\nno\nyes\nno\n");
    const r = await run("research-agent", ["launch", "--goal", `csv:${labelsOnly} target=label 80%`, "--device", "cpu", "--workspace", workspace]);
    // The data is the user's to fix: bad input.
    expect(r.code, r.stderr).toBe(EXIT.badInput);
    expect(r.stdout).toMatch(/runner: \d+ slots on cpu, torch /);
    expect(r.stderr).toContain("has no usable feature columns besides 'label'");
    // Nothing left running: the launch's nats-server is gone with it.
    const { nats_pid } = JSON.parse(readFileSync(join(workspace, "swarm.json"), "utf8")) as { nats_pid: number };
    expect(existsSync(`/proc/${nats_pid}`) && readFileSync(`/proc/${nats_pid}/comm`, "utf8").trim() === "nats-server").toBe(false);
  }, 300_000);

  it("has useful --help", async () => {
    const r = await run("research-agent", ["--help"]);
    expect(r.code).toBe(0);
    for (const cmd of VERBS) expect(r.stdout).toContain(`research-agent ${cmd}`);
    expect(Object.keys(HELP_VERBS).sort()).toEqual([...VERBS].sort());
  });

  it("prints its version alone", async () => {
    const r = await run("research-agent", ["--version"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^research-agent \d+\.\d+\.\d+ \(commit [0-9a-f]{7,}\)\n$/);
  });

  it("gives each verb its own help, not the global one", () => {
    for (const v of VERBS) {
      const text = verbHelp(v);
      expect(text, v).toMatch(new RegExp(`^usage:\\n  research-agent ${v} `));
      // Another verb's usage line would mean the global help came back.
      for (const other of VERBS.filter((o) => o !== v)) expect(text, `${v} --help`).not.toContain(`research-agent ${other} `);
    }
    expect(verbHelp("launch")).toContain("launch options:\n  --goal TEXT");
    expect(verbHelp("query")).toMatch(/--k N +how many trials \(default 10,/);
  });

  it("gives one JSON document with --json where a verb has one: secrets", async () => {
    const where = join(dir, "secrets-json");
    const r = await run("research-agent", ["secrets", where, "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout) as { dir: string; files: string[]; mounted_at: string };
    expect(doc).toMatchObject({ dir: where, mounted_at: "/secrets" });
    for (const f of doc.files) expect(existsSync(join(where, f)), f).toBe(true);
  }, 120_000);

  it("prints a verb's help for VERB --help and help VERB, whatever the verb's flags", async () => {
    // One verb of each kind of flag parsing: the run flags, an intervention, its own flags.
    const cases: [string, string[]][] = [["launch", ["launch", "--help"]], ["propose", ["propose", "-h"]], ["ui", ["help", "ui"]]];
    const ran = await Promise.all(cases.map(([, argv]) => run("research-agent", argv)));
    cases.forEach(([v, argv], i) => {
      expect(ran[i]!.code, argv.join(" ")).toBe(0);
      expect(ran[i]!.stdout, argv.join(" ")).toBe(verbHelp(v as Verb));
    });
  }, 240_000);

  it("prints similar trials in labelled columns, closest first, 10 unless --k says otherwise", async () => {
    const workspace = mkdtempSync(join(tmpdir(), "cli-query-"));
    const store = await LineageStore.open(join(workspace, "lineage"), { logger: testLogger });
    await store.applyEvents(runEvents("rq"));
    await store.close();
    const [byDefault, three, zero] = await Promise.all([
      run("research-agent", ["query", "--similar", "squeeze excitation", "--workspace", workspace]),
      run("research-agent", ["query", "--similar", "squeeze excitation", "--k", "3", "--workspace", workspace]),
      run("research-agent", ["query", "--similar", "x", "--k", "0", "--workspace", workspace]),
    ]);
    expect(byDefault.code, byDefault.stderr).toBe(0);
    const [note, header, ...rows] = byDefault.stdout.trimEnd().split("\n");
    expect(note).toMatch(/cosine distance .* lower is closer/);
    expect(header).toMatch(/^distance +trial +val acc +status +hypothesis$/);
    expect(rows).toHaveLength(10);
    const distances = rows.map((r) => Number(r.split(/\s+/)[0]));
    expect(distances).toEqual([...distances].sort((x, y) => x - y));
    expect(rows[0]).toContain("squeeze-excitation");
    expect(three.stdout.trimEnd().split("\n")).toHaveLength(2 + 3);
    expect(zero.code).toBe(EXIT.badInput);
    expect(zero.stderr.trim()).toBe('research-agent: --k must be a whole number from 1 to 200, got "0"');
  }, 240_000);

  it("keeps one grammar: a parse error or an extra argument is one line and exit 2, and --json answers a refusal in JSON", async () => {
    const workspace = join(dir, "grammar");
    const cases: [string[], string, number][] = [
      [["runs", "--bogus"], "runs has no option --bogus (research-agent runs --help lists its options)", EXIT.badInput],
      [["runs", "extra"], 'runs takes no arguments besides its options, not "extra" (research-agent runs --help)', EXIT.badInput],
      [["report", "r1", "extra"], 'report takes RUN and nothing more, not "extra" (research-agent report --help)', EXIT.badInput],
      [["cancel", "r1", "t1", "t2"], 'cancel takes RUN TRIAL and nothing more, not "t2" (research-agent cancel --help)', EXIT.badInput],
      [["launch", "--goal", "digits: best model", "--time-budget", "-5m"], '--time-budget needs a value: one that starts with "-" goes as --time-budget=VALUE', EXIT.badInput],
      [["launch", "--goal", "digits: best model", "--time-budget=-5m"], '--time-budget must be a duration such as 90s, 20m or 2h, got "-5m"', EXIT.badInput],
      [["query", "--similar"], "--similar needs a value (research-agent query --help lists its options)", EXIT.badInput],
      [["runs", "--json=yes"], "--json takes no value (research-agent runs --help lists its options)", EXIT.badInput],
      [["status", "--json"], "no swarm is running for this workspace (give --nats URL or --workspace DIR)", EXIT.cannotRun],
      [["export", "r1", "--format", "tflite", "out"], '--format must be one of torchscript, onnx, python, got "tflite"', EXIT.badInput],
      [["export", "r1", "--format", "onnx", "out"], "r1 has no src/models/inference.json (a run finished before the runner reported its preprocessing, or with no best model)", EXIT.badInput],
      [["export", "r1", "--format", "torchscript", "out"], "r1 has no src/models/inference.json (a run finished before the runner reported its preprocessing, or with no best model)", EXIT.badInput],
      [["predict", "r1"], "predict needs a RUN id and an INPUT (.npz, .csv, IDX or a folder of images)", EXIT.badInput],
      [["predict", "r1", "x.npz", "--json"], "predict has no --json: it writes CSV, one example a row", EXIT.badInput],
    ];
    // The workspace first: a flag with its value missing comes last.
    const ran = await Promise.all(cases.map(([[verb, ...rest]]) => run("research-agent", [verb!, "--workspace", workspace, ...rest])));
    cases.forEach(([argv, message, code], i) => {
      expect(ran[i]!.code, argv.join(" ")).toBe(code);
      expect(ran[i]!.stderr, argv.join(" ")).toBe(`research-agent: ${message}\n`);
      // Asked for --json and past parsing (the others refuse --json itself), the refusal is the one document on stdout; otherwise stdout stays empty.
      expect(ran[i]!.stdout, argv.join(" ")).toBe(argv.some((x) => x.startsWith("--json")) && code === EXIT.cannotRun ? `${JSON.stringify({ error: message, exit: code })}\n` : "");
    });
    expect(existsSync(workspace)).toBe(false);
  }, 240_000);

  it("lists in each verb's help its own exit statuses and whether it has --json", () => {
    expect(verbHelp("runs")).not.toMatch(/^ {2}3 /m);
    expect(verbHelp("runs")).not.toContain("launch --resume");
    expect(verbHelp("launch")).toMatch(/^ {2}3 {4}the budget was spent/m);
    expect(verbHelp("launch")).toContain("launch --resume RUN goes on from there");
    expect(verbHelp("watch")).toContain("watch has no --json");
    expect(verbHelp("report")).toContain('a refusal is {"error": LINE, "exit": N}');
  });

  it("says in one line why an intervention cannot be made", async () => {
    const workspace = join(dir, "no-swarm");
    const cases: [string[], string, number?][] = [
      [["pause"], "pause needs a RUN id (research-agent runs lists them)"],
      [["cancel", "r1"], "cancel needs a RUN and a TRIAL id"],
      [["propose", "r1", "--hypothesis", "wider", "--model", join(dir, "missing.yaml")], `--model: no file ${join(dir, "missing.yaml")} (give a file, or the JSON itself)`],
      [["propose", "r1", "--hypothesis", "wider", "--model", badYaml], `--model ${badYaml}: model_config: not valid JSON or YAML: Flow sequence in block collection must be sufficiently indented and end with a ] at line 3, column 1`],
      // No swarm: the command cannot run (1), and resume names what goes on with an interrupted run.
      [["stop", "r1"], "no swarm is running for this workspace: only a live run can be paused, resumed, stopped, cancelled or given a proposal", EXIT.cannotRun],
      [["resume", "r1"], "no swarm is running for this workspace: resume goes on with a paused run; an interrupted one goes on with research-agent launch --resume r1", EXIT.cannotRun],
      // A verb with no one document to give refuses --json.
      [["watch", "r1", "--json"], "watch has no --json: it prints events as they come, a line each; report RUN --json gives a run as one document"],
      [["ui", "--json"], "ui has no --json: it serves the dashboard, whose API is JSON (docs/DASHBOARD.md)"],
    ];
    const ran = await Promise.all(cases.map(([argv]) => run("research-agent", [...argv, "--workspace", workspace])));
    cases.forEach(([argv, message, code], i) => {
      expect(ran[i]!.code, argv.join(" ")).toBe(code ?? EXIT.badInput);
      expect(ran[i]!.stderr.trim(), argv.join(" ")).toBe(`research-agent: ${message}`);
    });
  }, 240_000);

  it("cannot serve a dashboard on a port that is taken: one line, exit 1", async () => {
    const taken = createServer().listen(0, "127.0.0.1");
    await once(taken, "listening");
    const port = (taken.address() as AddressInfo).port;
    try {
      const r = await run("research-agent", ["ui", "--port", String(port), "--workspace", dir]);
      expect(r.code, r.stderr).toBe(EXIT.cannotRun);
      expect(r.stderr.trim()).toBe(`research-agent: port ${port} is in use (another dashboard?): give --port N, or --port 0 for a free one`);
    } finally {
      taken.close();
    }
  }, 120_000);
});
