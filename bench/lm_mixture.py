"""How far a language model's byte-ngram template and the Kneser-Ney n-gram that beats it are from
each other, and what interpolating them would gain: a design measurement on text the
language-model benchmark does not score (the KJV corpus's bytes 2,000,000-3,000,000, as
bench/lm_template.py reads them), on validation rows only.

    .venv/bin/python bench/lm_mixture.py bench/data/lm-corpus.txt --seeds 0,1 --seconds 60 --out r.json

Per seed, the template trains for --seconds with its recipe (lm_template.fit); the n-gram is
bench/lm_baseline.py's, counted on the same training rows, its order and discount picked on the
validation rows as the peer picks them. Both give each validation target a probability; the
mixture is w * p_network + (1 - w) * p_ngram, a proper distribution for any w in [0, 1]. Its w
is picked on half of the validation rows (every other row) and scored on the other half, then
the other way round; `mixture_bits_per_byte` is the mean of the two, so no figure is scored on
the rows that picked its weight. With --orders, the same mixture with bench/lm_counts.py's
exportable counts of each order in place of the exact n-gram (`counts`). Run nothing beside it.
"""
import json

import numpy as np
import torch
import torch.nn.functional as F

import lm_template
import machine
from lm_baseline import NGRAM_DISCOUNTS, NGRAM_MAX_ORDER, KneserNey, windows
from lm_counts import ByteCounts, target_probabilities

WEIGHTS = np.round(np.arange(0.05, 1.0, 0.05), 2)


def network_probabilities(model, rows):
    """Each validation target's probability under the network, read as bits_per_byte reads it."""
    model.eval()
    x, y = windows(rows, lm_template.CTX)
    with torch.inference_mode():
        logp = F.log_softmax(model(x).float(), -1).gather(-1, y[..., None])[..., 0]
    # Back to rows: a row's windows are consecutive.
    return logp.exp().reshape(len(rows), -1).numpy()


def bits(p):
    return float(-np.log2(p).mean())


def cross_picked(net, ngram):
    """The mixture's bits per byte with its weight picked on one half of the rows and scored on the
    other, both ways, and each half's pick."""
    halves = [np.arange(0, len(net), 2), np.arange(1, len(net), 2)]
    scored, picks = [], []
    for pick, score in (halves, halves[::-1]):
        w = min(WEIGHTS, key=lambda w: bits(w * net[pick] + (1 - w) * ngram[pick]))
        picks.append(float(w))
        scored.append(bits(w * net[score] + (1 - w) * ngram[score]))
    return float(np.mean(scored)), picks


def mixture_row(net, ngram):
    mixed, picks = cross_picked(net, ngram)
    return {"mixture_bits_per_byte": round(mixed, 4), "weights_picked": picks}


def main():
    a = lm_template.design_args(__doc__)
    a.add_argument("--orders", default="", help="orders of bench/lm_counts.py's counts to mix as well, a list")
    a = a.parse_args()
    torch.set_num_threads(2)
    fp = machine.fingerprint()
    train_rows, val_rows = lm_template.rows_of(a.corpus, a.start, a.bytes)
    kn = KneserNey(train_rows.numpy())
    by_discount = {d: np.array(kn.probabilities(val_rows.numpy(), lm_template.CTX, d)) for d in NGRAM_DISCOUNTS}
    val, order, discount = min((bits(p[:, n]), n, d) for d, p in by_discount.items() for n in range(1, NGRAM_MAX_ORDER + 1))
    ngram = by_discount[discount][:, order].reshape(len(val_rows), -1)
    print(json.dumps({"ngram": {"order": order, "discount": discount, "val_bits_per_byte": round(val, 4)}}), flush=True)
    counted = {}
    x, y = windows(val_rows, lm_template.CTX)
    for n in (int(o) for o in a.orders.split(",") if o):
        counts = ByteCounts(n, weight=0.0)  # its discount is the block's, DISCOUNT
        counts.fit_counts(train_rows)
        counted[n] = target_probabilities(counts, x, y).reshape(len(val_rows), -1).numpy()
    runs = []
    for seed in (int(s) for s in a.seeds.split(",")):
        model, steps = lm_template.fit(train_rows, (8, 17, 32), 1.5e-2, seed, a.seconds, bool(fp["cpu_bf16"]))
        net = network_probabilities(model, val_rows)
        runs.append({"seed": seed, "steps": steps, "network_bits_per_byte": round(bits(net), 4), **mixture_row(net, ngram),
                     "counts": {n: mixture_row(net, p) for n, p in counted.items()}})
        print(json.dumps(runs[-1]), flush=True)
    lm_template.write_result("lm_mixture", a, fp, ngram={"order": order, "discount": discount, "val_bits_per_byte": round(val, 4)},
                             counts={n: round(bits(p), 4) for n, p in counted.items()}, runs=runs)


if __name__ == "__main__":
    main()
