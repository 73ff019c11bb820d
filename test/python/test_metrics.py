"""metrics.py: scalar metrics for the wire (never NaN), per-class scores and the confusion matrix."""

import base64
import math

import numpy as np
import pytest

import metrics


def one_hot_probs(predicted, num_classes, confidence=0.9):
    probs = np.full((len(predicted), num_classes), (1 - confidence) / (num_classes - 1))
    probs[np.arange(len(predicted)), predicted] = confidence
    return probs


def test_summary_names_every_metric_with_its_prefix():
    y = np.array([0, 0, 1, 1, 2, 2])
    probs = one_hot_probs(np.array([0, 1, 1, 1, 2, 0]), 3)
    out = metrics.summary(y, probs, 0.7, "val")
    assert set(out) == {f"val_{k}" for k in ("accuracy", "loss", "f1_macro", "f1_weighted", "precision_macro",
                                             "recall_macro", "roc_auc", "pr_auc")}
    assert out["val_accuracy"] == pytest.approx(4 / 6)
    assert out["val_loss"] == 0.7
    assert out["val_recall_macro"] == pytest.approx((1 / 2 + 1 + 1 / 2) / 3)
    # Per class: precision 1/2, 2/3, 1 and recall 1/2, 1, 1/2.
    assert out["val_precision_macro"] == pytest.approx((1 / 2 + 2 / 3 + 1) / 3)
    f1 = [2 * p * r / (p + r) for p, r in ((1 / 2, 1 / 2), (2 / 3, 1), (1, 1 / 2))]
    assert out["val_f1_macro"] == pytest.approx(sum(f1) / 3)
    assert all(isinstance(v, float) for v in out.values())


def test_perfect_predictions_score_one():
    y = np.array([0, 1, 2, 0, 1, 2])
    out = metrics.summary(y, one_hot_probs(y, 3), 0.1, "test")
    for key in ("accuracy", "f1_macro", "roc_auc", "pr_auc"):
        assert out[f"test_{key}"] == 1.0


def test_ranking_metrics_average_over_the_classes_present():
    # Class 2 never occurs in this validation split: its column must not make ROC-AUC NaN.
    y = np.array([0, 0, 1, 1])
    probs = np.array([[0.8, 0.1, 0.1], [0.3, 0.6, 0.1], [0.2, 0.7, 0.1], [0.5, 0.4, 0.1]])
    out = metrics.summary(y, probs, 0.5, "val")
    # Class 0: positives score 0.8, 0.3 vs negatives 0.2, 0.5 -> 3 of 4 pairs ordered; class 1 alike.
    assert out["val_roc_auc"] == pytest.approx(0.75)
    assert all(math.isfinite(v) for v in out.values())


def test_ranking_metrics_are_left_out_when_only_one_class_is_present():
    y = np.array([1, 1, 1])
    out = metrics.summary(y, one_hot_probs(np.array([1, 0, 1]), 2), 0.4, "val")
    assert "val_roc_auc" not in out and "val_pr_auc" not in out
    assert out["val_accuracy"] == pytest.approx(2 / 3)


def test_a_non_finite_loss_is_left_out_rather_than_sent():
    y = np.array([0, 1])
    assert "val_loss" not in metrics.summary(y, one_hot_probs(y, 2), math.inf, "val")


def test_per_class_covers_classes_missing_from_the_split():
    y = np.array([0, 0, 1])
    rows = metrics.per_class(y, one_hot_probs(np.array([0, 1, 1]), 3), 3)
    assert rows == [
        {"class_index": 0, "precision": 1.0, "recall": 0.5, "f1": pytest.approx(2 / 3), "support": 2},
        {"class_index": 1, "precision": 0.5, "recall": 1.0, "f1": pytest.approx(2 / 3), "support": 1},
        {"class_index": 2, "precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0},
    ]


def test_confusion_rows_are_true_classes():
    y = np.array([0, 0, 1, 2])
    matrix = metrics.confusion(y, one_hot_probs(np.array([0, 2, 1, 2]), 3), 3)
    assert matrix == [{"counts": [1, 0, 1]}, {"counts": [0, 1, 0]}, {"counts": [0, 0, 1]}]
    assert all(type(v) is int for row in matrix for v in row["counts"])


def test_predictions_travel_as_float32_log_probabilities_checked_against_their_split():
    logprobs = np.log(one_hot_probs(np.array([0, 1, 2]), 3))
    encoded = metrics.encode(logprobs)
    assert np.allclose(metrics.decode(encoded, 3, 3, "val"), logprobs, atol=1e-6)
    for examples, classes in ((4, 3), (3, 2)):
        with pytest.raises(ValueError, match=r"val: expected predictions of shape"):
            metrics.decode(encoded, examples, classes, "val")
    with pytest.raises(ValueError, match="not all finite"):
        metrics.decode(metrics.encode(np.full((3, 3), np.nan)), 3, 3, "val")


@pytest.mark.parametrize("examples, classes", [(1, 1), (2, 3), (6000, 10), (5000, 100)])
def test_the_size_of_encoded_predictions_is_known_before_they_are_sent(examples, classes):
    assert len(metrics.encode(np.zeros((examples, classes)))["data"]) == metrics.encoded_bytes(examples, classes)


def test_a_score_is_the_models_own_and_several_seeds_score_as_one_model():
    y = np.array([0, 1, 2, 0])
    # Each seed gets a different example wrong; their mean probability gets all four right.
    a = np.log([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.6, 0.1, 0.3], [0.9, 0.05, 0.05]])
    b = np.log([[0.8, 0.1, 0.1], [0.5, 0.4, 0.1], [0.1, 0.1, 0.8], [0.6, 0.3, 0.1]])
    c = np.log([[0.9, 0.05, 0.05], [0.2, 0.7, 0.1], [0.1, 0.2, 0.7], [0.3, 0.6, 0.1]])
    one = metrics.score(y, [a], 3, "val", full=False)
    assert one["val_accuracy"] == 0.75
    assert one["val_loss"] == pytest.approx(-np.mean([a[0, 0], a[1, 1], a[2, 2], a[3, 0]]))
    assert metrics.score(y, [a, b, c], 3, "test", full=False)["test_accuracy"] == 1
    full = metrics.score(y, [a], 3, "val", full=True)
    assert full["metrics"]["val_accuracy"] == 0.75 and len(full["confusion_matrix"]) == 3
    # Claiming more than certainty buys nothing: probabilities are renormalised first.
    inflated = metrics.score(y, [a + 5], 3, "val", full=False)
    assert inflated["val_loss"] == pytest.approx(one["val_loss"])


def test_a_full_score_says_which_examples_it_got_right_one_bit_each_in_the_splits_order():
    # Nine examples, so the bits fill one byte and start a second: right on 0, 2, 3 and 8.
    y = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2])
    predicted = np.array([0, 2, 2, 0, 0, 0, 1, 0, 2])
    full = metrics.score(y, [np.log(one_hot_probs(predicted, 3))], 3, "val", full=True)
    bits = np.frombuffer(base64.b64decode(full["correct"]), dtype=np.uint8)
    assert list(bits) == [0b00001101, 0b00000001]
    assert np.unpackbits(bits, bitorder="little")[:9].mean() == full["metrics"]["val_accuracy"]


def test_regression_scores_in_the_targets_units_with_their_sampling_errors():
    y = np.array([1.0, 2.0, 3.0, 4.0])
    predicted = np.array([[1.0], [2.0], [5.0], [4.0]])
    quick = metrics.score_regression(y, [predicted], "val", False)
    assert quick["val_rmse"] == pytest.approx(1.0) and quick["val_mae"] == pytest.approx(0.5)
    assert quick["val_loss"] == pytest.approx(1.0) and quick["val_r2"] == pytest.approx(1 - 4 / 5)
    assert not any(k.endswith("_se") for k in quick)
    full = metrics.score_regression(y, [predicted], "test", True)["metrics"]
    # Squared errors 0, 0, 4, 0: their standard error is 2 / sqrt(4), halved over RMSE 1 by the delta method.
    assert full["test_rmse_se"] == pytest.approx(0.5) and full["test_mae_se"] == pytest.approx(0.5)
    # Seeds average into one model; a constant target leaves R^2 out rather than dividing by zero.
    two = metrics.score_regression(y, [predicted, np.array([[1.0], [2.0], [1.0], [4.0]])], "val", False)
    assert two["val_rmse"] == 0.0 and two["val_r2"] == 1.0
    assert "val_r2" not in metrics.score_regression(np.ones(3), [np.zeros((3, 1))], "val", False)


def test_bits_per_byte_count_rows_and_mix_seeds_per_byte():
    uniform = np.full((3, 4), np.log(1 / 256))
    quick = metrics.score_text([uniform], "val", False)
    assert quick["val_bits_per_byte"] == pytest.approx(8.0) and quick["val_perplexity"] == pytest.approx(256)
    assert quick["val_loss"] == pytest.approx(np.log(256)) and not any(k.endswith("_se") for k in quick)
    # Rows of 1 and 3 bits: the error counts the two rows, not their eight bytes.
    rows = np.log2(np.array([[0.5] * 4, [0.125] * 4])) * np.log(2)
    full = metrics.score_text([rows], "test", True)["metrics"]
    assert full["test_bits_per_byte"] == pytest.approx(2.0)
    assert full["test_bits_per_byte_se"] == pytest.approx(np.std([1, 3], ddof=1) / np.sqrt(2))
    # Two seeds are one model that mixes them: p = (1 + 0.25) / 2 per byte.
    mixed = metrics.score_text([np.zeros((1, 2)), np.full((1, 2), np.log(0.25))], "val", False)
    assert mixed["val_bits_per_byte"] == pytest.approx(-np.log2(0.625))
