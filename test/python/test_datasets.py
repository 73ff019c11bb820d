"""datasets.py and the loaders of tasks/ (images, tabular, text, synthetic): loaders on files in their
real formats, the errors a user's files can cause, and splits."""

import gzip
import os
import pickle
import struct

import numpy as np
import pytest
import scipy.io

import datasets
import specs
from conftest import full_spec
from failures import TaskFailure
from tasks.images import DIGIT_CLASSES, FASHION_MNIST_CLASSES
from tasks.text import TEXT_LENGTH, TEXT_VOCAB, tokenize


def spec(**fields):
    """A complete dataset spec, validated, as the zygote hands it to the loaders."""
    return specs.dataset(full_spec("prepare", dataset=fields))


def invalid(message_part, **fields):
    with pytest.raises(TaskFailure) as caught:
        datasets.load(spec(**fields))
    assert caught.value.label == "invalid_config"
    assert message_part in caught.value.message, caught.value.message
    return caught.value.message


# --- loaders on the fixture files -------------------------------------------------------

@pytest.mark.parametrize("fields, shape, n_train, n_test, class_names", [
    ({"name": "mnist", "data_dir": "mnist"}, [1, 28, 28], 200, 50, DIGIT_CLASSES),
    ({"name": "fashion-mnist", "data_dir": "mnist"}, [1, 28, 28], 200, 50, FASHION_MNIST_CLASSES),
    ({"name": "cifar10", "data_dir": "cifar10"}, [3, 32, 32], 300, 60, None),
    ({"name": "cifar10", "data_dir": "cifar10/cifar-10-batches-py"}, [3, 32, 32], 300, 60, None),
    ({"name": "cifar100", "data_dir": "cifar100"}, [3, 32, 32], 200, 50, [f"fine_{i}" for i in range(100)]),
    ({"name": "svhn", "data_dir": "svhn"}, [3, 32, 32], 200, 50, DIGIT_CLASSES),
    ({"name": "csv", "data_dir": "tabular.csv", "target_column": "bought"}, [6], 200, 50, ["no", "yes"]),
    ({"name": "text", "data_dir": "text"}, [TEXT_LENGTH], 200, 50, ["0", "1"]),
], ids=lambda v: f"{v['name']}@{v['data_dir']}" if isinstance(v, dict) else None)
def test_a_fixture_file_loads_in_its_real_format(fixtures_dir, fields, shape, n_train, n_test, class_names):
    raw = datasets.load(spec(**{**fields, "data_dir": os.path.join(fixtures_dir, fields["data_dir"])}))
    assert list(raw.x_train.shape) == [n_train] + shape and list(raw.x_test.shape) == [n_test] + shape
    assert raw.y_train.shape == (n_train,) and raw.y_test.shape == (n_test,)
    assert raw.y_train.dtype == raw.y_test.dtype == np.int64
    classes = len(class_names) if class_names else 10
    assert raw.y_train.min() >= 0 and raw.y_train.max() < classes and raw.y_test.max() < classes
    if class_names:
        assert raw.class_names == class_names
    else:
        assert raw.class_names[0] == "airplane" and len(raw.class_names) == 10
    # Images stay uint8 in the zygote's cache; they are standardised per batch.
    expected_dtype = np.int64 if fields["name"] == "text" else (np.uint8 if len(shape) == 3 else np.float32)
    assert raw.x_train.dtype == expected_dtype
    assert raw.input_dtype == ("int64" if fields["name"] == "text" else "float32")


def test_svhn_images_are_channels_first_and_label_10_is_the_digit_0(fixtures_dir):
    raw = datasets.load(spec(name="svhn", data_dir=os.path.join(fixtures_dir, "svhn")))
    mat = scipy.io.loadmat(os.path.join(fixtures_dir, "svhn", "train_32x32.mat"))
    assert np.array_equal(raw.x_train, mat["X"].transpose(3, 2, 0, 1))
    assert np.array_equal(raw.y_train == 0, mat["y"].ravel() == 10)
    assert raw.x_train.flags.c_contiguous


def test_csv_imputes_missing_values_and_encodes_categories(fixtures_dir):
    raw = datasets.load(spec(name="csv", data_dir=os.path.join(fixtures_dir, "tabular.csv"), target_column="bought"))
    # age and income numeric, colour one-hot over its 3 levels, city (40 levels) ordinal.
    assert np.isfinite(raw.x_train).all() and np.isfinite(raw.x_test).all()
    colours = raw.x_train[:, 2:5]
    assert set(np.unique(colours)) == {0.0, 1.0} and (colours.sum(axis=1) == 1).all()
    assert set(np.unique(raw.x_train[:, 5])) <= set(range(40))


def test_text_is_hashed_into_padded_ids(fixtures_dir):
    raw = datasets.load(spec(name="text", data_dir=os.path.join(fixtures_dir, "text")))
    assert raw.vocab_size == TEXT_VOCAB
    assert raw.x_train.min() >= 0 and raw.x_train.max() < TEXT_VOCAB
    assert (raw.x_train[:, -1] == 0).all()  # fixture sentences are short: padded at the end


@pytest.mark.parametrize("name, shape, classes", [("iris", [4], 3), ("wine", [13], 3),
                                                  ("breast_cancer", [30], 2), ("digits", [1, 8, 8], 10)])
def test_bundled_toys_get_a_fixed_test_split(name, shape, classes):
    raw = datasets.load(spec(name=name))
    n = len(raw.y_train) + len(raw.y_test)
    assert list(raw.x_train.shape[1:]) == shape
    assert len(raw.class_names) == classes
    assert len(raw.y_test) == round(n * 0.2)
    again = datasets.load(spec(name=name, split_seed=7))
    assert np.array_equal(raw.y_test, again.y_test) and np.array_equal(raw.x_test, again.x_test)


def test_synthetic_data_follows_the_spec_and_the_seed():
    fields = {"name": "synthetic", "shape": [1, 8, 8], "num_classes": 3, "difficulty": 0.2}
    raw = datasets.load(spec(**fields))
    assert raw.x_train.shape == (2000, 1, 8, 8) and raw.x_test.shape == (500, 1, 8, 8)
    assert raw.class_names == ["class_0", "class_1", "class_2"]
    assert np.array_equal(raw.x_train, datasets.load(spec(**fields)).x_train)
    assert not np.array_equal(raw.x_train, datasets.load(spec(**fields, split_seed=1)).x_train)
    description = datasets.split(raw, spec(**fields)).describe()
    assert description["n_train"] + description["n_val"] == 2000 and description["n_test"] == 500


def test_synthetic_difficulty_controls_separability():
    def nearest_mean_accuracy(difficulty):
        raw = datasets.load(spec(name="synthetic", shape=[16], num_classes=4, difficulty=difficulty))
        means = np.stack([raw.x_train[raw.y_train == c].mean(axis=0) for c in range(4)])
        predicted = np.argmin(((raw.x_test[:, None] - means) ** 2).sum(axis=2), axis=1)
        return (predicted == raw.y_test).mean()

    assert nearest_mean_accuracy(0.0) == 1.0
    assert nearest_mean_accuracy(1.0) < 0.5


# --- what a user's files can get wrong --------------------------------------------------

def write_idx(path, array, dims=None):
    dims = array.shape if dims is None else dims
    header = struct.pack(">HBB", 0, 0x08, len(dims)) + struct.pack(f">{len(dims)}I", *dims)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


def write_mnist(directory, n_train=20, n_labels=None, train_dims=None):
    os.makedirs(directory, exist_ok=True)
    for prefix, n in (("train", n_train), ("t10k", 10)):
        write_idx(os.path.join(directory, f"{prefix}-images-idx3-ubyte.gz"), np.zeros((n, 4, 4)),
                  train_dims if prefix == "train" else None)
        labels = n_labels if prefix == "train" and n_labels is not None else n
        write_idx(os.path.join(directory, f"{prefix}-labels-idx1-ubyte.gz"), np.arange(labels) % 10)


def test_a_missing_directory_names_the_files_it_expected(tmp_path):
    message = invalid("does not exist", name="mnist", data_dir=str(tmp_path / "nope"))
    assert str(tmp_path / "nope") in message and "train-images-idx3-ubyte.gz" in message


def test_idx_files_are_checked_against_their_headers(tmp_path):
    write_mnist(str(tmp_path / "ok"))
    assert datasets.load(spec(name="mnist", data_dir=str(tmp_path / "ok"))).x_train.shape == (20, 1, 4, 4)
    write_mnist(str(tmp_path / "short"), train_dims=(21, 4, 4))
    invalid("header announces (21, 4, 4) but holds 320 bytes", name="mnist", data_dir=str(tmp_path / "short"))
    write_mnist(str(tmp_path / "counts"), n_labels=19)
    invalid("train split has 20 images but 19 labels", name="mnist", data_dir=str(tmp_path / "counts"))
    with gzip.open(tmp_path / "ok" / "train-images-idx3-ubyte.gz", "wb") as f:
        f.write(struct.pack(">HBB", 0, 0x0D, 3) + bytes(12))  # 0x0D: float32 data
    invalid("not an unsigned-byte IDX file", name="mnist", data_dir=str(tmp_path / "ok"))


class _Payload:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.mkdir, (self.marker,)


def test_a_cifar_pickle_cannot_run_code(tmp_path):
    marker = str(tmp_path / "pwned")
    with open(tmp_path / "data_batch_1", "wb") as f:
        pickle.dump({"data": _Payload(marker), "labels": [0]}, f, protocol=2)
    invalid("refusing to unpickle posix.mkdir", name="cifar10", data_dir=str(tmp_path))
    assert not os.path.exists(marker)


@pytest.mark.parametrize("module", [b"numpy.core.multiarray", b"numpy._core.multiarray"])
def test_cifar_pickles_of_either_numpy_load(tmp_path, module):
    # The CIFAR files and numpy 1 name numpy.core, numpy 2 numpy._core: each numpy reads both.
    data = pickle.dumps({"data": np.zeros((2, 3072), np.uint8), "labels": [0, 1]}, protocol=2)
    data = data.replace(b"numpy._core.multiarray", b"numpy.core.multiarray").replace(b"numpy.core.multiarray", module)
    assert module in data
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        (folder / name).write_bytes(data)
    with open(folder / "batches.meta", "wb") as f:
        pickle.dump({"label_names": [f"c{i}" for i in range(10)]}, f, protocol=2)
    raw = datasets.load(spec(name="cifar10", data_dir=str(tmp_path)))
    assert raw.x_train.shape == (10, 3, 32, 32)


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def test_csv_errors_point_at_the_column_or_line(tmp_path):
    table = write(tmp_path / "t.csv", "a,b,label\n1,2,x\n3,4,y\n")
    invalid("target_column 'target' is not a column of", name="csv", data_dir=table, target_column="target")
    assert "available columns: a, b, label" in invalid("", name="csv", data_dir=table, target_column="target")
    ragged = write(tmp_path / "r.csv", "a,b,label\n1,2,x\n3,y\n")
    invalid("line 3 has 2 fields, the header has 3", name="csv", data_dir=ragged, target_column="label")
    continuous = write(tmp_path / "c.csv", "a,y\n" + "".join(f"{i},{i / 3:.3f}\n" for i in range(20)))
    invalid("the target looks continuous, not a class; for regression, name a regression metric", name="csv", data_dir=continuous, target_column="y")
    single = write(tmp_path / "s.csv", "a,y\n" + "".join(f"{i},same\n" for i in range(20)))
    invalid("the target has 1 class(es)", name="csv", data_dir=single, target_column="y")
    invalid("is not a file", name="csv", data_dir=str(tmp_path / "missing.csv"), target_column="y")


def test_csv_with_its_own_test_file_matches_labels_numerically(tmp_path):
    train = "".join(f"{i % 7},{label}\n" for i, label in enumerate(["9", "10", "2"] * 10))
    write(tmp_path / "d" / "train.csv", "f,y\n" + train)
    # "2.0" is the class "2"; "11" never occurs in training and is dropped.
    write(tmp_path / "d" / "test.csv", "f,y\n1,2.0\n2,10\n3,11\n")
    raw = datasets.load(spec(name="csv", data_dir=str(tmp_path / "d"), target_column="y"))
    assert raw.class_names == ["2", "9", "10"]
    assert raw.y_test.tolist() == [0, 2]
    assert len(raw.y_train) == 30  # nothing carved: the test file is the test split


def test_text_files_without_labels_or_text_are_refused(tmp_path):
    write(tmp_path / "unlabelled" / "train.tsv", "sentence\nhello there\n")
    invalid("has no labelled rows", name="text", data_dir=str(tmp_path / "unlabelled"))
    write(tmp_path / "broken" / "train.jsonl", '{"text": "fine", "label": 1}\n{"label": 0}\n')
    invalid("line 2 has no string 'text' field", name="text", data_dir=str(tmp_path / "broken"))
    write(tmp_path / "header" / "train.tsv", "words\tlabel\nhi\t1\n")
    invalid("expected a header with a 'sentence' or 'text' column", name="text", data_dir=str(tmp_path / "header"))


def test_tokenize_is_stable_case_blind_and_fixed_length():
    ids = tokenize("Great film, GREAT plot!")
    assert len(ids) == TEXT_LENGTH
    assert ids[0] == ids[2] and ids[0] != ids[1] and ids[4:] == [0] * (TEXT_LENGTH - 4)
    assert tokenize("great film")[:2] == ids[:2]
    assert tokenize("word " * 500) == [tokenize("word")[0]] * TEXT_LENGTH


# --- splits -----------------------------------------------------------------------------

def test_default_validation_is_large_enough_to_decide_on():
    # A tenth of a large pool; at least 1,000 examples (at most 30%) of a small one.
    assert datasets.val_count(60_000, 0) == 6_000
    assert datasets.val_count(10_000, 0) == 1_000
    assert datasets.val_count(1_437, 0) == 431
    assert datasets.val_count(100, 0) == 30
    assert datasets.val_count(1_437, 0.1) == 144
    split = datasets.split(datasets.load(spec(name="digits")), spec(name="digits", val_fraction=0))
    assert len(split.val) == datasets.val_count(len(split.train) + len(split.val), 0) == 431


def test_split_is_stratified_disjoint_and_seeded():
    raw = datasets.load(spec(name="digits"))
    fields = {"name": "digits", "subset": 500, "val_fraction": 0.2}
    split = datasets.split(raw, spec(**fields))
    assert len(split.train) == 400 and len(split.val) == 100
    assert not set(split.train) & set(split.val)
    assert np.array_equal(split.test, np.arange(len(raw.y_test)))
    # Largest remainder: every class gets its share of the validation split, give or take one.
    shares = np.bincount(raw.y_train[split.val], minlength=10) / np.bincount(raw.y_train[np.concatenate(
        [split.train, split.val])], minlength=10)
    assert np.all(np.abs(shares - 0.2) < 0.03)
    again = datasets.split(raw, spec(**fields))
    assert np.array_equal(split.val, again.val) and np.array_equal(split.train, again.train)
    other = datasets.split(raw, spec(**fields, split_seed=1))
    assert not np.array_equal(split.val, other.val)
    assert np.array_equal(split.test, other.test)


def test_test_subset_is_stratified_too():
    raw = datasets.load(spec(name="digits"))
    split = datasets.split(raw, spec(name="digits", test_subset=100))
    assert len(split.test) == 100
    assert np.bincount(raw.y_test[split.test], minlength=10).min() >= 9


def test_a_split_that_leaves_nothing_to_train_on_is_refused():
    raw = datasets.load(spec(name="iris"))
    with pytest.raises(TaskFailure, match="1 training samples leave none for training"):
        datasets.split(raw, spec(name="iris", subset=1))


def test_describe_reports_what_a_planner_needs(fixtures_dir):
    raw = datasets.load(spec(name="text", data_dir=os.path.join(fixtures_dir, "text")))
    description = datasets.split(raw, spec(name="text")).describe()
    assert description == {
        "kind": "dataset", "name": "text", "task": "classification", "input_shape": [TEXT_LENGTH], "num_classes": 2,
        "class_names": ["0", "1"], "input_dtype": "int64", "vocab_size": TEXT_VOCAB,
        "n_train": 180, "n_val": 20, "n_test": 50,
    }


def test_feature_stats_match_numpy_per_channel():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 255, size=(50, 3, 4, 4)).astype(np.uint8)
    x[:, 2] = 7  # a constant channel must not divide by zero
    idx = np.arange(0, 50, 2)
    mean, std = datasets.feature_stats(x, idx, chunk=7)
    assert mean.shape == std.shape == (1, 3, 1, 1) and mean.dtype == np.float32
    chosen = x[idx].astype(np.float64)
    assert np.allclose(mean.ravel(), chosen.mean(axis=(0, 2, 3)), rtol=1e-5)
    assert np.allclose(std.ravel()[:2], chosen.std(axis=(0, 2, 3))[:2], rtol=1e-4)
    assert std.ravel()[2] == 1.0
    tabular_mean, _ = datasets.feature_stats(x.reshape(50, -1).astype(np.float32), idx)
    assert tabular_mean.shape == (1, 48)


def test_the_cache_key_ignores_what_does_not_change_a_file_loader():
    a = datasets.cache_key(spec(name="mnist", data_dir="/d", split_seed=1, subset=10))
    assert a == datasets.cache_key(spec(name="mnist", data_dir="/d", split_seed=2))
    generated = {"name": "synthetic", "shape": [4], "num_classes": 2}
    assert datasets.cache_key(spec(**generated)) != datasets.cache_key(spec(**generated, split_seed=1))
    assert datasets.cache_key(spec(**generated)) != datasets.cache_key(spec(**generated, difficulty=0.5))


def test_diabetes_is_a_regression_with_its_targets_in_their_own_units():
    raw = datasets.load(spec(name="diabetes", task="regression"))
    assert raw.task == "regression" and raw.class_names == [] and raw.y_train.dtype == np.float64
    assert raw.x_train.shape[1] == 10 and len(raw.y_train) + len(raw.y_test) == 442
    assert 25 <= raw.y_train.min() and raw.y_train.max() <= 346  # disease progression, as scikit-learn ships it
    split = datasets.split(raw, spec(name="diabetes", task="regression"))
    assert split.describe()["task"] == "regression" and split.describe()["num_classes"] == 0
    # Stratified by the target's deciles: the validation carve-out spans the range.
    val = raw.y_train[split.val]
    deciles = np.quantile(raw.y_train, [0.1, 0.9])
    assert (val < deciles[0]).any() and (val > deciles[1]).any()


def test_a_csv_regression_reads_a_numeric_target_and_says_what_is_wrong_with_others(tmp_path):
    table = write(tmp_path / "house.csv", "rooms,area,price\n" + "".join(f"{i % 5 + 1},{40 + i},{1000 + 13.5 * i}\n" for i in range(60)))
    raw = datasets.load(spec(name="csv", data_dir=table, target_column="price", task="regression"))
    assert raw.task == "regression" and len(raw.y_test) == 12 and raw.y_train.dtype == np.float64
    assert sorted(np.concatenate([raw.y_train, raw.y_test])) == [1000 + 13.5 * i for i in range(60)]
    words = write(tmp_path / "w.csv", "a,price\n" + "".join(f"{i},{'cheap' if i % 2 else i}\n" for i in range(20)))
    invalid("a regression target must be numeric, and 'price' holds 'cheap'", name="csv", data_dir=words, target_column="price", task="regression")
    invalid("digits is a classification dataset, not regression: a regression goal needs a numeric target",
            name="digits", task="regression")
    invalid("diabetes is a regression dataset, not classification: its goal needs a regression metric", name="diabetes")


def test_a_regression_split_publishes_only_its_training_targets(tmp_path):
    raw = datasets.load(spec(name="diabetes", task="regression"))
    dataset = spec(name="diabetes", task="regression")
    split = datasets.split(raw, dataset)
    (tmp_path / "private").mkdir()
    published = datasets.publish(split, dataset, str(tmp_path / "public"), str(tmp_path / "private"))
    targets = np.load(published["labels"])
    assert targets.dtype == np.float64 and np.isnan(targets[split.val]).all()
    assert np.array_equal(targets[split.train], raw.y_train[split.train])
    again = datasets.load_published(str(tmp_path / "public"), published["dataset_id"])
    assert again.task == "regression" and again.y_train is None


def corpus(path):
    return {"name": "text", "task": "language_modelling", "data_dir": str(path)}


def test_a_corpus_is_rows_of_bytes_with_its_tail_held_out_for_test(tmp_path):
    text = bytes(range(256)) * 40  # 10,240 bytes: 39 rows of 256 targets
    (tmp_path / "b.txt").write_bytes(text[5000:])
    (tmp_path / "a.txt").write_bytes(text[:5000])
    (tmp_path / "notes.md").write_text("not text to model")
    raw = datasets.load(spec(**corpus(tmp_path)))
    joined = np.frombuffer(text[:5000] + b"\n" + text[5000:], np.uint8)
    assert raw.task == "language_modelling" and raw.vocab_size == 256 and raw.prediction_width == 256
    rows = np.concatenate([raw.x_train, raw.x_test])
    assert rows.shape == (40, 257) and rows.dtype == np.uint8
    assert (rows[:, 1:] == joined[1:40 * 256 + 1].reshape(40, 256)).all()  # every byte but the first a target once
    assert len(raw.x_test) == 8 and (raw.x_test[0] == joined[32 * 256:33 * 256 + 1]).all()
    split = datasets.split(raw, spec(**corpus(tmp_path)))
    assert split.describe()["input_shape"] == [256] and split.describe()["input_dtype"] == "int64"
    # A tenth of the pool: each row holds 256 targets, so no minimum of 1,000 rows applies.
    assert len(split.val) == 3 and len(split.train) == 29


def test_a_corpus_too_small_or_missing_gets_one_line(tmp_path):
    (tmp_path / "tiny.txt").write_text("too short")
    invalid("holds 9 bytes; a language model needs at least 5,121", **corpus(tmp_path / "tiny.txt"))
    (tmp_path / "empty").mkdir()
    invalid("holds no .txt file", **corpus(tmp_path / "empty"))
    invalid("is not a file or a directory", **corpus(tmp_path / "absent.txt"))
    message = invalid("digits is a classification dataset, not language_modelling: bits per byte needs a text corpus",
                      name="digits", task="language_modelling")
    assert "\n" not in message
