#!/usr/bin/python3
"""Issue 39's fronts re-timed in one harness: every model either side of a Pareto pair claims, timed alike.

Each side times its own models as it goes: the swarm in the runner's sandboxed job, beside the
other slot's training; Optuna's study between its trials, with nothing beside it. Their latencies
are not measured alike, so the benchmark's hypervolume also counts latency re-timed here, with
nothing else running: for each pair in a series' output folder, the swarm's front trained long
(report.json front.trained_long, each trial's model_code.py) and Optuna's front (each config's Net),
built afresh (untrained weights cost what trained ones do), one thread, batch 1, channels-last,
bf16 autocast where the CPU computes bf16 natively (the runner's accel.cpu_bf16, as both sides
trained and timed), WARM passes then the median of PASSES, in ROUNDS rounds over all the models
interleaved, each model's latency the median of its rounds' medians.

    bench/out/venv-optuna/bin/python bench/retime.py bench/out/series-<commit>

writes <folder>/retimed.json, which bench/series-summary.ts reads.
"""

import glob
import json
import os
import re
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import optuna_baseline  # noqa: E402  (its Net, and the runner's accel on its path)
import accel  # noqa: E402

WARM, PASSES, ROUNDS = 5, 100, 3


def swarm_models(run):
    """(trial id, model) of a swarm run's front trained long, from each trial's compiled model_code.py."""
    report = json.load(open(run["launch"]["report"].replace(".md", ".json")))
    experiments = os.path.join(os.path.dirname(run["launch"]["report"]), "experiments")
    out = []
    for long in (report.get("front") or {}).get("trained_long", []):
        source = open(os.path.join(experiments, long["trial_id"], "model_code.py")).read()
        scope = {}
        exec(compile(source, long["trial_id"], "exec"), scope)
        # The compiler names the class in the file's first line ("# BnCnn: compiled from ...").
        name = re.match(r"#\s*(\w+):", source).group(1)
        out.append((long["trial_id"], scope[name]()))
    return out


def optuna_models(result):
    """(trial number, model) of an Optuna study's front."""
    return [(p["number"], optuna_baseline.Net(**{k: p["config"][k] for k in ("width", "stages", "convs", "hidden", "dropout")}))
            for p in result["front"]]


def median_ms(model, x, bf16):
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        for _ in range(WARM):
            model(x)
        times = []
        for _ in range(PASSES):
            t = time.perf_counter()
            model(x)
            times.append(1000 * (time.perf_counter() - t))
    return statistics.median(times)


def main():
    folder = sys.argv[1]
    torch.set_num_threads(1)
    bf16 = accel.cpu_bf16()
    x = torch.zeros(1, 1, 28, 28).contiguous(memory_format=torch.channels_last)
    models = []  # (side, run name, id, model)
    for path in sorted(glob.glob(os.path.join(folder, "pareto-*.json"))):
        run = json.load(open(path))
        models += [("swarm", run["name"], key, m) for key, m in swarm_models(run)]
        peer = os.path.join(folder, f"optunapareto-{run['seed']}.json")
        if os.path.exists(peer):
            theirs = json.load(open(peer))
            models += [("optuna", theirs["name"], key, m) for key, m in optuna_models(theirs["result"])]
    for *_, m in models:
        m.eval().to(memory_format=torch.channels_last)
    rounds = [[median_ms(m, x, bf16) for *_, m in models] for _ in range(ROUNDS)]
    out = {"harness": {"threads": 1, "batch": 1, "precision": "bf16" if bf16 else "fp32", "memory_format": "channels_last",
                       "warm": WARM, "passes": PASSES, "rounds": ROUNDS, "torch": torch.__version__,
                       "loadavg_after": list(os.getloadavg())},
           "runs": {}}
    for i, (side, name, key, m) in enumerate(models):
        ms = statistics.median(r[i] for r in rounds)
        out["runs"].setdefault(name, {})[str(key)] = {"latency_ms": ms, "params": sum(p.numel() for p in m.parameters())}
    with open(os.path.join(folder, "retimed.json"), "w") as f:
        json.dump(out, f, indent=1)
    print(json.dumps(out["runs"]))


if __name__ == "__main__":
    main()
