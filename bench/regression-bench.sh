#!/usr/bin/env bash
# Regression benchmark: the swarm's built-in brain against tuned scikit-learn baselines
# (bench/regression_baseline.py: HistGradientBoostingRegressor and MLPRegressor, a random search
# each), one after the other on this machine, on the same train/test split and the same wall time.
#
#   bash bench/regression-bench.sh [MINUTES]        (default 3)
#
# Data shipped or generated here, nothing fetched: scikit-learn's diabetes (442 rows, from the
# scikit-learn wheel) and Friedman #1 (scikit-learn's make_friedman1, 5,000 rows, noise 1.0,
# written to a CSV). Writes bench/results/regression-<commit>-<minutes>min.json.
set -euo pipefail
cd "$(dirname "$0")/.."
minutes="${1:-3}"
commit="$(git rev-parse --short HEAD)"
out="bench/results/regression-${commit}-${minutes}min.json"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

.venv/bin/python - "$tmp/friedman.csv" <<'PY'
import sys
import numpy as np
from sklearn.datasets import make_friedman1
x, y = make_friedman1(n_samples=5000, n_features=10, noise=1.0, random_state=0)
np.savetxt(sys.argv[1], np.column_stack([x, y]), delimiter=",", fmt="%.6f",
           header=",".join([f"x{i}" for i in range(10)] + ["y"]), comments="")
PY

run_case() {
  local name="$1" goal="$2"; shift 2
  local load_before; load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
  local t0; t0="$(date +%s)"
  ./research-agent launch --goal "$goal" --time-budget "${minutes}m" --no-research --workspace "$tmp/ws-$name" --json \
    > "$tmp/$name-swarm.json" 2> "$tmp/$name-swarm.log" || true
  local swarm_s=$(( $(date +%s) - t0 ))
  .venv/bin/python bench/regression_baseline.py "$@" --seconds "$(( minutes * 60 ))" > "$tmp/$name-sklearn.json"
  .venv/bin/python - "$tmp/$name-swarm.json" "$tmp/$name-sklearn.json" "$name" "$goal" "$swarm_s" "$load_before" "$(cut -d' ' -f1-3 /proc/loadavg)" > "$tmp/$name.json" <<'PY'
import json, sys
swarm_out, sklearn_out, name, goal, seconds, load_before, load_after = sys.argv[1:]
swarm = json.loads(open(swarm_out).read().strip().splitlines()[-1])
report = json.load(open(swarm["report"].replace(".md", ".json")))
best = next(t for t in report["trials"] if t["best"])
results = json.load(open(swarm["report"].replace("report.md", "experiments/" + best["trial_id"] + "/results.json")))
print(json.dumps({"case": name, "goal": goal, "swarm": {
    "status": swarm["status"], "trials": swarm["trials"], "wall_s": int(seconds), "best_trial": best["trial_id"],
    "val_rmse": best["val_accuracy"], "test_rmse": swarm["best_trial"].get("test_rmse"),
    "ensemble_test_rmse": swarm["best_trial"].get("ensemble_test_rmse"), "params": swarm["best_trial"].get("params"),
    "seeds": best["num_seeds"], "hypothesis": best["hypothesis"]},
    "sklearn": json.load(open(sklearn_out)), "load_before": load_before, "load_after": load_after}))
PY
}

run_case diabetes "diabetes: minimise rmse" --dataset diabetes
run_case friedman1 "csv:$tmp/friedman.csv target=y: minimise rmse" --dataset csv --data "$tmp/friedman.csv" --target y

.venv/bin/python - "$tmp/diabetes.json" "$tmp/friedman1.json" "$minutes" "$commit" > "$out" <<'PY'
import json, os, sys
cases = [json.load(open(p)) for p in sys.argv[1:3]]
print(json.dumps({"commit": sys.argv[4], "minutes": float(sys.argv[3]), "cpus": os.cpu_count(), "cases": cases}, indent=2))
PY
echo "wrote $out"
.venv/bin/python - "$out" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for c in doc["cases"]:
    s, m = c["swarm"], c["sklearn"]["models"]
    print(f'{c["case"]}: swarm test RMSE {s["test_rmse"]:.3f} (val {s["val_rmse"]["mean"]:.3f}, 95% CI {s["val_rmse"]["ci_95"][0]:.3f}-{s["val_rmse"]["ci_95"][1]:.3f}, {s["seeds"]} seeds, {s["trials"]} trials, {s["status"]}); '
          + "; ".join(f'{k} test RMSE {v["test_rmse"]:.3f} ({v["configs_tried"]} configs)' for k, v in m.items()))
PY
