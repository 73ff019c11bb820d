/**
 * The researcher: at run start, a research brief for the goal from the
 * offline corpus (deterministic, so a replayed run gets the same brief).
 */
import { createHash } from "node:crypto";
import { runAgent } from "../runtime.js";
import { researchBrief } from "./research.js";

await runAgent({
  role: "researcher",
  kinds: ["runStarted"],
  handle: async (event, ctx) => {
    if (event.body.case !== "runStarted" || !event.body.value.settings?.research) return;
    const goal = event.body.value.goal;
    const query = `small-model classification on ${goal?.dataset ?? "the dataset"}: ${goal?.rawText ?? ""}`.trim();
    const brief = researchBrief(query, { dataset: goal?.dataset });
    const briefJson = JSON.stringify(brief);
    const briefId = `brief-${createHash("sha256").update(briefJson).digest("hex").slice(0, 12)}`;
    await ctx.emit("brief/initial", {
      runId: event.runId,
      body: { case: "briefReady", value: { briefId, query, briefJson, author: "builtin" } },
    });
    ctx.log.info({ brief_id: briefId, suggestions: brief.architectural_suggestions.length }, "brief ready");
  },
});
