#!/usr/bin/env bash
# The signal task (1-D sequences, added through the task registry) against a hand-written 1-D CNN
# given the same time (bench/signal_baseline.py: three convolutions with batch norm, a global max
# over time, Adam with a cosine schedule over its seconds), back to back on this machine, on the
# same files: MNIST-1D-style signals from bench/signals.py (4,000 training and 1,000 test sequences
# of 40 steps, ten classes, data seed 0). A series: --seed 0, 1, 2 for the swarm (its planner's
# draws and its trials' training seeds) and for the baseline (its initialisation, data order and
# validation carve-out).
#
#   bash bench/signal-bench.sh [MINUTES]        (default 5)
#
# Writes bench/results/signal-<commit>-<minutes>min.json.
set -euo pipefail
cd "$(dirname "$0")/.."
minutes="${1:-5}"
commit="$(git rev-parse --short HEAD)"
out="bench/results/signal-${commit}-${minutes}min.json"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
.venv/bin/python bench/signals.py "$tmp/data" --train 4000 --test 1000 --seed 0

for seed in 0 1 2; do
  load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
  t0="$(date +%s)"
  ./research-agent launch --goal "signal:$tmp/data target=label: maximise accuracy" --time-budget "${minutes}m" --seed "$seed" \
    --no-research --workspace "$tmp/ws-$seed" --json > "$tmp/swarm-$seed.json" 2> "$tmp/swarm-$seed.log" || true
  swarm_s=$(( $(date +%s) - t0 ))
  .venv/bin/python bench/signal_baseline.py "$tmp/data" --seconds "$(( minutes * 60 ))" --seed "$seed" > "$tmp/cnn-$seed.json"
  .venv/bin/python - "$tmp/swarm-$seed.json" "$tmp/cnn-$seed.json" "$seed" "$swarm_s" "$load_before" "$(cut -d' ' -f1-3 /proc/loadavg)" > "$tmp/pair-$seed.json" <<'PY'
import json, sys
swarm_out, cnn_out, seed, seconds, load_before, load_after = sys.argv[1:]
swarm = json.loads(open(swarm_out).read().strip().splitlines()[-1])
report = json.load(open(swarm["report"].replace(".md", ".json")))
best = next(t for t in report["trials"] if t["best"])
registry = json.load(open(swarm["registry"]))
model = next(e["model_name"] for e in registry if e["trial_id"] == best["trial_id"])
print(json.dumps({"seed": int(seed), "swarm": {
    "status": swarm["status"], "trials": swarm["trials"], "wall_s": int(seconds), "best_trial": best["trial_id"], "model": model,
    "val_accuracy": best["val_accuracy"], "seeds": best["num_seeds"], "params": swarm["best_trial"].get("params"),
    "test_accuracy": swarm["best_trial"].get("test_accuracy"), "ensemble_test_accuracy": swarm["best_trial"].get("ensemble_test_accuracy")},
    "cnn": json.load(open(cnn_out)), "load_before": load_before, "load_after": load_after}))
PY
done

.venv/bin/python - "$minutes" "$commit" "$tmp"/pair-*.json > "$out" <<'PY'
import json, os, platform, statistics, sys
minutes, commit, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
pairs = [json.load(open(p)) for p in paths]
def series(values):
    return {"mean": statistics.mean(values), "min": min(values), "max": max(values)}
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
print(json.dumps({
    "commit": commit, "minutes": float(minutes), "cpus": os.cpu_count(), "cpu": cpu,
    "command": f"bash bench/signal-bench.sh {minutes}",
    "data": "bench/signals.py --train 4000 --test 1000 --seed 0 (MNIST-1D-style, 40 steps, 10 classes)",
    "swarm_test_accuracy": series([p["swarm"]["test_accuracy"] for p in pairs]),
    "swarm_ensemble_test_accuracy": series([p["swarm"]["ensemble_test_accuracy"] for p in pairs if p["swarm"]["ensemble_test_accuracy"] is not None] or [float("nan")]),
    "cnn_test_accuracy": series([p["cnn"]["test_accuracy"] for p in pairs]),
    "pairs": pairs}, indent=2))
PY
echo "wrote $out"
