"""Hand-written PyTorch byte-level language models: the baseline the swarm's language modelling is
compared against, on the same corpus, the same split and the same wall time, on the CPU.

    .venv/bin/python bench/lm_baseline.py bench/data/lm-corpus.txt --seconds 600 [--seeds 0,1,2] [--out r.json]

Data: the runner's own loader (gpu-runner/python/datasets.py, `load` and `split` with the spec a
"text:CORPUS" goal gets), so train, validation and test rows are the swarm's. Rows hold 257 bytes;
training draws a window of ctx+1 bytes at a random offset of a random training row (as the swarm's
trainer does), scoring reads each row in 256/ctx non-overlapping windows that start afresh, every
one of a row's 256 targets counted once: bits per byte is the mean of -log2 p(next byte).

Models, written plainly: a pre-norm causal transformer (byte embedding, learned positions,
scaled_dot_product_attention(is_causal=True), GELU MLP, final LayerNorm, head tied to the
embedding; d=128, 4 layers, 4 heads, 0.84M parameters) and a GRU (embedding of 64, 2 layers of 256,
linear head; 0.72M parameters), both reading ctx=128 bytes, 32 windows a step. AdamW (betas 0.9,
0.99, weight decay 0.01 on matrices), linear warmup over the first 5% of the run's time share then
cosine decay to zero, gradients clipped at norm 1; no dropout (a few minutes of CPU underfits).
torch.set_num_threads(2) and OMP_WAIT_POLICY=PASSIVE unless set (see below).

Beside them, the count-based model a researcher tries first: an interpolated Kneser-Ney byte n-gram
(orders 1-12, three discounts, the pick by validation), counted, tuned and scored within the budget
before the networks train; `models` holds both picks.

Search, as a researcher would do by hand: each family trained once (with the first seed) at each
of three learning rates, scored on the validation rows; the best (family, lr) by validation bits
per byte is the pick. The pick's own sweep run is the first seed's final model (same recipe, same
time share), and the pick is retrained from scratch with each further seed. So every training run,
sweep or final, gets the same share of the budget: with F families, L rates and S seeds there are
F*L + S - 1 runs, each of (budget - estimated evaluation time) / (F*L + S - 1) seconds, fixed once
after a short timing probe of the scorer. Evaluation (validation of each sweep run, test of each
seed's model, the probe) is counted in the budget, so the whole program takes about --seconds
(loading the data excepted, reported apart); a run is shortened only if the runs before it overran
(on a machine other work slows down), so that the total stays within the budget.

With --final-seconds S (bench/lm-bench.sh passes the per-seed training time of the swarm's best
trial), the sweep keeps the budget and the pick is then trained from scratch with every seed for S
seconds: the final models train as long as the swarm's best did, and the program takes longer
than --seconds by that much.

Deterministic given a seed in all but the number of steps, which the wall clock sets (as in the
swarm); --steps fixes the steps of every run instead, for a reproducible run.

Prints one summary line per stage on stderr, then writes the JSON document to --out, or, without
--out, prints it on stdout. With --seed S (bench/tasks-series.sh's independent runs) the sweep and
the one final model train with seed S, and `models` holds the pick's test bits per byte.
"""

import argparse
import json
import math
import os
import platform
import sys
import time
from collections import Counter

import numpy as np

# Idle OpenMP threads sleep instead of spinning: on a 2-core machine that other work shares, spinning
# threads of a 2-thread pool slow every step several-fold (set OMP_WAIT_POLICY to override).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "gpu-runner", "python"))
import datasets  # noqa: E402

LN2 = math.log(2)
FAMILIES = ("transformer", "gru")
LEARNING_RATES = {"transformer": (1e-3, 2e-3, 4e-3), "gru": (2e-3, 4e-3, 8e-3)}
WARMUP_SHARE = 0.05
WEIGHT_DECAY = 0.01
CLIP = 1.0
EVAL_BATCH_TOKENS = 1 << 15


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# --- models --------------------------------------------------------------------------------------

class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class Transformer(nn.Module):
    def __init__(self, ctx, d=128, layers=4, heads=4):
        super().__init__()
        self.emb = nn.Embedding(256, d)
        self.pos = nn.Parameter(torch.zeros(ctx, d))
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                # GPT-2's initialisation: N(0, 0.02), residual projections scaled down by depth.
                std = 0.02 / math.sqrt(2 * layers) if name.endswith(("proj.weight", "fc2.weight")) else 0.02
                nn.init.normal_(p, 0.0, std)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, x):
        h = self.emb(x) + self.pos[: x.shape[1]]
        for block in self.blocks:
            h = block(h)
        return self.ln(h) @ self.emb.weight.t()  # head tied to the embedding


class GRU(nn.Module):
    def __init__(self, ctx, d=256, layers=2, emb=64):
        super().__init__()
        self.emb = nn.Embedding(256, emb)
        self.rnn = nn.GRU(emb, d, num_layers=layers, batch_first=True)
        self.head = nn.Linear(d, 256)

    def forward(self, x):
        return self.head(self.rnn(self.emb(x))[0])


def make_model(family, ctx):
    return Transformer(ctx) if family == "transformer" else GRU(ctx)


def weight_decay_groups(model):
    decay = [p for p in model.parameters() if p.dim() >= 2]
    other = [p for p in model.parameters() if p.dim() < 2]
    return [{"params": decay, "weight_decay": WEIGHT_DECAY}, {"params": other, "weight_decay": 0.0}]


# --- data and scoring ----------------------------------------------------------------------------

def corpus_spec(path):
    return {"name": "text", "task": "language_modelling", "data_dir": path, "subset": 0, "val_fraction": 0.0,
            "split_seed": 0, "target_column": "", "shape": [], "num_classes": 0, "difficulty": 0.0,
            "test_subset": 0}


def windows(rows, ctx):
    """Rows of 257 bytes as 256/ctx non-overlapping (input, target) windows of ctx positions each."""
    rows = torch.as_tensor(rows).long()
    return rows[:, :-1].reshape(-1, ctx), rows[:, 1:].reshape(-1, ctx)


@torch.inference_mode()
def bits_per_byte(model, rows, ctx):
    """Mean over every target of every row of -log2 p(next byte), each window read from scratch."""
    model.eval()
    x, y = windows(rows, ctx)
    total = 0.0
    step = max(1, EVAL_BATCH_TOKENS // ctx)
    for i in range(0, len(x), step):
        logits = model(x[i:i + step]).float()
        total += F.cross_entropy(logits.reshape(-1, 256), y[i:i + step].reshape(-1), reduction="sum").item()
    model.train()
    return total / y.numel() / LN2


def unigram_bpb(train_rows, test_rows):
    """The entropy of the training rows' byte frequencies (add-one smoothed) on the test targets."""
    counts = np.bincount(train_rows[:, 1:].ravel(), minlength=256) + 1.0
    logp = np.log2(counts / counts.sum())
    return float(-logp[test_rows[:, 1:].ravel()].mean())


# --- a Kneser-Ney byte n-gram --------------------------------------------------------------------

NGRAM_MAX_ORDER = 12
NGRAM_DISCOUNTS = (0.75, 0.9, 0.95)


class KneserNey:
    """Interpolated Kneser-Ney over bytes (Chen & Goodman 1998, one discount for every order), the
    classic count-based language model: the model's highest order on raw counts, each lower one on
    continuation counts (how many distinct bytes precede the n-gram), the unigram interpolated with
    the uniform 1/256, so every byte has a probability. Counted within each training row, as the
    networks see their windows. Orders 1..NGRAM_MAX_ORDER are counted once; `scores` gives every
    order's log-probabilities in one pass."""

    def __init__(self, rows):
        raw = [Counter() for _ in range(NGRAM_MAX_ORDER + 1)]
        for row in rows:
            b = bytes(row.tolist())
            for n in range(1, NGRAM_MAX_ORDER + 1):
                raw[n].update(b[i:i + n] for i in range(len(b) - n + 1))
        cont = [Counter() for _ in range(NGRAM_MAX_ORDER + 1)]
        for n in range(1, NGRAM_MAX_ORDER):
            cont[n].update(gram[1:] for gram in raw[n + 1])
        self.raw, self.cont = raw, cont
        self.raw_stats = [self._stats(t) for t in raw]
        self.cont_stats = [self._stats(t) for t in cont]

    @staticmethod
    def _stats(table):
        """Per context: the total count after it and how many distinct bytes follow it."""
        stats = {}
        for gram, c in table.items():
            total, types = stats.get(gram[:-1], (0, 0))
            stats[gram[:-1]] = (total + c, types + 1)
        return stats

    def probabilities(self, rows, ctx, discount):
        """Per target of `rows` (as bits_per_byte reads them: each window of ctx from scratch), in
        order, each order's probability of it: a list of NGRAM_MAX_ORDER + 1 (index 0 unused)."""
        out = []
        for row in rows:
            b = bytes(row.tolist())
            for t in range(1, len(b)):
                history = b[(t - 1) // ctx * ctx:t]  # this window's bytes before the target
                w = b[t:t + 1]
                p = 1 / 256  # the chain of continuation-count levels, extended an order at a time
                top = p
                probs = [1.0] * (NGRAM_MAX_ORDER + 1)
                for n in range(1, NGRAM_MAX_ORDER + 1):
                    h = history[len(history) - n + 1:] if n > 1 else b""
                    if len(h) < n - 1:  # a window's first bytes: an order-n model is the highest order there is
                        probs[n] = top
                        continue
                    total, types = self.raw_stats[n].get(h, (0, 0))
                    # The order-n model: raw counts at its highest order, over the chain below it.
                    top = (max(self.raw[n].get(h + w, 0) - discount, 0) + discount * types * p) / total if total else p
                    probs[n] = top
                    total, types = self.cont_stats[n].get(h, (0, 0))
                    if total:
                        p = (max(self.cont[n].get(h + w, 0) - discount, 0) + discount * types * p) / total
                out.append(probs)
        return out

    def scores(self, rows, ctx, discount):
        """Mean -log2 p(next byte) over every target of `rows`, for each order 1..NGRAM_MAX_ORDER: a
        list indexed by order."""
        sums = [0.0] * (NGRAM_MAX_ORDER + 1)
        targets = self.probabilities(rows, ctx, discount)
        for probs in targets:
            for n in range(1, NGRAM_MAX_ORDER + 1):
                sums[n] -= math.log2(probs[n])
        return [v / len(targets) for v in sums]


def kneser_ney_search(train_rows, val_rows, test_rows, ctx):
    """The n-gram as a researcher tunes one: every order and discount scored on the validation rows,
    the best scored once on the test rows."""
    t0 = time.monotonic()
    model = KneserNey(train_rows)
    grid = {d: model.scores(val_rows, ctx, d) for d in NGRAM_DISCOUNTS}
    val, order, discount = min((grid[d][n], n, d) for d in NGRAM_DISCOUNTS for n in range(1, NGRAM_MAX_ORDER + 1))
    test = model.scores(test_rows, ctx, discount)[order]
    return {"order": order, "discount": discount, "val_bpb": round(val, 4), "test_bpb": test,
            "val_bpb_by_order": {d: [round(v, 4) for v in grid[d][1:]] for d in NGRAM_DISCOUNTS},
            "seconds": round(time.monotonic() - t0, 1)}


def t_interval(values):
    n = len(values)
    mean = float(np.mean(values))
    if n < 2:
        return mean, None
    from scipy.stats import t
    half = float(t.ppf(0.975, n - 1) * np.std(values, ddof=1) / math.sqrt(n))
    return mean, [mean - half, mean + half]


# --- training ------------------------------------------------------------------------------------

def train(family, lr, seed, train_rows, ctx, batch, seconds, steps):
    """One run: AdamW, warmup then cosine to zero by the share of `seconds` elapsed (or of `steps`)."""
    torch.manual_seed(seed)
    model = make_model(family, ctx)
    opt = torch.optim.AdamW(weight_decay_groups(model), lr=lr, betas=(0.9, 0.99))
    gen = torch.Generator().manual_seed(seed)
    rows = torch.from_numpy(train_rows)
    span = torch.arange(ctx + 1)
    losses, done = [], 0
    start = time.monotonic()
    while True:
        progress = done / steps if steps else (time.monotonic() - start) / seconds
        if progress >= 1.0:
            break
        scale = max(progress, 1e-3) / WARMUP_SHARE if progress < WARMUP_SHARE else \
            0.5 * (1 + math.cos(math.pi * (progress - WARMUP_SHARE) / (1 - WARMUP_SHARE)))
        for group in opt.param_groups:
            group["lr"] = lr * scale
        idx = torch.randint(0, len(rows), (batch,), generator=gen)
        offsets = torch.randint(0, rows.shape[1] - ctx, (batch, 1), generator=gen)
        w = rows[idx].gather(1, offsets + span).long()
        logits = model(w[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, 256), w[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        opt.step()
        losses.append(loss.item())
        done += 1
    elapsed = time.monotonic() - start
    tail = losses[-max(1, len(losses) // 20):]
    return model, {"steps": done, "train_seconds": round(elapsed, 2), "bytes_seen": done * batch * ctx,
                   "final_train_bpb": round(float(np.mean(tail)) / LN2, 4) if tail else None}


def eval_probe(family, ctx):
    """Seconds per window of ctx bytes in the scorer, timed on a fresh model over one scoring batch
    of random rows (after a small warm-up)."""
    model = make_model(family, ctx)
    probe = np.random.default_rng(0).integers(0, 256, (32, 257)).astype(np.uint8)
    bits_per_byte(model, probe[:2], ctx)
    t0 = time.monotonic()
    bits_per_byte(model, probe, ctx)
    return (time.monotonic() - t0) / (len(probe) * 256 // ctx)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", help="a text file or a folder of .txt files, as in a text:PATH goal")
    ap.add_argument("--seconds", type=float, required=True, help="wall-clock budget, evaluation included")
    ap.add_argument("--seeds", default="0,1,2", help="comma-separated seeds of the final models")
    ap.add_argument("--seed", type=int, help="one seed, the sweep's and the one final model's (as --seeds SEED): "
                                             "bench/tasks-series.sh's independent runs")
    ap.add_argument("--out", help="write the JSON document here too")
    ap.add_argument("--ctx", type=int, default=128, help="context in bytes, a power of two dividing 256")
    ap.add_argument("--batch", type=int, default=32, help="windows per training step")
    ap.add_argument("--families", default=",".join(FAMILIES), help="which families the sweep tries")
    ap.add_argument("--steps", type=int, default=0, help="fix every run's steps instead of timing it")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--final-seconds", type=float, default=0,
                    help="train each seed's final model this long (as long as the swarm's best trained a seed): "
                         "the sweep keeps --seconds; 0: the pick's sweep run is the first seed's model and the "
                         "retrains share --seconds with the sweep")
    args = ap.parse_args()
    seeds = [args.seed] if args.seed is not None else [int(s) for s in args.seeds.split(",") if s.strip()]
    families = [f for f in args.families.split(",") if f]
    if not seeds or any(f not in FAMILIES for f in families) or not families:
        ap.error(f"need at least one seed and families among {FAMILIES}")
    if 256 % args.ctx or args.ctx & (args.ctx - 1):
        ap.error("--ctx must be a power of two dividing 256")

    torch.set_num_threads(args.threads)
    t_load = time.monotonic()
    spec = corpus_spec(os.path.abspath(args.corpus))
    raw = datasets.load(spec)
    split = datasets.split(raw, spec)
    train_rows = np.ascontiguousarray(raw.x_train[split.train])
    val_rows = np.ascontiguousarray(raw.x_train[split.val])
    test_rows = np.ascontiguousarray(raw.x_test[split.test])
    load_seconds = time.monotonic() - t_load
    n_bytes = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(args.corpus) for f in fs
                  if f.endswith(".txt")) if os.path.isdir(args.corpus) else os.path.getsize(args.corpus)
    log(f"corpus {args.corpus}: {n_bytes:,} bytes; rows train {len(train_rows)}, val {len(val_rows)}, "
        f"test {len(test_rows)}; loaded in {load_seconds:.1f}s")

    start = time.monotonic()
    deadline = start + args.seconds
    # The count-based model first: its seconds come out of the networks' share of the budget.
    ngram = kneser_ney_search(train_rows, val_rows, test_rows, args.ctx)
    log(f"kneser-ney: order {ngram['order']}, discount {ngram['discount']}: val {ngram['val_bpb']:.4f} bpb, "
        f"test {ngram['test_bpb']:.4f} bpb, in {ngram['seconds']:.0f}s")
    windows_per_row = 256 // args.ctx
    per_window = {f: eval_probe(f, args.ctx) for f in families}
    correction = 1.0  # measured / probed evaluation time, updated after each evaluation

    def eval_cost(family, rows):
        return correction * per_window[family] * rows * windows_per_row

    configs = [(f, lr) for f in families for lr in LEARNING_RATES[f]]
    final_seconds = args.final_seconds
    # With --final-seconds the budget is the sweep's alone; the final models are trained after it.
    runs_left = len(configs) + (0 if final_seconds else len(seeds) - 1)

    def share(pending_eval):
        left = deadline - time.monotonic() - pending_eval
        return max(0.5, left / runs_left)

    def timed_eval(model, rows, family):
        nonlocal correction
        predicted = per_window[family] * len(rows) * windows_per_row
        t0 = time.monotonic()
        bpb = bits_per_byte(model, rows, args.ctx)
        took = time.monotonic() - t0
        correction = took / predicted if predicted > 0 else 1.0
        return bpb, took

    sweep, best_model = [], None
    worst_test = max(per_window[f] for f in families)
    planned_eval = (sum(eval_cost(f, len(val_rows)) for f, _ in configs)
                    + (0 if final_seconds else worst_test * len(test_rows) * windows_per_row * len(seeds)))
    planned = share(planned_eval)
    log(f"plan: {len(configs)} sweep runs + {len(seeds) - 1} retrains of {planned:.1f}s each; "
        f"evaluation ~{planned_eval:.0f}s (probe took {time.monotonic() - start:.1f}s)")
    for i, (family, lr) in enumerate(configs):
        pending = sum(eval_cost(f, len(val_rows)) for f, _ in configs[i:]) + \
            (0 if final_seconds else correction * worst_test * len(test_rows) * windows_per_row * len(seeds))
        seconds = min(planned, share(pending))
        model, info = train(family, lr, seeds[0], train_rows, args.ctx, args.batch, seconds, args.steps)
        val_bpb, took = timed_eval(model, val_rows, family)
        runs_left -= 1
        row = {"family": family, "lr": lr, "seed": seeds[0], "val_bpb": round(val_bpb, 4), **info,
               "eval_seconds": round(took, 2)}
        sweep.append(row)
        log(f"sweep {family:11s} lr {lr:.0e}: val {val_bpb:.4f} bpb, {info['steps']} steps in "
            f"{info['train_seconds']:.1f}s (train {info['final_train_bpb']}), eval {took:.1f}s")
        if best_model is None or val_bpb < best_model[0]["val_bpb"]:
            best_model = (row, model)
    best, model0 = best_model
    family, lr = best["family"], best["lr"]
    log(f"pick: {family} lr {lr:.0e} (val {best['val_bpb']:.4f} bpb)")

    per_seed, final = [], []
    for k, seed in enumerate(seeds):
        if final_seconds:
            model, info = train(family, lr, seed, train_rows, args.ctx, args.batch, final_seconds, args.steps)
        elif k == 0:
            model = model0
            info = {key: best[key] for key in ("steps", "train_seconds", "bytes_seen", "final_train_bpb")}
        else:
            pending = eval_cost(family, len(test_rows)) * (len(seeds) - k)
            seconds = min(planned, share(pending))
            model, info = train(family, lr, seed, train_rows, args.ctx, args.batch, seconds, args.steps)
            runs_left -= 1
        test_bpb, took = timed_eval(model, test_rows, family)
        per_seed.append(test_bpb)
        final.append({"seed": seed, "test_bpb": round(test_bpb, 4), **info, "eval_seconds": round(took, 2),
                      "reused_sweep_run": k == 0 and not final_seconds})
        log(f"seed {seed}: test {test_bpb:.4f} bpb ({info['steps']} steps, {info['train_seconds']:.1f}s), "
            f"eval {took:.1f}s")
    used = time.monotonic() - start
    mean, ci = t_interval(per_seed)

    report = {
        "corpus": os.path.abspath(args.corpus),
        "bytes": n_bytes,
        "rows": {"train": len(train_rows), "val": len(val_rows), "test": len(test_rows)},
        "seconds_budget": args.seconds,
        "seconds_used": round(used, 1),
        "seconds_load": round(load_seconds, 1),
        "budget_split": (f"{len(configs)} sweep runs sharing the budget, then {len(seeds)} final models of "
                         f"{final_seconds:.0f}s each" if final_seconds else
                         f"{len(configs)} sweep runs + {len(seeds) - 1} retrains, equal training shares; "
                         "evaluation counted in the budget"),
        "final_seconds": final_seconds or None,
        "ctx": args.ctx,
        "batch": args.batch,
        "steps_fixed": args.steps or None,
        "sweep": sweep,
        "best": {"family": family, "lr": lr, "val_bpb": best["val_bpb"], "ctx": args.ctx, "batch": args.batch,
                 "params": sum(p.numel() for p in model0.parameters()), "optimizer": "AdamW",
                 "betas": [0.9, 0.99], "weight_decay": WEIGHT_DECAY, "warmup_share": WARMUP_SHARE,
                 "schedule": "cosine to 0 by elapsed share of the run", "grad_clip": CLIP},
        "final": final,
        "test_bpb": {"per_seed": [round(v, 4) for v in per_seed], "mean": round(mean, 4),
                     "ci95": [round(v, 4) for v in ci] if ci else None, "seeds": seeds},
        "unigram_test_bpb": round(unigram_bpb(train_rows, test_rows), 4),
        "kneser_ney": ngram,
        # As bench/tasks-series.sh reads a peer: each pick's test score, named as the swarm's metric.
        "models": {"handwritten_lm": {"test_bits_per_byte": mean, "val_bits_per_byte": best["val_bpb"],
                                      "config": {"family": family, "lr": lr}},
                   "kneser_ney": {"test_bits_per_byte": ngram["test_bpb"], "val_bits_per_byte": ngram["val_bpb"],
                                  "config": {"order": ngram["order"], "discount": ngram["discount"]}}},
        "torch_version": torch.__version__,
        "threads": torch.get_num_threads(),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "load_average": [round(v, 2) for v in os.getloadavg()],
        "machine": platform.processor() or platform.machine(),
    }
    log(f"test bpb {mean:.4f}" + (f" (95% CI {ci[0]:.4f}-{ci[1]:.4f}, {len(seeds)} seeds)" if ci else "")
        + f"; {used:.0f}s of {args.seconds:.0f}s used")
    if args.out:
        with open(args.out, "w") as f:
            f.write(json.dumps(report, indent=2) + "\n")
        log(f"wrote {args.out}")
    else:
        print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
