"""The export writer on a small document: its PNG, its one-line failures, and that an export
done twice leaves one export (TensorBoard's folders, MLflow's active runs), read back with
the trackers' own readers. The whole path from a real run is test/cli/from.test.ts's."""

import io
import json
import os
import struct
import zlib

import pytest

import export_writer as ew


def document(run_id="r1", report="# Research report: r1\n"):
    trial = {
        "trial_id": f"{run_id}-t000", "index": 0, "parent_ids": [], "hypothesis": "a small CNN",
        "hypothesis_markdown": f"# {run_id}-t000\n", "surface": "architecture", "mutation": "template", "proposer": "planner",
        "status": "judged", "verdict": "accept", "decision": "iterate", "failure_label": None, "failure_message": None,
        "fidelity": {"rung": 0, "epochs": 2, "subset": 0, "seeds": 2}, "best": True,
        "params": {"model.name": "cnn", "model.layers.0.type": "conv2d", "train.lr": 0.001, "train.amp": False},
        "num_params": 1234, "latency_ms": 0.52, "score": 0.9, "metrics": {"val_accuracy": 0.92, "val_loss": 0.3},
        "seeds": [
            {"seed": s, "epochs_completed": 2, "seconds": 1.0, "metrics": {"val_accuracy": 0.92},
             "curves": {"train_loss": [1.0 + s, 0.5], "val_accuracy": [0.8, 0.9 + s / 100], "lr": [0.001, 0.0005]}}
            for s in (0, 1)
        ],
        "confusion": {"split": "validation", "seeds": 2, "class_names": ["a", "b"], "counts": [[9, 1], [2, 8]]},
        "code": "class Net: pass\n", "started_at_ms": 1_700_000_000_000, "ended_at_ms": 1_700_000_005_000,
    }
    failed = dict(trial, trial_id=f"{run_id}-t001", index=1, parent_ids=[trial["trial_id"]], status="failed", verdict="reject",
                  failure_label="oom", failure_message="CUDA out of memory", best=False, score=None, latency_ms=None, metrics={}, seeds=[], confusion=None)
    return {"kind": ew.KIND, "version": ew.VERSION, "runs": [{
        "run_id": run_id, "goal": "digits 90%", "dataset": "digits", "metric": "accuracy", "higher_is_better": True,
        "status": "budget_exhausted", "reason": "max trials", "best_trial_id": trial["trial_id"],
        "started_at_ms": 1_699_999_999_000, "ended_at_ms": 1_700_000_010_000,
        "params": {"settings.seeds": 2, "goal.trade_offs.0": "params", "goal.trade_offs.1": "latency", "goal.max_latency_ms": 2}, "test": {"test_accuracy": 0.91}, "report_markdown": report, "trials": [trial, failed],
    }]}


def run_main(tmp_path, fmt, doc, monkeypatch, capsys, dest=None):
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(doc) if not isinstance(doc, str) else doc))
    code = ew.main(["--to", fmt, "--dest", str(dest or tmp_path / fmt)])
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines()], err


def test_png_is_a_png_with_one_shaded_cell_per_class_pair():
    data = ew.confusion_png([[9, 1], [2, 8]], size=20)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, at = {}, 8
    while at < len(data):
        (length,) = struct.unpack(">I", data[at:at + 4])
        tag, body = data[at + 4:at + 8], data[at + 8:at + 8 + length]
        assert struct.unpack(">I", data[at + 8 + length:at + 12 + length])[0] == zlib.crc32(tag + body) & 0xFFFFFFFF
        chunks[tag] = body
        at += 12 + length
    width, height = struct.unpack(">II", chunks[b"IHDR"][:8])
    assert (width, height) == (20, 20)
    raw = zlib.decompress(chunks[b"IDAT"])
    assert len(raw) == height * (1 + 3 * width)
    pixel = lambda x, y: raw[y * (1 + 3 * width) + 1 + 3 * x: y * (1 + 3 * width) + 4 + 3 * x]  # noqa: E731
    # The diagonal (9 of 10, 8 of 10) is darker than what lies off it (1 of 10, 2 of 10).
    assert sum(pixel(5, 5)) < sum(pixel(15, 5)) and sum(pixel(15, 15)) < sum(pixel(5, 15))


def test_confusion_markdown_and_epoch_rows():
    text = ew.confusion_markdown({"seeds": 2, "class_names": ["a", "b"], "counts": [[9, 1], [2, 8]]})
    assert "| a | 9 | 1 |" in text and "| b | 2 | 8 |" in text and "2 seeds" in text
    rows = ew.epoch_rows(document()["runs"][0]["trials"][0]["seeds"])
    assert [e for e, _ in rows] == [1, 2]
    assert rows[0][1] == {"seed_0/train_loss": 1.0, "seed_0/val_accuracy": 0.8, "seed_0/lr": 0.001,
                          "seed_1/train_loss": 2.0, "seed_1/val_accuracy": 0.8, "seed_1/lr": 0.001}


def test_mlflow_keys_keep_what_mlflow_takes():
    assert ew.mlflow_key("model.layers.0.out_channels") == "model.layers.0.out_channels"
    assert ew.mlflow_key("model.why?(really)") == "model.why__really_"
    assert len(ew.mlflow_key("x" * 400)) == 250


def test_uri_or_folder():
    assert ew.is_uri("http://127.0.0.1:5000") and ew.is_uri("https://mlflow.example/") and ew.is_uri("file:///tmp/x")
    assert not ew.is_uri("/tmp/out") and not ew.is_uri("relative/dir") and not ew.is_uri("a b://c")


def test_a_document_that_is_not_one_fails_in_one_line(tmp_path, monkeypatch, capsys):
    code, written, err = run_main(tmp_path, "tensorboard", "{not json", monkeypatch, capsys)
    assert code == 2 and written == []
    assert err.splitlines()[-1].startswith("export_writer: invalid_config: the document on stdin is not JSON")
    code, _, err = run_main(tmp_path, "tensorboard", {"kind": "other"}, monkeypatch, capsys)
    assert code == 2 and err.splitlines()[-1] == f"export_writer: invalid_config: the document on stdin is not a {ew.KIND} version 1"
    assert not (tmp_path / "tensorboard").exists()


def test_tensorboard_export_done_twice_leaves_one_export(tmp_path, monkeypatch, capsys):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    for report in ("first\n", "second\n"):
        code, written, err = run_main(tmp_path, "tensorboard", document(report=report), monkeypatch, capsys)
        assert code == 0, err
    assert written == [{"run_id": "r1", "trials": 2, "where": str(tmp_path / "tensorboard" / "r1")}]
    assert os.listdir(tmp_path / "tensorboard") == ["r1"]
    # No staging folder left, and the failed trial has no seed folders (it has no curves).
    assert sorted(f for f in os.listdir(tmp_path / "tensorboard" / "r1" / "r1-t000") if not f.startswith("events.")) == ["seed-0", "seed-1"]
    assert [f for f in os.listdir(tmp_path / "tensorboard" / "r1" / "r1-t001") if not f.startswith("events.")] == []
    root = EventAccumulator(str(tmp_path / "tensorboard" / "r1"), size_guidance={"tensors": 0})
    root.Reload()
    import tensorboard.util.tensor_util as tu

    assert tu.make_ndarray(root.Tensors("report")[0].tensor_proto).item().decode() == "second\n"
    seed = EventAccumulator(str(tmp_path / "tensorboard" / "r1" / "r1-t000" / "seed-1"), size_guidance={"scalars": 0})
    seed.Reload()
    assert [(e.step, round(e.value, 6)) for e in seed.Scalars("train_loss")] == [(1, 2.0), (2, 0.5)]
    # The trial's latency beside its score, where it was timed; the failed trial has none.
    trial = EventAccumulator(str(tmp_path / "tensorboard" / "r1" / "r1-t000"), size_guidance={"scalars": 0})
    trial.Reload()
    assert [(e.step, round(e.value, 6)) for e in trial.Scalars("latency_ms")] == [(0, 0.52)]
    failed = EventAccumulator(str(tmp_path / "tensorboard" / "r1" / "r1-t001"), size_guidance={"scalars": 0})
    failed.Reload()
    assert "latency_ms" not in failed.Tags()["scalars"]
    best = EventAccumulator(str(tmp_path / "tensorboard" / "r1" / "r1-t000"), size_guidance={"images": 0, "tensors": 0})
    best.Reload()
    (image,) = best.Images("confusion_matrix")
    assert image.encoded_image_string[:8] == b"\x89PNG\r\n\x1a\n" and (image.width, image.height) == (320, 320)
    # The counts beside it as text, under a tag of their own: a run's tag belongs to one plugin.
    assert "| b | 2 | 8 |" in tu.make_ndarray(best.Tensors("confusion_matrix_counts")[0].tensor_proto).item().decode()


def test_mlflow_export_done_twice_leaves_one_active_export(tmp_path, monkeypatch, capsys):
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    for _ in range(2):
        code, written, err = run_main(tmp_path, "mlflow", document(), monkeypatch, capsys)
        assert code == 0, err
    client = MlflowClient(tracking_uri="file://" + str(tmp_path / "mlflow"))
    (exp,) = [e for e in client.search_experiments() if e.name == "research-swarm"]
    runs = client.search_runs([exp.experiment_id])
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    assert len(parents) == 1 and len(runs) == 3
    parent = parents[0]
    children = {r.info.run_name: r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id}
    assert sorted(children) == ["r1-t000", "r1-t001"]
    failed = children["r1-t001"]
    assert failed.info.status == "FAILED" and failed.data.tags["failure_label"] == "oom" and failed.data.tags["parent_trial"] == "r1-t000"
    ok = children["r1-t000"]
    assert ok.data.params == {"model.name": "cnn", "model.layers.0.type": "conv2d", "train.lr": "0.001", "train.amp": "false"}
    assert ok.data.metrics["latency_ms"] == 0.52 and ok.data.metrics["num_params"] == 1234 and "latency_ms" not in failed.data.metrics
    parent_params = parent.data.params
    assert parent_params["goal.trade_offs.0"] == "params" and parent_params["goal.trade_offs.1"] == "latency" and parent_params["goal.max_latency_ms"] == "2"
    history = client.get_metric_history(ok.info.run_id, "seed_1/val_accuracy")
    assert sorted((m.step, m.value) for m in history) == [(1, 0.8), (2, 0.91)]
    assert sorted(a.path for a in client.list_artifacts(ok.info.run_id)) == ["confusion_matrix.json", "confusion_matrix.png", "hypothesis.md", "model_code.py"]


def test_following_a_run_writes_each_trial_once_as_it_comes_then_the_run(tmp_path, monkeypatch, capsys):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run = document()["runs"][0]
    first, failed = run["trials"]
    lines = [{"run": run, "trial": dict(first, best=False, confusion=None)}, {"run": run, "trial": dict(first, best=False, confusion=None)}, {"run": run}]
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(json.dumps(x) + "\n" for x in lines)))
    # Following ignores Ctrl-C (its launch ends it), but not in pytest's own process.
    monkeypatch.setattr("signal.signal", lambda *_: None)
    assert ew.main(["--to", "tensorboard", "--dest", str(tmp_path), "--follow"]) == 0
    out, err = capsys.readouterr()
    assert [json.loads(x) for x in out.splitlines()] == [{"run_id": "r1", "trials": 2, "where": str(tmp_path / "r1")}], err
    # Each trial's folder once (the second line of the first was a repeat), no staging left.
    assert sorted(f for f in os.listdir(tmp_path / "r1") if not f.startswith("events.")) == ["r1-t000", "r1-t001"]
    trial = EventAccumulator(str(tmp_path / "r1" / "r1-t000"), size_guidance={"images": 0, "scalars": 0})
    trial.Reload()
    assert len(trial.Scalars("score")) == 1 and len(trial.Images("confusion_matrix")) == 1
    root = EventAccumulator(str(tmp_path / "r1"), size_guidance={"tensors": 0})
    root.Reload()
    assert "report" in root.Tags()["tensors"]


def test_following_is_for_tensorboard_only(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert ew.main(["--to", "mlflow", "--dest", str(tmp_path), "--follow"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == "export_writer: invalid_config: --follow writes tensorboard only, not mlflow"


def test_wandb_runs_carry_each_trials_latency_in_its_summary_and_the_goals_trade_offs_in_the_runs_config(tmp_path, monkeypatch, capsys):
    import read_back

    code, written, err = run_main(tmp_path, "wandb", document(), monkeypatch, capsys)
    assert code == 0, err
    runs = {r["name"]: r for r in read_back.wandb(str(tmp_path / "wandb")).values()}
    assert sorted(runs) == ["r1", "r1-t000", "r1-t001"]
    assert runs["r1-t000"]["summary"]["latency_ms"] == 0.52 and runs["r1-t000"]["summary"]["num_params"] == 1234
    assert "latency_ms" not in runs["r1-t001"]["summary"]
    assert runs["r1"]["config"]["goal.trade_offs.0"] == "params" and runs["r1"]["config"]["goal.max_latency_ms"] == 2
