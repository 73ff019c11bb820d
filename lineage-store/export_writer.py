"""Writes a research-swarm export document with the trackers' own libraries.

`research-agent export` (cli/verbs/export.ts) runs it in .venv-export with the document
(lineage-store/export.ts: runs, their trials, each seed's per-epoch curves) as JSON on stdin.
It writes one format, prints one JSON line per run written on stdout, and on failure exits 2
with its verdict as the last line of stderr: "export_writer: LABEL: message", LABEL from the
swarm's failure labels (invalid_config, runner_unavailable, crash).

The document holds every number; this script only maps names. What a person sees:
- TensorBoard: DEST/RUN/ (the report, the hparams experiment), DEST/RUN/TRIAL/ (the trial's
  hparams session, its score, its hypothesis; the best trial's confusion matrix),
  DEST/RUN/TRIAL/seed-N/ (per-epoch curves, step = epoch).
- MLflow: experiment PROJECT; a parent run per research run, a child per trial.
- W&B: offline runs in DEST/wandb/ (project PROJECT, group RUN), one per trial and one for
  the research run, for `wandb sync`.
A run exported again replaces its earlier export; a run is staged first and moved into place
whole, or (MLflow) its new runs are deleted again when one fails, so no half of a run stays.
With --follow (TensorBoard only, `launch --export`), stdin is a JSON line per judged trial and a
last line with the whole run; each trial is written once, as it comes (follow_tensorboard).
"""

import argparse
import json
import os
import shutil
import signal
import struct
import sys
import tempfile
import traceback
import zlib

KIND = "research-swarm.export"
VERSION = 1
# MLflow's limits on one value (mlflow.utils.validation): longer text is cut, not refused.
MLFLOW_PARAM_MAX = 6000
MLFLOW_TAG_MAX = 5000
# log_batch takes at most this many of each in one call.
MLFLOW_BATCH = {"metrics": 1000, "params": 100}


class ExportError(Exception):
    """A failure with its label (core/failure.ts's closed set), said in one line."""

    def __init__(self, label, message):
        super().__init__(message)
        self.label = label


# ---------- shared ----------


def is_uri(dest):
    head, sep, _ = dest.partition("://")
    return bool(sep) and head.replace("+", "").replace(".", "").replace("-", "").isalnum()


def wall(ms, fallback):
    """Seconds since the epoch for an event stamped `ms` (the document's), else `fallback`."""
    return ms / 1000.0 if ms else fallback


def trial_time(run, trial):
    """When the trial's numbers were stored: its last event, else its first, else the run's start."""
    return trial.get("ended_at_ms") or trial.get("started_at_ms") or run.get("started_at_ms") or 0


def epoch_rows(seeds):
    """Per epoch (from 1), every seed's value of every curve, keyed "seed_S/NAME": a per-seed key
    under its seed, since a file store keeps "NAME" (the mean over seeds) as a file beside it."""
    rows = {}
    for s in seeds:
        for name, values in s["curves"].items():
            for k, v in enumerate(values):
                rows.setdefault(k + 1, {})[f"seed_{s['seed']}/{name}"] = v
    return [(epoch, rows[epoch]) for epoch in sorted(rows)]


def png(pixels):
    """A PNG of rows of (r, g, b) pixels: zlib is all it takes, and no image library is needed."""
    height, width = len(pixels), len(pixels[0])
    raw = b"".join(b"\x00" + bytes(c for px in row for c in px) for row in pixels)

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def confusion_png(counts, size=320):
    """A heat map of a confusion matrix, each row shaded by its share of the true class (recall on
    the diagonal), white to dark blue, with a light line between cells."""
    n = len(counts)
    cell = max(4, size // max(n, 1))
    pixels = []
    for i in range(n):
        total = sum(counts[i]) or 1
        shades = []
        for j in range(n):
            share = counts[i][j] / total
            shades.append((round(255 - 247 * share), round(255 - 207 * share), round(255 - 148 * share)))
        for y in range(cell):
            row = []
            for shade in shades:
                row.extend([(224, 224, 224)] + [shade if y else (224, 224, 224)] * (cell - 1))
            pixels.append(row)
    return png(pixels)


def confusion_markdown(confusion):
    counts, names = confusion["counts"], confusion["class_names"]
    label = [names[i] if i < len(names) and names[i] else str(i) for i in range(len(counts))]
    lines = [
        f"Validation split, the counts of its {confusion['seeds']} seeds added; rows: true class, columns: predicted.",
        "",
        "| true \\ predicted | " + " | ".join(label) + " |",
        "|---" * (len(label) + 1) + "|",
    ]
    lines += [f"| {label[i]} | " + " | ".join(str(c) for c in row) + " |" for i, row in enumerate(counts)]
    return "\n".join(lines) + "\n"


def replace_dir(stage, final):
    """Moves a finished staging folder to `final`, replacing what an earlier export left there."""
    old = None
    if os.path.lexists(final):
        old = f"{final}.old-{os.getpid()}"
        os.rename(final, old)
    os.rename(stage, final)
    if old:
        shutil.rmtree(old, ignore_errors=True)


def local_dir(dest):
    try:
        os.makedirs(dest, exist_ok=True)
    except OSError as e:
        raise ExportError("invalid_config", f"cannot make {dest}: {e.strerror}") from e
    return os.path.abspath(dest)


# ---------- TensorBoard ----------


class TensorBoard:
    """TensorBoard's own event-file writer and summary protos (no TensorFlow needed): the root of a
    run (its report, its hparams experiment), a trial's folder (its hparams session, score,
    hypothesis, and for the best its confusion matrix) and each seed's folder (its curves)."""

    def __init__(self):
        from tensorboard.compat.proto.event_pb2 import Event
        from tensorboard.compat.proto.summary_pb2 import Summary
        from tensorboard.plugins.hparams import summary_v2 as hp
        from tensorboard.plugins.text.summary_v2 import text_pb
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        self.Event, self.Summary, self.hp, self.text_pb, self.EventFileWriter = Event, Summary, hp, text_pb, EventFileWriter

    def file(self, logdir):
        """A new event file in `logdir`; TensorBoard reads every file of a folder as one run."""
        tb = self

        class Writer:
            def __init__(self):
                self.file = tb.EventFileWriter(logdir, max_queue_size=1000, flush_secs=3600)

            def summary(self, summary, step, wall_time):
                self.file.add_event(tb.Event(summary=summary, step=step, wall_time=wall_time))

            def scalar(self, tag, value, step, wall_time):
                self.summary(tb.Summary(value=[tb.Summary.Value(tag=tag, simple_value=value)]), step, wall_time)

            def text(self, tag, markdown, wall_time):
                self.summary(tb.text_pb(tag, markdown), 0, wall_time)

            def close(self):
                self.file.close()

        return Writer()

    def root(self, folder, run):
        start = wall(run.get("started_at_ms"), 0.0)
        keys = sorted({k for t in run["trials"] for k in t["params"]})
        w = self.file(folder)
        w.summary(self.hp.hparams_config_pb([self.hp.HParam(k) for k in keys], [self.hp.Metric("score"), self.hp.Metric(f"val_{run['metric']}")], time_created_secs=start), 0, start)
        w.text("report", run["report_markdown"], start)
        w.close()

    def trial(self, folder, run, t):
        at = wall(trial_time(run, t), wall(run.get("started_at_ms"), 0.0))
        metric = f"val_{run['metric']}"
        w = self.file(folder)
        w.summary(self.hp.hparams_pb(t["params"], trial_id=t["trial_id"], start_time_secs=wall(t.get("started_at_ms"), at)), 0, at)
        if t["score"] is not None:
            w.scalar("score", t["score"], 0, at)
        if metric in t["metrics"]:
            w.scalar(metric, t["metrics"][metric], 0, at)
        if t.get("latency_ms") is not None:
            w.scalar("latency_ms", t["latency_ms"], 0, at)
        w.text("hypothesis", t["hypothesis_markdown"] or t["hypothesis"], at)
        w.close()
        self.confusion(folder, run, t)
        for s in t["seeds"]:
            w = self.file(os.path.join(folder, f"seed-{s['seed']}"))
            for name, values in s["curves"].items():
                for k, v in enumerate(values):
                    w.scalar(name, v, k + 1, at)
            w.close()

    def confusion(self, folder, run, t):
        """The best trial's confusion matrix as an image, and its counts as text under a tag of
        their own (a run's tag belongs to one plugin)."""
        if not t["confusion"]:
            return
        at = wall(trial_time(run, t), 0.0)
        image = confusion_png(t["confusion"]["counts"])
        width, height = struct.unpack(">II", image[16:24])
        w = self.file(folder)
        w.summary(self.Summary(value=[self.Summary.Value(tag="confusion_matrix", image=self.Summary.Image(height=height, width=width, colorspace=3, encoded_image_string=image))]), 0, at)
        w.text("confusion_matrix_counts", confusion_markdown(t["confusion"]), at)
        w.close()


def write_tensorboard(doc, dest, project):
    tb = TensorBoard()
    dest = local_dir(dest)
    for run in doc["runs"]:
        stage = tempfile.mkdtemp(prefix=f".{run['run_id']}.", dir=dest)
        try:
            tb.root(stage, run)
            for t in run["trials"]:
                tb.trial(os.path.join(stage, t["trial_id"]), run, t)
            final = os.path.join(dest, run["run_id"])
            replace_dir(stage, final)
        except BaseException:
            shutil.rmtree(stage, ignore_errors=True)
            raise
        yield {"run_id": run["run_id"], "trials": len(run["trials"]), "where": final}


def follow_tensorboard(lines, dest):
    """`launch --export tensorboard:DEST`: each line is {"run": ..., "trial": ...} for a trial just
    judged, written once into DEST/RUN/TRIAL (staged beside it, then moved in whole, so
    TensorBoard never reads half a trial); the last, {"run": ...} with every trial, adds the
    run's report and hparams experiment, the trials not written yet, and the best trial's
    confusion matrix as a file of its own in its folder. Nothing written is replaced while
    TensorBoard may be reading it."""
    tb = TensorBoard()
    dest = local_dir(dest)
    written = set()

    def trial(run, t):
        folder = os.path.join(dest, run["run_id"], t["trial_id"])
        if t["trial_id"] in written or os.path.exists(folder):
            written.add(t["trial_id"])
            return False
        os.makedirs(os.path.dirname(folder), exist_ok=True)
        stage = tempfile.mkdtemp(prefix=f".{t['trial_id']}.", dir=os.path.dirname(folder))
        try:
            tb.trial(stage, run, dict(t, confusion=None))
            os.rename(stage, folder)
        except BaseException:
            shutil.rmtree(stage, ignore_errors=True)
            raise
        written.add(t["trial_id"])
        return True

    for line in lines:
        if not line.strip():
            continue
        item = json.loads(line)
        run = item["run"]
        if "trial" in item:
            trial(run, item["trial"])
            continue
        for t in run["trials"]:
            trial(run, t)
            if t["best"]:
                tb.confusion(os.path.join(dest, run["run_id"], t["trial_id"]), run, t)
        tb.root(os.path.join(dest, run["run_id"]), run)
        yield {"run_id": run["run_id"], "trials": len(run["trials"]), "where": os.path.join(dest, run["run_id"])}


# ---------- MLflow ----------


def mlflow_status(trial):
    if trial["failure_label"] in ("pruned", "cancelled"):
        return "KILLED"
    if trial["failure_label"]:
        return "FAILED"
    return "FINISHED" if trial["verdict"] else "RUNNING"


def mlflow_key(key):
    """A param name MLflow accepts (letters, digits, "_", "-", ".", " ", ":", "/", at most 250): a
    config the fold could not validate is kept as written, and an LLM may have written any key."""
    return "".join(c if c.isalnum() or c in "_-. :/" else "_" for c in key)[:250]


def cut(text, limit):
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def trial_tags(run, t, parent_id):
    tags = {
        "mlflow.parentRunId": parent_id,
        "mlflow.note.content": cut(t["hypothesis"], MLFLOW_TAG_MAX),
        "research_swarm.run_id": run["run_id"],
        "research_swarm.trial_id": t["trial_id"],
        "status": t["status"],
        "verdict": t["verdict"] or "",
        "decision": t["decision"] or "",
        "failure_label": t["failure_label"] or "",
        "failure_message": cut(t["failure_message"] or "", MLFLOW_TAG_MAX),
        "fidelity.rung": str(t["fidelity"]["rung"]),
        "fidelity.epochs": "" if t["fidelity"]["epochs"] is None else str(t["fidelity"]["epochs"]),
        "fidelity.subset": "" if t["fidelity"]["subset"] is None else str(t["fidelity"]["subset"]),
        "fidelity.seeds": "" if t["fidelity"]["seeds"] is None else str(t["fidelity"]["seeds"]),
        "parent_trial": t["parent_ids"][0] if t["parent_ids"] else "",
        "parent_trials": ",".join(t["parent_ids"]),
        "surface": t["surface"],
        "mutation": t["mutation"],
        "proposer": t["proposer"],
        "best": str(t["best"]).lower(),
    }
    return tags


def mlflow_batch(client, run_id, metrics, params):
    while metrics or params:
        client.log_batch(run_id, metrics=metrics[: MLFLOW_BATCH["metrics"]], params=params[: MLFLOW_BATCH["params"]])
        metrics, params = metrics[MLFLOW_BATCH["metrics"] :], params[MLFLOW_BATCH["params"] :]


def mlflow_params(flat):
    from mlflow.entities import Param

    # Through a dict: two keys that become one name would make MLflow refuse the whole batch.
    named = {mlflow_key(k): cut(v if not isinstance(v, bool) else str(v).lower(), MLFLOW_PARAM_MAX) for k, v in flat.items()}
    return [Param(k, v) for k, v in named.items()]


def mlflow_trial(client, cid, run, t):
    """One trial as the child run `cid`: its curves and scores, its params, code, hypothesis and confusion matrix."""
    from mlflow.entities import Metric

    at = trial_time(run, t)
    metrics = [Metric(name, v, at, epoch) for epoch, row in epoch_rows(t["seeds"]) for name, v in row.items()]
    metrics += [Metric(k, v, at, 0) for k, v in t["metrics"].items()]
    for name in ("score", "num_params", "latency_ms"):
        if t.get(name) is not None:
            metrics.append(Metric(name, t[name], at, 0))
    mlflow_batch(client, cid, metrics, mlflow_params(t["params"]))
    if t["code"]:
        client.log_text(cid, t["code"], "model_code.py")
    if t["hypothesis_markdown"]:
        client.log_text(cid, t["hypothesis_markdown"], "hypothesis.md")
    if t["confusion"]:
        client.log_dict(cid, t["confusion"], "confusion_matrix.json")
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "confusion_matrix.png")
            with open(path, "wb") as f:
                f.write(confusion_png(t["confusion"]["counts"]))
            client.log_artifact(cid, path)
    client.set_terminated(cid, mlflow_status(t), end_time=t.get("ended_at_ms") or None)


def write_mlflow(doc, dest, project):
    # MLflow 3.x keeps its file store in maintenance mode and refuses it unless asked; a folder
    # needs nothing running and mlflow-skinny has no database store (that needs SQLAlchemy).
    os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    # A server that does not answer: say so in seconds, not after MLflow's minutes of retries.
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")
    import mlflow.exceptions
    from mlflow.entities import Metric, ViewType
    from mlflow.tracking import MlflowClient

    uri = dest if is_uri(dest) else "file://" + local_dir(dest)
    client = MlflowClient(tracking_uri=uri)

    try:
        experiment = client.get_experiment_by_name(project)
        if experiment is None:
            experiment_id = client.create_experiment(project)
        else:
            experiment_id = experiment.experiment_id
            if experiment.lifecycle_stage == "deleted":
                client.restore_experiment(experiment_id)
    except mlflow.exceptions.MlflowException as e:
        raise ExportError("runner_unavailable" if is_uri(dest) else "crash", f"MLflow at {uri}: {e.message.splitlines()[0] if e.message else e}") from e

    for run in doc["runs"]:
        earlier = client.search_runs([experiment_id], filter_string=f"tags.`research_swarm.run_id` = '{run['run_id']}'", run_view_type=ViewType.ACTIVE_ONLY, max_results=50000)
        made = []
        try:
            start_ms = run.get("started_at_ms") or 0
            parent = client.create_run(experiment_id, start_time=start_ms or None, run_name=run["run_id"], tags={
                "research_swarm.run_id": run["run_id"],
                "mlflow.note.content": cut(run["goal"], MLFLOW_TAG_MAX),
                "goal": cut(run["goal"], MLFLOW_TAG_MAX),
                "dataset": run["dataset"],
                "metric": run["metric"],
                "status": run["status"],
                "reason": cut(run["reason"], MLFLOW_TAG_MAX),
                "best_trial": run["best_trial_id"] or "",
            })
            pid = parent.info.run_id
            made.append(pid)
            best = next((t for t in run["trials"] if t["best"]), None)
            summary = [Metric(k, v, start_ms, 0) for k, v in run["test"].items()]
            if best and best["score"] is not None:
                summary.append(Metric("best_score", best["score"], start_ms, 0))
            mlflow_batch(client, pid, summary, mlflow_params(run["params"]))
            client.log_text(pid, run["report_markdown"], "report.md")
            for t in run["trials"]:
                child = client.create_run(experiment_id, start_time=t.get("started_at_ms") or start_ms or None, run_name=t["trial_id"], tags=trial_tags(run, t, pid))
                made.append(child.info.run_id)
                mlflow_trial(client, child.info.run_id, run, t)
            client.set_terminated(pid, "FINISHED" if run["status"] != "unfinished" else "RUNNING", end_time=run.get("ended_at_ms") or None)
        except BaseException:
            for rid in made:
                try:
                    client.delete_run(rid)
                except Exception:  # noqa: BLE001 - the first failure is the one to report
                    pass
            raise
        # Only now: until the new runs were all in, the earlier export stood.
        for r in earlier:
            client.delete_run(r.info.run_id)
        yield {"run_id": run["run_id"], "trials": len(run["trials"]), "where": uri if is_uri(dest) else uri[len("file://"):]}


# ---------- W&B ----------


def write_wandb(doc, dest, project):
    import wandb

    dest = local_dir(dest)
    settings = dict(mode="offline", console="off", disable_git=True, save_code=False, x_disable_stats=True, x_disable_meta=True, x_disable_machine_info=True, x_save_requirements=False, silent=True)
    for run in doc["runs"]:
        stage = tempfile.mkdtemp(prefix=".wandb-", dir=dest)
        try:

            def start(**kw):
                return wandb.init(project=project, group=run["run_id"], dir=stage, reinit="create_new", settings=wandb.Settings(**settings), **kw)

            def save(r, name, text):
                path = os.path.join(r.dir, name)
                mode = "wb" if isinstance(text, bytes) else "w"
                with open(path, mode) as f:
                    f.write(text)
                r.save(path, base_path=r.dir, policy="now")

            for t in run["trials"]:
                config = dict(t["params"])
                config.update({"trial.rung": t["fidelity"]["rung"], "trial.epochs": t["fidelity"]["epochs"], "trial.subset": t["fidelity"]["subset"], "trial.seeds": t["fidelity"]["seeds"], "trial.parents": ",".join(t["parent_ids"]), "trial.surface": t["surface"], "trial.mutation": t["mutation"]})
                tags = [x for x in (t["verdict"] and f"verdict:{t['verdict']}", t["failure_label"] and f"failure:{t['failure_label']}", t["best"] and "best", f"rung:{t['fidelity']['rung']}") if x]
                r = start(job_type="trial", name=t["trial_id"], id=wandb_id(t["trial_id"]), config=config, tags=tags, notes=t["hypothesis"])
                for epoch, row in epoch_rows(t["seeds"]):
                    r.log(row, step=epoch)
                summary = dict(t["metrics"])
                summary.update({"score": t["score"], "num_params": t["num_params"], "latency_ms": t.get("latency_ms"), "status": t["status"], "verdict": t["verdict"], "decision": t["decision"], "failure_label": t["failure_label"], "failure_message": t["failure_message"]})
                r.summary.update({k: v for k, v in summary.items() if v is not None})
                if t["code"]:
                    save(r, "model_code.py", t["code"])
                if t["hypothesis_markdown"]:
                    save(r, "hypothesis.md", t["hypothesis_markdown"])
                if t["confusion"]:
                    save(r, "confusion_matrix.json", json.dumps(t["confusion"]))
                    save(r, "confusion_matrix.png", confusion_png(t["confusion"]["counts"]))
                r.finish(exit_code=1 if t["failure_label"] and t["failure_label"] not in ("pruned", "cancelled") else 0)
            r = start(job_type="run", name=run["run_id"], id=wandb_id(run["run_id"]), config=run["params"], notes=run["goal"], tags=[f"status:{run['status']}"])
            r.summary.update({**run["test"], "status": run["status"], "reason": run["reason"], "best_trial": run["best_trial_id"] or ""})
            save(r, "report.md", run["report_markdown"])
            r.finish()
            into = os.path.join(dest, "wandb")
            os.makedirs(into, exist_ok=True)
            made = {offline_id(name): name for name in os.listdir(os.path.join(stage, "wandb")) if offline_id(name)}
            # An earlier export of these runs: folders with the same W&B ids, whenever they were made.
            for name in os.listdir(into):
                if offline_id(name) in made:
                    shutil.rmtree(os.path.join(into, name), ignore_errors=True)
            for name in made.values():
                os.rename(os.path.join(stage, "wandb", name), os.path.join(into, name))
        finally:
            shutil.rmtree(stage, ignore_errors=True)
        yield {"run_id": run["run_id"], "trials": len(run["trials"]), "where": into}


def offline_id(folder):
    """The W&B run id of an offline run's folder, offline-run-YYYYMMDD_HHMMSS-ID; None for another."""
    parts = folder.split("-", 3)
    return parts[3] if len(parts) == 4 and parts[:2] == ["offline", "run"] else None


def wandb_id(name):
    """A W&B run id from a swarm id: W&B takes letters, digits, '-' and '_'; the swarm's ids are of those (core/ids.ts)."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


WRITERS = {"tensorboard": write_tensorboard, "mlflow": write_mlflow, "wandb": write_wandb}


def read_document(stream):
    try:
        doc = json.load(stream)
    except ValueError as e:
        raise ExportError("invalid_config", f"the document on stdin is not JSON: {e}") from e
    if not isinstance(doc, dict) or doc.get("kind") != KIND or doc.get("version") != VERSION:
        raise ExportError("invalid_config", f"the document on stdin is not a {KIND} version {VERSION}")
    return doc


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--to", choices=sorted(WRITERS), required=True)
    p.add_argument("--dest", required=True, help="a folder, or for mlflow a tracking server's URI")
    p.add_argument("--project", default="research-swarm", help="the MLflow experiment or W&B project")
    p.add_argument("--follow", action="store_true", help="tensorboard: one judged trial a line, as a run goes (launch --export)")
    a = p.parse_args(argv)
    try:
        if a.follow and a.to != "tensorboard":
            raise ExportError("invalid_config", f"--follow writes tensorboard only, not {a.to}")
        if a.follow:
            # A Ctrl-C at the launch reaches its whole process group: the launch writes the report
            # so far and then ends this writer's input, which is how it stops.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        for written in follow_tensorboard(sys.stdin, a.dest) if a.follow else WRITERS[a.to](read_document(sys.stdin), a.dest, a.project):
            print(json.dumps(written), flush=True)
    except ExportError as e:
        print(f"export_writer: {e.label}: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - the verb shows one line; the traceback goes before it
        traceback.print_exc()
        print(f"export_writer: crash: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
