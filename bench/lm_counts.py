"""What a Kneser-Ney byte n-gram costs as a model's buffers, measured on the design text (the KJV
corpus's bytes 2,000,000-3,000,000, as bench/lm_template.py reads them), validation rows only:
the step before a language model carries the counts that bench/lm_mixture.py shows it gains from.

    .venv/bin/python bench/lm_counts.py bench/data/lm-corpus.txt --orders 8,12 --out r.json

The counts are core/compiler/blocks.py's ByteCounts, the block a byte-level language model mixes
into its predictions. A model's forward must give every byte's probability at every position,
with operations every export takes: lm_mixture's dictionaries cannot be exported, and a sorted
table's lookup needs `searchsorted`, which torch 2.13 does not export to ONNX. There every
context (of each order, raw counts and Kneser-Ney continuation counts apart) is hashed to a slot
of an open-addressing table probed a fixed number of times, and its successors are stored one
after the other (compressed sparse rows): a lookup is gathers, compares and one scatter into 256
bytes, a fixed number of them per order (the most successors any context of that order has).
Contexts the table has no slot for within its probes are left out (`dropped`), and read as
unseen.

Per order: validation bits per byte of these buffers and of bench/lm_baseline.py's exact
KneserNey at the same order and discount on the same rows, the seconds to count the training rows
and to score the validation rows (2 threads), and the bytes its buffers take (int64 keys, uint8
bytes, int32 the rest). Run nothing beside it.
"""
import json
import time

import numpy as np
import torch

import lm_template  # puts core/compiler on the path
import machine
from blocks import ByteCounts
from lm_baseline import KneserNey, windows


def target_probabilities(counts, x, y, chunk=64):
    """[N, T] windows and their next bytes -> [N, T] the probability the counts give each, `chunk`
    windows at a time (a window's full distribution is 256 floats a position)."""
    with torch.inference_mode():
        return torch.cat([counts.probabilities(x[i:i + chunk]).gather(-1, y[i:i + chunk, :, None])[..., 0]
                          for i in range(0, len(x), chunk)])


def bits(model, x, y):
    return float(-torch.log2(target_probabilities(model, x, y)).mean())


def main():
    a = lm_template.design_args(__doc__)
    a.add_argument("--orders", default="8,12")
    a = a.parse_args()
    torch.set_num_threads(2)
    fp = machine.fingerprint()
    train_rows, val_rows = lm_template.rows_of(a.corpus, a.start, a.bytes)
    x, y = windows(val_rows, lm_template.CTX)
    exact = KneserNey(train_rows.numpy())
    by_order = np.array(exact.probabilities(val_rows.numpy(), lm_template.CTX, ByteCounts.DISCOUNT))
    runs = []
    for orders in (int(o) for o in a.orders.split(",")):
        model = ByteCounts(orders, weight=0.0)  # the counts alone
        t0 = time.monotonic()
        size = model.fit_counts(train_rows)
        fit_s = time.monotonic() - t0
        t0 = time.monotonic()
        val = bits(model, x, y)
        runs.append({"orders": orders, "discount": ByteCounts.DISCOUNT, **size, "slots": model.slots, "fit_seconds": round(fit_s, 1),
                     "score_seconds": round(time.monotonic() - t0, 1), "val_bits_per_byte": round(val, 4),
                     "exact_val_bits_per_byte": round(float(-np.log2(by_order[:, orders]).mean()), 4)})
        print(json.dumps(runs[-1]), flush=True)
    lm_template.write_result("lm_counts", a, fp, validation_targets=int(y.numel()), runs=runs)


if __name__ == "__main__":
    main()
