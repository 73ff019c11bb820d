"""A typed client for the research swarm's dashboard API (docs/DASHBOARD.md).

    from research_swarm import Client
    client = Client("http://127.0.0.1:8470/")      # the URL `research-agent ui` prints, ?token= and all
    run = client.runs()[0]
    client.best(run.run_id)

A finished workspace reads offline, with no dashboard: ``open_workspace("workspace")`` (workspace.py).
"""
from .client import DEFAULT_URL, Client, EventStream, trial_record
from .errors import Code, DashboardError
from .types import (AgainstStart, Analysis, Best, BestSoFarPoint, Brief, Change, ClassScores, Epoch, Estimate, Failure, Fidelity, Front,
                    FrontAxis, FrontTrial, HeldOutTest, InterventionReply, InterventionRow, Interval, LayerSummary, Limits, LiveMessage, LlmUse,
                    ModelSummary, Objective, PairedGain, PastTrial, PathStep, Progress, Queue, QueuedRun, RunDetail, RunSummary, RunTaken, SearchHit, SeedCurves, SeedScore, Suggestion,
                    TrialDetail, TrialRow, WarmStartRow)
from .workspace import Workspace, open_workspace

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_URL", "Client", "EventStream", "trial_record", "Code", "DashboardError", "AgainstStart", "Analysis", "Best", "BestSoFarPoint",
    "Brief", "Change", "ClassScores", "Epoch", "Estimate", "Failure", "Fidelity", "Front", "FrontAxis", "FrontTrial", "HeldOutTest",
    "InterventionReply", "InterventionRow", "Interval", "LayerSummary", "Limits", "LiveMessage", "LlmUse", "ModelSummary", "Objective", "PairedGain", "PastTrial", "PathStep", "Progress", "Queue", "QueuedRun", "RunDetail", "RunSummary", "RunTaken",
    "SearchHit", "SeedCurves", "SeedScore", "Suggestion", "TrialDetail", "TrialRow", "WarmStartRow", "Workspace", "open_workspace",
]
