"""Tuned scikit-learn baselines for the regression benchmark (bench/regression-bench.sh).

Loads the dataset through the runner's own loader (gpu-runner/python/datasets.py), so the
baselines train and test on the swarm's exact train and test split, then spends the same wall
time tuning each of HistGradientBoostingRegressor and MLPRegressor with Optuna (TPE, seeded;
half the time each), choosing on the validation split the swarm's runner carves out of the
training split, refits the pick on the whole training split and scores it once on the test split.
Runs in the bench venv (optuna and scikit-learn: bench/tasks-series.sh makes it).

    bench/out/venv-optuna/bin/python bench/regression_baseline.py --dataset diabetes --seconds 180
    bench/out/venv-optuna/bin/python bench/regression_baseline.py --dataset csv --data /tmp/friedman.csv --target y --seconds 180 --seed 1

Prints one JSON document: per model, test RMSE, MAE and R², the configurations tried and the pick.
"""

import argparse
import json
import math
import os
import sys
import time

import optuna
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


def gbm(trial, seed):
    return HistGradientBoostingRegressor(
        learning_rate=trial.suggest_float("learning_rate", 1e-2, 0.3, log=True),
        max_leaf_nodes=trial.suggest_categorical("max_leaf_nodes", [7, 15, 31, 63]),
        min_samples_leaf=trial.suggest_categorical("min_samples_leaf", [5, 10, 20, 40]),
        l2_regularization=trial.suggest_float("l2_regularization", 1e-4, 1.0, log=True),
        max_iter=trial.suggest_categorical("max_iter", [100, 200, 400, 800]), random_state=seed)


def mlp(trial, seed):
    width = trial.suggest_categorical("width", [32, 64, 128, 256])
    net = MLPRegressor(hidden_layer_sizes=(width,) * trial.suggest_int("layers", 1, 3),
                       alpha=trial.suggest_float("alpha", 1e-5, 1e-1, log=True),
                       learning_rate_init=trial.suggest_float("learning_rate_init", 1e-4, 1e-2, log=True),
                       batch_size=trial.suggest_categorical("batch_size", [32, 64, 200]),
                       max_iter=500, early_stopping=True, random_state=seed)
    # Standardised inputs and target, as the swarm's trainer has them.
    return TransformedTargetRegressor(make_pipeline(StandardScaler(), net), transformer=StandardScaler())


def search(make, seconds, x_fit, y_fit, x_val, y_val, seed):
    """The model of the best trial of an Optuna study of `seconds`, and every trial's validation RMSE and params."""
    models = {}

    def objective(trial):
        model = make(trial, seed)
        model.fit(x_fit, y_fit)
        models[trial.number] = model
        return math.sqrt(mean_squared_error(y_val, model.predict(x_val)))

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="minimize", sampler=optuna.samplers.TPESampler(seed=seed))
    study.optimize(objective, timeout=seconds)
    tried = [{"val_rmse": t.value, "params": t.params} for t in study.trials if t.value is not None]
    return models[study.best_trial.number], tried


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--data")
    parser.add_argument("--target")
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--seed", type=int, default=0, help="Optuna's sampler and the models' random_state")
    args = parser.parse_args()
    raw = datasets.load(spec(args))
    split = datasets.split(raw, spec(args))
    x, y = raw.x_train.reshape(len(raw.x_train), -1), raw.y_train
    x_test, y_test = raw.x_test.reshape(len(raw.x_test), -1), raw.y_test
    out = {"dataset": args.dataset, "data": args.data, "n_train": int(len(split.train)), "n_val": int(len(split.val)),
           "n_test": int(len(y_test)), "seconds_each": args.seconds / 2, "seed": args.seed, "tuner": f"optuna {optuna.__version__} TPE", "models": {}}
    for name, make in (("hist_gradient_boosting", gbm), ("mlp_regressor", mlp)):
        t0 = time.monotonic()
        pick, tried = search(make, args.seconds / 2, x[split.train], y[split.train], x[split.val], y[split.val], args.seed)
        pick.fit(x, y)
        predicted = pick.predict(x_test)
        out["models"][name] = {
            "test_rmse": math.sqrt(mean_squared_error(y_test, predicted)), "test_mae": mean_absolute_error(y_test, predicted),
            "test_r2": r2_score(y_test, predicted), "val_rmse_of_pick": min(t["val_rmse"] for t in tried),
            "configs_tried": len(tried), "pick": min(tried, key=lambda t: t["val_rmse"])["params"], "seconds": time.monotonic() - t0,
        }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
