"""tasks/signal.py, the runner's side of the signal task: a CSV of sequences, a folder with
train.csv and test.csv, or a folder of .npy arrays, each as [length, channels] floats; and the
one-line errors a person's files can cause."""

import os
import subprocess
import sys

import numpy as np
import pytest

import datasets
import specs
from conftest import REPO, full_spec
from failures import TaskFailure


def spec(**fields):
    return specs.dataset(full_spec("prepare", dataset={"name": "signal", **fields}))


def generate(out, fmt, train=300, test=100):
    subprocess.run([sys.executable, os.path.join(REPO, "bench", "signals.py"), str(out), "--format", fmt,
                    "--train", str(train), "--test", str(test), "--seed", "3"], check=True)
    return str(out)


def test_the_registry_gives_the_runner_its_loader():
    assert "signal" in datasets.KNOWN


def test_a_csv_folder_a_csv_file_and_arrays_load_as_length_by_channels(tmp_path):
    folder = generate(tmp_path / "csv", "csv")
    raw = datasets.load(spec(data_dir=folder, target_column="label"))
    assert (raw.x_train.shape, raw.x_test.shape, raw.x_train.dtype) == ((300, 40, 1), (100, 40, 1), np.float32)
    assert raw.class_names == [str(c) for c in range(10)] and raw.task == "classification"
    # A file alone: a stratified fifth held out as its test split.
    alone = datasets.load(spec(data_dir=os.path.join(folder, "train.csv"), target_column="label"))
    assert (len(alone.y_train), len(alone.y_test)) == (240, 60)
    assert sorted(np.bincount(alone.y_test)) == [6] * 10
    arrays = datasets.load(spec(data_dir=generate(tmp_path / "npy", "npy")))
    assert (arrays.x_train.shape, arrays.x_test.shape) == ((300, 40, 1), (100, 40, 1))
    # Several channels stay channels.
    channels = tmp_path / "three"
    channels.mkdir()
    np.save(channels / "x.npy", np.random.default_rng(0).normal(size=(50, 16, 3)))
    np.save(channels / "y.npy", np.arange(50) % 2)
    assert datasets.load(spec(data_dir=str(channels))).x_train.shape[1:] == (16, 3)


def invalid(part, **fields):
    with pytest.raises(TaskFailure) as caught:
        datasets.load(spec(**fields))
    assert caught.value.label == "invalid_config"
    assert part in str(caught.value) and "\n" not in str(caught.value)


def test_a_persons_files_fail_in_one_line_naming_what_is_wrong(tmp_path):
    folder = generate(tmp_path / "csv", "csv")
    invalid("target_column 'kind' is not a column", data_dir=folder, target_column="kind")
    invalid("needs its class column: target=COLUMN", data_dir=folder, target_column="")
    invalid("is neither a CSV file", data_dir=str(tmp_path / "nowhere"), target_column="label")
    bad = tmp_path / "bad.csv"
    bad.write_text("x0,x1,label\n0.1,oops,a\n0.2,0.3,b\n")
    invalid("every column but 'label' must be a number", data_dir=str(bad), target_column="label")
    arrays = tmp_path / "arrays"
    arrays.mkdir()
    np.save(arrays / "x.npy", np.zeros((10, 8)))
    invalid("has no y.npy", data_dir=str(arrays))
    np.save(arrays / "y.npy", np.zeros(9))
    invalid("y.npy has 9 labels for 10 sequences", data_dir=str(arrays))
    np.save(arrays / "x.npy", np.zeros((10, 8, 2, 2)))
    invalid("must be numbers shaped (N, length) or (N, length, channels)", data_dir=str(arrays))
