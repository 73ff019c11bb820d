"""The client against the dashboard reading a finished run from disk (no swarm): runs, trials as
typed records, the best with its interval, a trial's lineage, search, errors, and the event stream's timeout."""
import socket
import time

import pytest
from conftest import needs_dashboard
from research_swarm import (Best, BestSoFarPoint, Change, Client, Code, DashboardError, HeldOutTest, Interval, Progress, RunSummary,
                            SearchHit, SeedCurves, TrialDetail, TrialRow, trial_record)
from research_swarm.types import live_message

FINISHED = {"goal_achieved", "budget_exhausted", "stopped", "completed"}


def refused(call) -> DashboardError:
    with pytest.raises(DashboardError) as e:
        call()
    return e.value


@needs_dashboard
def test_runs_and_the_run(client: Client, run_id: str):
    summary = next(r for r in client.runs() if r.run_id == run_id)
    assert isinstance(summary, RunSummary)
    assert summary.live is False and summary.status in FINISHED and summary.objective.metric == "accuracy"
    run = client.run(run_id)
    assert run.status == summary.status and run.trials == len(run.trials_table) >= 2
    assert client.trials(run_id) == run.trials_table
    assert [t.index for t in run.trials_table] == list(range(1, run.trials + 1))
    for t in run.trials_table:
        assert isinstance(t, TrialRow) and isinstance(t.fidelity.epochs, int) and t.progress is None
        assert t.status in {"proposed", "assembled", "evaluated", "judged", "failed"} and isinstance(t.proposed_at, int)
    assert all(isinstance(p, BestSoFarPoint) and p.best_ci_low is not None and p.best_ci_high is None for p in run.best_so_far)
    # The page's pause and resume, and test_live.py's, each with who did it.
    assert [(i.kind, i.who) for i in run.interventions if i.who == "ui:pytest"] == [("pause", "ui:pytest"), ("resume", "ui:pytest")]
    assert [i.kind for i in run.interventions] == ["pause", "resume", "pause", "resume"]


@needs_dashboard
def test_the_best_trial_with_its_interval_and_test_score(client: Client, run_id: str):
    best = client.best(run_id)
    assert isinstance(best, Best) and isinstance(best.val, Interval)
    low, high = best.val.ci95
    assert low <= best.val.mean <= high and best.val.n >= 1 and best.val.examples > 0
    assert best.test is not None and 0 < best.test <= 1

    trial = client.trial(run_id, best.trial_id)
    assert isinstance(trial, TrialDetail) and trial.row.trial_id == best.trial_id
    assert trial.row.val is not None and trial.row.val.mean == pytest.approx(best.val.mean)
    assert client.trial(run_id, best.trial_id.rsplit("-", 1)[1]) == trial  # the short id
    assert isinstance(trial.model_config, dict) and trial.code
    assert len(trial.seeds) == trial.row.fidelity.seeds
    assert all(isinstance(s, SeedCurves) and len(s.val_metric) == len(s.val_loss) >= 1 for s in trial.seeds)
    assert len(trial.confusion_matrix) == 10 and len(trial.per_class) == 10  # digits
    assert isinstance(trial.test, HeldOutTest) and trial.test.per_seed is not None
    assert trial.test.per_seed.mean == pytest.approx(best.test)
    assert len(trial.test.seeds) >= 1
    assert all(0 < s.value <= 1 for s in trial.test.seeds)


@needs_dashboard
def test_a_trials_lineage_up_to_its_roots(client: Client, run_id: str):
    rows = {t.trial_id: t for t in client.trials(run_id)}

    def ancestors(trial_id: str) -> set[str]:
        return {trial_id}.union(*(ancestors(p) for p in rows[trial_id].parent_ids))

    deepest = max(rows, key=lambda t: (len(ancestors(t)), t))
    chain = client.lineage(run_id, deepest)
    ids = [t.row.trial_id for t in chain]
    assert ids[0] == deepest and len(set(ids)) == len(ids) and set(ids) == ancestors(deepest)
    assert chain[-1].row.parent_ids == []
    for t in chain:
        assert set(t.row.parent_ids) <= set(ids)


@needs_dashboard
def test_search(client: Client, run_id: str):
    hits = client.search("vgg cnn with label smoothing", run=run_id, k=3)
    assert 1 <= len(hits) <= 3
    assert all(isinstance(h, SearchHit) and h.run_id == run_id and h.objective.metric == "accuracy" for h in hits)
    assert [h.distance for h in hits] == sorted(h.distance for h in hits)
    assert all(h.val is None or 0 < h.val <= 1 for h in hits)
    assert {h.trial_id for h in hits} <= {t.trial_id for t in client.trials(run_id)}


@needs_dashboard
def test_errors_have_a_code_and_the_dashboards_message(client: Client, run_id: str):
    e = refused(lambda: client.run("r-nope"))
    assert (e.code, e.status, e.message) == (Code.NOT_FOUND, 404, "no run r-nope in this workspace")
    assert str(e) == "[not_found] no run r-nope in this workspace"
    assert refused(lambda: client.trial(run_id, "t999")).message == f"no trial t999 in run {run_id}"
    e = refused(lambda: client.search("x", k=0))
    assert e.code is Code.BAD_REQUEST and e.message.startswith("k must be a whole number")
    e = refused(lambda: client.pause(run_id))
    assert e.code is Code.CONFLICT and e.message.startswith("no swarm is running for this workspace")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    e = refused(lambda: Client(f"http://127.0.0.1:{closed}/", timeout=5).runs())
    assert e.code is Code.UNAVAILABLE and e.status is None and e.message.startswith(f"no answer from http://127.0.0.1:{closed}: ")


@needs_dashboard
def test_the_event_stream_ends_at_its_timeout(client: Client, run_id: str):
    started = time.monotonic()
    with client.events(run_id, timeout=0.5) as stream:
        assert list(stream) == []  # no swarm: nothing live
    assert 0.5 <= time.monotonic() - started < 5


@needs_dashboard
def test_trials_frame(client: Client, run_id: str):
    rows = client.trials(run_id)
    record = trial_record(rows[0])
    assert record["trial_id"] == rows[0].trial_id and record["epochs"] == rows[0].fidelity.epochs
    assert record["features.lr"] == rows[0].features["lr"]
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match=r"trials_frame\(\) needs pandas"):
            client.trials_frame(run_id)
        return
    frame = client.trials_frame(run_id)
    assert list(frame.index) == [t.trial_id for t in rows]
    assert frame.loc[rows[0].trial_id, "epochs"] == rows[0].fidelity.epochs


def test_live_messages_parse_with_the_runs_metric():
    # As test/dashboard/live.test.ts has the dashboard send them.
    progress = live_message({"type": "progress", "run_id": "r", "trial_id": "r-t000", "seed": 0, "epoch": 1, "epochs": 3,
                             "val_accuracy": 0.61, "train_accuracy": 0.55, "seconds": 2})
    assert progress == Progress(type="progress", run_id="r", trial_id="r-t000", seed=0, epoch=1, epochs=3, seconds=2, train_accuracy=0.55, val=0.61)
    assert live_message({"type": "change", "run_id": "r", "trial_id": "", "kind": "caught_up"}) == Change("change", "r", "", "caught_up")
    rmse = SearchHit.from_json({"run_id": "r", "objective": {"metric": "rmse", "label": "RMSE", "higher_is_better": False, "proportion": False},
                                "trial_id": "r-t001", "distance": 0.2, "hypothesis": "h", "val_rmse": 55.4, "failure_label": None})
    assert (rmse.val, rmse.objective.label) == (55.4, "RMSE")
