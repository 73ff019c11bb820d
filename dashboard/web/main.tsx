/** The dashboard's single page: routes to each page by URL. */
import { render } from "preact";
import { ComparePage } from "./pages/compare";
import { RunPage } from "./pages/run";
import { RunsPage } from "./pages/runs";
import { SearchPage } from "./pages/search";
import { TrialPage } from "./pages/trial";
import { interceptLinks, useLocation } from "./router";

function Page() {
  const { path, query } = useLocation();
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  if (parts.length === 0 || (parts.length === 1 && parts[0] === "runs")) return <RunsPage />;
  if (parts[0] === "search") return <SearchPage key={query.get("q") ?? ""} q={query.get("q") ?? ""} />;
  if (parts[0] === "runs" && parts.length === 2) return <RunPage key={parts[1]} runId={parts[1]!} />;
  if (parts[0] === "runs" && parts[2] === "trials" && parts.length === 4) return <TrialPage key={path} runId={parts[1]!} trialId={parts[3]!} />;
  if (parts[0] === "runs" && parts[2] === "compare" && parts.length === 5) return <ComparePage key={path} runId={parts[1]!} a={parts[3]!} b={parts[4]!} />;
  return <p class="error">No page at {path}.</p>;
}

function App() {
  return (
    <>
      <nav class="top">
        <a class="brand" href="/runs">
          research swarm
        </a>
        <a href="/runs">runs</a>
        <a href="/search">search</a>
      </nav>
      <main>
        <Page />
      </main>
    </>
  );
}

interceptLinks();
render(<App />, document.getElementById("app")!);
