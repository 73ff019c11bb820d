/**
 * ui: the dashboard: the workspace's runs in a browser, followed live whenever a
 * swarm runs for the workspace (it may start later). Serves until SIGINT or SIGTERM.
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { cliConfig } from "../../core/config.js";
import { createLogger } from "../../core/logger.js";
import { buildWeb } from "../../dashboard/build.js";
import { startDashboard, type Dashboard } from "../../dashboard/server.js";
import { args, dashboardPort, dashboardStartProblem, EXIT, fail } from "../args.js";
import { connectOrFail } from "../workspace.js";
import { UI_PORT } from "../help.js";

export default async function ui(argv: string[]): Promise<void> {
  const { values: a } = args(argv, { host: { type: "string", default: "127.0.0.1" }, port: { type: "string", default: String(UI_PORT) }, token: { type: "string" } }, { noJson: "it serves the dashboard, whose API is JSON (docs/DASHBOARD.md)" });
  const port = dashboardPort(a.port);
  const workspace = resolve(a.workspace);
  if (!existsSync(workspace)) fail(`no workspace ${workspace} (is --workspace right?)`);
  const logger = createLogger("dashboard");
  logger.level = cliConfig().logLevel;
  let dashboard: Dashboard;
  try {
    dashboard = await startDashboard({
      workspace,
      host: a.host,
      port,
      token: a.token ?? cliConfig().uiToken,
      logger,
      assets: await buildWeb(),
      connect: () => connectOrFail(workspace, a.nats),
    });
  } catch (err) {
    fail(dashboardStartProblem(err, port), EXIT.cannotRun);
  }
  process.stdout.write(`dashboard: ${dashboard.url}\nwho can see it and act on runs: ${dashboard.access}\n`);
  const stop = () => void dashboard.close().then(() => process.exit(0));
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}
