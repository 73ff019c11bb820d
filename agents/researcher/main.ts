/**
 * The researcher: at run start, a research brief for the goal from the
 * offline corpus (deterministic, so a replayed run gets the same brief).
 */
import { createHash } from "node:crypto";
import { BriefSchema, CODER_VOCABULARY } from "../../core/brief.js";
import { askLlm } from "../llm.js";
import { loadPrompt } from "../prompts.js";
import { runAgent } from "../runtime.js";
import { rankCorpus, researchBrief } from "./research.js";
import { sourceUrl } from "./corpus.js";

const PROMPT = loadPrompt("researcher");

await runAgent({
  role: "researcher",
  kinds: ["runStarted"],
  handle: async (event, ctx) => {
    if (event.body.case !== "runStarted" || !event.body.value.settings?.research) return;
    const goal = event.body.value.goal;
    const query = `small-model classification on ${goal?.dataset ?? "the dataset"}: ${goal?.rawText ?? ""}`.trim();
    const answer = await askLlm(ctx, { runId: event.runId }, {
      role: "researcher",
      purpose: "brief",
      prompt: PROMPT,
      ask: (client) => {
        // The LLM synthesises from the same ranked evidence the built-in brain uses, so every source is real.
        const candidates = rankCorpus(query, { dataset: goal?.dataset })
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
      builtin: () => researchBrief(query, { dataset: goal?.dataset }),
    });
    const brief = answer.value;
    const briefJson = JSON.stringify(brief);
    const briefId = `brief-${createHash("sha256").update(briefJson).digest("hex").slice(0, 12)}`;
    await ctx.emit("brief/initial", {
      runId: event.runId,
      body: { case: "briefReady", value: { briefId, query, briefJson, author: answer.model ? `llm:${answer.model}` : "builtin" } },
    });
    ctx.log.info({ brief_id: briefId, suggestions: brief.architectural_suggestions.length }, "brief ready");
  },
});
