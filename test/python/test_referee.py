"""referee.py: the one process that holds validation and test labels publishes what jobs may see and scores predictions."""

import json
import os
import subprocess
import sys

import numpy as np

import datasets
import metrics
from conftest import WORKER_DIR, full_spec

DIGITS = full_spec("prepare", dataset={"name": "digits", "subset": 300})["dataset"]


def files_under(root):
    return sorted(os.path.relpath(os.path.join(top, name), root) for top, _, names in os.walk(root) for name in names)


def test_what_is_published_holds_inputs_and_indices_and_no_held_out_label(tmp_path):
    public, private = str(tmp_path / "public"), str(tmp_path / "private")
    proc = subprocess.Popen([sys.executable, "-u", os.path.join(WORKER_DIR, "referee.py"), public, private],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(job_id, task, spec):
        proc.stdin.write(json.dumps({"type": "run", "job_id": job_id, "task": task, "spec": spec}) + "\n")
        proc.stdin.flush()
        event = json.loads(proc.stdout.readline())
        assert json.loads(proc.stdout.readline())["type"] == "done"
        return event["event"]

    try:
        assert json.loads(proc.stdout.readline())["type"] == "ready"
        prepared = ask("p", "prepare", {"dataset": DIGITS})
        assert prepared["kind"] == "prepared" and prepared["info"]["n_train"] + prepared["info"]["n_val"] == 300
        did, sid = prepared["dataset_id"], prepared["split_id"]
        assert files_under(public) == [f"d-{did}/meta.json", f"d-{did}/x_test.npy", f"d-{did}/x_train.npy", f"s-{sid}.npz"]
        assert prepared["labels"] == os.path.join(private, f"y-{sid}.npy") and os.stat(private).st_mode & 0o777 == 0o700
        split = datasets.published_split(datasets.load_published(public, did), public, sid)
        assert split.raw.y_train is None and split.raw.y_test is None
        y = np.load(prepared["labels"])
        assert (y[split.val] == -1).all() and (y[split.train] >= 0).all()

        # Predictions for the validation split: uniform ones score chance, whatever the job claims.
        n, classes = len(split.val), 10
        uniform = metrics.encode(np.full((n, classes), np.log(1 / classes)))
        scores = ask("s", "score", {"dataset": DIGITS, "part": "val", "predictions": [uniform]})
        assert scores["kind"] == "scores" and scores["examples"] == n
        assert abs(scores["val_loss"] - np.log(classes)) < 1e-6
        full = ask("f", "score", {"dataset": DIGITS, "part": "test", "full": True,
                                  "predictions": [metrics.encode(np.zeros((len(split.test), classes)))]})
        assert set(full) >= {"metrics", "per_class", "confusion_matrix"} and "test_accuracy" in full["metrics"]

        # Predictions of the wrong shape are the job's failure; a bad request is the caller's; it serves on.
        wrong = ask("w", "score", {"dataset": DIGITS, "part": "val", "predictions": [metrics.encode(np.zeros((n + 1, classes)))]})
        assert wrong["label"] == "crash" and "expected predictions of shape" in wrong["message"]
        assert ask("t", "train", {})["label"] == "invalid_config"
        assert ask("m", "prepare", {"dataset": {**DIGITS, "name": "csv", "data_dir": "/nonexistent", "target_column": "y"}})["label"] == "invalid_config"
        assert ask("again", "prepare", {"dataset": DIGITS})["split_id"] == sid
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
