#!/usr/bin/env bash
# Language-modelling benchmark: the swarm's built-in brain against a hand-written PyTorch baseline
# (bench/lm_baseline.py: a causal transformer and a GRU, three learning rates each in the same wall
# time as the swarm's budget, then the pick trained from scratch per seed for as long as the swarm's
# best trial trained a seed), one after the other on this machine, on the same rows.
#
#   bash bench/lm-bench.sh [MINUTES] [BYTES]        (default 10 minutes, the corpus's first 1,000,000 bytes)
#
# Data: the King James Bible from Debian's bible-kjv packages (bench/lm-corpus.sh), cut to its
# first BYTES bytes so that a CPU epoch takes a minute or two rather than ten; both sides read it
# through the runner's loader (rows of 257 bytes, the last 20% of rows the test split). Writes
# bench/results/lm-<commit>-<minutes>min.json.
set -euo pipefail
cd "$(dirname "$0")/.."
minutes="${1:-10}"
bytes="${2:-1000000}"
commit="$(git rev-parse --short HEAD)"
out="bench/results/lm-${commit}-${minutes}min.json"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

bash bench/lm-corpus.sh
head -c "$bytes" bench/data/lm-corpus.txt > "$tmp/corpus.txt"

load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
t0="$(date +%s)"
./research-agent launch --goal "text:$tmp/corpus.txt: minimise bits per byte" --time-budget "${minutes}m" --no-research --workspace "$tmp/ws" --json \
  > "$tmp/swarm.json" 2> "$tmp/swarm.log" || true
swarm_s=$(( $(date +%s) - t0 ))
load_between="$(cut -d' ' -f1-3 /proc/loadavg)"
# The swarm's best trial's slowest seed, start-up and validation included: the final models' time.
run_id="$(node -e 'const l = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n"); console.log(JSON.parse(l[l.length - 1]).run_id)' "$tmp/swarm.json")"
best_seed_s="$(npx tsx bench/run-facts.ts "$tmp/ws" "$run_id" | node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => console.log(Math.round(JSON.parse(s).best.slowest_seed_s)))')"
.venv/bin/python bench/lm_baseline.py "$tmp/corpus.txt" --seconds "$(( minutes * 60 ))" --final-seconds "$best_seed_s" --out "$tmp/baseline.json" > "$tmp/baseline.log" 2>&1

.venv/bin/python - "$tmp/swarm.json" "$tmp/baseline.json" "$swarm_s" "$minutes" "$commit" "$bytes" "$load_before" "$load_between" "$(cut -d' ' -f1-3 /proc/loadavg)" > "$out" <<'PY'
import json, os, sys
swarm_out, baseline_out, seconds, minutes, commit, size, *loads = sys.argv[1:]
swarm = json.loads(open(swarm_out).read().strip().splitlines()[-1])
report = json.load(open(swarm["report"].replace(".md", ".json")))
best = next(t for t in report["trials"] if t["best"])
test = report["outcome"]["best_trial"]["test"]
print(json.dumps({
    "commit": commit, "minutes": float(minutes), "cpus": os.cpu_count(), "corpus_bytes": int(size),
    "corpus": "bench/lm-corpus.sh (Debian bible-kjv 4.38), first bytes",
    "swarm": {"status": swarm["status"], "trials": swarm["trials"], "wall_s": int(seconds), "best_trial": best["trial_id"],
              "hypothesis": best["hypothesis"], "params": swarm["best_trial"].get("params"), "seeds": best["num_seeds"],
              "val_bits_per_byte": best["val_accuracy"], "test": test["metrics"], "sample": test.get("sample")},
    "baseline": json.load(open(baseline_out)),
    "load": {"before": loads[0], "between": loads[1], "after": loads[2]},
}, indent=2))
PY
echo "wrote $out"
.venv/bin/python - "$out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s, b = d["swarm"], d["baseline"]
t = s["test"].get("test_bits_per_byte", {})
print(f'swarm: test {t.get("mean", float("nan")):.3f} bits per byte (95% CI {t.get("ci_95")}), {s["seeds"]} seeds, {s["trials"]} trials, {s["status"]}, {s["params"]} params')
bt = b["test_bpb"]
print(f'baseline: test {bt["mean"]:.3f} bits per byte (95% CI {bt["ci95"]}), pick {b["best"]}')
PY
