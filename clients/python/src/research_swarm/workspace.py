"""A finished workspace read from disk, with no dashboard or swarm running: for notebooks.

    from research_swarm import open_workspace
    ws = open_workspace("workspace")
    run = ws.runs()[0]                       # newest first
    ws.best(run["run_id"])["what"]          # "vgg-cnn, 170,242 parameters, adam lr 0.002, ..."
    ws.trials_frame(run["run_id"])          # pandas, one row per trial

Each run is its folder's ``report.json`` (what ``research-agent report RUN --json`` prints and the
report's Markdown is written from), so the numbers are the report's, by the same rules. A run still
going has no report yet: the dashboard's Client reads it live.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import Code, DashboardError

if TYPE_CHECKING:
    import pandas


class Workspace:
    """The runs a workspace folder holds, by their reports."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser().resolve()
        if not (self.path / "runs").is_dir():
            raise DashboardError(Code.NOT_FOUND, f"{self.path} has no runs/ folder: not a research-agent workspace, or no run has ended in it")

    def __repr__(self) -> str:
        return f"Workspace({str(self.path)!r})"

    def runs(self) -> list[dict[str, Any]]:
        """Every run with a report, newest first: run_id, goal (the words), status, trials, seconds, best_trial_id."""
        found = []
        for report in self.path.glob("runs/*/report.json"):
            r = json.loads(report.read_text())
            outcome = r["outcome"]
            found.append({"run_id": r["run_id"], "goal": (r.get("goal") or {}).get("raw_text", ""), "status": outcome["status"],
                          "trials": outcome["trials"], "seconds": outcome["seconds"], "best_trial_id": outcome["best_trial_id"]})
        return sorted(found, key=lambda r: r["run_id"], reverse=True)

    def report(self, run_id: str) -> dict[str, Any]:
        """The run's report.json as it is: goal, outcome, trials, surfaces, next_steps, settings, ..."""
        path = self.path / "runs" / run_id / "report.json"
        if not path.is_file():
            raise DashboardError(Code.NOT_FOUND, f"no report for run {run_id} in {self.path} (a run still going has none yet)")
        return json.loads(path.read_text())

    def trials(self, run_id: str) -> list[dict[str, Any]]:
        """The report's trial rows, in the order proposed: trial_id, surface, hypothesis, params, the run's metric
        under its key (``val_accuracy``, ``val_rmse``, ...: mean, std, ci_95, n), num_seeds, verdict, promotion,
        hypothesis_outcome, failure_label, ..."""
        return self.report(run_id)["trials"]

    def best(self, run_id: str) -> dict[str, Any] | None:
        """The run's best trial by its rule: its row, what it is, the path to it, its one-time test scores and weights."""
        return self.report(run_id)["outcome"]["best_trial"]

    def trial_dir(self, run_id: str, trial_id: str) -> Path:
        """A trial's folder: model_config.yaml, train_config.yaml, hypothesis.md, model code and results.json."""
        folder = self.path / "runs" / run_id / "experiments" / (trial_id if trial_id.startswith(run_id) else f"{run_id}-{trial_id}")
        if not folder.is_dir():
            raise DashboardError(Code.NOT_FOUND, f"no trial {trial_id} in run {run_id}")
        return folder

    def trials_frame(self, run_id: str) -> pandas.DataFrame:
        """The trial rows as a pandas DataFrame indexed by trial id, the metric's interval as val_mean,
        val_low, val_high and val_n (needs pandas)."""
        try:
            import pandas as pd
        except ImportError as e:
            raise ImportError("trials_frame() needs pandas: pip install pandas; trials() returns the same rows without it") from e
        report = self.report(run_id)
        key = (report.get("goal") or {}).get("metric", "val_accuracy")
        records = []
        for row in report["trials"]:
            val = row.get(key) or {}
            ci = val.get("ci_95") or [None, None]
            outcome = row.get("hypothesis_outcome") or {}
            records.append({**{k: v for k, v in row.items() if k not in (key, "hypothesis_outcome")},
                            "val_mean": val.get("mean"), "val_low": ci[0], "val_high": ci[1], "val_n": val.get("n"),
                            "held": "promotion" if row.get("promotion") else outcome.get("outcome")})
        return pd.DataFrame(records).set_index("trial_id")


def open_workspace(path: str | Path = "workspace") -> Workspace:
    """A workspace folder (``launch --workspace``'s, ``./workspace`` by default) read offline."""
    return Workspace(path)
