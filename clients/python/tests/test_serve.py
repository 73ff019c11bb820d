"""The client against the dashboard of `research-agent serve` (test/cli/serve.test.ts) while the run it
names goes: a goal refused with launch's own line, a goal queued behind that run, and the queue."""
import os

import pytest
from conftest import needs_dashboard
from research_swarm import Client, Code, DashboardError

pytestmark = needs_dashboard


def test_a_goal_the_swarm_cannot_run_is_refused_with_launchs_line(client: Client):
    with pytest.raises(DashboardError) as e:
        client.start_run("make it good please")
    assert (e.value.code, e.value.status) == (Code.BAD_REQUEST, 400)
    assert e.value.message.startswith("cannot understand the goal")
    with pytest.raises(DashboardError) as e:
        client.start_run("digits: reach 90% validation accuracy", time_budget="soon")
    assert e.value.message == '--time-budget must be a duration such as 90s, 20m or 2h, got "soon"'


def test_a_goal_waits_behind_the_run_going(client: Client, run_id: str):
    taken = client.start_run(os.environ["RESEARCH_SWARM_TEST_GOAL"], time_budget="45s", seeds_per_trial=2,
                             space={"optimizer": {"values": ["adam", "adamw"]}})
    assert taken.position == 1
    queue = client.queue()
    assert queue.accepting and queue.max_runs == 1
    assert [r.run_id for r in queue.running] == [run_id]
    assert [(r.run_id, r.who) for r in queue.queued] == [(taken.run_id, "ui:pytest")]
