/** research: a research brief for a query, from the built-in corpus, notes and (asked for) arXiv. */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { ArxivClient } from "../../research/arxiv.js";
import { DeepResearch, type DeepBrief } from "../../research/deep-research.js";
import { parseOutputFormat } from "../../research/research.js";
import { args, fail } from "../args.js";
import { quietLogger } from "../workspace.js";

export default async function research(argv: string[]): Promise<void> {
  const { values: a, positionals } = args(argv, {
    format: { type: "string" },
    dataset: { type: "string" },
    notes: { type: "string" },
    arxiv: { type: "boolean" },
    // No default here: only an explicit workspace keeps the index (and the arXiv cache) for the next call.
    workspace: { type: "string" },
  }, { positionals: "words" });
  const query = positionals.join(" ").trim() || fail('research needs a query, e.g. research-agent research "regularisation for small CNNs on fashion-mnist"');
  let opts;
  try {
    opts = a.format ? parseOutputFormat(a.format) : {};
  } catch (err) {
    fail(`--format: ${(err as Error).message}`);
  }
  const notesDir = a.notes ? resolve(a.notes) : undefined;
  if (notesDir && !statSync(notesDir, { throwIfNoEntry: false })?.isDirectory()) fail(`--notes: ${notesDir} is not a folder`);
  const root = a.workspace ? resolve(a.workspace) : mkdtempSync(join(tmpdir(), "research-agent-"));
  let result: DeepBrief;
  try {
    const deep = await DeepResearch.open({
      dir: join(root, "research-index", "cli"),
      notesDir,
      arxiv: a.arxiv ? new ArxivClient({ cacheDir: join(root, "arxiv-cache") }) : undefined,
      logger: quietLogger(),
    });
    try {
      result = await deep.brief(query, { ...opts, dataset: a.dataset });
    } finally {
      await deep.close();
    }
  } catch (err) {
    // fail() exits at once, so the temporary index goes first.
    if (!a.workspace) rmSync(root, { recursive: true, force: true });
    fail(`research: ${(err as Error).message}`);
  }
  if (!a.workspace) rmSync(root, { recursive: true, force: true });
  const { brief, sources } = result;
  const drawnFrom = `drawn from: ${sources.builtin} built-in, ${sources.notes} from notes, ${sources.arxiv} from arXiv${a.arxiv ? "" : " (not searched; add --arxiv)"}`;
  // stdout stays one brief document for --json; the tally goes where people still see it.
  if (a.json) {
    process.stderr.write(`${drawnFrom}\n`);
    return void process.stdout.write(`${JSON.stringify(brief, null, 2)}\n`);
  }
  const lines = [`# ${brief.summary_title}`, "", ...brief.insights.map((i) => `- ${i}`), ""];
  for (const s of brief.architectural_suggestions) {
    lines.push(`## ${s.name}${s.buildable === false ? " (not buildable by the coder yet)" : ""}`, s.description, `how: ${s.implementation_note}`, "");
  }
  lines.push("sources:", ...brief.sources.map((s) => `- ${s.title} ${s.url}`));
  lines.push("", drawnFrom);
  process.stdout.write(`${lines.join("\n")}\n`);
}
