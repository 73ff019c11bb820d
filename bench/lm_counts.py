"""What a Kneser-Ney byte n-gram costs as a model's buffers, measured on the design text (the KJV
corpus's bytes 2,000,000-3,000,000, as bench/lm_template.py reads them), validation rows only:
the step before a language model carries the counts that bench/lm_mixture.py shows it gains from.

    .venv/bin/python bench/lm_counts.py bench/data/lm-corpus.txt --orders 8,12 --out r.json

A model's forward must give every byte's probability at every position, with operations every
export takes: lm_mixture's dictionaries cannot be exported, and a sorted table's lookup needs
`searchsorted`, which torch 2.13 does not export to ONNX. Here every context (of each order, raw
counts and Kneser-Ney continuation counts apart) is hashed to a slot of an open-addressing table
probed a fixed number of times, and its successors are stored one after the other (compressed
sparse rows): a lookup is gathers, compares and one scatter into 256 bytes, a fixed number of
them per order (the most successors any context of that order has). Contexts the table has no
slot for within its probes are left out (`dropped`), and read as unseen.

Per order: validation bits per byte of these buffers and of bench/lm_baseline.py's exact
KneserNey at the same order and discount on the same rows, the seconds to count the training rows
and to score the validation rows (2 threads), and the bytes its buffers take (int64 keys, uint8
bytes, int32 the rest). Run nothing beside it.
"""
import json
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import lm_template
import machine
from lm_baseline import KneserNey, windows

MODULUS = 2147483647  # the polynomial hash's prime: every product below fits int64
MULTIPLIER = 263      # 256 byte values, the padding, and a margin
PROBES = 8


class ByteCounts(nn.Module):
    """Interpolated Kneser-Ney over bytes, orders 1..`orders`, from counts held as buffers:
    [batch, length] bytes -> [batch, length, 256] probabilities of the next byte, each window
    read from its start as bench/lm_baseline.py reads it (a position with fewer bytes before it
    than an order needs uses the highest order it has)."""

    def __init__(self, orders, discount):
        super().__init__()
        self.orders, self.discount = orders, discount

    def context_hashes(self, x):
        """[B, T] -> [B, T, orders]: order n's hash of the n - 1 bytes ending at each position (order
        1's is 0); -1 where the window holds fewer."""
        h = torch.zeros_like(x)
        out = [h]
        for k in range(1, self.orders):
            earlier = F.pad(x, (k - 1, 0), value=-1)[:, :x.shape[1]]
            h = (h * MULTIPLIER + earlier + 1) % MODULUS
            out.append(torch.where((out[-1] >= 0) & (earlier >= 0), h, torch.full_like(h, -1)))
        return torch.stack(out, -1)

    @staticmethod
    def context_key(h, n, continuation):
        return h * 64 + n * 2 + continuation + 1

    def slot(self, key):
        # Reduced below 2**31 first, so the product fits int64: an overflow wraps in torch and
        # differs between runtimes.
        return (key % MODULUS * 2654435761) // 128 % self.slots

    def fit(self, rows):
        """Counts the training rows ([N, 257] bytes, within each row) into the buffers."""
        rows = torch.as_tensor(rows).long()
        h, nxt = self.context_hashes(rows[:, :-1]), rows[:, 1:]
        parts = []
        for n in range(1, self.orders + 1):
            here = h[..., n - 1] >= 0
            grams = (self.context_key(h[..., n - 1][here], n, 0) * 256 + nxt[here]).numpy()
            parts.append(np.unique(grams, return_counts=True))
            if n < self.orders:
                # Continuation counts: how many distinct bytes come before (context, byte) in the rows.
                longer = h[..., n] >= 0
                pairs = np.unique(np.stack([(self.context_key(h[..., n][longer], n + 1, 0) * 256 + nxt[longer]).numpy(),
                                            (self.context_key(h[..., n - 1][longer], n, 1) * 256 + nxt[longer]).numpy()], 1), axis=0)
                parts.append(np.unique(pairs[:, 1], return_counts=True))
        grams = np.concatenate([g for g, _ in parts])
        counts = np.concatenate([c for _, c in parts])
        by_context = np.argsort(grams, kind="stable")
        grams, counts = grams[by_context], counts[by_context]
        keys, start, length = np.unique(grams // 256, return_index=True, return_counts=True)
        kind = (keys - 1) % 64
        self.gathers = {int(k): int(length[kind == k].max()) for k in np.unique(kind)}
        self.slots = 1 << int(np.ceil(np.log2(2 * len(keys))))
        table = self.placed(keys)
        self.dropped = int(len(keys) - (table >= 0).sum())
        # The narrowest dtype each holds: the keys need 38 bits, a byte 8, the rest 32.
        for name, value, dtype in (("table", table, np.int32), ("keys", keys, np.int64), ("start", start, np.int32),
                                   ("length", length, np.int32), ("successor", grams % 256, np.uint8), ("count", counts, np.int32)):
            self.register_buffer(name, torch.from_numpy(np.ascontiguousarray(value.astype(dtype))))
        return {"contexts": len(keys), "successors": len(grams), "slots": self.slots,
                "bytes": sum(b.numel() * b.element_size() for b in self.buffers())}

    def placed(self, keys):
        """The table: each context's index at the first free slot of its probes, -1 where none."""
        table = np.full(self.slots, -1, np.int64)
        base = self.slot(torch.from_numpy(keys)).numpy()
        waiting = np.arange(len(keys))
        for probe in range(PROBES):
            while len(waiting):
                at = (base[waiting] + probe) % self.slots
                free = table[at] < 0
                if not free.any():
                    break
                _, first = np.unique(at[free], return_index=True)
                table[at[free][first]] = waiting[free][first]
                waiting = np.setdiff1d(waiting, waiting[free][first], assume_unique=True)
        return table

    def successors(self, h, n, continuation):
        """[P] context hashes -> [P, 256] counts of each next byte, and whether the context is stored."""
        key = self.context_key(h, n, continuation)
        base = self.slot(key)
        found = torch.full_like(key, -1)
        for probe in range(PROBES):
            at = self.table[(base + probe) % self.slots]
            found = torch.where((at >= 0) & (self.keys[at.clamp(min=0)] == key), at, found)
        seen = (found >= 0) & (h >= 0)
        row = found.clamp(min=0)
        width = self.gathers[n * 2 + continuation]
        at = self.start[row, None] + torch.arange(width)
        inside = (torch.arange(width) < self.length[row, None]) & seen[:, None]
        at = torch.where(inside, at, torch.zeros_like(at))
        counts = torch.where(inside, self.count[at], torch.zeros_like(at)).float()
        return torch.zeros(h.shape[0], 256).scatter_add_(1, self.successor[at].long(), counts), seen

    def forward(self, x):
        h = self.context_hashes(x).flatten(0, 1)
        lower = torch.full((h.shape[0], 256), 1 / 256)  # the chain of continuation-count levels
        top = lower
        for n in range(1, self.orders + 1):
            has = (h[:, n - 1] >= 0)[:, None]
            for continuation in (0, 1) if n < self.orders else (0,):
                c, seen = self.successors(h[:, n - 1], n, continuation)
                total = c.sum(-1, keepdim=True).clamp(min=1)
                types = (c > 0).sum(-1, keepdim=True)
                q = torch.where(seen[:, None], ((c - self.discount).clamp(min=0) + self.discount * types * lower) / total, lower)
                if continuation:
                    lower = torch.where(has, q, lower)
                else:
                    top = torch.where(has, q, top)
        return top.reshape(*x.shape, 256)


def target_probabilities(model, x, y, chunk=64):
    """[N, T] windows and their next bytes -> [N, T] the probability `model` gives each, `chunk`
    windows at a time (a window's full distribution is 256 floats a position)."""
    with torch.inference_mode():
        return torch.cat([model(x[i:i + chunk]).gather(-1, y[i:i + chunk, :, None])[..., 0] for i in range(0, len(x), chunk)])


def bits(model, x, y):
    return float(-torch.log2(target_probabilities(model, x, y)).mean())


def main():
    a = lm_template.design_args(__doc__)
    a.add_argument("--orders", default="8,12")
    a.add_argument("--discount", type=float, default=0.95)
    a = a.parse_args()
    torch.set_num_threads(2)
    fp = machine.fingerprint()
    train_rows, val_rows = lm_template.rows_of(a.corpus, a.start, a.bytes)
    x, y = windows(val_rows, lm_template.CTX)
    exact = KneserNey(train_rows.numpy())
    by_order = np.array(exact.probabilities(val_rows.numpy(), lm_template.CTX, a.discount))
    runs = []
    for orders in (int(o) for o in a.orders.split(",")):
        model = ByteCounts(orders, a.discount)
        t0 = time.monotonic()
        size = model.fit(train_rows)
        fit_s = time.monotonic() - t0
        t0 = time.monotonic()
        val = bits(model, x, y)
        runs.append({"orders": orders, "discount": a.discount, **size, "dropped": model.dropped, "fit_seconds": round(fit_s, 1),
                     "score_seconds": round(time.monotonic() - t0, 1), "val_bits_per_byte": round(val, 4),
                     "exact_val_bits_per_byte": round(float(-np.log2(by_order[:, orders]).mean()), 4)})
        print(json.dumps(runs[-1]), flush=True)
    lm_template.write_result("lm_counts", a, fp, validation_targets=int(y.numel()), runs=runs)


if __name__ == "__main__":
    main()
