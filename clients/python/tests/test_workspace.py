"""A finished workspace read from disk with no dashboard: its runs, a report, trials, the best and a
trial's files, each the same as the dashboard serves for the run. test/dashboard/browser.test.ts sets
RESEARCH_SWARM_WORKSPACE to its finished run's workspace (and the dashboard's URL, to compare)."""
import os

import pytest
from conftest import needs_dashboard
from research_swarm import Client, Code, DashboardError, open_workspace

WORKSPACE = os.environ.get("RESEARCH_SWARM_WORKSPACE", "")


@needs_dashboard
def test_a_finished_run_offline(client: Client, run_id: str):
    ws = open_workspace(WORKSPACE)
    [run] = [r for r in ws.runs() if r["run_id"] == run_id]
    assert run["status"] in {"goal_achieved", "budget_exhausted", "stopped", "completed"} and run["trials"] >= 2
    best = ws.best(run_id)
    # The same best, interval and test score as the dashboard's, from the report the run wrote.
    live = client.best(run_id)
    assert best["trial_id"] == live.trial_id == run["best_trial_id"]
    assert best["val_accuracy"]["mean"] == pytest.approx(live.val.mean)
    assert best["val_accuracy"]["ci_95"] == pytest.approx(list(live.val.ci95))
    assert best["test"]["metrics"]["test_accuracy"]["mean"] == pytest.approx(live.test)
    assert best["what"] and best["path"][-1]["trial_id"] == best["trial_id"]
    trials = ws.trials(run_id)
    assert [t["trial_id"] for t in trials] == [t.trial_id for t in client.trials(run_id)]
    folder = ws.trial_dir(run_id, best["trial_id"].rsplit("-", 1)[1])
    assert (folder / "model_config.yaml").is_file() and (folder / "train_config.yaml").is_file()
    assert ws.report(run_id)["next_steps"]["command"].startswith("research-agent launch ")


@needs_dashboard
def test_what_is_not_there():
    ws = open_workspace(WORKSPACE)
    with pytest.raises(DashboardError) as e:
        ws.report("r20990101-000000-0000")
    assert e.value.code is Code.NOT_FOUND and "no report for run r20990101-000000-0000" in e.value.message
    with pytest.raises(DashboardError) as e:
        open_workspace(os.path.join(WORKSPACE, "runs"))
    assert e.value.code is Code.NOT_FOUND and "has no runs/ folder" in e.value.message
