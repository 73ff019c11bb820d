/**
 * The researcher: a research brief for the goal at run start, and a brief
 * for every narrower question the planner asks when a surface stalls. The
 * built-in brain ranks what deep research retrieves (the shipped corpus, the
 * user's notes in RESEARCH_NOTES, arXiv when RESEARCH_ARXIV=1); an LLM, when
 * configured, synthesises from the same ranked evidence, so every source is
 * real.
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import { BriefSchema, CODER_VOCABULARY } from "../../core/brief.js";
import { researcherConfig } from "../../core/config.js";
import { createLogger } from "../../core/logger.js";
import { privateTmpdir } from "../../core/process.js";
import { askLlm } from "../../swarm/llm.js";
import { toId } from "../../core/ids.js";
import { loadPrompt } from "../../swarm/prompts.js";
import { runAgent, type AgentContext } from "../../swarm/runtime.js";
import { ArxivClient } from "../../research/arxiv.js";
import { sourceUrl } from "../../research/corpus.js";
import { DeepResearch } from "../../research/deep-research.js";
import { briefMessage } from "../../core/config-wire.js";

// Before its corpus index opens: what LanceDB leaves in TMPDIR goes with this process.
privateTmpdir("researcher");
const PROMPT = loadPrompt("researcher");
const CONFIG = researcherConfig();
// LanceDB has one safe writer per directory, so each researcher process keeps its own index.
const INDEX_DIR = join(CONFIG.workspace, "research-index", toId(CONFIG.instance));

let opening: Promise<DeepResearch> | undefined;

function deepResearch(): Promise<DeepResearch> {
  opening ??= DeepResearch.open({
    dir: INDEX_DIR,
    notesDir: CONFIG.notesDir,
    // One client per process: its clock is what keeps to arXiv's rate limit.
    arxiv: CONFIG.arxiv ? new ArxivClient({ cacheDir: join(CONFIG.workspace, "arxiv-cache") }) : undefined,
    logger: createLogger("researcher", { index: INDEX_DIR }),
  }).catch((err: unknown) => {
    // A failed open (a missing notes folder, say) is retried with the next brief rather than remembered.
    opening = undefined;
    throw err;
  });
  return opening;
}

async function writeBrief(
  ctx: AgentContext,
  runId: string,
  query: string,
  dataset: string | undefined,
  link: { requestId: string; trialIds: string[] },
): Promise<void> {
  const answer = await askLlm(ctx, { runId, trialId: link.requestId }, {
    role: "researcher",
    purpose: "brief",
    prompt: PROMPT,
    ask: async (client) => {
      const candidates = (await (await deepResearch()).rank(query, { dataset }))
        .slice(0, 12)
        .map((r) => ({ title: r.entry.title, url: sourceUrl(r.entry), summary: r.entry.summary, building_blocks: r.entry.building_blocks, buildable: r.buildable }));
      return client.generateObject({
        role: "researcher",
        schema: BriefSchema,
        schemaName: "research_brief",
        system: PROMPT.text,
        prompt: JSON.stringify({ query, vocabulary: CODER_VOCABULARY, candidates }),
      });
    },
    builtin: async () => {
      const { brief, sources } = await (await deepResearch()).brief(query, { dataset });
      ctx.log.info({ query, sources }, "brief drawn from");
      return brief;
    },
  });
  const briefId = `brief-${createHash("sha256").update(JSON.stringify(answer.value)).digest("hex").slice(0, 12)}`;
  await ctx.emit(`brief/${link.requestId || "initial"}`, {
    runId,
    body: {
      case: "briefReady",
      value: { briefId, query, brief: briefMessage(answer.value), author: answer.model ? `llm:${answer.model}` : "builtin", ...link },
    },
  });
  ctx.log.info({ brief_id: briefId, query, suggestions: answer.value.architectural_suggestions.length }, "brief ready");
}

await runAgent({
  role: "researcher",
  kinds: ["runStarted", "researchRequested"],
  handle: async (event, ctx) => {
    const b = event.body;
    if (b.case === "runStarted") {
      if (!b.value.settings?.research) return;
      const goal = b.value.goal;
      const query = `small-model classification on ${goal?.dataset ?? "the dataset"}: ${goal?.rawText ?? ""}`.trim();
      await writeBrief(ctx, event.runId, query, goal?.dataset, { requestId: "", trialIds: [] });
    } else if (b.case === "researchRequested") {
      const state = await ctx.runState(event.runId);
      if (state.finished) return;
      await writeBrief(ctx, event.runId, b.value.query, state.goal?.dataset, { requestId: b.value.requestId, trialIds: b.value.trialIds });
    }
  },
});
