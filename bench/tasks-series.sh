#!/usr/bin/env bash
# A series per task: for each task case and each seed, the swarm's launch (--seed S: its planner's
# draws and its trials' training seeds) and then its peer with the same seed and wall time, back
# to back on this machine and on the same files. Each case is one row of CASES below: its data
# (generated here, nothing fetched), its goal and budget, and its peer's command.
#
#   bash bench/tasks-series.sh [--tasks friedman,classes] [--seeds 0,1,2]    (cases: friedman, classes, digits, signals, lm, fmnist)
#
# Cases (the peers of the tables: scikit-learn's histogram gradient boosting and MLP, each tuned by
# Optuna's TPE for half the time, bench/tabular_baseline.py; of the images and the signals: a CNN
# tuned by Optuna's TPE with median pruning for the whole time, the best completed trial scored
# once on the test split, bench/optuna_baseline.py; of the text, bench/lm_baseline.py: a
# Kneser-Ney byte n-gram (its order and discount picked on validation) and a hand-written
# byte-level transformer and GRU (each at three learning rates, the pick by validation), each
# scored once on the test split; every peer on the runner's own train, validation and test split):
#   friedman  make_friedman1 (3,000 rows, 8 features, noise 1.0, random_state 0) as a CSV,
#             "minimise rmse", 4 minutes
#   classes   make_classification (3,000 rows, 20 features of which 8 informative and 4 redundant,
#             4 classes, class_sep 0.8, 2% of labels flipped, random_state 0) as a CSV,
#             "maximise accuracy", 4 minutes
#   digits    scikit-learn's 8x8 digits as the runner loads them (its fixed 20% test carve-out),
#             "maximise accuracy", 3 minutes; the peer's space a BN-CNN of one or two poolings
#   signals   bench/signals.py --hard (3,000 training and 1,000 test sequences of 80 steps, twelve
#             classes, each an ordered pair of shapes, data seed 0) as train.csv and test.csv,
#             "maximise accuracy", 4 minutes; the peer's space a 1-D CNN
#   lm        the first 1,000,000 bytes of the King James Bible (bench/lm-corpus.sh, Debian's
#             bible-kjv), a byte-level language model, "minimise bits per byte", 4 minutes
#   fmnist    Fashion-MNIST as the runner loads it, "maximise accuracy", 10 minutes; the peer's
#             space the README series' (bench/optuna_baseline.py's ImageSpace)
#
# Pairs go to bench/out/tasks-<commit>/<case>-<seed>.json (a pair done before is kept, so a series
# cut short resumes); the series, with the machine's fingerprint (bench/machine.py), to
# bench/results/tasks-series-<commit>.json. The peers run in bench/out/venv-optuna (made here when
# missing: torch 2.13, Optuna 5, scikit-learn).
set -euo pipefail
cd "$(dirname "$0")/.."
tasks="friedman,classes"
seeds="0,1,2"
while [ $# -gt 0 ]; do
  case "$1" in
    --tasks) tasks="$2"; shift 2 ;;
    --seeds) seeds="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set /{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "tasks-series: unknown argument $1 (see --help)" >&2; exit 1 ;;
  esac
done
commit="$(git rev-parse --short HEAD)"
out="bench/out/tasks-$commit"
data="$out/data"
mkdir -p "$data"
load() { cut -d' ' -f1-3 /proc/loadavg; }

venv=bench/out/venv-optuna
if ! "$venv/bin/python" -c "import optuna, sklearn, torch" 2> /dev/null; then
  echo "tasks-series: making $venv (torch 2.13, Optuna 5, scikit-learn)" >&2
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check torch==2.13.0 optuna==5.0.0 numpy scipy scikit-learn > "$out/venv.log" 2>&1
fi

# CASES: name | minutes | data (a file or folder in $data that <name>_data makes; none: the runner has
# it) | goal (DATA is the case's data) | peer script and arguments (DATA, SECONDS, and OUT: a file for
# the peer's whole record, trials included)
friedman_data() {
  "$venv/bin/python" - "$1" <<'PY'
import sys
import numpy as np
from sklearn.datasets import make_friedman1
x, y = make_friedman1(n_samples=3000, n_features=8, noise=1.0, random_state=0)
np.savetxt(sys.argv[1], np.column_stack([x, y]), delimiter=",", fmt="%.6f",
           header=",".join([f"x{i}" for i in range(8)] + ["y"]), comments="")
PY
}
classes_data() {
  "$venv/bin/python" - "$1" <<'PY'
import sys
import numpy as np
from sklearn.datasets import make_classification
x, y = make_classification(n_samples=3000, n_features=20, n_informative=8, n_redundant=4, n_classes=4,
                           class_sep=0.8, flip_y=0.02, random_state=0)
np.savetxt(sys.argv[1], np.column_stack([x, y]), delimiter=",", fmt=["%.6f"] * 20 + ["%d"],
           header=",".join([f"x{i}" for i in range(20)] + ["y"]), comments="")
PY
}
signals_data() {
  # Written aside and moved into place, so that a folder cut short is never taken for the data.
  rm -rf "$1.partial"
  "$venv/bin/python" bench/signals.py "$1.partial" --hard --train 3000 --test 1000 --seed 0 && mv "$1.partial" "$1"
}
lm_data() {
  bash bench/lm-corpus.sh "$1.full" > /dev/null && head -c 1000000 "$1.full" > "$1.partial" && mv "$1.partial" "$1"
}
# The CNN peers keep back 5 s, not optuna_baseline.py's 20: their test split is scored in well under a second.
CASES=(
  "friedman|4|friedman.csv|csv:DATA target=y: minimise rmse|bench/tabular_baseline.py --task regression --data DATA --target y --seconds SECONDS"
  "classes|4|classes.csv|csv:DATA target=y: maximise accuracy|bench/tabular_baseline.py --task classification --data DATA --target y --seconds SECONDS"
  "digits|3||digits: maximise accuracy|bench/optuna_baseline.py --dataset digits --budget-s SECONDS --reserve-s 5 --out OUT"
  "signals|4|signals|signal:DATA target=label: maximise accuracy|bench/optuna_baseline.py --dataset signal --data-dir DATA --target label --budget-s SECONDS --reserve-s 5 --out OUT"
  "lm|4|lm.txt|text:DATA: minimise bits per byte|bench/lm_baseline.py DATA --seconds SECONDS"
  "fmnist|10||fashion-mnist: maximise accuracy|bench/optuna_baseline.py --budget-s SECONDS --out OUT"
)

run_pair() {
  local name="$1" minutes="$2" file="${3:+$data/$3}" goal="$4" peer="$5" seed="$6"
  local pair="$out/$name-$seed.json"
  [ -f "$pair" ] && { echo "tasks-series: $name seed $seed done before, kept" >&2; return 0; }
  [ -z "$file" ] || [ -e "$file" ] || "${name}_data" "$file"
  goal="${goal//DATA/$file}"
  # OUT ends in .jsonl so that the summary below, which reads the series' *.json, passes it by.
  peer="${peer//DATA/$file}"; peer="${peer//SECONDS/$((minutes * 60))}"; peer="${peer//OUT/$out/$name-$seed.peer.jsonl}"
  local ws="$out/ws-$name-$seed" before t0 swarm_s peer_before peer_t0
  echo "tasks-series: $name seed $seed: launch --goal \"$goal\" --time-budget ${minutes}m ($(date -u +%H:%M:%S))" >&2
  before="$(load)"; t0="$(date +%s)"
  ./research-agent launch --goal "$goal" --time-budget "${minutes}m" --seed "$seed" --no-research --workspace "$ws" --json \
    > "$out/$name-$seed.swarm.json" 2> "$out/$name-$seed.swarm.log" || true
  swarm_s=$(( $(date +%s) - t0 ))
  # How the run's edits came out by the report's rule (bench/run-facts.ts edits), read before the peer runs.
  local run_id
  run_id="$(node -e 'const l = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").pop(); try { console.log(JSON.parse(l).run_id ?? "") } catch { console.log("") }' "$out/$name-$seed.swarm.json")"
  if [ -n "$run_id" ]; then npx tsx bench/run-facts.ts "$ws" "$run_id" > "$out/$name-$seed.facts.json" 2>> "$out/$name-$seed.swarm.log" || echo '{}' > "$out/$name-$seed.facts.json"
  else echo '{}' > "$out/$name-$seed.facts.json"; fi
  echo "tasks-series: $name seed $seed: $peer --seed $seed ($(date -u +%H:%M:%S))" >&2
  peer_before="$(load)"; peer_t0="$(date +%s)"
  # shellcheck disable=SC2086 # the peer's arguments are words
  "$venv/bin/python" $peer --seed "$seed" > "$out/$name-$seed.peer.json" 2> "$out/$name-$seed.peer.log"
  "$venv/bin/python" - "$out/$name-$seed.swarm.json" "$out/$name-$seed.peer.json" "$out/$name-$seed.facts.json" > "$pair" <<PY
import json, sys
lines = open(sys.argv[1]).read().strip().splitlines()
swarm = json.loads(lines[-1]) if lines else {"status": "no result"}
swarm["edits"] = json.load(open(sys.argv[3])).get("edits")
print(json.dumps({"case": "$name", "seed": $seed, "goal": """$goal""", "minutes": $minutes,
                  "swarm": {"command": "launch --goal ... --time-budget ${minutes}m --seed $seed --no-research", "wall_s": $swarm_s,
                            "load_before": "$before", **swarm},
                  "peer": {"command": "$peer --seed $seed", "wall_s": $(( $(date +%s) - peer_t0 )), "load_before": "$peer_before",
                           **json.load(open(sys.argv[2]))},
                  "load_after": "$(load)"}))
PY
}

IFS=, read -r -a seed_list <<< "$seeds"
IFS=, read -r -a task_list <<< "$tasks"
for task in "${task_list[@]}"; do
  row=""
  for c in "${CASES[@]}"; do [ "${c%%|*}" = "$task" ] && row="$c"; done
  [ -n "$row" ] || { echo "tasks-series: no case $task (cases: $(printf '%s ' "${CASES[@]%%|*}"))" >&2; exit 1; }
  IFS='|' read -r name minutes file goal peer <<< "$row"
  for seed in "${seed_list[@]}"; do run_pair "$name" "$minutes" "$file" "$goal" "$peer" "$seed"; done
done

result="bench/results/tasks-series-$commit.json"
.venv/bin/python - "$out" "$commit" "$result" "$tasks" "$seeds" <<'PY'
import glob, json, os, statistics, sys, datetime
sys.path.insert(0, "bench")
import machine
out, commit, result, tasks, seeds = sys.argv[1:]
pairs = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(out, "*-[0-9]*.json"))) if not p.endswith((".swarm.json", ".peer.json", ".facts.json"))]
def facts(pair):
    path = os.path.join(out, f'{pair["case"]}-{pair["seed"]}.facts.json')
    return json.load(open(path)) if os.path.exists(path) else {}
def spread(values):
    values = [v for v in values if v is not None]
    return {"mean": statistics.mean(values), "min": min(values), "max": max(values), "n": len(values)} if values else None
cases = {}
for name in tasks.split(","):
    mine = [p for p in pairs if p["case"] == name]
    metric = (mine[0]["swarm"].get("metric") or "val_rmse").removeprefix("val_") if mine else "rmse"
    best = lambda p: (p["swarm"].get("best_trial") or {})
    cases[name] = {
        "metric": metric, "lower_is_better": metric in ("rmse", "mae", "bpb", "bits_per_byte", "loss"),
        "swarm_test": spread([best(p).get(f"test_{metric}") for p in mine]),
        "swarm_ensemble_test": spread([best(p).get(f"ensemble_test_{metric}") for p in mine]),
        "swarm_seconds": spread([p["swarm"].get("seconds") for p in mine]),
        "swarm_ends": [p["swarm"].get("reason") for p in mine],
        # The runs' edits by the report's rule (bench/run-facts.ts), summed: judged, supported, refuted, inconclusive, paired, above_probes.
        "swarm_edits": {k: sum((p["swarm"].get("edits") or {}).get(k, 0) for p in mine)
                        for k in ("judged", "supported", "refuted", "inconclusive", "paired", "above_probes")},
        # The planner's whole-run promises (agents/planner/promises.ts runPromiseBreaks, by bench/run-facts.ts), each run's breaks.
        "promises_broken": {str(p["seed"]): facts(p).get("promises_broken") for p in mine},
        "peers_test": {m: spread([p["peer"]["models"][m][f"test_{metric}"] for p in mine]) for m in (mine[0]["peer"].get("models", {}) if mine else {})},
        "pairs": mine,
    }
doc = {"commit": commit, "command": f"bash bench/tasks-series.sh --tasks {tasks} --seeds {seeds}",
       "summarised_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
       "machine": machine.fingerprint(), "cases": cases}
json.dump(doc, open(result, "w"), indent=2)
for name, c in cases.items():
    f = lambda s: "n/a" if not s else f'{s["mean"]:.3f} ({s["min"]:.3f}-{s["max"]:.3f}, n={s["n"]})'
    print(f'{name}: swarm test {c["metric"]} {f(c["swarm_test"])}, ensemble {f(c["swarm_ensemble_test"])}; '
          + "; ".join(f"{m} {f(s)}" for m, s in c["peers_test"].items())
          + "".join(f"; promises broken in run {seed}: {'; '.join(b)}" for seed, b in c["promises_broken"].items() if b))
print(f"wrote {result}")
PY
