"""The client's one exception: a closed set of codes and the dashboard's own message."""
from __future__ import annotations

from enum import Enum


class Code(str, Enum):
    """Why a call failed; each HTTP status the dashboard answers with maps to one code."""

    #: 400 (also 405, 413, 415): the request was refused as written: a bad ``k``, a config
    #: that does not validate, an intervention the run's state does not allow ("already paused").
    BAD_REQUEST = "bad_request"
    #: 401: the dashboard listens beyond loopback and the token is missing or wrong.
    UNAUTHORIZED = "unauthorized"
    #: 403: a dashboard without a token answers only requests addressed to localhost.
    FORBIDDEN = "forbidden"
    #: 404: no such run or trial in the workspace.
    NOT_FOUND = "not_found"
    #: 409: the run cannot be acted on now: no swarm runs for the workspace, or the run is not in its stream.
    CONFLICT = "conflict"
    #: The dashboard could not be reached or did not answer in time (also 502, 503, 504).
    UNAVAILABLE = "unavailable"
    #: 500, or a reply this client cannot read.
    INTERNAL = "internal"


_BY_STATUS = {400: Code.BAD_REQUEST, 401: Code.UNAUTHORIZED, 403: Code.FORBIDDEN, 404: Code.NOT_FOUND, 405: Code.BAD_REQUEST,
              409: Code.CONFLICT, 413: Code.BAD_REQUEST, 415: Code.BAD_REQUEST, 502: Code.UNAVAILABLE, 503: Code.UNAVAILABLE,
              504: Code.UNAVAILABLE}


def code_of_status(status: int) -> Code:
    """The code for an HTTP status: as listed, else any other 4xx is a bad request and anything else internal."""
    return _BY_STATUS.get(status, Code.BAD_REQUEST if 400 <= status < 500 else Code.INTERNAL)


class DashboardError(Exception):
    """A call to the dashboard (or a read of a workspace on disk) failed: ``code`` says why, ``message``
    is the dashboard's one line (or the client's, when it got no answer), ``status`` the HTTP status
    (None without one)."""

    def __init__(self, code: Code, message: str, status: int | None = None) -> None:
        super().__init__(f"[{code.value}] {message}")
        self.code = code
        self.message = message
        self.status = status
