/**
 * research-agent: launch a research run, watch lineage events live, query
 * past trials, print a report, export runs to other trackers, show who is alive. Each verb is a module of
 * cli/verbs/, loaded only when it runs: --help and the light verbs do not
 * pay for the swarm's imports.
 */
import type { InterventionKindName } from "../core/enums.js";
import { CliFailure, fail, refusalJson } from "./args.js";
import { globalHelp, isVerb, verbHelp, versionText, type Verb } from "./help.js";

type Command = (argv: string[]) => Promise<void>;

// Literal paths, so that esbuild bundles every verb into the packed CLI (deploy/pack.ts).
const intervention = async (kind: InterventionKindName): Promise<Command> => (await import("./verbs/intervene.js")).intervention(kind);
const commands: Record<Verb, () => Promise<Command>> = {
  launch: async () => (await import("./verbs/launch.js")).default,
  runs: async () => (await import("./verbs/runs.js")).default,
  watch: async () => (await import("./verbs/watch.js")).default,
  query: async () => (await import("./verbs/query.js")).default,
  report: async () => (await import("./verbs/report.js")).default,
  export: async () => (await import("./verbs/export.js")).default,
  predict: async () => (await import("./verbs/predict.js")).default,
  status: async () => (await import("./verbs/status.js")).default,
  research: async () => (await import("./verbs/research.js")).default,
  ablation: async () => (await import("./verbs/ablation.js")).default,
  secrets: async () => (await import("./verbs/secrets.js")).default,
  pause: () => intervention("pause"),
  resume: () => intervention("resume"),
  stop: () => intervention("stop"),
  cancel: () => intervention("cancel_trial"),
  propose: () => intervention("propose"),
  ui: async () => (await import("./verbs/ui.js")).default,
  serve: async () => (await import("./verbs/serve.js")).default,
};

/** A refusal ends the process with its one line, wherever it was thrown (an event handler's too); anything else as Node would. */
function exitOn(err: unknown): never {
  if (err instanceof CliFailure) {
    process.stderr.write(`research-agent: ${err.message}\n`);
    const json = refusalJson(err);
    if (json) process.stdout.write(json);
  } else console.error(err);
  process.exit(err instanceof CliFailure ? err.code : 1);
}
process.on("uncaughtException", exitOn);
process.on("unhandledRejection", exitOn);
// A console that went away (its terminal closed, `| head` done reading) fails every later write
// with EPIPE, an uncaught error that would end a launch at once, its swarm not stopped and its
// report not written: the run goes on without a console, as under nohup.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code !== "EPIPE") exitOn(err);
  });
}

const [verb, ...verbArgs] = process.argv.slice(2);
try {
  if (!verb || verb === "--help" || verb === "-h") process.stdout.write(globalHelp());
  else if (verb === "--version" || verb === "-V") process.stdout.write(versionText());
  else if (verb === "help") {
    const about = verbArgs[0];
    if (about === undefined) process.stdout.write(globalHelp());
    else if (isVerb(about)) process.stdout.write(verbHelp(about));
    else fail(`no verb "${about}" (research-agent --help lists them)`);
  } else if (!isVerb(verb)) fail(`unknown command "${verb}" (research-agent --help lists them)`);
  else await (await commands[verb]())(verbArgs);
} catch (err) {
  exitOn(err);
}
