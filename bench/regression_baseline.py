"""Tuned scikit-learn baselines for the regression benchmark (bench/regression-bench.sh).

Loads the dataset through the runner's own loader (gpu-runner/python/datasets.py), so the
baselines train and test on the swarm's exact train and test split, then spends the same wall
time on a random search for each of HistGradientBoostingRegressor and MLPRegressor (half
each), choosing on a validation carve-out of the training split as the swarm does, refits the
pick on the whole training split and scores it once on the test split.

    .venv/bin/python bench/regression_baseline.py --dataset diabetes --seconds 180
    .venv/bin/python bench/regression_baseline.py --dataset csv --data /tmp/friedman.csv --target y --seconds 180

Prints one JSON document: per model, test RMSE, MAE and R², the configurations tried and the pick.
"""

import argparse
import json
import math
import os
import sys
import time

import numpy as np
from sklearn.compose import TransformedTargetRegressor
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.metrics import mean_absolute_error, mean_squared_error, r2_score
from sklearn.neural_network import MLPRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "gpu-runner", "python"))
import datasets  # noqa: E402


def spec(args):
    return {"name": args.dataset, "task": "regression", "data_dir": args.data or "", "target_column": args.target or "",
            "subset": 0, "val_fraction": 0.0, "split_seed": 0, "shape": [], "num_classes": 0, "difficulty": 0.0,
            "test_subset": 0}


def gbm(rng):
    return HistGradientBoostingRegressor(
        learning_rate=float(10 ** rng.uniform(-2, -0.5)), max_leaf_nodes=int(rng.choice([7, 15, 31, 63])),
        min_samples_leaf=int(rng.choice([5, 10, 20, 40])), l2_regularization=float(10 ** rng.uniform(-4, 0)),
        max_iter=int(rng.choice([100, 200, 400])), random_state=0)


def mlp(rng):
    width = int(rng.choice([32, 64, 128, 256]))
    net = MLPRegressor(hidden_layer_sizes=(width,) * int(rng.choice([1, 2, 3])), alpha=float(10 ** rng.uniform(-5, -1)),
                       learning_rate_init=float(10 ** rng.uniform(-4, -2)), max_iter=500, early_stopping=True, random_state=0)
    # Standardised inputs and target, as the swarm's trainer has them.
    return TransformedTargetRegressor(make_pipeline(StandardScaler(), net), transformer=StandardScaler())


def search(make, seconds, x_fit, y_fit, x_val, y_val, rng):
    tried, best = [], None
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline or not tried:
        model = make(rng)
        model.fit(x_fit, y_fit)
        rmse = math.sqrt(mean_squared_error(y_val, model.predict(x_val)))
        tried.append({"val_rmse": rmse, "params": {k: v for k, v in model.get_params().items() if isinstance(v, (int, float, str, tuple))}})
        if best is None or rmse < best[0]:
            best = (rmse, model)
    return best[1], tried


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--data")
    parser.add_argument("--target")
    parser.add_argument("--seconds", type=float, required=True)
    args = parser.parse_args()
    raw = datasets.load(spec(args))
    split = datasets.split(raw, spec(args))
    x, y = raw.x_train.reshape(len(raw.x_train), -1), raw.y_train
    x_test, y_test = raw.x_test.reshape(len(raw.x_test), -1), raw.y_test
    out = {"dataset": args.dataset, "data": args.data, "n_train": int(len(split.train)), "n_val": int(len(split.val)),
           "n_test": int(len(y_test)), "seconds_each": args.seconds / 2, "models": {}}
    for name, make in (("hist_gradient_boosting", gbm), ("mlp_regressor", mlp)):
        t0 = time.monotonic()
        pick, tried = search(make, args.seconds / 2, x[split.train], y[split.train], x[split.val], y[split.val], np.random.default_rng(0))
        pick.fit(x, y)
        predicted = pick.predict(x_test)
        out["models"][name] = {
            "test_rmse": math.sqrt(mean_squared_error(y_test, predicted)), "test_mae": mean_absolute_error(y_test, predicted),
            "test_r2": r2_score(y_test, predicted), "val_rmse_of_pick": min(t["val_rmse"] for t in tried),
            "configs_tried": len(tried), "seconds": time.monotonic() - t0,
        }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
