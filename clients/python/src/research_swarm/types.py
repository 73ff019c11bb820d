"""The dashboard's JSON as dataclasses: the types of dashboard/api.ts, fields named as the JSON names them
(test/dashboard/client-types.test.ts checks every class against api.ts, field for field).

One difference: a number of the run's metric is named in the JSON by the metric (``val_accuracy``,
``test_rmse``); here it is the field named by its prefix (``val``, ``test``), and the run's
``objective.metric`` says which metric it is. Values are in the metric's units (an accuracy as a
fraction), ``*_at`` milliseconds since the epoch, ``*_s`` and ``seconds`` seconds.
"""
from __future__ import annotations

import dataclasses
import functools
import types
import typing
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar, Union

T = TypeVar("T", bound="_Json")


def _value(tp: Any, v: Any) -> Any:
    """``v`` (parsed JSON) as the type ``tp`` says: dataclasses, lists, tuples and optionals of them."""
    if v is None:
        return None
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (Union, types.UnionType):
        return _value(next(a for a in args if a is not type(None)), v)
    if origin is list:
        return [_value(args[0], x) for x in v]
    if origin is tuple:
        return tuple(_value(a, x) for a, x in zip(args, v))
    if origin is None and isinstance(tp, type) and issubclass(tp, _Json):
        return tp.from_json(v)
    return v


@functools.cache
def _fields(cls: type) -> dict[str, Any]:
    """A dataclass's fields with their types."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


class _Json:
    """Built from the JSON by its field names; a field the JSON lacks is None."""

    #: Fields named in the JSON by the run's metric: field -> the JSON key's prefix ("val" <- "val_accuracy").
    _metric: ClassVar[dict[str, str]] = {}

    @classmethod
    def from_json(cls: type[T], d: dict[str, Any]) -> T:
        hints = _fields(cls)
        names = hints.keys()
        values = {name: _value(tp, d.get(name)) for name, tp in hints.items() if name not in cls._metric}
        for name, prefix in cls._metric.items():
            values[name] = next((v for k, v in d.items() if k.startswith(prefix) and k not in names), None)
        return cls(**values)


@dataclass(frozen=True)
class Objective(_Json):
    """What a run measures: ``{"metric": "rmse", "label": "RMSE", "higher_is_better": false, "proportion": false}``."""

    metric: str
    label: str
    higher_is_better: bool
    #: A share shown as a percentage (accuracy).
    proportion: bool


@dataclass(frozen=True)
class Interval(_Json):
    """A mean of the run's metric with its 95% interval, over ``n`` seeds of ``examples`` examples each (0: unknown)."""

    mean: float
    ci95: tuple[float, float]
    n: int
    examples: int


@dataclass(frozen=True)
class Best(_Json):
    """A run's best trial: its validation interval and, once the run has ended with one, its test score."""

    _metric: ClassVar[dict[str, str]] = {"test": "test_"}
    trial_id: str
    val: Interval
    #: ``test_<metric>``: the one-time confirmation on the test split; None until the run has ended with one.
    test: float | None


@dataclass(frozen=True)
class RunSummary(_Json):
    """``GET /api/runs``: one run."""

    run_id: str
    goal: str
    dataset: str
    #: In the metric's units; 0 when open-ended.
    target: float
    open_ended: bool
    objective: Objective
    #: running, paused, stopping, goal_achieved, budget_exhausted, stopped, failed, completed, interrupted.
    status: str
    #: Followed on a swarm's bus now.
    live: bool
    trials: int
    judged: int
    in_flight: int
    best: Best | None
    started_at: int
    seconds: float
    time_budget_s: float
    #: A Pareto goal's costs traded off against the metric, in the order written ("params", "latency"); empty for any other goal.
    trade_offs: list[str]
    #: The most milliseconds one example's forward pass may take (batch 1, on the runner's device); None: no limit.
    max_latency_ms: float | None


@dataclass(frozen=True)
class Fidelity(_Json):
    rung: int
    #: Training examples; 0: the whole training split.
    subset: int
    epochs: int
    seeds: int


@dataclass(frozen=True)
class Epoch(_Json):
    """A trial training now: its latest epoch (the lowest seed's) and ``val_<metric>`` after it."""

    _metric: ClassVar[dict[str, str]] = {"val": "val_"}
    epoch: int
    epochs: int
    seconds: float
    val: float | None


@dataclass(frozen=True)
class TrialRow(_Json):
    """One row of a run's trial table."""

    trial_id: str
    #: Position in the order proposed (1-based).
    index: int
    parent_ids: list[str]
    surface: str
    #: The starting point of a run from ``launch --from``: trial 0 and its anchor.
    baseline: bool
    hypothesis: str
    proposer: str
    params: int | None
    #: Milliseconds per example at batch 1 on the device it ran on, the median of its seeds'; None: not timed.
    latency_ms: float | None
    fidelity: Fidelity
    #: proposed, assembled, evaluated, judged, failed.
    status: str
    progress: Epoch | None
    val: Interval | None
    verdict: str | None
    decision: str | None
    failure_label: str | None
    failure_message: str | None
    proposed_at: int
    judged_at: int | None
    #: Config values as numbers (lr, batch_size, layers, width, params, rung, ...).
    features: dict[str, float]


@dataclass(frozen=True)
class BestSoFarPoint(_Json):
    """The best accepted bound after a judged trial: ``best_ci_low`` for a metric to maximise, ``best_ci_high`` to minimise."""

    trial_id: str
    judged: int
    t_s: float
    best_trial_id: str
    best_ci_low: float | None
    best_ci_high: float | None


@dataclass(frozen=True)
class InterventionRow(_Json):
    intervention_id: str
    #: pause, resume, stop, cancel_trial, propose.
    kind: str
    #: ``ui:NAME`` from the dashboard, the user's name from the CLI.
    who: str
    reason: str
    trial_id: str
    at: int
    hypothesis: str
    #: A proposal's trial, once one has taken it.
    taken_by: str | None


@dataclass(frozen=True)
class LlmUse(_Json):
    role: str
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float


@dataclass(frozen=True)
class Suggestion(_Json):
    name: str
    description: str
    #: The trials whose proposal adopted it.
    adopted_by: list[str]


@dataclass(frozen=True)
class Brief(_Json):
    title: str
    insights: list[str]
    suggestions: list[Suggestion]
    #: The planner's request it answers; "" for the run's first.
    request_id: str


@dataclass(frozen=True)
class PairedGain(_Json):
    """best - trial 0 over the seeds both trained with."""

    seeds: list[int]
    baseline_mean: float
    best_mean: float
    gain: float
    ci_95: tuple[float, float]
    p: float


@dataclass(frozen=True)
class PathStep(_Json):
    trial_id: str
    mutation: str
    hypothesis: str
    rung: int
    seeds: int
    val_mean: float | None
    change: float | None
    same_fidelity: bool


@dataclass(frozen=True)
class AgainstStart(_Json):
    """A run from ``launch --from``: its best against the starting point (trial 0), as the report has it."""

    origin: str
    rule: str
    baseline_trial_id: str
    baseline_val_mean: float | None
    baseline_test_mean: float | None
    best_trial_id: str | None
    val: PairedGain | None
    test: PairedGain | None
    #: ``{"field", "from", "to"}`` each.
    recipe_changes: list[dict[str, Any]]
    #: ``{"name", "from", "to"}`` each.
    argument_changes: list[dict[str, Any]]
    model_diff: str
    path: list[PathStep] | None
    #: ``{"trial_id", "mutation"}``.
    best_root: dict[str, str] | None


@dataclass(frozen=True)
class PastTrial(_Json):
    run_id: str
    trial_id: str
    #: How much its dataset is like this run's (1/2 x exp(-distance)); None in runs recorded before weights were.
    weight: float | None


@dataclass(frozen=True)
class PastPrior(_Json):
    """Past runs' results in the surrogate's prior: each weighs 1/2 x exp(-distance of its dataset), each of the run's own 1."""

    #: Proposals the policy or an LLM made with them in the planner's input.
    trials: int
    #: The most past results at once, and their summed weight then.
    observations: int
    weight: float


@dataclass(frozen=True)
class Estimate(_Json):
    """An objective's value for a trial: its mean and interval (the metric's 95% interval, a latency's spread over seeds, a count's own value)."""

    mean: float
    low: float
    high: float


@dataclass(frozen=True)
class FrontAxis(_Json):
    """An axis of a Pareto goal: the run's metric first, then each cost (minimised), by its name for people."""

    name: str
    higher_is_better: bool


@dataclass(frozen=True)
class FrontTrial(_Json):
    trial_id: str
    #: One per axis, in the axes' order.
    values: list[Estimate]
    #: NSGA-II's crowding distance on the front; None for its extremes (infinite).
    crowding: float | None


@dataclass(frozen=True)
class Front(_Json):
    """A Pareto goal's front as the report has it: the accepted rung-0 trials no other dominates (``rule``), best metric first."""

    rule: str
    axes: list[FrontAxis]
    trials: list[FrontTrial]
    #: The balanced trade-off; None with none.
    knee: str | None
    #: The front's trials trained again on the full split: ``{"trial_id", "from", "val", "test", "params", "latency_ms"}`` each, ``val`` and ``test`` the report's stats (mean, std, ci_95, min, max, n) or None.
    trained_long: list[dict[str, Any]]
    #: The report's plot of it, relative to the run's folder.
    plot: str


@dataclass(frozen=True)
class Limits(_Json):
    """A goal's latency limit and what it did: the trials timed within it, those over it (labelled over_limit, never accepted), the best within every limit."""

    max_latency_ms: float
    max_params: int | None
    within: list[str]
    over: list[str]
    best_within: str | None
    #: The latency the limit held the best to: the fastest seed median the run timed for its model.
    best_latency_ms: float | None


@dataclass(frozen=True)
class WarmStartRow(_Json):
    """A trial that starts from a past run's trial (a warm start): its config, or its trained weights; evaluated in this run."""

    trial_id: str
    #: The past trials whose config it took.
    past: list[PastTrial]
    #: What it took: "config" (evaluated here from its own initialisation) or "weights" (their training continued).
    takes: str
    #: Its validation interval here (None until evaluated): no past score counts.
    val: Interval | None
    verdict: str | None


@dataclass(frozen=True)
class RunDetail(RunSummary):
    """``GET /api/runs/:run``: the summary and everything the run page shows."""

    settings: dict[str, Any]
    paused: bool
    #: The run's runner jobs as last recorded ("1 of 2 up, 1 pending (Resources)"); None when its runners are not Slurm jobs.
    runner_jobs: str | None
    trials_table: list[TrialRow]
    best_so_far: list[BestSoFarPoint]
    failures: dict[str, int]
    briefs: list[Brief]
    llm: list[LlmUse]
    interventions: list[InterventionRow]
    #: Why the run ended ("" before).
    reason: str
    #: The trial whose judgement ended the run.
    ended_by: str | None
    report_path: str | None
    against_start: AgainstStart | None
    #: What the run started from in past runs; empty for a cold start.
    warm_start: list[WarmStartRow]
    #: Past runs' results in the planner's surrogate as prior observations; None when it held none.
    past_prior: PastPrior | None
    #: A Pareto goal's front; None for a goal that trades nothing off.
    front: Front | None
    #: What the goal's latency limit did; None for a goal without one.
    limits: Limits | None


@dataclass(frozen=True)
class SeedCurves(_Json):
    """One seed's curves per epoch; ``val_metric`` is the run's metric on the validation split."""

    seed: int
    train_loss: list[float]
    train_accuracy: list[float]
    val_loss: list[float]
    val_accuracy: list[float]
    val_metric: list[float]
    train_metric: list[float]
    lr: list[float]
    metrics: dict[str, float]
    seconds: float


@dataclass(frozen=True)
class LayerSummary(_Json):
    name: str
    type: str
    output_shape: list[int]
    params: int


@dataclass(frozen=True)
class ModelSummary(_Json):
    total_params: int
    flops: int
    size_mb: float
    layers: list[LayerSummary]


@dataclass(frozen=True)
class ClassScores(_Json):
    class_index: int
    precision: float
    recall: float
    f1: float
    support: int


@dataclass(frozen=True)
class Analysis(_Json):
    overfitting: str
    convergence: str
    weak_classes: list[int]
    notes: list[str]


@dataclass(frozen=True)
class Failure(_Json):
    label: str
    message: str
    traceback: str


@dataclass(frozen=True)
class SeedScore(_Json):
    """One seed's test score: ``{"seed": 0, "<metric>": 0.91}``."""

    _metric: ClassVar[dict[str, str]] = {"value": ""}
    seed: int
    value: float | None


@dataclass(frozen=True)
class InferenceTiming(_Json):
    """Milliseconds per forward pass of a batch of ``batch`` examples: the median over ``seeds`` seeds of each seed's median, the largest 90th percentile."""

    batch: int
    median_ms: float
    p90_ms: float
    #: On a GPU the allocator's largest peak over the seeds (MiB, weights included); None on a CPU.
    peak_memory_mb: float | None
    seeds: int


@dataclass(frozen=True)
class InferenceCost(_Json):
    """What the model costs to run on the device it trained on (``device``: "cpu", "cuda"), timed in the test confirmation."""

    device: str
    batch_1: InferenceTiming | None
    batch_eval: InferenceTiming | None
    #: A model that trained on a GPU: one example on the host's CPU; None otherwise.
    host_cpu_batch_1: InferenceTiming | None
    #: One example's forward pass: 2 x the multiply-accumulates of its conv, linear and attention layers.
    flops_per_sample: int


@dataclass(frozen=True)
class HeldOutTest(_Json):
    """The run's one confirmation on the test split (its best trial's): the seeds' mean, each seed, their ensemble, and what the model costs to run."""

    per_seed: Interval | None
    seeds: list[SeedScore]
    #: None with one seed.
    ensemble: Interval | None
    #: None for a run whose confirmation did not time it.
    inference: InferenceCost | None


@dataclass(frozen=True)
class TrialDetail(_Json):
    """``GET /api/runs/:run/trials/:trial``."""

    run_id: str
    objective: Objective
    row: TrialRow
    rationale: str
    adopted_concepts: list[str]
    #: Past trials (of other runs) whose configs it starts from: a warm start, evaluated in this run.
    informed_by: list[str]
    #: As their author wrote them (None when not JSON).
    model_config: Any
    train_config: Any
    #: A unified diff of both configs against the first parent's ("" without a parent).
    config_diff: str
    code: str
    code_diff: str
    summary: ModelSummary | None
    narrative: str
    seeds: list[SeedCurves]
    class_names: list[str]
    #: Summed over seeds: rows are true classes, columns predicted.
    confusion_matrix: list[list[int]]
    per_class: list[ClassScores]
    analysis: Analysis | None
    judged_reason: str
    failure: Failure | None
    #: The run's best trial only, once the run has finished.
    test: HeldOutTest | None
    children: list[str]


@dataclass(frozen=True)
class SearchHit(_Json):
    """``GET /api/search``: a trial like the text, from any run; ``val`` is its validation mean (None when not measured)."""

    _metric: ClassVar[dict[str, str]] = {"val": "val_"}
    run_id: str
    objective: Objective
    trial_id: str
    #: Cosine distance: 0 is the same direction, lower is closer.
    distance: float
    hypothesis: str
    failure_label: str | None
    val: float | None


@dataclass(frozen=True)
class InterventionReply(_Json):
    """An intervention published on the swarm's bus (a refusal raises DashboardError instead)."""

    intervention_id: str
    summary: str


@dataclass(frozen=True)
class RunTaken(_Json):
    """``POST /api/runs``: a goal a ``research-agent serve`` swarm took (a refusal raises DashboardError)."""

    run_id: str
    #: 0: started now; N: the runs that start before it, itself included.
    position: int


@dataclass(frozen=True)
class QueuedRun(_Json):
    run_id: str
    goal: str
    #: Who asked: ``ui:NAME`` from the client's ``user``.
    who: str
    submitted_at: int


@dataclass(frozen=True)
class Queue(_Json):
    """``GET /api/queue``: whether the dashboard takes new runs (``research-agent serve``), and those it took that go or wait."""

    accepting: bool
    max_runs: int
    running: list[QueuedRun]
    queued: list[QueuedRun]


@dataclass(frozen=True)
class Change(_Json):
    """An event was applied to a run (``kind``: the event's, e.g. ``trialJudged``), or its fold was replaced
    (``caught_up``, ``bus_lost``): fetch again what shows the run."""

    type: str
    run_id: str
    trial_id: str
    kind: str


@dataclass(frozen=True)
class Progress(_Json):
    """An epoch ended in a trial training now (live only, never stored)."""

    _metric: ClassVar[dict[str, str]] = {"val": "val_"}
    type: str
    run_id: str
    trial_id: str
    seed: int
    epoch: int
    epochs: int
    seconds: float
    #: A classification's; 0 for a metric not measured in training.
    train_accuracy: float
    val: float | None


LiveMessage = Union[Change, Progress]


def live_message(d: dict[str, Any]) -> LiveMessage:
    return Progress.from_json(d) if d.get("type") == "progress" else Change.from_json(d)
