#!/usr/bin/env bash
# The GPU check: on a GPU host, the runner benchmark on CUDA (time to the first step, seeds
# 1/3/5, the seed documents' three cases, the reference CNN's and ResNet-9's epochs), then
# an open-ended research run on Fashion-MNIST for a given number of minutes, start-up
# included, with nvidia-smi sampled every second (the GPU's utilisation and memory while the
# search runs), then the peers in the same sitting, on the same GPU, data and split for the same
# minutes: Optuna (TPE + median pruning, bench/optuna_baseline.py) and the hand-written ResNet-9
# script (bench/handwritten_resnet9.py); one JSON summary. Runs from an extracted swarm pack
# (scripts/pack-swarm.sh) or a checkout; on a host without a GPU it says so and measures the CPU.
# With the defaults, about 20 minutes: more than one device call, so --skip-* splits it.
#
#   scripts/gpu-check.sh [--minutes M] [--data DIR] [--out DIR] [--workspace DIR] [--goal GOAL]
#                        [--skip-bench] [--skip-run] [--skip-optuna] [--skip-handwritten]
#                        [--optuna-wheels DIR]
#
#   --minutes M    the research run's budget, start-up and report included (default 5.5)
#   --data DIR     Fashion-MNIST's idx files (default: the pack's data/fashion-mnist, else
#                  /usr/share/datasets/fashion-mnist)
#   --out DIR      where gpu-check.json, the benchmark's JSON, the run's log and report go
#                  (default ./gpu-check-<date>)
#   --workspace DIR  the run's workspace (default OUT/workspace); its report and results are copied to OUT
#   --goal GOAL    the run's goal (default "fashion-mnist: maximise accuracy")
#   --optuna-wheels DIR  Optuna and its dependencies as wheels, unpacked into OUT for a Python
#                  that lacks Optuna (default: the pack's wheels/optuna; pack-swarm.sh --optuna)
#
# RUNNER_PYTHON names a Python with torch, numpy, scipy and scikit-learn (default: the lent
# GPU hosts' /opt/torch/.venv/bin/python3 when it exists). docs/DEPLOY.md, "The GPU check".
set -euo pipefail
HERE="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)"
MINUTES=5.5
DATA=""
OUT=""
GOAL="fashion-mnist: maximise accuracy"
WS=""
BENCH=1
RUN=1
OPTUNA=1
HANDWRITTEN=1
WHEELS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) MINUTES="$2"; shift 2 ;;
    --data) DATA="$(realpath -m "$2")"; shift 2 ;;
    --out) OUT="$(realpath -m "$2")"; shift 2 ;;
    --goal) GOAL="$2"; shift 2 ;;
    --workspace) WS="$(realpath -m "$2")"; shift 2 ;;
    --skip-bench) BENCH=0; shift ;;
    --skip-run) RUN=0; shift ;;
    --skip-optuna) OPTUNA=0; shift ;;
    --skip-handwritten) HANDWRITTEN=0; shift ;;
    --optuna-wheels) WHEELS="$(realpath -m "$2")"; shift 2 ;;
    -h|--help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-check: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

# A pack has its wrappers at its top (this script sits in its scripts/); a checkout runs TypeScript.
ROOT="$(cd "$HERE/.." && pwd)"
RESEARCH_AGENT=("$ROOT/research-agent")
if [ -x "$ROOT/runner-bench" ]; then
  RUNNER_BENCH=("$ROOT/runner-bench")
else
  RUNNER_BENCH=(node --import "$ROOT/node_modules/tsx/dist/esm/index.mjs" "$ROOT/bench/runner-bench.ts")
fi
if [ -z "${RUNNER_PYTHON:-}" ] && [ -x /opt/torch/.venv/bin/python3 ]; then export RUNNER_PYTHON=/opt/torch/.venv/bin/python3; fi
PY="${RUNNER_PYTHON:-python3}"
for d in "$DATA" "$ROOT/data/fashion-mnist" /usr/share/datasets/fashion-mnist; do
  if [ -n "$d" ] && [ -d "$d" ]; then DATA="$d"; break; fi
done
[ -d "$DATA" ] || { echo "gpu-check: no Fashion-MNIST idx files: pass --data DIR" >&2; exit 2; }
OUT="${OUT:-$PWD/gpu-check-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$OUT"
say() { echo "gpu-check: $*" >&2; }

GPU="$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1 || true)"
if [ -n "$GPU" ]; then say "GPU: $GPU"; else say "no GPU found (nvidia-smi lists none): measuring the CPU"; fi
say "python: $PY ($("$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -1))"

if [ "$BENCH" = 1 ]; then
  say "runner benchmark (about 3 minutes on a GPU) ..."
  t0=$(date +%s.%N)
  "${RUNNER_BENCH[@]}" --short --fashion-dir "$DATA" --out "$OUT/runner-bench.json" 2>&1 | tee "$OUT/runner-bench.log" >&2
  say "runner benchmark: $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
fi

if [ "$RUN" = 1 ]; then
  # The launch's own budget leaves the swarm's start-up and stop inside the minutes asked for.
  BUDGET_S=$(awk -v m="$MINUTES" 'BEGIN { printf "%d", m * 60 - 30 }')
  WS="${WS:-$OUT/workspace}"
  say "research run: \"$GOAL\", ${BUDGET_S} s budget, ${MINUTES} minutes in all ..."
  t0=$(date +%s.%N)
  SAMPLER=""
  if [ -n "$GPU" ]; then
    # The GPU while the search runs: utilisation (% of the last sample period a kernel ran) and memory.
    nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used,memory.total --format=csv,noheader,nounits -l 1 > "$OUT/nvidia-smi.csv" 2>/dev/null &
    SAMPLER=$!
  fi
  set +e
  "${RESEARCH_AGENT[@]}" launch --goal "$GOAL" --time-budget "${BUDGET_S}s" --data-dir "$DATA" --workspace "$WS" 2>&1 | tee "$OUT/launch.log" >&2
  rc=${PIPESTATUS[0]}
  set -e
  [ -z "$SAMPLER" ] || kill "$SAMPLER" 2>/dev/null || true
  WALL=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  say "research run: exit $rc after $WALL s"
  REPORT="$(find "$WS/runs" -name report.md 2>/dev/null | head -1)"
  if [ -n "$REPORT" ]; then
    cp "$REPORT" "$OUT/report.md"
    [ -f "$(dirname "$REPORT")/report.json" ] && cp "$(dirname "$REPORT")/report.json" "$OUT/report.json"
  fi
  echo "$WALL" > "$OUT/launch.wall"
fi

if [ "$OPTUNA" = 1 ]; then
  # The same budget as the research run's launch, start-up included: the baseline's clock starts
  # at its own start and its reserve covers the final test evaluation.
  BUDGET_S=$(awk -v m="$MINUTES" 'BEGIN { printf "%d", m * 60 - 30 }')
  WHEELS="${WHEELS:-$ROOT/wheels/optuna}"
  OPTUNA_ENV=()
  if ! "$PY" -c 'import optuna' 2>/dev/null && [ -d "$WHEELS" ]; then
    # A wheel is a zip of what an install puts in site-packages: unpacked, it is installed (no pip needed).
    "$PY" -c 'import sys, zipfile; [zipfile.ZipFile(w).extractall(sys.argv[1]) for w in sys.argv[2:]]' "$OUT/optuna-site" "$WHEELS"/*.whl
    OPTUNA_ENV=(env "PYTHONPATH=$OUT/optuna-site${PYTHONPATH:+:$PYTHONPATH}")
  fi
  if "${OPTUNA_ENV[@]}" "$PY" -c 'import optuna' 2>/dev/null; then
    say "the peer: Optuna on the same device and data, ${BUDGET_S} s ..."
    t0=$(date +%s.%N)
    set +e
    "${OPTUNA_ENV[@]}" "$PY" "$ROOT/bench/optuna_baseline.py" --device auto --data-dir "$DATA" --budget-s "$BUDGET_S" --seed 0 \
      --threads "$(nproc)" --out "$OUT/optuna.json" 2> "$OUT/optuna.log" > /dev/null
    rc=$?
    set -e
    say "the peer: exit $rc after $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
  else
    say "the peer: no Optuna for $PY and no wheels at $WHEELS (--optuna-wheels DIR): skipped"
  fi
fi

if [ "$HANDWRITTEN" = 1 ]; then
  BUDGET_S=$(awk -v m="$MINUTES" 'BEGIN { printf "%d", m * 60 - 30 }')
  say "the hand-written ResNet-9 script on the same device and data, ${BUDGET_S} s ..."
  t0=$(date +%s.%N)
  set +e
  "$PY" "$ROOT/bench/handwritten_resnet9.py" --device auto --data-dir "$DATA" --budget-s "$BUDGET_S" --seed 0 \
    --out "$OUT/handwritten.json" 2> "$OUT/handwritten.log" > /dev/null
  rc=$?
  set -e
  say "the hand-written script: exit $rc after $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
fi

GPU="$GPU" MINUTES="$MINUTES" "$PY" - "$OUT" <<'EOF'
import json, os, sys
out = sys.argv[1]
def read(name):
    path = os.path.join(out, name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        text = f.read().strip()
    try:
        return json.loads(text.splitlines()[-1]) if text else None
    except ValueError:
        return {"unreadable": text[-2000:]}
summary = {"gpu": os.environ.get("GPU", ""), "minutes": float(os.environ["MINUTES"])}
bench = read("runner-bench.json")
if bench and "quick_cases" in bench:
    summary["runner"] = {
        "device": bench["machine"]["device_name"], "torch": bench["machine"]["torch"], "slots": bench["machine"]["slots"],
        "first_step_warm_s": {c["id"]: c["warm"]["median_first_step_s"] for c in bench["quick_cases"]},
        "case_warm_s": {c["id"]: c["warm"]["median_s"] for c in bench["quick_cases"]},
        "seeds_1_3_5_wall_s": [r["median_wall_s"] for r in bench["scaling"]["rows"]],
        "five_over_one": bench["scaling"]["five_over_one"],
        "seeds_together": [r.get("seeds_together") for r in bench["scaling"]["rows"]],
        "seeds_apart": [r.get("seeds_apart") for r in bench["scaling"]["rows"]],
        "reference_cnn_epoch_s": (bench.get("fashion_mnist") or {}).get("mean_epoch_s"),
        "reference_cnn_first_step_s": (bench.get("fashion_mnist") or {}).get("first_step_s"),
        "resnet9_epoch_s": (bench.get("resnet9") or {}).get("steady_epoch_s"),
        "resnet9_seeds_together": (bench.get("resnet9") or {}).get("seeds_together"),
        "resnet9_seeds_apart": (bench.get("resnet9") or {}).get("seeds_apart"),
    }
if os.path.exists(os.path.join(out, "launch.wall")):
    summary["research"] = {"wall_s": read("launch.wall")}
    if os.path.exists(os.path.join(out, "report.json")):
        with open(os.path.join(out, "report.json")) as f:
            report = json.load(f)
        summary["research"].update(outcome=report["outcome"], trials=[
            {k: t.get(k) for k in ("trial_id", "hypothesis", "params", "val_accuracy", "num_seeds", "eval_seconds", "verdict", "failure_label")}
            for t in report["trials"]])
samples = []
if os.path.exists(os.path.join(out, "nvidia-smi.csv")):
    with open(os.path.join(out, "nvidia-smi.csv")) as f:
        for line in f:
            cells = [c.strip() for c in line.split(",")]
            try:
                samples.append((float(cells[1]), float(cells[2]), float(cells[3])))
            except (IndexError, ValueError):
                pass  # a line cut by the sampler's end
if samples and "research" in summary:
    summary["research"]["gpu_during_search"] = {
        "samples": len(samples), "mean_utilisation_pct": round(sum(s[0] for s in samples) / len(samples), 1),
        "mean_memory_mib": round(sum(s[1] for s in samples) / len(samples)), "peak_memory_mib": max(s[1] for s in samples),
        "memory_total_mib": samples[0][2]}
hand = read("handwritten.json")
if hand and "test_accuracy" in hand:
    summary["handwritten"] = {k: hand.get(k) for k in ("device", "precision", "test_accuracy", "test_ci95", "val_accuracy", "width",
                                                        "params", "epochs_completed", "train_s", "seconds", "budget_s", "machine")}
peer = read("optuna.json")
if peer and "test_accuracy" in peer:
    summary["optuna"] = {k: peer.get(k) for k in ("device", "precision", "test_accuracy", "test_ci95", "best_val_accuracy", "trials",
                                                   "completed", "pruned", "cut", "seconds", "budget_s", "optuna", "torch")}
# Per seed (the swarm's mean over its best trial's seeds) against each peer's one model.
best = ((summary.get("research") or {}).get("outcome") or {}).get("best_trial") or {}
ours = (((best.get("test") or {}).get("metrics") or {}).get("test_accuracy") or {}).get("mean")
peers = {name: (summary.get(name) or {}).get("test_accuracy") for name in ("optuna", "handwritten")}
if isinstance(ours, (int, float)) and any(isinstance(v, (int, float)) for v in peers.values()):
    summary["side_by_side"] = {"swarm_test_per_seed": ours}
    for name, theirs in peers.items():
        if isinstance(theirs, (int, float)):
            summary["side_by_side"].update({f"{name}_test": theirs, f"lead_over_{name}_pp": round(100 * (ours - theirs), 2)})
json.dump(summary, sys.stdout, indent=2)
with open(os.path.join(out, "gpu-check.json"), "w") as f:
    json.dump(summary, f, indent=2)
    f.write("\n")
EOF
echo >&2
say "wrote $OUT/gpu-check.json"
