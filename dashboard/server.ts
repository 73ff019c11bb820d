/**
 * The dashboard's HTTP server (node:http): the JSON API of api.ts over the
 * runs the source keeps current, server-sent events for what changes live,
 * interventions published on the swarm's bus, and the single-page app.
 * Loopback by default; beyond it every request needs the token.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { hostname, userInfo } from "node:os";
import type { Bus } from "../bus/index.js";
import type { Logger } from "../core/logger.js";
import type { Objective } from "../core/objective.js";
import { summaryOf } from "../lineage-store/query.js";
import { interventionEvent } from "../swarm/interventions.js";
import { MAX_K, request as queryLineage, type TrialSummary } from "../swarm/lineage-query.js";
import { FAILURE_LABEL } from "../core/failure.js";
import type { InterventionReply, LiveMessage, SearchHit } from "./api.js";
import { checkRunDocument } from "../core/run-document.js";
import { NO_INTAKE, type RunIntake, type StartRunReply } from "./intake.js";
import { DashboardSource } from "./source.js";
import { named, objectiveJson, runDetail, runSummary, trialDetail, type RunView } from "./views.js";
import { ResearchError } from "../core/failure.js";

/** The web bundle (build.ts's buildWeb()): the page every app route serves, and the files under /assets/. */
export interface WebAssets {
  html: string;
  files: Record<string, { body: Buffer | string; type: string }>;
}

export interface DashboardOptions {
  workspace: string;
  /** Default 127.0.0.1. Any other address needs a token. */
  host?: string;
  /** 0: a free port. */
  port?: number;
  /** Required when given, on loopback too; beyond loopback made when not given. */
  token?: string;
  logger: Logger;
  assets: WebAssets;
  /** The bus of the swarm running for the workspace now, if any (source.ts). */
  connect?: () => Promise<Bus | undefined>;
  /** How often to look for a swarm when none is followed (ms). */
  retryMs?: number;
  /** How long a bus may stay disconnected before it is let go (ms). */
  lostAfterMs?: number;
  /** Takes new runs (POST /api/runs): a dashboard of `research-agent serve`; without one, new runs are refused. */
  intake?: RunIntake;
}

export interface Dashboard {
  /** Where to open it; with `?token=` when a token is needed. */
  url: string;
  /** Who may use it (and, on serve's, start runs), in words for its banner. */
  access: string;
  close(): Promise<void>;
}

const HEARTBEAT_MS = 15_000;
const MAX_BODY = 1 << 20;
const COOKIE = "research_ui_token";
/** Paths the app routes itself: each gets index.html. */
const APP_ROUTES = [/^\/$/, /^\/runs$/, /^\/runs\/[^/]+$/, /^\/runs\/[^/]+\/trials\/[^/]+$/, /^\/runs\/[^/]+\/compare\/[^/]+\/[^/]+$/, /^\/search$/];

/**
 * The HTTP status a failed request answers with, in one place: a request this
 * server refuses names its own (404, 405, ...: a status without a reason; an
 * outside service's status, which comes with one, is not ours to repeat);
 * otherwise the failure's label decides: a bad request is the client's (400),
 * a service the answer needs that cannot answer now is 503, anything else is
 * the server's (500).
 */
function httpStatus(err: unknown): number {
  if (!(err instanceof ResearchError)) return 500;
  if (err.status !== undefined && err.reason === undefined) return err.status;
  return err.label === "invalid_config" ? 400 : err.label === "runner_unavailable" ? 503 : 500;
}

/** Refuses the request: the one line the client is told, with its status. */
function refuse(status: number, message: string): never {
  throw new ResearchError("invalid_config", message, "", { status });
}

function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127(\.\d{1,3}){3}$/.test(host);
}

/** The Host header names this machine's loopback, not some name that resolves to it (DNS rebinding). */
function loopbackHostHeader(header: string | undefined): boolean {
  const name = (header ?? "").replace(/:\d+$/, "").replace(/^\[(.*)\]$/, "$1");
  return isLoopback(name);
}

function sameSecret(a: string, b: string): boolean {
  const digest = (s: string) => createHash("sha256").update(s).digest();
  return timingSafeEqual(digest(a), digest(b));
}

function cookieToken(req: IncomingMessage): string | undefined {
  for (const part of (req.headers.cookie ?? "").split(";")) {
    const [k, ...v] = part.trim().split("=");
    if (k === COOKIE) return decodeURIComponent(v.join("="));
  }
  return undefined;
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  if (!(req.headers["content-type"] ?? "").toLowerCase().startsWith("application/json")) {
    // Also what keeps other sites' pages from posting: a cross-origin JSON request needs a preflight this server never grants.
    refuse(415, "the body must be JSON (Content-Type: application/json)");
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY) refuse(413, `the body is over ${MAX_BODY} bytes`);
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch (err) {
    refuse(400, `the body is not JSON: ${(err as Error).message}`);
  }
}

/** Who the lineage records for a request: the X-Research-User header's name, else the user the server runs as. */
function whoOf(req: IncomingMessage): string {
  const named = String(req.headers["x-research-user"] ?? "").trim().replace(/[^\w.@-]/g, "").slice(0, 64);
  return `ui:${named || userInfo().username}`;
}

/** A hit with its run's objective: the lineage's `val_accuracy` holds the run's metric, whichever it is. */
function hitOf(t: TrialSummary, o: Objective): SearchHit {
  return {
    run_id: t.runId,
    objective: objectiveJson(o),
    trial_id: t.trialId,
    distance: t.distance,
    hypothesis: t.hypothesis,
    ...named(o.key, t.valAccuracy ?? null),
    failure_label: FAILURE_LABEL.name(t.failureLabel) ?? null,
  };
}

/** The dashboard's requests: its API, its live stream, its app's assets and pages, each behind its access rule. */
class Routes {
  readonly streams = new Set<ServerResponse>();
  // Compressed once: the script is 0.74 MB as built and a quarter of that gzipped, which a dashboard opened over a network feels.
  private readonly gzipped: Map<string, Buffer>;

  constructor(
    private readonly opts: DashboardOptions,
    private readonly source: DashboardSource,
    private readonly token: string | undefined,
    private readonly log: Logger,
  ) {
    this.gzipped = new Map(Object.entries(opts.assets.files).map(([name, f]) => [name, gzipSync(f.body)]));
  }

  private runOf(runId: string): RunView {
    return this.source.run(runId) ?? refuse(404, `no run ${runId} in this workspace`);
  }

  private async search(url: URL): Promise<SearchHit[]> {
    const q = url.searchParams.get("q")?.trim();
    if (!q) refuse(400, "search needs q, the text to search for");
    const kText = url.searchParams.get("k");
    const k = kText === null ? 10 : Number(kText);
    if (!Number.isInteger(k) || k < 1 || k > MAX_K) refuse(400, `k must be a whole number from 1 to ${MAX_K}, got "${kText}"`);
    const runId = url.searchParams.get("run") || undefined;
    const bus = this.source.bus();
    if (bus) {
      // The lineage store's own process answers with its embedder warm.
      try {
        return (await queryLineage(bus, { text: q, k, runId })).map((t) => hitOf(t, this.source.objectiveOf(t.runId)));
      } catch (err) {
        this.log.warn({ err }, "the lineage store did not answer the search; searching the lineage here");
      }
    }
    const store = await this.source.lineage();
    return store ? (await store.similarTrials({ text: q, k, runId })).map((h) => hitOf(summaryOf(h), this.source.objectiveOf(h.run_id))) : [];
  }

  private async intervene(req: IncomingMessage, runId: string): Promise<[number, InterventionReply]> {
    const view = this.runOf(runId);
    const body = await readJson(req);
    const bus = this.source.bus();
    if (!bus) return [409, { ok: false, error: `no swarm is running for this workspace: start one (research-agent launch --resume ${runId}) to act on run ${runId}` }];
    if (!view.live) return [409, { ok: false, error: `run ${runId} is not in the running swarm's stream: it cannot be acted on` }];
    const who = whoOf(req);
    const check = interventionEvent(view.state, body, who);
    if (!check.ok) return [400, check];
    await bus.publish(check.event);
    const id = check.event.body?.case === "runIntervention" ? (check.event.body.value.interventionId ?? "") : "";
    this.log.info({ run_id: runId, intervention_id: id, who }, check.summary);
    return [202, { ok: true, intervention_id: id, summary: check.summary }];
  }

  private async startRun(req: IncomingMessage): Promise<[number, StartRunReply]> {
    const body = await readJson(req);
    const intake = this.opts.intake;
    if (!intake) return [409, { ok: false, error: "this dashboard takes no new runs: start them with research-agent launch, or serve the workspace with research-agent serve" }];
    const checked = checkRunDocument(body);
    if (!checked.ok) return [400, { ok: false, error: checked.error }];
    const who = whoOf(req);
    const [status, reply] = await intake.submit(checked.value, who);
    this.log.info({ run_id: reply.ok ? reply.run_id : undefined, who, status }, reply.ok ? "run submitted" : `run refused: ${reply.error}`);
    return [status, reply];
  }

  private events(req: IncomingMessage, res: ServerResponse, url: URL): void {
    // A run not seen yet may start while the page waits: no 404 here.
    const only = url.searchParams.get("run") || undefined;
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-store", connection: "keep-alive", "x-accel-buffering": "no" });
    res.write(": connected\n\n");
    this.streams.add(res);
    const stop = this.source.listen((m: LiveMessage) => {
      if (!only || m.run_id === only) res.write(`event: ${m.type}\ndata: ${JSON.stringify(m)}\n\n`);
    });
    // Proxies and browsers drop a stream that stays silent too long.
    const beat = setInterval(() => res.write(": heartbeat\n\n"), HEARTBEAT_MS);
    const end = () => {
      clearInterval(beat);
      stop();
      this.streams.delete(res);
    };
    req.on("close", end);
    res.on("close", end);
  }

  private serveAsset(req: IncomingMessage, res: ServerResponse, path: string): void {
    const files = this.opts.assets.files;
    const name = decoded(path.slice("/assets/".length));
    const file = Object.hasOwn(files, name) ? files[name] : undefined;
    if (!file) refuse(404, `no asset ${path}`);
    const gzip = /\bgzip\b/.test(String(req.headers["accept-encoding"] ?? ""));
    const body = gzip ? this.gzipped.get(name)! : file.body;
    res.writeHead(200, {
      "content-type": file.type,
      "content-length": Buffer.byteLength(body),
      "cache-control": "no-cache",
      vary: "accept-encoding",
      ...(gzip ? { "content-encoding": "gzip" } : {}),
    });
    res.end(body);
  }

  /** Whether the request may go on; answers it when not (or redirects a page opened with ?token= to its clean address). */
  private authorised(req: IncomingMessage, res: ServerResponse, url: URL): boolean {
    const token = this.token;
    if (token === undefined) {
      if (loopbackHostHeader(req.headers.host)) return true;
      sendJson(res, 403, { error: "this dashboard answers only requests addressed to localhost" });
      return false;
    }
    const bearer = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? "")?.[1]?.trim();
    const fromQuery = url.searchParams.get("token");
    const given = bearer ?? cookieToken(req) ?? fromQuery ?? undefined;
    if (given === undefined || !sameSecret(given, token)) {
      sendJson(res, 401, { error: "this dashboard needs its token: open the URL it printed (with ?token=), or send Authorization: Bearer TOKEN" });
      return false;
    }
    if (fromQuery !== null && bearer === undefined) {
      res.setHeader("set-cookie", `${COOKIE}=${encodeURIComponent(token)}; HttpOnly; SameSite=Strict; Path=/`);
      if (req.method === "GET" && !url.pathname.startsWith("/api/")) {
        // The token stays out of the address bar and the history.
        url.searchParams.delete("token");
        res.writeHead(303, { location: `${url.pathname}${url.search}` });
        res.end();
        return false;
      }
    }
    return true;
  }

  /** The API's routes (docs/DASHBOARD.md). */
  private async api(req: IncomingMessage, res: ServerResponse, url: URL, method: string): Promise<void> {
    const path = url.pathname;
    const [, what, runId, sub, trialId, extra] = path.split("/").slice(1).map(decoded);
    if (method === "POST" && what === "runs" && runId && sub === "interventions" && trialId === undefined) {
      const [status, reply] = await this.intervene(req, runId);
      return sendJson(res, status, reply);
    }
    if (method === "POST" && what === "runs" && runId === undefined) {
      const [status, reply] = await this.startRun(req);
      return sendJson(res, status, reply);
    }
    if (method !== "GET") refuse(405, `${method} ${path} is not a route (see docs/DASHBOARD.md)`);
    if (what === "runs" && runId === undefined) return sendJson(res, 200, this.source.runs().map((v) => runSummary(v)));
    if (what === "runs" && runId && sub === undefined) return sendJson(res, 200, runDetail(this.runOf(runId)));
    if (what === "runs" && runId && sub === "trials" && trialId && extra === undefined) {
      const view = this.runOf(runId);
      // A short id ("t007") names the run's trial as the pages show it.
      const detail = trialDetail(view, trialId) ?? trialDetail(view, `${runId}-${trialId}`);
      return sendJson(res, 200, detail ?? refuse(404, `no trial ${trialId} in run ${runId}`));
    }
    if (what === "search" && runId === undefined) return sendJson(res, 200, await this.search(url));
    if (what === "queue" && runId === undefined) return sendJson(res, 200, this.opts.intake?.queue() ?? NO_INTAKE);
    if (what === "events" && runId === undefined) return this.events(req, res, url);
    refuse(404, `no route ${path} (see docs/DASHBOARD.md)`);
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = requestUrl(req.url ?? "/");
    if (!this.authorised(req, res, url)) return;
    const path = url.pathname;
    const method = req.method ?? "GET";
    if (path.startsWith("/api/")) return this.api(req, res, url, method);
    if (method !== "GET" && method !== "HEAD") refuse(405, `${method} ${path} is not a route`);
    if (path.startsWith("/assets/")) return this.serveAsset(req, res, path);
    if (APP_ROUTES.some((r) => r.test(path))) {
      const html = this.opts.assets.html;
      res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-cache", "content-length": Buffer.byteLength(html) });
      return void res.end(html);
    }
    refuse(404, `no page ${path}`);
  }
}

export async function startDashboard(opts: DashboardOptions): Promise<Dashboard> {
  const host = opts.host ?? "127.0.0.1";
  const log = opts.logger;
  // A token given is wanted on loopback too: on a shared machine every user can reach 127.0.0.1.
  const token = opts.token || (isLoopback(host) ? undefined : randomBytes(24).toString("base64url"));
  if (token !== undefined && token.length < 16) throw new ResearchError("invalid_config", "the dashboard's token must have 16 characters or more");
  const source = await DashboardSource.open({ workspace: opts.workspace, logger: log, connect: opts.connect, retryMs: opts.retryMs, lostAfterMs: opts.lostAfterMs });
  const routes = new Routes(opts, source, token, log);
  const server = createServer((req, res) => {
    routes.handle(req, res).catch((err: unknown) => {
      const status = httpStatus(err);
      if (status === 500) log.error({ err, method: req.method, url: req.url }, "request failed");
      if (res.headersSent) return void res.end();
      sendJson(res, status, { error: status === 500 ? `internal error: ${(err as Error).message}` : (err as Error).message });
    });
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(opts.port ?? 0, host, () => resolve());
    });
  } catch (err) {
    await source.close();
    throw err;
  }
  const port = (server.address() as AddressInfo).port;
  const shownHost = host === "0.0.0.0" || host === "::" ? hostname() : host.includes(":") ? `[${host}]` : host;
  const url = `http://${shownHost}:${port}/${token ? `?token=${encodeURIComponent(token)}` : ""}`;
  log.info({ host, port, auth: token !== undefined }, "dashboard listening");
  return {
    url,
    access: token
      ? "whoever holds its token (the URL's ?token=, or Authorization: Bearer)"
      : `anyone who can reach ${shownHost}:${port} on this machine, with no token (--token or RESEARCH_UI_TOKEN asks for one)`,
    async close() {
      for (const res of routes.streams) res.end();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Keep-alive connections would hold close() open until they time out.
      server.closeAllConnections();
      await closed;
      await source.close();
    },
  };
}

/**
 * The request's target as a URL. Read as a path on this server, never against a base: a target
 * such as "//" (what "/api/..//" normalises to) would otherwise be a scheme-relative URL with no
 * host, and throw (the fuzz test found it as a 500).
 */
function requestUrl(target: string): URL {
  try {
    return new URL(`http://dashboard${target.startsWith("/") ? target : `/${target}`}`);
  } catch {
    refuse(400, `cannot read the request target ${JSON.stringify(target.slice(0, 200))}`);
  }
}

function decoded(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    refuse(400, `bad percent-encoding in "${segment}"`);
  }
}


