/**
 * research-agent's help as data: each verb's usage lines and the option
 * sections it shares. The global help and every `VERB --help` are assembled
 * from these, so a verb's text exists once.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import pkg from "../package.json" with { type: "json" };
import { DEFAULT_SLURM_JOBS, LAST_EPOCHS, SEARCH_DEFAULTS } from "../core/defaults.js";
import { RUNNER_DEVICES } from "../gpu-runner/device.js";
import { DEFAULT_K, MAX_K } from "../swarm/lineage-query.js";

/** The dashboard's default port: fixed, so its pages' URLs can be bookmarked and shared. */
export const UI_PORT = 8470;

const SECTIONS = {
  "launch options": `  --goal TEXT          dataset, target, limits in plain words, e.g.
                       "Fashion-MNIST, >= 92% val accuracy, < 200k params, 20 min";
                       or no target ("maximise accuracy", "best model", "as good
                       as possible"): the run searches on validation accuracy until
                       the trial or time budget is spent or it plateaus, and reports
                       the best model with its 95% CI and one-time test accuracy;
                       a CSV: "csv:/data/titanic.csv target=Survived 0.8" (the file
                       and its target column are checked before anything starts)
                       a latency limit per example, at batch 1 on the runner's device:
                       "fashion-mnist: best accuracy under 2 ms per image"; several
                       objectives: "digits: pareto: accuracy vs parameters vs latency"
                       (no target: the report and --json give the front and its knee)
  --goal FILE.yaml     a run document (YAML or JSON): goal: "...", beside it launch's run
                       flags in snake_case (time_budget, max_params, seeds_per_trial, space, ...), as
                       serve's POST /api/runs takes them; flags on the command line win
  --from SOURCE        start from a model instead of the swarm's templates: a model in Python
                       (model.py with --class), a model_config file (YAML or JSON), or RUN/TRIAL
                       of an earlier run in the workspace (its model and recipe: "keep improving
                       the best of that run"); it is trial 0, trained first on its own recipe
                       with the run's seeds, and the report compares the best model with it.
                       In a model in Python the search changes the recipe and the constructor's
                       numeric and boolean keyword arguments (width=32, dropout=0.1), not the code
  --class NAME         the nn.Module subclass of --from model.py to train, built as NAME(**kwargs)
  --recipe FILE        the starting point's training recipe (a train_config, YAML or JSON;
                       default: the schema's defaults on the whole training split)
  --max-trials N       trial budget (default 100; the time budget usually ends a run first)
  --time-budget T      wall-clock budget: 90s, 20m, 2h (default: from the goal, else 30m)
  --target X           the target in the goal's metric's units, overriding the goal's:
                       0.9 or 90% for accuracy, 55 for an RMSE
  --max-params N       parameter limit (overrides the goal)
  --data-dir DIR       dataset location (csv/text/mnist/cifar...; default: standard path)
  --seeds-per-trial N  seeds a trial trains with (default 3; probes on a slice of the split use 1)
  --parallel N         trials in flight at once (default 2; on a GPU runner half its slots, at most 4;
                       with --runners slurm, that many per runner job)
  --planner NAME       builtin (default) or random (the baseline)
  --subset N           training examples per trial to start with (default: ${SEARCH_DEFAULTS.cpu.subset} on large sets on a CPU, all on a GPU)
  --epochs N           epochs per trial to start with (default ${SEARCH_DEFAULTS.cpu.epochs})
  --last-epochs N      epochs the last long training reaches at most (default ${LAST_EPOCHS}); it trains
                       for the time left, so this only shortens it: a run bounded by its work
                       (--max-trials) rather than by its clock ends when that training does
  --space FILE         narrow the search (YAML or JSON, or the document itself: '{lr: {low: 1e-4,
                       high: 1e-2}}'): per dimension of core/space.ts a value (pinned), {low, high},
                       {values: [..]} or "default" (left out); families: [vgg-cnn, ...] limits the
                       templates. The report prints the space searched (docs/ARCHITECTURE.md)
  --no-research        skip the research brief
  --no-warm-start      learn nothing from past runs in the workspace (by default a run on a built-in
                       dataset with an accuracy goal starts its surrogate and failure memory from
                       theirs, and an open-ended one first continues their longest training from
                       its kept weights, averaging them, or else re-evaluates their strongest configs)
  --warm-start-from R  learn from these past runs only (run ids, comma-separated)
  --seed N             the run's random seed (default 0): the planner's draws and the trials'
                       training seeds (1000N onward), so another --seed is an independent run
  --slots N            runner worker slots (default: CPU count; on a GPU host one per 10 GiB of GPU memory, at most 8)
  --device NAME        ${RUNNER_DEVICES.join(", ")}: the device of the runner the launch starts (default auto:
                       the GPUs when there are any); cuda on a host without one stops before anything starts
  --runners local|slurm   local (default): the launch starts one runner here; slurm: its runners are
                       Slurm jobs (sbatch), each joining the run over the bus, cancelled when it ends;
                       a job that ends early is submitted again while the run has budget left
  --slurm-jobs N       runner jobs at once (default ${DEFAULT_SLURM_JOBS})
  --slurm-partition P, --slurm-account A, --slurm-gres gpu:1, --slurm-cpus N, --slurm-mem 16G
                       what each runner job asks for (default: the cluster's); its time limit is the
                       run's budget and a grace after it (docs/DEPLOY.md, "On a Slurm cluster")
  --workspace DIR      where lineage, runs, logs and NATS data live (default ./workspace)
  --nats URL           join an existing NATS instead of starting one
  --resume RUN         continue an interrupted run from the workspace, as it was set up; its clock
                       counts live time only, and --time-budget sets its new total
  --unsafe-no-sandbox  run model code without bubblewrap
  --llm none|openai:MODEL   drive the roles with an LLM on any OpenAI-compatible
                       endpoint (default none: the built-in brain); key from OPENAI_API_KEY
  --llm-base-url URL   e.g. http://localhost:11434/v1 (Ollama), http://localhost:8000/v1 (vLLM)
  --llm-config FILE    per-role endpoints and models (JSON or YAML; see docs/LLM.md)
  --json               print one JSON object at the end (run id, status, best trial, paths)
  --quiet, -q          (launch) no line per event: the checks before the start, the outcome and the paths only.
                       Otherwise each judgement says the budget left, each epoch the time its
                       training has left; on a terminal an epoch's line is rewritten by the next
  --export tensorboard:DIR   (launch) each trial into DIR/RUN as soon as it is judged, for a
                       tensorboard --logdir DIR beside the run; the report and the best trial's
                       confusion matrix at the end (the export verb writes mlflow and wandb)`,
  "serve options": `  --max-runs N         runs side by side on the swarm's runner (default 1); the rest wait in order
  --data-root DIR      a folder the runner may read a goal's data from (csv:, text:, --data-dir);
                       repeat it for several. Built-in datasets need none
  --host H, --port N, --token T   the dashboard's address and token, as for ui
  --slots N, --device NAME, --unsafe-no-sandbox, --llm ..., --llm-base-url URL, --llm-config FILE
                       the swarm's runner and agents, as for launch
  --runners slurm, --slurm-jobs N, --slurm-partition P, ...
                       every goal gets Slurm runner jobs of its own (as launch's; a goal's runners and
                       slurm_* fields override them), trains on them alone, and its jobs end with it
  --workspace DIR      where lineage, runs, logs and NATS data live (default ./workspace)
  A run is asked for with JSON: {"goal": "digits: 95% accuracy", "time_budget": "5m"} and any of
  launch's run flags in snake_case (target, max_params, seeds_per_trial, max_trials, data_dir, from, class,
  recipe, no_research, space as a JSON object, runners and slurm_* with serve --runners slurm, ...); paths are this machine's. A refused goal is answered 400 with
  launch's own one line; an accepted one 202 with its run id and place in the queue.`,
  "query options": `  --similar TEXT       trials closest in meaning to TEXT (their hypothesis, surface, configs, failure)
  --k N                how many trials (default ${DEFAULT_K}, at most ${MAX_K})
  --run RUN            only this run's trials
  --json               the trials as JSON objects (the same fields, distance included)
  Rows come closest first: distance is the cosine distance between TEXT's embedding
  and the trial's, from 0 (same direction) to 2 (opposite): lower is closer.`,
  "export options": `  --format torchscript|onnx|python   the run's best model, self-contained: for torch alone
                       (DIR/model.torchscript.pt), any ONNX runtime, no torch (DIR/model.onnx), or as Python
                       source to read, change or fine-tune (DIR/model.py: the run's class and load(), the
                       weights beside it); raw inputs in (the dataset files' units), its standardisation,
                       its seeds' ensemble (class probabilities; a regression's prediction; a language
                       model's next-byte probabilities at every position of a window of bytes) and test-time
                       flip averaging inside; DIR/inference.json says what it takes (shape, dtype) and
                       returns. --seed N: one seed's model
  --to FORMAT          tensorboard: event files in DIR/RUN/TRIAL (hparams, the trial's score, text) and
                       DIR/RUN/TRIAL/seed-N (per-epoch loss, the run's metric, lr); the best trial's
                       confusion matrix as an image; the report as text
                       mlflow: a file store in DIR, or the tracking server DIR names (http://...): one
                       parent run per run, a child per trial (params: its configs flattened; metrics
                       per epoch per seed; tags: verdict, failure, fidelity, parents; artifacts: code,
                       hypothesis, report); MLflow 3 reads a file store with MLFLOW_ALLOW_FILE_STORE=true
                       wandb: offline runs in DIR/wandb (one per trial, grouped by run) for wandb sync;
                       no network is used
  --all                every run of the workspace
  --project NAME       the MLflow experiment or W&B project (default research-swarm)
  The first export installs the trackers' libraries into .venv-export (a minute or two, once).
  An export of a run already in DIR replaces it.`,
  "research options": `  --format TEXT        how much to return: "3 suggestions, 2 insights, architecture only"
  --dataset NAME       rank for this dataset's modality (default: read from the query)
  --notes DIR          also search your own papers and notes (.md, .txt; .pdf with pdftotext)
  --arxiv              also search arXiv live (offline on failure)
  --workspace DIR      keep the index and the arXiv cache under DIR for the next call
                       (default: a temporary folder, removed afterwards)
  --json               print the brief as JSON (the source tally goes to stderr)`,
};
type Section = keyof typeof SECTIONS;

/**
 * The exit statuses, each with the verbs that can end with it (none listed: every verb); a verb's
 * help lists its own, the global help all of them. The same numbers as args.ts EXIT.
 */
const EXITS: { code: string; text: string; verbs?: readonly string[] }[] = [
  { code: "0", text: "done", verbs: ["runs", "watch", "query", "report", "export", "predict", "status", "pause", "resume", "stop", "cancel", "propose", "research", "secrets", "ui", "serve"] },
  { code: "0", text: "the goal met, or a run with no target completed (it found a best model)", verbs: ["launch", "ablation"] },
  { code: "1", text: "cannot run: no swarm for the workspace, a swarm or writer that failed (said in one line)" },
  { code: "2", text: "bad input, said in one line before anything starts or is written: a flag or argument,\n       the goal, a data file, a --from model that does not parse, build or fit the data" },
  { code: "3", text: "the budget was spent without meeting the goal, or a run with no target found no model", verbs: ["launch", "ablation"] },
  { code: "130, 143", text: "stopped by SIGINT or SIGTERM: the report so far is written, marked interrupted,\n       every process stopped, and launch --resume RUN goes on from there (a second signal stops at once)", verbs: ["launch"] },
  { code: "130, 143", text: "stopped by SIGINT or SIGTERM: the runs going are interrupted, their reports so far written", verbs: ["serve"] },
];
const NO_JSON = ["watch", "ui", "serve", "predict"];

/** The exit statuses of `verb` (undefined: every verb's), and what --json gives. */
function exitStatus(verb?: string): string {
  const lines = EXITS.filter((e) => !verb || !e.verbs || e.verbs.includes(verb)).map((e) => `  ${e.code.padEnd(4)} ${verb || !e.verbs ? "" : `${e.verbs.length > 4 ? "" : `${e.verbs.join(", ")}: `}`}${e.text}`);
  const json = verb
    ? NO_JSON.includes(verb)
      ? `  ${verb} has no --json (it refuses it).`
      : "  --json prints one JSON document on stdout, with times in seconds; a refusal is {\"error\": LINE, \"exit\": N}."
    : `  --json prints one JSON document on stdout, with times in seconds (a refusal: {"error": LINE, "exit": N});\n  ${NO_JSON.join(", ")} have none and refuse it.`;
  return `\nexit status:\n${[...new Set(lines)].join("\n")}\n${json}\n`;
}

interface VerbHelp {
  /** The verb's lines under "usage:", as printed. */
  usage: string;
  sections?: Section[];
}

export const VERBS = {
  launch: {
    usage: `  research-agent launch --goal "fashion-mnist: reach 90% validation accuracy" [launch options]
  research-agent launch --goal "fashion-mnist: best model you can in 30 minutes" [launch options]
  research-agent launch --from my_model.py --class Net [--recipe recipe.yaml] --goal "fashion-mnist: maximise accuracy"
  research-agent launch --resume RUN [--workspace DIR]`,
    sections: ["launch options"],
  },
  runs: { usage: "  research-agent runs [--json] [--workspace DIR]       the workspace's runs: status, trials, best, time" },
  watch: { usage: "  research-agent watch [RUN] [--workspace DIR | --nats URL]   lineage events live (history first); a stored run replayed" },
  query: { usage: `  research-agent query --similar "TEXT" [--run RUN] [--k N] [--json] [--workspace DIR | --nats URL]`, sections: ["query options"] },
  report: { usage: "  research-agent report RUN [--json] [--workspace DIR | --nats URL]   the run's report (a live run's so far); --json: report.json" },
  export: {
    usage: `  research-agent export RUN --format torchscript|onnx|python DIR [--seed N]   the best model, to predict with outside the run
  research-agent export RUN --to tensorboard|mlflow|wandb DIR [--workspace DIR] [--project NAME]
  research-agent export --all --to tensorboard|mlflow|wandb DIR   every run of the workspace`,
    sections: ["export options"],
  },
  predict: {
    usage: `  research-agent predict RUN INPUT [--seed N] [--out FILE.csv]   the best model on new raw inputs (.npz, .csv, IDX,
                 a folder of images: PNG, JPEG, ... resized to the model's input where they differ), fed as the
                 run fed its data (a language model: a window of bytes 0-255 a row); CSV of index (an image's
                 file name), prediction (and its probability; a language model's: the byte likeliest to follow)`,
  },
  status: { usage: "  research-agent status [--json] [--workspace DIR | --nats URL]   live runs and their trials, runners and slots, agents" },
  pause: { usage: "  research-agent pause RUN [--reason TEXT]          start nothing new; trials in flight go on (the budget still runs)" },
  resume: { usage: "  research-agent resume RUN                         a paused run's trials start again (an interrupted run: launch --resume RUN)" },
  stop: { usage: "  research-agent stop RUN [--reason TEXT]           cancel what runs, confirm the best on test, write the report" },
  cancel: { usage: "  research-agent cancel RUN TRIAL [--reason TEXT]   one trial, labelled cancelled" },
  propose: {
    usage: `  research-agent propose RUN --hypothesis TEXT --model FILE|JSON [--recipe FILE|JSON] [--parent TRIAL]...
                 queue a hand-written config: the planner takes it at the next free slot, and it is
                 validated, built and evaluated like any proposal (recipe: over the run's probe fidelity)`,
  },
  research: {
    usage: `  research-agent research "QUERY" [--format "3 suggestions, architecture only"] [--dataset NAME] [--json]
                 [--notes DIR] [--arxiv] [--workspace DIR]`,
    sections: ["research options"],
  },
  ablation: {
    usage: "  research-agent ablation --goal TEXT [--runs N] [launch options]   research on vs off, N pairs of runs on matched seeds (default 3)",
    sections: ["launch options"],
  },
  secrets: { usage: "  research-agent secrets DIR [--mounted-at PATH] [--names HOST,...]   a deployment's credentials (docs/DEPLOY.md)" },
  ui: {
    usage: `  research-agent ui [--workspace DIR] [--host H] [--port N] [--token T]   the runs in a browser, live while a
                 swarm runs (docs/DASHBOARD.md); http://127.0.0.1:${UI_PORT}/ by default (--port 0: a free
                 port); another --host needs a token (--token, RESEARCH_UI_TOKEN, else a new one in the URL)`,
  },
  serve: {
    usage: `  research-agent serve [--max-runs N] [--data-root DIR]... [--host H] [--port N] [--token T] [swarm options]
                 a long-lived swarm a team shares: its dashboard takes goals (its form, POST /api/runs, the
                 Python client), checks each as launch does, and runs them in order, N side by side
                 (default 1); SIGINT or SIGTERM interrupts the runs going (reports so far written) and stops`,
    sections: ["serve options"],
  },
} satisfies Record<string, VerbHelp>;
export type Verb = keyof typeof VERBS;

export const isVerb = (name: string): name is Verb => Object.hasOwn(VERBS, name);

const TITLE = "research-agent — an autonomous ML research swarm for PyTorch";

function sections(names: readonly Section[]): string {
  return names.map((s) => `\n${s}:\n${SECTIONS[s]}\n`).join("");
}

/** The global help: every verb's usage, then each shared section once. */
export function globalHelp(): string {
  const verbs = Object.values(VERBS) as VerbHelp[];
  const shared = [...new Set(verbs.flatMap((v) => v.sections ?? []))];
  return `${TITLE}\n\nusage:\n${verbs.map((v) => v.usage).join("\n")}
  research-agent VERB --help                        one verb's usage and options
  research-agent --version\n${sections(shared)}${exitStatus()}`;
}

/** One verb's usage and its sections. */
export function verbHelp(verb: Verb): string {
  const v: VerbHelp = VERBS[verb];
  return `usage:\n${v.usage}\n${sections(v.sections ?? [])}${exitStatus(verb)}`;
}

/** package.json's version, and the commit when running from a git checkout (the pack has none). */
export function versionText(): string {
  const root = resolve(import.meta.dirname, "..");
  let commit = "";
  if (existsSync(join(root, ".git"))) {
    try {
      commit = execFileSync("git", ["-C", root, "rev-parse", "--short", "HEAD"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"], timeout: 5000 }).trim();
    } catch {
      // git missing or not a repository: the version alone
    }
  }
  return `research-agent ${pkg.version}${commit ? ` (commit ${commit})` : ""}\n`;
}
