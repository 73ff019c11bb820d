/**
 * Prompts live in files (swarm/prompts/<role>.v<N>.md) so they are reviewed
 * and versioned like code. The version stored on each trial is the file's
 * version plus a hash of its text: an edit without a version bump still
 * changes the recorded version, so results stay attributable.
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ResearchError } from "../core/failure.js";

export type PromptRole = "planner" | "coder" | "coder-edit" | "analyst" | "researcher" | "summary";

export interface Prompt {
  role: PromptRole;
  version: string;
  text: string;
}

const DIR = join(import.meta.dirname, "prompts");

export function loadPrompt(role: PromptRole): Prompt {
  const files = readdirSync(DIR)
    .map((f) => ({ f, m: new RegExp(`^${role}\\.v(\\d+)\\.md$`).exec(f) }))
    .filter((x) => x.m)
    .sort((a, b) => Number(b.m![1]) - Number(a.m![1]));
  const latest = files[0];
  if (!latest) throw new ResearchError("invalid_config", `no prompt file for ${role} in ${DIR}`);
  const text = readFileSync(join(DIR, latest.f), "utf8");
  const hash = createHash("sha256").update(text).digest("hex").slice(0, 8);
  return { role, version: `${role}.v${latest.m![1]}-${hash}`, text };
}
