# Generated from dashboard/api.ts by `npx tsx scripts/gen-python-types.ts` (npm run gen): do not edit.
# test/dashboard/client-types.test.ts fails while this file is not what the script writes.
"""The dashboard's JSON as dataclasses: the types of dashboard/api.ts, fields named as the JSON names them.

One difference: a number of the run's metric is named in the JSON by the metric (``val_accuracy``,
``test_rmse``); here it is the field named by its prefix (``val``, ``test``), and the run's
``objective.metric`` says which metric it is. Values are in the metric's units (an accuracy as a
fraction), ``*_at`` milliseconds since the epoch, ``*_s`` and ``seconds`` seconds.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Union

from ._json import JsonRecord


@dataclass(frozen=True)
class Objective(JsonRecord):
    """The run's objective (core/objective.ts), for whoever reads the JSON: its metric, its name for people, its direction."""

    #: One of: accuracy, rmse, mae, r2, bits_per_byte.
    metric: str
    #: "accuracy", "RMSE".
    label: str
    higher_is_better: bool
    #: A share shown as a percentage (accuracy); any other metric is in its own units.
    proportion: bool


@dataclass(frozen=True)
class Interval(JsonRecord):
    """95% interval of a mean: the run's metric across seeds and examples (gpu-runner/stats.ts)."""

    mean: float
    ci95: tuple[float, float]
    #: Seeds behind it.
    n: int
    #: Examples each seed was scored on (0: unknown); with ``n``, what the interval counts.
    examples: int


@dataclass(frozen=True)
class Best(JsonRecord):
    """The run's best trial: its validation interval and ``test_<metric>``, its one-time test confirmation (None until the run ends with one)."""

    _metric: ClassVar[dict[str, str]] = {"test": "test_"}
    trial_id: str
    val: Interval
    #: ``test_<metric>`` in the JSON.
    test: float | None


@dataclass(frozen=True)
class RunSummary(JsonRecord):
    """``GET /api/runs``: one run."""

    run_id: str
    goal: str
    dataset: str
    #: In the metric's units; 0 when open-ended.
    target: float
    open_ended: bool
    objective: Objective
    #: One of: running, paused, stopping, goal_achieved, budget_exhausted, stopped, failed, completed, interrupted.
    status: str
    #: Followed on the bus now (events arrive live).
    live: bool
    trials: int
    judged: int
    in_flight: int
    #: The run's best trial: its validation interval and ``test_<metric>``, its one-time test confirmation (None until the run ends with one).
    best: Best | None
    started_at: int
    #: Wall seconds so far (running) or in all (finished).
    seconds: float
    time_budget_s: float
    #: A Pareto goal's costs traded off against the metric, in the order written ("params", "latency": core/objective.ts COSTS); [] for any other goal.
    trade_offs: list[str]
    #: The most milliseconds one example's forward pass may take (batch 1, on the runner's device); None: no limit.
    max_latency_ms: float | None


@dataclass(frozen=True)
class Fidelity(JsonRecord):
    rung: int
    #: Training examples; 0: the whole training split.
    subset: int
    epochs: int
    seeds: int


@dataclass(frozen=True)
class Epoch(JsonRecord):
    """One epoch of a trial training now: ``val_<metric>``, the validation value after it."""

    _metric: ClassVar[dict[str, str]] = {"val": "val_"}
    epoch: int
    epochs: int
    seconds: float
    #: ``val_<metric>`` in the JSON.
    val: float | None


@dataclass(frozen=True)
class TrialRow(JsonRecord):
    """One row of the run's trial table."""

    trial_id: str
    #: Position in the order proposed (1-based).
    index: int
    parent_ids: list[str]
    surface: str
    #: The run's starting point (launch --from): trial 0, and trial 1, its rung-0 anchor.
    baseline: bool
    hypothesis: str
    proposer: str
    params: int | None
    #: Milliseconds per example at batch 1 on the device it ran on, the median of its seeds' (swarm/front.ts latencyOf); None: not timed.
    latency_ms: float | None
    fidelity: Fidelity
    #: proposed | assembled | evaluated | judged | failed (trial_status).
    status: str
    #: Latest per-epoch progress while it trains (seed 0), from the live feed, with ``val_<metric>``; None otherwise.
    progress: Epoch | None
    val: Interval | None
    verdict: str | None
    decision: str | None
    failure_label: str | None
    failure_message: str | None
    proposed_at: int
    judged_at: int | None
    #: Config values for parallel coordinates: numbers only (depth, width, lr, batch_size, ...).
    features: dict[str, float]


@dataclass(frozen=True)
class BestSoFarPoint(JsonRecord):
    """The best accepted bound after each judged trial, at the pessimistic end of its 95% interval: ``best_ci_low`` for a metric to maximise, ``best_ci_high`` for one to minimise."""

    trial_id: str
    #: Judged trials so far (1-based).
    judged: int
    #: Seconds since the run started.
    t_s: float
    best_ci_low: float | None
    best_ci_high: float | None
    best_trial_id: str


@dataclass(frozen=True)
class InterventionRow(JsonRecord):
    intervention_id: str
    #: pause, resume, stop, cancel_trial or propose.
    kind: str
    #: ``ui:NAME`` from the dashboard, the user's name from the CLI.
    who: str
    reason: str
    trial_id: str
    at: int
    hypothesis: str
    #: propose: the trial that took it, once one has.
    taken_by: str | None


@dataclass(frozen=True)
class LlmUse(JsonRecord):
    role: str
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float


@dataclass(frozen=True)
class Suggestion(JsonRecord):
    name: str
    description: str
    #: The trials whose proposal adopted it.
    adopted_by: list[str]


@dataclass(frozen=True)
class Brief(JsonRecord):
    title: str
    insights: list[str]
    suggestions: list[Suggestion]
    #: The planner's request it answers; "" for the run's first.
    request_id: str


@dataclass(frozen=True)
class PairedGain(JsonRecord):
    """best - trial 0 over the seeds both trained with (Student's t on the per-seed differences)."""

    seeds: list[int]
    baseline_mean: float
    best_mean: float
    gain: float
    ci_95: tuple[float, float]
    p: float


@dataclass(frozen=True)
class PathStep(JsonRecord):
    """The best trial's parents from trial 0, each step's measured change; None when it does not descend from trial 0."""

    trial_id: str
    mutation: str
    hypothesis: str
    rung: int
    seeds: int
    val_mean: float | None
    change: float | None
    same_fidelity: bool


@dataclass(frozen=True)
class AgainstStart(JsonRecord):
    """The best model against the run's starting point (launch --from), by the report's rule (lineage-store/baseline.ts)."""

    origin: str
    rule: str
    baseline_trial_id: str
    baseline_val_mean: float | None
    baseline_test_mean: float | None
    best_trial_id: str | None
    val: PairedGain | None
    test: PairedGain | None
    #: Keys: ``field``, ``from``, ``to``.
    recipe_changes: list[dict[str, Any]]
    #: Keys: ``name``, ``from``, ``to``.
    argument_changes: list[dict[str, Any]]
    model_diff: str
    #: The best trial's parents from trial 0, each step's measured change; None when it does not descend from trial 0.
    path: list[PathStep] | None
    #: Keys: ``trial_id``, ``mutation``.
    best_root: dict[str, str] | None


@dataclass(frozen=True)
class PastTrial(JsonRecord):
    run_id: str
    trial_id: str
    #: How much its dataset is like this run's (1/2 x exp(-distance)); None in runs recorded before weights were.
    weight: float | None


@dataclass(frozen=True)
class PastPrior(JsonRecord):
    """Past runs' results in the surrogate's prior: each weighs 1/2 x exp(-distance of its dataset), each of this run's own 1."""

    #: Proposals the policy or an LLM made with them in the planner's input.
    trials: int
    #: The most past results at once, and their summed weight then.
    observations: int
    weight: float


@dataclass(frozen=True)
class Estimate(JsonRecord):
    """An objective's value for a trial: its mean and interval (the metric's 95% interval, a latency's spread over seeds, a count's own value)."""

    mean: float
    low: float
    high: float


@dataclass(frozen=True)
class FrontAxis(JsonRecord):
    """One axis of a Pareto goal: the run's metric first, then each cost (minimised), by its name for people ("parameters", "latency per example")."""

    name: str
    higher_is_better: bool


@dataclass(frozen=True)
class FrontTrial(JsonRecord):
    trial_id: str
    #: One per axis, in the axes' order.
    values: list[Estimate]
    #: NSGA-II's crowding distance on the front; None for its extremes (infinite).
    crowding: float | None


@dataclass(frozen=True)
class Front(JsonRecord):
    """The trials no other accepted rung-0 trial dominates (swarm/front.ts FRONT_RULE), best metric first."""

    #: The rule in words.
    rule: str
    axes: list[FrontAxis]
    trials: list[FrontTrial]
    #: The balanced trade-off (core/pareto.ts knee); None with none.
    knee: str | None
    #: The front's trials trained again on the full split with the run's seeds: each one's trial, the front trial it trains (``from``), its validation stats, its one-time test stats (None before the run's end, or when not measured; stats as the report's: mean, std, ci_95, min, max, n), its parameters and latency, and ``on_front``: no other long training dominates it (the claims' own front). Keys: ``trial_id``, ``from``, ``val``, ``test``, ``params``, ``latency_ms``, ``on_front``.
    trained_long: list[dict[str, Any]]
    #: The report's plot of it, relative to the run's folder.
    plot: str


@dataclass(frozen=True)
class Limits(JsonRecord):
    """A goal's latency limit and what it did: the trials timed within it, those over it (labelled over_limit, never accepted), and the best within every limit."""

    max_latency_ms: float
    max_params: int | None
    within: list[str]
    over: list[str]
    best_within: str | None
    #: The latency the limit held the best to: the fastest seed median the run timed for its model (swarm/front.ts limitLatencyMs).
    best_latency_ms: float | None


@dataclass(frozen=True)
class WarmStartRow(JsonRecord):
    """A trial of this run whose config is a past run's trial's, evaluated again here (agents/planner/policies/builtin.ts, warm starts)."""

    trial_id: str
    #: The past trials whose config it took, each with its run.
    past: list[PastTrial]
    #: What it took: their config, evaluated here from its own initialisation, or their trained weights, whose training it continued. One of: config, weights.
    takes: str
    #: Its validation interval here, in this run, once evaluated: no past score counts.
    val: Interval | None
    verdict: str | None


@dataclass(frozen=True)
class RunDetail(RunSummary):
    """``GET /api/runs/:run``: the summary and everything the run page shows."""

    settings: dict[str, Any]
    paused: bool
    #: The run's runner jobs as last recorded (launch --runners slurm), as text: "1 of 2 up, 1 pending (Resources)"; None when its runners are not jobs.
    runner_jobs: str | None
    trials_table: list[TrialRow]
    best_so_far: list[BestSoFarPoint]
    failures: dict[str, int]
    briefs: list[Brief]
    llm: list[LlmUse]
    interventions: list[InterventionRow]
    #: Why the run ended, when it has: the run's own words, without the verdict of the trial judged last (ended_by).
    reason: str
    #: The trial whose judgement ended the run; its outcome is that trial's, not the run's.
    ended_by: str | None
    report_path: str | None
    #: None for a run started from the swarm's templates.
    against_start: AgainstStart | None
    #: What the run started from in past runs: its trials whose configs came from there (a warm start), in the order proposed; empty for a cold start.
    warm_start: list[WarmStartRow]
    #: The results of past runs the planner's surrogate held as prior observations; None when it held none.
    past_prior: PastPrior | None
    #: A Pareto goal's front, as the report's JSON has it (lineage-store/report.ts frontJson); None for a goal that trades nothing off.
    front: Front | None
    #: What the goal's latency limit did; None for a goal without one.
    limits: Limits | None
    #: What the run found so far and the experiment each finding suggests, as the report's Next steps give them (lineage-store/report-findings.ts findingsOf). Keys: ``kind``, ``finding``, ``next``.
    findings: list[dict[str, str]]


@dataclass(frozen=True)
class SeedCurves(JsonRecord):
    """One seed's curves per epoch."""

    seed: int
    train_loss: list[float]
    train_accuracy: list[float]
    val_loss: list[float]
    val_accuracy: list[float]
    #: The run's metric per epoch on the validation split, and on the training split where the runner measures it there ([] otherwise).
    val_metric: list[float]
    train_metric: list[float]
    lr: list[float]
    metrics: dict[str, float]
    seconds: float


@dataclass(frozen=True)
class LayerSummary(JsonRecord):
    name: str
    type: str
    output_shape: list[int]
    params: int


@dataclass(frozen=True)
class ModelSummary(JsonRecord):
    total_params: int
    flops: int
    size_mb: float
    layers: list[LayerSummary]


@dataclass(frozen=True)
class ClassScores(JsonRecord):
    class_index: int
    precision: float
    recall: float
    f1: float
    support: int


@dataclass(frozen=True)
class Analysis(JsonRecord):
    overfitting: str
    convergence: str
    weak_classes: list[int]
    notes: list[str]


@dataclass(frozen=True)
class Failure(JsonRecord):
    label: str
    message: str
    traceback: str


@dataclass(frozen=True)
class SeedScore(JsonRecord):
    """Each seed's under the metric's name: ``{ seed, accuracy }``, ``{ seed, rmse }``."""

    _metric: ClassVar[dict[str, str]] = {"value": ""}
    seed: int
    #: ``<metric>`` in the JSON.
    value: float | None


@dataclass(frozen=True)
class InferenceTiming(JsonRecord):
    """Milliseconds per forward pass of a batch: the median over seeds of each seed's median, the largest 90th percentile; on a GPU the largest allocator peak (MiB), else None."""

    batch: int
    median_ms: float
    p90_ms: float
    #: The largest allocator peak over the seeds, weights included (MiB); None on a CPU.
    peak_memory_mb: float | None
    seeds: int


@dataclass(frozen=True)
class InferenceCost(JsonRecord):
    """What a model costs to run on the device it trained on (gpu-runner's measure_inference), in the report and the dashboard."""

    #: Where it was timed: "cpu", "cuda".
    device: str
    batch_1: InferenceTiming | None
    batch_eval: InferenceTiming | None
    #: A model that trained on a GPU: one example on the host's CPU; None otherwise.
    host_cpu_batch_1: InferenceTiming | None
    #: One example's forward pass: 2 x the multiply-accumulates of its conv, linear and attention layers.
    flops_per_sample: int


@dataclass(frozen=True)
class HeldOutTest(JsonRecord):
    """The run's metric on the test split for one trial's seed models: each alone, and the ensemble of their predictions."""

    #: The seeds' mean, with its 95% interval.
    per_seed: Interval | None
    #: Each seed's under the metric's name: ``{ seed, accuracy }``, ``{ seed, rmse }``.
    seeds: list[SeedScore]
    #: The ensemble of the seeds' predictions; None with one seed.
    ensemble: Interval | None
    #: What the model costs to run on the device it trained on, timed in the confirmation; None when not measured.
    inference: InferenceCost | None


@dataclass(frozen=True)
class TrialDetail(JsonRecord):
    """``GET /api/runs/:run/trials/:trial``."""

    run_id: str
    objective: Objective
    row: TrialRow
    rationale: str
    adopted_concepts: list[str]
    #: Past trials (of other runs) whose configs it starts from: a warm start, evaluated in this run.
    informed_by: list[str]
    #: The model's config as its author wrote it (None when not JSON).
    model_config: Any
    #: The training config as its author wrote it (None when not JSON).
    train_config: Any
    #: Unified diff of the configs (pretty JSON) against the first parent's; "" without a parent.
    config_diff: str
    code: str
    #: Unified diff of the code against the first parent's (the coder's).
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
    #: The run's one confirmation on the held-out test split: its best trial's, once the run has finished.
    test: HeldOutTest | None
    children: list[str]


@dataclass(frozen=True)
class SearchHit(JsonRecord):
    """``GET /api/search``: a trial like the text, from any run, with its run's objective and ``val_<metric>``, its validation mean (None when not measured)."""

    _metric: ClassVar[dict[str, str]] = {"val": "val_"}
    run_id: str
    objective: Objective
    trial_id: str
    #: Cosine distance: 0 is the same direction, lower is closer.
    distance: float
    hypothesis: str
    failure_label: str | None
    #: ``val_<metric>`` in the JSON.
    val: float | None


@dataclass(frozen=True)
class InterventionReply(JsonRecord):
    """``POST /api/runs/:run/interventions``: an intervention published on the swarm's bus. A refusal raises DashboardError instead."""

    intervention_id: str
    summary: str


@dataclass(frozen=True)
class RunTaken(JsonRecord):
    """Accepted: started now (position 0) or queued behind others; refused: launch's own one line. A refusal raises DashboardError instead."""

    run_id: str
    #: 0: started now; N: the runs that start before it, itself included.
    position: int


@dataclass(frozen=True)
class QueuedRun(JsonRecord):
    run_id: str
    goal: str
    #: Who asked (the X-Research-User header, else the server's user).
    who: str
    submitted_at: int


@dataclass(frozen=True)
class Queue(JsonRecord):
    """GET /api/queue: whether this dashboard takes new runs, and the runs it took that are going or waiting."""

    accepting: bool
    #: Runs side by side at most.
    max_runs: int
    running: list[QueuedRun]
    queued: list[QueuedRun]


@dataclass(frozen=True)
class Change(JsonRecord):
    """An event was applied to a run (``kind``: the event's, e.g. ``trialJudged``), or its fold was replaced (``caught_up``, ``bus_lost``): fetch again what shows the run."""

    type: str
    run_id: str
    trial_id: str
    kind: str


@dataclass(frozen=True)
class Progress(JsonRecord):
    """An epoch ended in a trial training now (live only, never stored)."""

    _metric: ClassVar[dict[str, str]] = {"val": "val_"}
    type: str
    run_id: str
    trial_id: str
    seed: int
    #: A classification's; 0 for a metric not measured in training.
    train_accuracy: float
    epoch: int
    epochs: int
    seconds: float
    #: ``val_<metric>`` in the JSON.
    val: float | None


LiveMessage = Union[Change, Progress]


def live_message(d: dict[str, Any]) -> LiveMessage:
    return {"change": Change, "progress": Progress}.get(d.get("type"), Change).from_json(d)
