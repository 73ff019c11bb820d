"""The client against a dashboard beyond loopback (with its token) while a real swarm runs the run:
the live run, its events, and interventions: a pause and a resume the swarm takes, and refusals."""
import os

import pytest
import research_swarm
from conftest import needs_dashboard, wait_for
from research_swarm import Change, Client, Code, DashboardError, Progress, RunDetail, TrialRow

pytestmark = needs_dashboard

HAND_MODEL = {"name": "hand-mlp", "layers": [{"type": "flatten"}, {"type": "linear", "out_features": 24}, {"type": "activation", "fn": "gelu"}]}


def refused(call) -> DashboardError:
    with pytest.raises(DashboardError) as e:
        call()
    return e.value


def test_the_installed_package_is_tested():
    # pip installed it; the tests never import the source tree.
    assert os.path.realpath(research_swarm.__file__).startswith(os.path.realpath(os.environ["PYTHONPATH"]))


def test_the_token(client: Client, run_id: str, monkeypatch: pytest.MonkeyPatch):
    assert client.token
    e = refused(lambda: Client(client.url, token="not-the-token-but-long-enough").runs())
    assert (e.code, e.status) == (Code.UNAUTHORIZED, 401)
    assert "needs its token" in e.message
    # The URL the dashboard prints, token and all, is enough.
    token = client.token
    monkeypatch.delenv("RESEARCH_UI_TOKEN")
    assert refused(lambda: Client(client.url).runs()).code is Code.UNAUTHORIZED
    printed = Client(f"{client.url}/?token={token}")
    assert printed.token == token and printed.url == client.url
    wait_for("the run listed", lambda: any(r.run_id == run_id for r in printed.runs()))


def test_the_live_run(client: Client, run_id: str):
    wait_for("the run followed live", lambda: any(r.run_id == run_id and r.live for r in client.runs()))
    run = client.run(run_id)
    assert isinstance(run, RunDetail)
    assert (run.run_id, run.live, run.paused, run.status, run.dataset) == (run_id, True, False, "running", "digits")
    assert (run.objective.metric, run.objective.higher_is_better, run.objective.proportion) == ("accuracy", True, True)
    assert run.settings["seeds"] == 2
    assert all(isinstance(t, TrialRow) for t in client.trials(run_id))


def test_pause_and_resume_followed_on_the_event_stream(client: Client, run_id: str):
    with client.events(run_id, timeout=30) as stream:
        reply = client.pause(run_id, reason="looking first")
        assert reply.intervention_id.startswith("iv-")
        assert reply.summary.startswith(f"paused run {run_id}: ")
        seen = []
        for message in stream:
            seen.append(message)
            if isinstance(message, Change) and message.kind == "runIntervention":
                break
        else:
            pytest.fail(f"no runIntervention in 30 s, only {seen}")
    assert all(isinstance(m, (Change, Progress)) and m.run_id == run_id for m in seen)
    assert stream.closed

    run = client.run(run_id)
    assert (run.paused, run.status) == (True, "paused")
    row = next(i for i in run.interventions if i.intervention_id == reply.intervention_id)
    assert (row.kind, row.who, row.reason) == ("pause", "ui:pytest", "looking first")

    # Refused by the run's state or the request: 400 with the dashboard's one line, nothing published.
    e = refused(lambda: client.pause(run_id))
    assert (e.code, e.status, e.message) == (Code.BAD_REQUEST, 400, f"run {run_id} is already paused")
    assert str(e) == f"[bad_request] run {run_id} is already paused"
    assert refused(lambda: client.cancel_trial(run_id, "t999")).message == f"no trial t999 in run {run_id}"
    # The configs validate; only the parent is missing.
    e = refused(lambda: client.propose(run_id, "a wide GELU MLP", HAND_MODEL, train_config={"lr": 0.003}, parent_ids=["t999"]))
    assert e.message == f"no parent trial {run_id}-t999 in run {run_id}"
    assert "model_config" in refused(lambda: client.propose(run_id, "nothing", {"layers": []})).message
    assert "train_config" in refused(lambda: client.propose(run_id, "x", HAND_MODEL, train_config={"lr": -1})).message
    assert refused(lambda: client.stop("r-nope")).code is Code.NOT_FOUND

    reply = client.resume(run_id, reason="seen enough")
    assert reply.summary == f"resumed run {run_id}"
    wait_for("the run resumed", lambda: not client.run(run_id).paused)
    assert [(i.kind, i.who) for i in client.run(run_id).interventions][-2:] == [("pause", "ui:pytest"), ("resume", "ui:pytest")]
