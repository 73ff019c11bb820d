#!/usr/bin/env bash
# launch --from against its equal-time control, on this machine, one after the other:
#   1. the swarm from bench/start/reference_cnn.py (FashionCNN, 61k parameters) and its 3-epoch
#      Adam recipe, "fashion-mnist: maximise test accuracy" for MINUTES (default 20): trial 0 is the
#      starting point on its own recipe, the report compares the best trial with it;
#   2. the control: trial 0's model and recipe, trained as long as the swarm's best trial trained a
#      seed (quick-evaluator --train-seconds, its epochs a ceiling), with the run's seeds, scored
#      once on the test split. What the search found beyond training longer is the best against it.
# Writes bench/results/from-<commit>-<minutes>min.json.
#
#   bash bench/from-bench.sh [MINUTES] [SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
minutes="${1:-20}"
seed="${2:-0}"
commit="$(git rev-parse --short HEAD)"
out="bench/results/from-${commit}-${minutes}min.json"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
load() { cut -d' ' -f1-3 /proc/loadavg; }

load_before="$(load)"
./research-agent launch --from bench/start/reference_cnn.py --class FashionCNN --recipe bench/start/reference-recipe.yaml \
  --goal "fashion-mnist: maximise test accuracy" --time-budget "${minutes}m" --seed "$seed" --workspace "$tmp/ws" --json \
  > "$tmp/swarm.json" 2> "$tmp/swarm.log" || true
run_id="$(node -e 'const l = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n"); console.log(JSON.parse(l[l.length - 1]).run_id)' "$tmp/swarm.json")"
npx tsx bench/run-facts.ts "$tmp/ws" "$run_id" > "$tmp/facts.json"
seconds="$(node -e 'const f = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); console.log(Math.round(f.best.slowest_seed_s))' "$tmp/facts.json")"
seeds="$(node -e 'const f = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); console.log(f.best.seeds)' "$tmp/facts.json")"
load_between="$(load)"
# The recipe of bench/start/reference-recipe.yaml, run as long as the best trial's slowest seed.
./quick-evaluator --model bench/start/reference_cnn.py --class FashionCNN --dataset fashion-mnist \
  --optimizer adam --lr 0.002 --batch-size 128 --epochs 200 --train-seconds "$seconds" --seeds "$seeds" \
  --test --time-budget "$(( seconds * 2 + 120 ))" --json > "$tmp/control.json" 2> "$tmp/control.log"

node - "$tmp/swarm.json" "$tmp/facts.json" "$tmp/control.json" "$commit" "$minutes" "$seed" "$load_before" "$load_between" "$(load)" > "$out" <<'JS'
const fs = require("fs");
const [swarmOut, factsOut, controlOut, commit, minutes, seed, ...loads] = process.argv.slice(2);
const lines = fs.readFileSync(swarmOut, "utf8").trim().split("\n");
const swarm = JSON.parse(lines[lines.length - 1]);
const report = JSON.parse(fs.readFileSync(swarm.report.replace(/\.md$/, ".json"), "utf8"));
const control = JSON.parse(fs.readFileSync(controlOut, "utf8"));
const perSeed = (r) => r.seed_results.map((s) => ({ seed: s.seed, test_accuracy: s.metrics.test_accuracy, epochs: s.epochs_completed, seconds: s.seconds }));
console.log(JSON.stringify({
  commit, minutes: Number(minutes), seed: Number(seed), cpus: require("os").cpus().length, cpu: require("os").cpus()[0].model,
  command: `./research-agent launch --from bench/start/reference_cnn.py --class FashionCNN --recipe bench/start/reference-recipe.yaml --goal "fashion-mnist: maximise test accuracy" --time-budget ${minutes}m --seed ${seed}`,
  swarm: { status: swarm.status, best_trial: swarm.best_trial, baseline: swarm.baseline, against_start: report.baseline ?? null, facts: JSON.parse(fs.readFileSync(factsOut, "utf8")) },
  control: { what: "trial 0's model and recipe, trained as long as the best trial's slowest seed (quick-evaluator --train-seconds), the run's seeds, test split once",
             test_accuracy: control.aggregated.test_accuracy, per_seed: perSeed(control) },
  load: { before: loads[0], between: loads[1], after: loads[2] },
}, null, 2));
JS
echo "wrote $out"
