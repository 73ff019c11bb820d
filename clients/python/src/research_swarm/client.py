"""The client: the dashboard's HTTP API (docs/DASHBOARD.md) over http.client, one call per method."""
from __future__ import annotations

import json
import os
import socket
import time
from http.client import HTTPConnection, HTTPException, HTTPResponse, HTTPSConnection
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from .errors import Code, DashboardError, code_of_status
from .types import Best, InterventionReply, LiveMessage, Queue, RunDetail, RunSummary, RunTaken, SearchHit, TrialDetail, TrialRow, live_message

if TYPE_CHECKING:
    import pandas

#: Where ``research-agent ui`` listens by default.
DEFAULT_URL = "http://127.0.0.1:8470/"


def _segment(s: str) -> str:
    return quote(s, safe="")


class Client:
    """A dashboard's API.

    ``url`` is the dashboard's address (default: ``$RESEARCH_UI_URL``, else ``http://127.0.0.1:8470/``);
    the URL it prints with ``?token=...`` works as it is. ``token`` is needed when the dashboard listens
    beyond loopback (default: the URL's ``?token=``, else ``$RESEARCH_UI_TOKEN``). ``user`` is who the
    lineage records for an intervention (``ui:USER``; default: the user the dashboard runs as).
    ``timeout``: seconds to wait for each answer. Every failure raises ``DashboardError``.
    """

    def __init__(self, url: str | None = None, token: str | None = None, *, user: str | None = None, timeout: float = 30.0) -> None:
        given = url or os.environ.get("RESEARCH_UI_URL") or DEFAULT_URL
        parts = urlsplit(given)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not a dashboard's URL: {given!r} (e.g. {DEFAULT_URL})")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        #: The dashboard's address, without its token.
        self.url = f"{parts.scheme}://{parts.netloc}{self._prefix}"
        self.token = token or dict(parse_qsl(parts.query)).get("token") or os.environ.get("RESEARCH_UI_TOKEN") or None
        self.user = user
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"Client({self.url!r})"

    # Runs and trials.

    def runs(self) -> list[RunSummary]:
        """Every run of the workspace, newest first."""
        return [RunSummary.from_json(r) for r in self._call("GET", "/api/runs")]

    def run(self, run_id: str) -> RunDetail:
        return RunDetail.from_json(self._call("GET", f"/api/runs/{_segment(run_id)}"))

    def trials(self, run_id: str) -> list[TrialRow]:
        """The run's trials in the order proposed."""
        return self.run(run_id).trials_table

    def trial(self, run_id: str, trial_id: str) -> TrialDetail:
        """One trial; ``trial_id`` whole (``r...-t007``) or short (``t007``)."""
        return TrialDetail.from_json(self._call("GET", f"/api/runs/{_segment(run_id)}/trials/{_segment(trial_id)}"))

    def best(self, run_id: str) -> Best | None:
        """The run's best trial with its validation interval (and its test score once the run has ended); None before one."""
        return self.run(run_id).best

    def lineage(self, run_id: str, trial_id: str) -> list[TrialDetail]:
        """The trial and its ancestors up to the roots: the trial first, then parents breadth first, each once."""
        found = [self.trial(run_id, trial_id)]
        seen = {found[0].row.trial_id}
        waiting = list(found[0].row.parent_ids)
        while waiting:
            parent = waiting.pop(0)
            if parent in seen:
                continue
            seen.add(parent)
            found.append(self.trial(run_id, parent))
            waiting.extend(found[-1].row.parent_ids)
        return found

    def trials_frame(self, run_id: str) -> pandas.DataFrame:
        """The run's trials as a pandas DataFrame indexed by trial id (needs pandas: ``pip install pandas``).

        Columns: index, parent_ids, status, surface, proposer, hypothesis, params, rung, subset, epochs,
        seeds, val_mean, val_low, val_high, val_n, verdict, decision, failure_label, proposed_at and
        judged_at (UTC timestamps), and ``features.<name>`` for each number of the row's ``features``.
        """
        try:
            import pandas as pd
        except ImportError as e:
            raise ImportError("trials_frame() needs pandas, which is not installed: pip install pandas "
                              "(or research-swarm[pandas]); trials() returns the same rows without it") from e
        records = [trial_record(r) for r in self.trials(run_id)]
        features = sorted({k for rec in records for k in rec if k.startswith("features.")})
        frame = pd.DataFrame(records, columns=TRIAL_COLUMNS + features)
        for column in ("proposed_at", "judged_at"):
            frame[column] = pd.to_datetime(frame[column], unit="ms", utc=True)
        return frame.set_index("trial_id")

    def search(self, text: str, *, run: str | None = None, k: int = 10) -> list[SearchHit]:
        """The ``k`` trials nearest in meaning to ``text`` (of every run, or of ``run``), nearest first."""
        query = {"q": text, "k": str(k), **({"run": run} if run else {})}
        return [SearchHit.from_json(h) for h in self._call("GET", f"/api/search?{urlencode(query)}")]

    # Live.

    def events(self, run: str | None = None, *, timeout: float | None = None) -> EventStream:
        """Follows the dashboard's live messages (of ``run`` only, when given; a run may not have started yet).

        Connected when this returns, so nothing sent after is missed. Iterate it for ``Change`` and
        ``Progress`` messages; it ends when ``timeout`` seconds have passed (None: never) or the
        dashboard closes the stream. Use it in a ``with`` block, or ``close()`` it.
        """
        return EventStream(self, run, timeout)

    # New runs (a dashboard of `research-agent serve`: else DashboardError with Code.CONFLICT).

    def start_run(self, goal: str, **flags: str | int | bool | dict[str, Any]) -> RunTaken:
        """Asks the swarm for a run of ``goal``: checked as ``launch`` checks its flags, then queued.

        ``flags`` are launch's run flags in snake_case: ``time_budget="20m"``, ``max_params=200_000``,
        ``seeds_per_trial=3``, ``from_="model.py"`` with ``class_="Net"`` (paths on the serving machine),
        ``space={"lr": {"low": 1e-4, "high": 1e-2}, "families": ["vgg-cnn"]}`` (launch --space's document), ...
        A goal the swarm cannot run raises DashboardError (``bad_request``) with launch's own line.
        """
        body = {k.rstrip("_"): v for k, v in flags.items()}
        return RunTaken.from_json(self._call("POST", "/api/runs", {"goal": goal, **body}))

    def queue(self) -> Queue:
        return Queue.from_json(self._call("GET", "/api/queue"))

    # Interventions (a swarm must be running the run: else DashboardError with Code.CONFLICT).

    def pause(self, run_id: str, reason: str = "") -> InterventionReply:
        """Nothing new starts; trials in flight go on (the time budget still runs)."""
        return self._intervene(run_id, {"kind": "pause", "reason": reason})

    def resume(self, run_id: str, reason: str = "") -> InterventionReply:
        return self._intervene(run_id, {"kind": "resume", "reason": reason})

    def stop(self, run_id: str, reason: str = "") -> InterventionReply:
        """Trials in flight are cancelled, the best is confirmed on the test split, then the report."""
        return self._intervene(run_id, {"kind": "stop", "reason": reason})

    def cancel_trial(self, run_id: str, trial_id: str, reason: str = "") -> InterventionReply:
        """Cancels one trial not yet evaluated; ``trial_id`` whole or short."""
        return self._intervene(run_id, {"kind": "cancel_trial", "trial_id": trial_id, "reason": reason})

    def propose(self, run_id: str, hypothesis: str, model_config: Any, *, train_config: Any = None,
                parent_ids: list[str] | None = None, reason: str = "") -> InterventionReply:
        """Queues a trial of your own: the planner takes it at its next free slot.

        ``model_config`` (and ``train_config``, laid over the run's probe fidelity) as a dict, or as
        JSON or YAML text; ``parent_ids`` whole or short.
        """
        body: dict[str, Any] = {"kind": "propose", "hypothesis": hypothesis, "model_config": model_config, "reason": reason}
        if train_config is not None:
            body["train_config"] = train_config
        if parent_ids:
            body["parent_ids"] = list(parent_ids)
        return self._intervene(run_id, body)

    def _intervene(self, run_id: str, body: dict[str, Any]) -> InterventionReply:
        return InterventionReply.from_json(self._call("POST", f"/api/runs/{_segment(run_id)}/interventions", body))

    # HTTP.

    def _send(self, method: str, path: str, body: Any = None, accept: str = "application/json") -> tuple[HTTPConnection, socket.socket | None, HTTPResponse]:
        """Sends one request on a new connection; the connection, its socket and the response (headers read)."""
        conn = (HTTPSConnection if self._https else HTTPConnection)(self._host, self._port, timeout=self.timeout)
        headers = {"Accept": accept}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if self.user:
            headers["X-Research-User"] = self.user
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        try:
            conn.request(method, self._prefix + path, body=data, headers=headers)
            sock = conn.sock
            return conn, sock, conn.getresponse()
        except (OSError, HTTPException) as e:
            conn.close()
            raise DashboardError(Code.UNAVAILABLE, f"no answer from {self.url}: {_why(e)}") from e

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        conn, _, res = self._send(method, path, body)
        try:
            raw = res.read()
        except (OSError, HTTPException) as e:
            raise DashboardError(Code.UNAVAILABLE, f"{self.url} stopped answering {method} {path}: {_why(e)}") from e
        finally:
            conn.close()
        if not 200 <= res.status < 300:
            raise _refusal(res.status, raw, res.reason)
        try:
            return json.loads(raw)
        except ValueError:
            raise DashboardError(Code.INTERNAL, f"{self.url} answered {method} {path} with something that is not JSON", res.status) from None


def _why(e: BaseException) -> str:
    return str(e) or type(e).__name__


def _refusal(status: int, raw: bytes, reason: str) -> DashboardError:
    """The error for a reply with a failing status: the dashboard's ``{"error": ...}``, else the reply's text."""
    try:
        message = str(json.loads(raw)["error"])
    except (ValueError, KeyError, TypeError):
        message = raw.decode("utf-8", "replace").strip()[:500] or reason
    return DashboardError(code_of_status(status), message, status)


class EventStream:
    """The dashboard's server-sent events as an iterator of ``Change`` and ``Progress`` (``Client.events``)."""

    def __init__(self, client: Client, run: str | None, timeout: float | None) -> None:
        self._deadline = None if timeout is None else time.monotonic() + timeout
        path = "/api/events" + (f"?{urlencode({'run': run})}" if run else "")
        self._conn, self._sock, self._res = client._send("GET", path, accept="text/event-stream")
        if self._res.status != 200:
            raw = self._res.read()
            self.close()
            raise _refusal(self._res.status, raw, self._res.reason)
        self.closed = False

    def __iter__(self) -> EventStream:
        return self

    def __next__(self) -> LiveMessage:
        data: list[str] = []
        while not self.closed:
            line = self._line()
            if line is None:
                break
            if line == "":
                # A blank line ends a message; a comment (": heartbeat") has no data.
                if data:
                    return live_message(json.loads("\n".join(data)))
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
        self.close()
        raise StopIteration

    def _line(self) -> str | None:
        """The next line without its end, or None once the time is up or the stream has ended."""
        if self._sock is not None:
            remaining = None if self._deadline is None else self._deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return None
            # Between messages the dashboard sends a heartbeat every 15 s.
            self._sock.settimeout(remaining)
        try:
            raw = self._res.readline()
        except (TimeoutError, socket.timeout):
            return None
        except (OSError, HTTPException) as e:
            self.close()
            raise DashboardError(Code.UNAVAILABLE, f"the event stream broke: {_why(e)}") from e
        return raw.decode("utf-8").rstrip("\r\n") if raw else None

    def close(self) -> None:
        self.closed = True
        self._res.close()
        self._conn.close()

    def __enter__(self) -> EventStream:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


#: The columns of ``trials_frame`` (and the keys of ``trial_record``), before the features.
TRIAL_COLUMNS = ["trial_id", "index", "parent_ids", "status", "surface", "proposer", "hypothesis", "params", "latency_ms", "rung", "subset", "epochs",
                 "seeds", "val_mean", "val_low", "val_high", "val_n", "verdict", "decision", "failure_label", "proposed_at", "judged_at"]


def trial_record(r: TrialRow) -> dict[str, Any]:
    """One row of ``trials_frame`` as a plain dict (times in milliseconds since the epoch)."""
    f, v = r.fidelity, r.val
    low, high = v.ci95 if v else (None, None)
    record = {
        "trial_id": r.trial_id, "index": r.index, "parent_ids": r.parent_ids, "status": r.status, "surface": r.surface,
        "proposer": r.proposer, "hypothesis": r.hypothesis, "params": r.params, "latency_ms": r.latency_ms, "rung": f.rung, "subset": f.subset,
        "epochs": f.epochs, "seeds": f.seeds, "val_mean": v.mean if v else None, "val_low": low, "val_high": high,
        "val_n": v.n if v else None, "verdict": r.verdict, "decision": r.decision, "failure_label": r.failure_label,
        "proposed_at": r.proposed_at, "judged_at": r.judged_at,
    }
    return record | {f"features.{k}": x for k, x in sorted(r.features.items())}
