/**
 * History-API routing: every page has a real URL, links are plain <a href>,
 * and a click on a same-origin link changes the page without a reload.
 */
import { useEffect, useState } from "preact/hooks";

const here = () => location.pathname + location.search;

export function navigate(to: string): void {
  if (to === here()) return;
  history.pushState(null, "", to);
  dispatchEvent(new PopStateEvent("popstate"));
}

/** The current path and query; re-renders on navigation. */
export function useLocation(): { path: string; query: URLSearchParams } {
  const [loc, setLoc] = useState(here);
  useEffect(() => {
    const on = () => setLoc(here());
    addEventListener("popstate", on);
    return () => removeEventListener("popstate", on);
  }, []);
  const url = new URL(loc, location.origin);
  return { path: url.pathname, query: url.searchParams };
}

/** Left clicks on same-origin links navigate in place; modified clicks keep the browser's meaning (new tab). */
export function interceptLinks(): void {
  document.addEventListener("click", (e) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    const a = (e.target as Element | null)?.closest("a");
    if (!a || a.target || a.hasAttribute("download") || a.origin !== location.origin) return;
    e.preventDefault();
    navigate(a.pathname + a.search);
    scrollTo(0, 0);
  });
}

export const runPath = (run: string) => `/runs/${encodeURIComponent(run)}`;
export const trialPath = (run: string, trial: string) => `${runPath(run)}/trials/${encodeURIComponent(trial)}`;
export const comparePath = (run: string, a: string, b: string) => `${runPath(run)}/compare/${encodeURIComponent(a)}/${encodeURIComponent(b)}`;
