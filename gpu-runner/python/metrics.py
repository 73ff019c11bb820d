"""Classification metrics from predicted probabilities, via sklearn.metrics,
regression metrics from predicted values, and a language model's bits per byte
from the log-probabilities it gave each next byte, computed by the referee
(referee.py) from the predictions a job returns.

Validation sets carved from small subsets can miss classes entirely, so the
ranking metrics (ROC-AUC, PR-AUC) are averaged over the classes that are
present with both positives and negatives, and left out when there are none:
a NaN must never reach the wire.
"""

import base64
import math

import numpy as np


def _sklearn_metrics():
    # Imported when the referee scores: the trainer imports this module for encode() alone, and
    # scikit-learn would cost every zygote (one per runner slot) 1.5 s of CPU at start.
    from sklearn import metrics

    return metrics


def _ranking(y_true, probs, score):
    values = []
    for c in np.unique(y_true):
        positives = y_true == c
        if 0 < positives.sum() < len(y_true):
            values.append(score(positives, probs[:, c]))
    return float(np.mean(values)) if values else None


def summary(y_true, probs, loss, prefix):
    """Scalar metrics named `<prefix>_<metric>` (prefix val or test)."""
    skm = _sklearn_metrics()
    y_pred = probs.argmax(axis=1)
    out = {
        "accuracy": skm.accuracy_score(y_true, y_pred),
        "loss": loss,
        "f1_macro": skm.f1_score(y_true, y_pred, average="macro", zero_division=0),
        "f1_weighted": skm.f1_score(y_true, y_pred, average="weighted", zero_division=0),
        "precision_macro": skm.precision_score(y_true, y_pred, average="macro", zero_division=0),
        "recall_macro": skm.recall_score(y_true, y_pred, average="macro", zero_division=0),
        "roc_auc": _ranking(y_true, probs, skm.roc_auc_score),
        "pr_auc": _ranking(y_true, probs, skm.average_precision_score),
    }
    return {f"{prefix}_{k}": float(v) for k, v in out.items() if v is not None and math.isfinite(v)}


def per_class(y_true, probs, num_classes):
    labels = list(range(num_classes))
    precision, recall, f1, support = _sklearn_metrics().precision_recall_fscore_support(
        y_true, probs.argmax(axis=1), labels=labels, zero_division=0)
    return [{"class_index": c, "precision": float(precision[c]), "recall": float(recall[c]),
             "f1": float(f1[c]), "support": int(support[c])} for c in labels]


def confusion(y_true, probs, num_classes):
    matrix = _sklearn_metrics().confusion_matrix(y_true, probs.argmax(axis=1), labels=list(range(num_classes)))
    return [{"counts": [int(v) for v in row]} for row in matrix]


def encode(logprobs):
    """A job's predictions on the wire: log-probabilities [examples, classes], float32, base64."""
    array = np.ascontiguousarray(logprobs, dtype=np.float32)
    return {"shape": list(array.shape), "data": base64.b64encode(array.tobytes()).decode("ascii")}


def encoded_bytes(examples, num_classes):
    """How long `encode`'s text is for this many predictions (base64 of float32)."""
    return 4 * math.ceil(examples * num_classes * 4 / 3)


def decode(encoded, examples, num_classes, what):
    """The array `encode` made, checked against the split it claims to predict (ValueError if not)."""
    try:
        array = np.frombuffer(base64.b64decode(encoded["data"], validate=True), dtype=np.float32)
        array = array.reshape(examples, num_classes)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{what}: expected predictions of shape [{examples}, {num_classes}]: {exc}") from exc
    if not np.isfinite(array).all():
        raise ValueError(f"{what}: the predictions are not all finite")
    return array.astype(np.float64)


def score(y_true, logprobs, num_classes, prefix, full):
    """Metrics of one seed's predictions, or of several seeds' as one model (mean probability).

    Probabilities are renormalised: the job's numbers are the model's claims, and a
    claim of more than certainty must not buy a lower loss.
    """
    probs = np.mean([np.exp(lp) for lp in logprobs], axis=0)
    probs /= np.maximum(probs.sum(axis=1, keepdims=True), 1e-300)
    loss = float(-np.mean(np.log(np.maximum(probs[np.arange(len(y_true)), y_true], 1e-30))))
    if not full:
        accuracy = float((probs.argmax(axis=1) == y_true).mean())
        return {f"{prefix}_accuracy": accuracy, f"{prefix}_loss": loss}
    return {"metrics": summary(y_true, probs, loss, prefix), "per_class": per_class(y_true, probs, num_classes),
            "confusion_matrix": confusion(y_true, probs, num_classes), "correct": correct_bits(y_true, probs)}


def correct_bits(y_true, probs):
    """Which examples the predictions got right, one bit each in the split's order (least significant
    bit first), base64: two trials scored on the same examples are compared pair by pair
    (core/ranking.ts hypothesisOutcome), which resolves a smaller change than their accuracies alone."""
    bits = np.packbits(probs.argmax(axis=1) == y_true, bitorder="little")
    return base64.b64encode(bits.tobytes()).decode("ascii")


def score_regression(y_true, predictions, prefix, full):
    """RMSE, MAE and R^2 of one seed's predicted values, or of several seeds' as one model (their mean).

    Every seed is scored on the same examples, so the spread between seeds holds none of the
    error of having drawn them: `full` adds `<metric>_se`, that sampling error of RMSE and MAE
    (the delta method for RMSE), which gpu-runner/stats.ts adds to the seed spread as it does
    the binomial error of an accuracy. R^2 is left undefined for a constant target.
    """
    values = np.mean(predictions, axis=0)[:, 0]
    errors = values - y_true
    n = len(y_true)
    squared = errors ** 2
    absolute = np.abs(errors)
    mse = float(squared.mean())
    rmse = math.sqrt(mse)
    out = {"rmse": rmse, "mae": float(absolute.mean()), "loss": mse}
    spread = float(np.sum((y_true - y_true.mean()) ** 2))
    if spread > 0:
        out["r2"] = 1.0 - float(squared.sum()) / spread
    if full and n > 1:
        out["rmse_se"] = float(squared.std(ddof=1)) / math.sqrt(n) / (2 * rmse) if rmse > 0 else 0.0
        out["mae_se"] = float(absolute.std(ddof=1)) / math.sqrt(n)
    named = {f"{prefix}_{k}": float(v) for k, v in out.items() if math.isfinite(v)}
    return {"metrics": named} if full else named


def score_text(logprobs, prefix, full):
    """Bits per byte of one seed's log-probabilities of each next byte [rows, positions], or of
    several seeds' as one model (per byte, their mean probability: the mixture of the models).

    Perplexity is per byte. `full` adds `bits_per_byte_se`, the sampling error of the rows
    drawn: bytes within a row are not independent, so it counts rows, not bytes.
    """
    probs = np.mean([np.exp(lp) for lp in logprobs], axis=0)
    bits = -np.log2(np.maximum(probs, 1e-30))
    per_row = bits.mean(axis=1)
    bpb = float(per_row.mean())
    out = {"bits_per_byte": bpb, "loss": bpb * math.log(2), "perplexity": 2.0 ** bpb}
    if full and len(per_row) > 1:
        out["bits_per_byte_se"] = float(per_row.std(ddof=1)) / math.sqrt(len(per_row))
    named = {f"{prefix}_{k}": float(v) for k, v in out.items() if math.isfinite(v)}
    return {"metrics": named} if full else named
