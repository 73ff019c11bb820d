/** What the dashboard's tests share: a tiny web bundle and a workspace with a real lineage. */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LineageStore } from "../../lineage-store/store.js";
import type { WebAssets } from "../../dashboard/server.js";
import type { Event } from "../../proto/gen/research/v1/events_pb.js";
import { testLogger } from "../bus/helpers.js";

export const ASSETS: WebAssets = {
  html: "<!doctype html><title>dashboard</title><script src=/assets/app.js></script>",
  files: { "app.js": { body: "console.log('app')", type: "text/javascript; charset=utf-8" } },
};

/** A workspace whose lineage holds `runs` (run id -> its events), written the way the store process writes. */
export async function workspaceWith(runs: Record<string, Event[]>): Promise<string> {
  const workspace = mkdtempSync(join(tmpdir(), "dashboard-"));
  const store = await LineageStore.open(join(workspace, "lineage"), { logger: testLogger });
  await store.applyEvents(Object.values(runs).flat());
  await store.close();
  return workspace;
}
