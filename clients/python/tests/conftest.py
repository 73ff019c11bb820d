"""The client's tests run against a real dashboard, which test/dashboard/browser.test.ts starts over a
real swarm's run: test_live.py while the run goes on (a dashboard beyond loopback, with a token),
test_finished.py once it has finished (the dashboard reading it from disk). It sets
RESEARCH_UI_URL, RESEARCH_UI_TOKEN (the client's own defaults) and RESEARCH_SWARM_TEST_RUN, the run.
Without them these tests skip."""
import os
import time
from typing import Callable

import pytest

from research_swarm import Client

RUN = os.environ.get("RESEARCH_SWARM_TEST_RUN", "")

needs_dashboard = pytest.mark.skipif(not RUN, reason="run by test/dashboard/browser.test.ts against a real dashboard (RESEARCH_SWARM_TEST_RUN unset)")


@pytest.fixture
def client() -> Client:
    return Client(user="pytest", timeout=20)


@pytest.fixture
def run_id() -> str:
    return RUN


def wait_for(what: str, check: Callable[[], bool], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.1)
