"""The byte-ngram template's learning rate and table, decided on text the language-model benchmark
does not score: the KJV corpus's bytes 2,000,000-3,000,000 (bench/lm-corpus.sh's file; the
benchmark reads its first 1,000,000).

    .venv/bin/python bench/lm_template.py bench/data/lm-corpus.txt --lrs 0.006,0.01,0.015 --seeds 0,1 --seconds 60 --out r.json
    .venv/bin/python bench/lm_template.py bench/data/lm-corpus.txt --lrs 0.015 --tables 8:17:32,8:19:8 --seeds 0,1 --seconds 60

The model is the template as core/tasks/text.ts builds it (NgramEmbedding(8, 2**17, 32) from
core/compiler/blocks.py; --tables gives other ORDERS:LOG2_BUCKETS:DIM), LayerNorm, dropout 0.7, 512
GELU units, a linear head to 256 bytes) with its recipe (AdamW, weight decay 0.1, 32 windows of 128
bytes a step, gradients clipped at 1, cosine over the wall time, bf16 autocast where the CPU
computes it natively). The slice goes through the runner's own loader and split as
bench/lm_baseline.py reads a corpus (its test rows unused), and its validation rows are scored by
lm_baseline's `bits_per_byte`: windows of 128 that start afresh. Each (table, lr, seed) trains for
--seconds of wall time, one after the other; run nothing beside it.
"""
import argparse
import itertools
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "core", "compiler"))
sys.path.insert(0, HERE)
from blocks import NgramEmbedding  # noqa: E402
import machine  # noqa: E402
from lm_baseline import bits_per_byte, corpus_spec, datasets  # noqa: E402

ROW, CTX, BATCH = 256, 128, 32


def rows_of(path, start, length):
    """The slice's training and validation rows, as the runner splits a corpus of these bytes."""
    with tempfile.TemporaryDirectory() as tmp:
        text = os.path.join(tmp, "slice.txt")
        with open(path, "rb") as src, open(text, "wb") as dst:
            src.seek(start)
            dst.write(src.read(length))
        spec = corpus_spec(text)
        raw = datasets.load(spec)
        split = datasets.split(raw, spec)
    return torch.as_tensor(raw.x_train[split.train]), torch.as_tensor(raw.x_train[split.val])


def template(seed, table):
    orders, log2_buckets, dim = table
    torch.manual_seed(seed)
    return nn.Sequential(NgramEmbedding(orders, 1 << log2_buckets, dim, vocab_size=256), nn.LayerNorm(orders * dim),
                         nn.Dropout(0.7), nn.Linear(orders * dim, 512), nn.GELU(), nn.Linear(512, 256))


def fit(train_rows, table, lr, seed, seconds, bf16):
    """The template trained for `seconds` of wall time with its recipe: the model and its steps."""
    model = template(seed, table)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.1)
    gen = torch.Generator().manual_seed(seed)
    start, steps = time.time(), 0
    while (done := (time.time() - start) / seconds) < 1:
        for group in opt.param_groups:
            group["lr"] = lr * 0.5 * (1 + math.cos(math.pi * done))
        rows = train_rows[torch.randint(0, len(train_rows), (BATCH,), generator=gen)]
        offsets = torch.randint(0, ROW - CTX, (BATCH, 1), generator=gen)
        w = rows.gather(1, offsets + torch.arange(CTX + 1)).long()
        with torch.autocast("cpu", torch.bfloat16, enabled=bf16):
            out = model(w[:, :-1])
        loss = F.cross_entropy(out.float().flatten(0, 1), w[:, 1:].flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        steps += 1
    return model, steps


def train(train_rows, val_rows, table, lr, seed, seconds, bf16):
    model, steps = fit(train_rows, table, lr, seed, seconds, bf16)
    return {"table": ":".join(map(str, table)), "lr": lr, "seed": seed, "steps": steps, "val_bits_per_byte": round(bits_per_byte(model, val_rows, CTX), 4)}


def design_args(doc):
    """The arguments of a measurement on the design text: the corpus, the slice, seeds, seconds, --out."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("corpus")
    ap.add_argument("--start", type=int, default=2_000_000, help="first byte of the design text")
    ap.add_argument("--bytes", type=int, default=1_000_000, help="its length")
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--out")
    return ap


def write_result(bench, a, fp, **fields):
    """The measurement's document (its commit, command, machine and slice, then `fields`) to --out."""
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE).stdout.strip()
    doc = {"bench": bench, "commit": commit, "command": " ".join(sys.argv), "machine": fp, "corpus": a.corpus,
           "bytes": [a.start, a.start + a.bytes], "seconds": a.seconds, **fields}
    if a.out:
        with open(a.out, "w") as f:
            json.dump(doc, f, indent=1)
    print(json.dumps(fp))


def main():
    ap = design_args(__doc__)
    ap.add_argument("--lrs", default="0.006,0.01,0.015")
    ap.add_argument("--tables", default="8:17:32", help="n-gram tables, ORDERS:LOG2_BUCKETS:DIM, a list")
    a = ap.parse_args()
    torch.set_num_threads(2)
    fp = machine.fingerprint()
    bf16 = bool(fp["cpu_bf16"])
    train_rows, val_rows = rows_of(a.corpus, a.start, a.bytes)
    runs = []
    tables = [tuple(int(n) for n in t.split(":")) for t in a.tables.split(",")]
    lrs = [float(v) for v in a.lrs.split(",")]
    for table, lr, seed in itertools.product(tables, lrs, [int(v) for v in a.seeds.split(",")]):
        runs.append(train(train_rows, val_rows, table, lr, seed, a.seconds, bf16))
        print(json.dumps(runs[-1]), flush=True)
    write_result("lm_template", a, fp, runs=runs)


if __name__ == "__main__":
    main()
