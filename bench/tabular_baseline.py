"""Tuned scikit-learn peers for the table tasks of bench/tasks-series.sh.

Loads the dataset through the runner's own loader (gpu-runner/python/datasets.py), so the peers
train and test on the swarm's exact train, validation and test split, then spends the same wall
time tuning each of scikit-learn's histogram gradient boosting and MLP with Optuna (TPE, seeded;
half the time each), choosing on the validation split, refits the pick on the whole training
split and scores it once on the test split: RMSE, MAE and R² for a number, accuracy for classes.
Runs in the bench venv (optuna and scikit-learn: bench/tasks-series.sh makes it).

    bench/out/venv-optuna/bin/python bench/tabular_baseline.py --task regression --data /tmp/friedman.csv --target y --seconds 240 --seed 1
    bench/out/venv-optuna/bin/python bench/tabular_baseline.py --task classification --data /tmp/classes.csv --target y --seconds 240

Prints one JSON document: per model, its test metrics, the configurations tried and the pick.
"""

import argparse
import json
import math
import os
import sys
import time

import optuna
from sklearn.compose import TransformedTargetRegressor
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from sklearn.metrics import accuracy_score, mean_absolute_error, mean_squared_error, r2_score
from sklearn.neural_network import MLPClassifier, MLPRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "gpu-runner", "python"))
import datasets  # noqa: E402


def spec(args):
    return {"name": "csv", "task": args.task, "data_dir": args.data, "target_column": args.target,
            "subset": 0, "val_fraction": 0.0, "split_seed": 0, "shape": [], "num_classes": 0, "difficulty": 0.0,
            "test_subset": 0}


def gbm(trial, seed, task):
    cls = HistGradientBoostingRegressor if task == "regression" else HistGradientBoostingClassifier
    return cls(learning_rate=trial.suggest_float("learning_rate", 1e-2, 0.3, log=True),
               max_leaf_nodes=trial.suggest_categorical("max_leaf_nodes", [7, 15, 31, 63]),
               min_samples_leaf=trial.suggest_categorical("min_samples_leaf", [5, 10, 20, 40]),
               l2_regularization=trial.suggest_float("l2_regularization", 1e-4, 1.0, log=True),
               max_iter=trial.suggest_categorical("max_iter", [100, 200, 400, 800]), random_state=seed)


def mlp(trial, seed, task):
    width = trial.suggest_categorical("width", [32, 64, 128, 256])
    cls = MLPRegressor if task == "regression" else MLPClassifier
    net = cls(hidden_layer_sizes=(width,) * trial.suggest_int("layers", 1, 3),
              alpha=trial.suggest_float("alpha", 1e-5, 1e-1, log=True),
              learning_rate_init=trial.suggest_float("learning_rate_init", 1e-4, 1e-2, log=True),
              batch_size=trial.suggest_categorical("batch_size", [32, 64, 200]),
              max_iter=500, early_stopping=True, random_state=seed)
    # Standardised inputs (and a number's target), as the swarm's trainer has them.
    pipeline = make_pipeline(StandardScaler(), net)
    return TransformedTargetRegressor(pipeline, transformer=StandardScaler()) if task == "regression" else pipeline


def loss(task, y, predicted):
    """What the study minimises: a number's RMSE, or the classes' error rate."""
    return math.sqrt(mean_squared_error(y, predicted)) if task == "regression" else 1 - accuracy_score(y, predicted)


def search(make, task, seconds, x_fit, y_fit, x_val, y_val, seed):
    """The model of the best trial of an Optuna study of `seconds`, and every trial's validation loss and params."""
    models = {}

    def objective(trial):
        model = make(trial, seed, task)
        model.fit(x_fit, y_fit)
        models[trial.number] = model
        return loss(task, y_val, model.predict(x_val))

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="minimize", sampler=optuna.samplers.TPESampler(seed=seed))
    study.optimize(objective, timeout=seconds)
    tried = [{"val_loss": t.value, "params": t.params} for t in study.trials if t.value is not None]
    return models[study.best_trial.number], tried


def scores(task, y, predicted):
    if task == "regression":
        return {"test_rmse": math.sqrt(mean_squared_error(y, predicted)), "test_mae": mean_absolute_error(y, predicted),
                "test_r2": r2_score(y, predicted)}
    return {"test_accuracy": accuracy_score(y, predicted)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=["regression", "classification"], required=True)
    parser.add_argument("--data", required=True, help="the CSV, as in the swarm's csv:PATH goal")
    parser.add_argument("--target", required=True)
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--seed", type=int, default=0, help="Optuna's sampler and the models' random_state")
    args = parser.parse_args()
    raw = datasets.load(spec(args))
    split = datasets.split(raw, spec(args))
    x, y = raw.x_train.reshape(len(raw.x_train), -1), raw.y_train
    x_test, y_test = raw.x_test.reshape(len(raw.x_test), -1), raw.y_test
    out = {"task": args.task, "data": args.data, "n_train": int(len(split.train)), "n_val": int(len(split.val)),
           "n_test": int(len(y_test)), "seconds_each": args.seconds / 2, "seed": args.seed,
           "tuner": f"optuna {optuna.__version__} TPE", "models": {}}
    for name, make in (("hist_gradient_boosting", gbm), ("mlp", mlp)):
        t0 = time.monotonic()
        pick, tried = search(make, args.task, args.seconds / 2, x[split.train], y[split.train], x[split.val], y[split.val], args.seed)
        pick.fit(x, y)
        best = min(tried, key=lambda t: t["val_loss"])
        out["models"][name] = {**scores(args.task, y_test, pick.predict(x_test)), "val_loss_of_pick": best["val_loss"],
                               "configs_tried": len(tried), "pick": best["params"], "seconds": time.monotonic() - t0}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
