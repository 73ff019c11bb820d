/**
 * The researcher: a research brief for the goal at run start, and a brief
 * for every narrower question the planner asks when a surface stalls. The
 * built-in brain ranks the shipped corpus; an LLM, when configured,
 * synthesises from the same ranked evidence, so every source is real.
 */
import { createHash } from "node:crypto";
import { BriefSchema, CODER_VOCABULARY } from "../../core/brief.js";
import { askLlm } from "../llm.js";
import { loadPrompt } from "../prompts.js";
import { runAgent, type AgentContext } from "../runtime.js";
import { rankCorpus, researchBrief } from "./research.js";
import { sourceUrl } from "./corpus.js";

const PROMPT = loadPrompt("researcher");

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
    ask: (client) => {
      const candidates = rankCorpus(query, { dataset })
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
    builtin: () => researchBrief(query, { dataset }),
  });
  const briefJson = JSON.stringify(answer.value);
  const briefId = `brief-${createHash("sha256").update(briefJson).digest("hex").slice(0, 12)}`;
  await ctx.emit(`brief/${link.requestId || "initial"}`, {
    runId,
    body: {
      case: "briefReady",
      value: { briefId, query, briefJson, author: answer.model ? `llm:${answer.model}` : "builtin", ...link },
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
