"""Random crops' padding on small images: validation accuracy of the planner's VGG-style template
(core/tasks/images.ts vgg-cnn: two convolutions per stage, 24 then 48 channels, dropout 0.3) on
scikit-learn's 8x8 digits as the runner loads and splits them, trained with Adam at 0.002 and a
cosine schedule, by crop padding (0, 1, 2 px) and by batch size and epochs, 3 seeds each. The
evidence for core/space.ts cropPaddingFor; validation data only, never the test split.

    bench/out/venv-optuna/bin/python bench/crop_padding.py --out bench/results/crop-digits-val.json

It trains through bench/optuna_baseline.py's loop (the runner's loader, split and augmentation),
so it runs in the peers' venv, which bench/tasks-series.sh makes.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import optuna

import optuna_baseline as ob
import machine
from fmnist import Data

SETTINGS = [(128, 30), (128, 90), (32, 30)]  # (batch size, epochs)
CROPS = [0, 1, 2]
SEEDS = [0, 1, 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    ob.torch.set_num_threads(2)
    data = Data(ob.DEVICE, "", "digits", "")
    space = ob.ImageSpace(data, "digits", False)
    # The grid's values, beyond the peer's own digits space.
    space.crops, space.batches, space.epochs = CROPS, [b for b, _ in SETTINGS], (1, max(e for _, e in SETTINGS))
    rows = []
    for batch, epochs in SETTINGS:
        for crop in CROPS:
            t = time.monotonic()
            vals = []
            for seed in SEEDS:
                p = dict(width=24, stages=2, convs=2, hidden=0, dropout=0.3, optimizer="adam", batch_size=batch,
                         epochs=epochs, schedule="cosine", label_smoothing=0.0, hflip=False, crop_padding=crop,
                         subset=0, lr_adam=0.002, wd_adam=1e-7)
                vals.append(ob.Search(data, space, 1e9, seed).objective(optuna.trial.FixedTrial(p)))
            row = {"batch_size": batch, "epochs": epochs, "crop_padding": crop, "val_accuracy": vals,
                   "mean": statistics.mean(vals), "seconds": round(time.monotonic() - t, 1)}
            print(json.dumps(row), flush=True)
            rows.append(row)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    result = {"command": "bench/out/venv-optuna/bin/python bench/crop_padding.py --out " + args.out, "commit": commit,
              "machine": machine.fingerprint(), "load": list(os.getloadavg()), "dataset": "digits",
              "n_val": len(data.val), "rows": rows}
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
