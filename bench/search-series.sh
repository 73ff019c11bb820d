#!/usr/bin/env bash
# The research-power series (docs/BENCHMARKS.md, "Headline results"), at the checked-out commit,
# one run after another on this machine:
#   - open-ended 30-minute Fashion-MNIST runs with the README's defaults, --seed 0, 1, 2 (each seed
#     is another planner stream and other training seeds: swarm/run-state.ts firstSeed),
#   - the README's first command, --seed 0, 1, 2,
#   - with --warm N, the README's command again in each of the first N README runs' workspaces,
#     the same --seed: a warm start from that run (issue 37), paired with it (cold against warm),
#   - with --open-warm N, the open-ended run again in each of the first N open runs' workspaces,
#     the same --seed and minutes: a warm start from it (issue 37's 30-minute pair),
#   - with --digits-pairs N, issue 37's other data, N pairs of 5-minute digits runs, --seed i: one
#     cold, one in the workspace of README run i, whose only past is that Fashion-MNIST run,
#   - with --csv-pairs N, issue 37's misleading past, N pairs on a CSV (sklearn's 8x8 digits as a
#     table, written to bench/out/csv/): a 5-minute run cold, a 3-minute run on the same table with
#     its labels shuffled (--seed 100+i), then the 5-minute run again in that run's workspace, whose
#     only past is the lookalike: its configs are proposed first and its results weigh on the surrogate,
#   - the Optuna baseline once (bench/optuna_baseline.py: TPE + median pruning on the runner's own
#     split, the same 30 minutes),
#   - with --handwritten N, the hand-written peer N times, --seed i (bench/handwritten_resnet9.py:
#     the ResNet-9 recipe a competent user writes, on the same split, for the same 30 minutes),
#   - with --latency N, issue 39's constrained benchmark, N pairs back to back: "fashion-mnist: best
#     accuracy under --latency-ms (1) ms per image" for --latency-minutes (15) with --seed i, then Optuna's
#     study of validation accuracy with that latency as a constraint (optuna_baseline.py
#     --max-latency-ms) for the same time;
#   - with --pareto N, issue 39's benchmark, N pairs back to back: "fashion-mnist: pareto: accuracy
#     vs parameters vs latency" for --pareto-minutes (15) with --seed i, then Optuna's multi-objective
#     study of the same three over its space for the same time (optuna_baseline.py --pareto --seed i);
#     each side's front of test accuracy, parameters and latency per example, and its dominated
#     hypervolume (bench/series-summary.ts, the reference there).
# With --first I every numbered run starts at index I: a series continued at another commit runs
# only the indices it lacks (--first 2 --open 3 --open-warm 3: the third pair alone).
# Each run is kept as it ends in bench/out/series-<commit>/ (a series cut short goes on from where
# it stopped when started again), and bench/series-summary.ts writes them all, with each run's
# command, seeds, load and outcome and the planner's whole-run promises checked on its stored
# events, to bench/results/search-series-<commit>.json.
#
#   bash bench/search-series.sh [--first I] [--open N] [--readme N] [--warm N] [--open-warm N] [--digits-pairs N] [--csv-pairs N] [--optuna N] [--handwritten N] [--minutes M] [--pareto N] [--pareto-minutes M] [--latency N] [--latency-ms L] [--latency-minutes M]
#
# About 2.5 hours on two cores with the defaults. Nothing else should run beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
first=0 open=3 readme=3 warm=0 openwarm=0 digitspairs=0 csvpairs=0 optuna=1 handwritten=0 minutes=30 pareto=0 paretominutes=15 latency=0 latencyms=1 latencyminutes=15
while [ $# -gt 0 ]; do
  case "$1" in
    --first) first="$2"; shift 2 ;;
    --open) open="$2"; shift 2 ;;
    --readme) readme="$2"; shift 2 ;;
    --warm) warm="$2"; shift 2 ;;
    --open-warm) openwarm="$2"; shift 2 ;;
    --digits-pairs) digitspairs="$2"; shift 2 ;;
    --csv-pairs) csvpairs="$2"; shift 2 ;;
    --optuna) optuna="$2"; shift 2 ;;
    --handwritten) handwritten="$2"; shift 2 ;;
    --minutes) minutes="$2"; shift 2 ;;
    --pareto) pareto="$2"; shift 2 ;;
    --pareto-minutes) paretominutes="$2"; shift 2 ;;
    --latency) latency="$2"; shift 2 ;;
    --latency-ms) latencyms="$2"; shift 2 ;;
    --latency-minutes) latencyminutes="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^[^#]/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "search-series: unknown argument $1" >&2; exit 1 ;;
  esac
done
[ -z "$(git status --porcelain --untracked-files=no)" ] || echo "search-series: the working tree has changes: the runs are of $(git rev-parse --short HEAD) plus them" >&2
commit="$(git rev-parse --short HEAD)"
out="bench/out/series-$commit"
mkdir -p "$out"
bash scripts/setup.sh

load() { cut -d' ' -f1-3 /proc/loadavg; }

# One launch: its command, seed, wall time and load around it, and its --json line, in $out/NAME.json.
# In a fresh workspace of its own, or with WS=DIR in that one as it is (a warm start from its runs).
launch() {
  local name="$1" seed="$2"; shift 2
  [ -f "$out/$name.json" ] && { echo "search-series: $name done before, kept" >&2; return 0; }
  local ws="${WS:-$out/$name-workspace}"
  [ -n "${WS:-}" ] || rm -rf "$ws"
  echo "search-series: $name: research-agent launch $* --seed $seed ($(date -u +%H:%M:%S))" >&2
  local before t0 rc=0
  before="$(load)"; t0="$(date +%s.%N)"
  ./research-agent launch "$@" --seed "$seed" --workspace "$ws" --json > "$out/$name.stdout" 2> "$out/$name.log" || rc=$?
  node -e '
    const [name, seed, rc, t0, before, after, ws, stdout, ...command] = process.argv.slice(1);
    const lines = require("fs").readFileSync(stdout, "utf8").trim().split("\n");
    const launch = lines.length && lines[lines.length - 1].startsWith("{") ? JSON.parse(lines[lines.length - 1]) : null;
    process.stdout.write(JSON.stringify({ name, kind: "swarm", seed: Number(seed), command: ["./research-agent", ...command, "--seed", seed].join(" "),
      exit: Number(rc), wall_s: Date.now() / 1000 - Number(t0), load_before: before, load_after: after, workspace: ws, launch }) + "\n");
  ' "$name" "$seed" "$rc" "$t0" "$before" "$(load)" "$ws" "$out/$name.stdout" launch "$@" > "$out/$name.json"
  echo "search-series: $name: exit $rc, $(tail -c 300 "$out/$name.stdout")" >&2
}

for ((i = first; i < open; i++)); do
  launch "open-$i" "$i" --goal "fashion-mnist: maximise test accuracy" --time-budget "${minutes}m"
done
for ((i = first; i < readme; i++)); do
  launch "readme-$i" "$i" --goal "fashion-mnist: reach 90% validation accuracy"
done
for ((i = first; i < openwarm; i++)); do
  WS="$out/open-$i-workspace" launch "openwarm-$i" "$i" --goal "fashion-mnist: maximise test accuracy" --time-budget "${minutes}m"
done
for ((i = first; i < warm; i++)); do
  WS="$out/readme-$i-workspace" launch "warm-$i" "$i" --goal "fashion-mnist: reach 90% validation accuracy"
done
for ((i = first; i < digitspairs; i++)); do
  launch "digitscold-$i" "$i" --goal "digits: maximise accuracy" --time-budget 5m
  WS="$out/readme-$i-workspace" launch "digitswarm-$i" "$i" --goal "digits: maximise accuracy" --time-budget 5m
done
if [ "$csvpairs" -gt 0 ]; then
  csv="$(pwd)/bench/out/csv"
  mkdir -p "$csv"
  # The same rows twice: the real labels, and a permutation of them (the lookalike: same columns, classes and sizes).
  /usr/bin/python3 -c '
import sys, numpy as np
from sklearn.datasets import load_digits
d = load_digits()
head = ",".join([f"p{i}" for i in range(64)] + ["label"])
for name, y in (("digits.csv", d.target), ("digits-shuffled.csv", np.random.default_rng(0).permutation(d.target))):
    np.savetxt(f"{sys.argv[1]}/{name}", np.column_stack([d.data, y]), fmt="%g", delimiter=",", header=head, comments="")
' "$csv"
fi
for ((i = first; i < csvpairs; i++)); do
  launch "csvcold-$i" "$i" --goal "csv:$csv/digits.csv target=label: maximise accuracy" --time-budget 5m
  launch "csvlure-$i" "$((100 + i))" --goal "csv:$csv/digits-shuffled.csv target=label: maximise accuracy" --time-budget 3m
  WS="$out/csvlure-$i-workspace" launch "csvwarm-$i" "$i" --goal "csv:$csv/digits.csv target=label: maximise accuracy" --time-budget 5m
done

venv=bench/out/venv-optuna
if [ "$optuna" -gt 0 ] || [ "$pareto" -gt 0 ] || [ "$latency" -gt 0 ]; then
  if [ ! -x "$venv/bin/python" ]; then
    echo "search-series: making $venv (torch 2.13 as the runner's .venv has, Optuna 5)" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check torch==2.13.0 optuna==5.0.0 numpy scipy > "$out/venv-optuna.log" 2>&1
  fi
fi
# One peer's run (PYTHON SCRIPT ARGS --seed SEED: an Optuna study, or the hand-written script): its
# command, seed, wall time and load around it, and its result, in $out/NAME.json.
peer_run() {
  local name="$1" seed="$2" kind="$3" python="$4" script="$5"; shift 5
  [ -f "$out/$name.json" ] && { echo "search-series: $name done before, kept" >&2; return 0; }
  local args=("$@" --seed "$seed") before t0
  echo "search-series: $name: $script ${args[*]} ($(date -u +%H:%M:%S))" >&2
  before="$(load)"; t0="$(date +%s.%N)"
  "$python" "$script" "${args[@]}" --out "$out/$name.result.json" > /dev/null 2> "$out/$name.log"
  node -e '
    const [name, seed, kind, script, t0, before, after, result, ...args] = process.argv.slice(1);
    process.stdout.write(JSON.stringify({ name, kind, seed: Number(seed), command: [script, ...args].join(" "),
      wall_s: Date.now() / 1000 - Number(t0), load_before: before, load_after: after, result: JSON.parse(require("fs").readFileSync(result, "utf8")) }) + "\n");
  ' "$name" "$seed" "$kind" "$script" "$t0" "$before" "$(load)" "$out/$name.result.json" "${args[@]}" > "$out/$name.json"
}
peer() { local name="$1" seed="$2"; shift 2; peer_run "$name" "$seed" optuna "$venv/bin/python" bench/optuna_baseline.py "$@"; }

for ((i = first; i < optuna; i++)); do
  peer "optuna-$i" "$i" --budget-s "$((minutes * 60))"
done
# The runner's own Python (torch 2.13, as Optuna's venv has): the script needs nothing else.
for ((i = first; i < handwritten; i++)); do
  peer_run "handwritten-$i" "$i" handwritten .venv/bin/python bench/handwritten_resnet9.py --device cpu --budget-s "$((minutes * 60))"
done
for ((i = first; i < pareto; i++)); do
  launch "pareto-$i" "$i" --goal "fashion-mnist: pareto: accuracy vs parameters vs latency" --time-budget "${paretominutes}m"
  peer "optunapareto-$i" "$i" --pareto --reserve-s 60 --budget-s "$((paretominutes * 60))"
done
# Both sides' claimed models timed again alike, with nothing else running (bench/retime.py).
if [ "$pareto" -gt 0 ]; then
  "$venv/bin/python" bench/retime.py "$out" > "$out/retime.log" 2>&1 || echo "search-series: bench/retime.py failed (see $out/retime.log)" >&2
fi
for ((i = first; i < latency; i++)); do
  launch "latency-$i" "$i" --goal "fashion-mnist: best accuracy under ${latencyms} ms per image" --time-budget "${latencyminutes}m"
  peer "optunalatency-$i" "$i" --max-latency-ms "$latencyms" --budget-s "$((latencyminutes * 60))"
done

npx tsx bench/series-summary.ts "$out" "bench/results/search-series-$commit.json"
