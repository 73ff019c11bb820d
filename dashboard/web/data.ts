/** Reading the API: JSON that refetches on live changes, and the live feed itself. */
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import type { LiveMessage } from "../api";

export async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url, { headers: { accept: "application/json" } });
  const text = await res.text();
  if (!res.ok) {
    let message = text;
    try {
      message = (JSON.parse(text) as { error?: string }).error ?? text;
    } catch {
      // Not JSON: the body is the message.
    }
    throw new Error(`${res.status}: ${message || res.statusText}`);
  }
  return JSON.parse(text) as T;
}

export interface Loaded<T> {
  data: T | null;
  error: string | null;
  /** Refetch, at most once per THROTTLE_MS however often it is called. */
  reload: () => void;
}

const THROTTLE_MS = 500;

/** `url`'s JSON; a null url loads nothing. Older data stays on screen while a reload is under way. */
export function useJson<T>(url: string | null): Loaded<T> {
  const [state, setState] = useState<{ url: string | null; data: T | null; error: string | null }>({ url, data: null, error: null });
  const last = useRef(0);
  const timer = useRef<number | undefined>(undefined);
  const current = useRef(url);
  current.current = url;

  const load = useCallback(() => {
    const u = current.current;
    if (!u) return;
    last.current = Date.now();
    getJson<T>(u).then(
      (data) => u === current.current && setState({ url: u, data, error: null }),
      (e: unknown) => u === current.current && setState((s) => ({ ...s, url: u, error: String((e as Error).message ?? e) })),
    );
  }, []);

  useEffect(() => {
    setState((s) => (s.url === url ? s : { url, data: null, error: null }));
    load();
    return () => clearTimeout(timer.current);
  }, [url, load]);

  const reload = useCallback(() => {
    if (timer.current !== undefined) return;
    const wait = Math.max(0, last.current + THROTTLE_MS - Date.now());
    timer.current = window.setTimeout(() => {
      timer.current = undefined;
      load();
    }, wait);
  }, [load]);

  return { data: state.url === url ? state.data : null, error: state.url === url ? state.error : null, reload };
}

/**
 * Follow `/api/events` (one run's, or every run's when `run` is undefined).
 * A finished run read from disk never sends anything: that is fine.
 */
export function useLive(run: string | undefined, onMessage: (m: LiveMessage) => void): void {
  const handler = useRef(onMessage);
  handler.current = onMessage;
  useEffect(() => {
    const on = (e: MessageEvent<string>) => {
      try {
        handler.current(JSON.parse(e.data) as LiveMessage);
      } catch {
        // A comment or keep-alive line, not a message.
      }
    };
    let source: EventSource | undefined;
    const connect = () => {
      source = new EventSource(run ? `/api/events?run=${encodeURIComponent(run)}` : "/api/events");
      // Whether the server names its events or not, each carries its `type`.
      for (const type of ["message", "change", "progress"]) source.addEventListener(type, on);
    };
    // A page left for another stays in the browser's back-forward cache with its stream open:
    // six pages later every connection the browser allows to the dashboard is held, and the
    // next page never loads. Closed when the page is hidden, opened again when it comes back
    // (with a reload: what happened meanwhile was not streamed to it).
    const hide = () => {
      source?.close();
      source = undefined;
    };
    const show = (e: PageTransitionEvent) => {
      if (!e.persisted || source) return;
      connect();
      handler.current({ type: "change", run_id: run ?? "", trial_id: "", kind: "restored" });
    };
    connect();
    addEventListener("pagehide", hide);
    addEventListener("pageshow", show);
    return () => {
      removeEventListener("pagehide", hide);
      removeEventListener("pageshow", show);
      hide();
    };
  }, [run]);
}
