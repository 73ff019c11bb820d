"""Helper modules for the code core/compiler/compile.ts generates.

core/compiler/python.ts copies each top-level class below, verbatim and in this order (its HELPERS), into
the generated model files that use it, so a generated file stays
self-contained (the runner imports nothing of ours). A class may use torch, nn
and F, which every generated file imports; one that uses another helper
(MBConv uses SqueezeExcite) needs compile.ts to emit that helper with it.
Below the first class only class lines start at column 0: anything else there
would be copied along with the class above it.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Residual(nn.Module):
    """act(body(x) + shortcut(x)); the shortcut projects x when the body changes its shape."""

    def __init__(self, body, shortcut=None, act=None):
        super().__init__()
        self.body = body
        self.shortcut = shortcut if shortcut is not None else nn.Identity()
        self.act = act if act is not None else nn.Identity()

    def forward(self, x):
        return self.act(self.body(x) + self.shortcut(x))


class SqueezeExcite(nn.Module):
    """Squeeze-and-excitation (Hu et al. 2018): gates channels by a function of their global means."""

    def __init__(self, channels, hidden, act=nn.ReLU):
        super().__init__()
        self.reduce = nn.Conv2d(channels, hidden, kernel_size=1)
        self.act = act()
        self.expand = nn.Conv2d(hidden, channels, kernel_size=1)

    def forward(self, x):
        gate = self.expand(self.act(self.reduce(F.adaptive_avg_pool2d(x, 1))))
        return x * torch.sigmoid(gate)


class GhostModule(nn.Module):
    """GhostNet (Han et al. 2020): few intrinsic maps from a regular conv, the rest from a cheap depthwise conv."""

    def __init__(self, in_ch, out_ch, ratio=2, kernel_size=1, dw_size=3, stride=1, act=nn.ReLU):
        super().__init__()
        self.out_ch = out_ch
        init_ch = -(-out_ch // ratio)
        cheap_ch = init_ch * (ratio - 1)
        self.primary = nn.Sequential(
            nn.Conv2d(in_ch, init_ch, kernel_size, stride, kernel_size // 2, bias=False),
            nn.BatchNorm2d(init_ch),
            act(),
        )
        self.cheap = nn.Sequential(
            nn.Conv2d(init_ch, cheap_ch, dw_size, 1, dw_size // 2, groups=init_ch, bias=False),
            nn.BatchNorm2d(cheap_ch),
            act(),
        )

    def forward(self, x):
        intrinsic = self.primary(x)
        return torch.cat([intrinsic, self.cheap(intrinsic)], dim=1)[:, : self.out_ch]


class MBConv(nn.Module):
    """Inverted residual (MobileNetV2, EfficientNet): expand 1x1, depthwise kxk, SE, linear 1x1 projection."""

    def __init__(self, in_ch, out_ch, hidden, kernel_size=3, stride=1, se_hidden=0, act=nn.SiLU):
        super().__init__()
        layers = []
        if hidden != in_ch:
            layers += [nn.Conv2d(in_ch, hidden, 1, bias=False), nn.BatchNorm2d(hidden), act()]
        layers += [
            nn.Conv2d(hidden, hidden, kernel_size, stride, kernel_size // 2, groups=hidden, bias=False),
            nn.BatchNorm2d(hidden),
            act(),
        ]
        if se_hidden > 0:
            layers.append(SqueezeExcite(hidden, se_hidden, act))
        layers += [nn.Conv2d(hidden, out_ch, 1, bias=False), nn.BatchNorm2d(out_ch)]
        self.block = nn.Sequential(*layers)
        self.skip = stride == 1 and in_ch == out_ch

    def forward(self, x):
        out = self.block(x)
        return x + out if self.skip else out


class PatchEmbed(nn.Module):
    """ViT patchify: a conv with stride = kernel = patch turns each patch into one token."""

    def __init__(self, in_ch, dim, patch_size, num_patches, position_embedding=True):
        super().__init__()
        self.proj = nn.Conv2d(in_ch, dim, kernel_size=patch_size, stride=patch_size)
        self.pos = nn.Parameter(torch.zeros(1, num_patches, dim)) if position_embedding else None
        if self.pos is not None:
            nn.init.trunc_normal_(self.pos, std=0.02)

    def forward(self, x):
        x = self.proj(x).flatten(2).transpose(1, 2)
        return x if self.pos is None else x + self.pos


class TransformerBlock(nn.Module):
    """Pre-norm block (ViT, GPT-2): x + attn(norm(x)), then x + mlp(norm(x)); causal: each position
    attends to itself and earlier ones only, as a language model must."""

    def __init__(self, dim, heads, mlp_dim, dropout=0.0, causal=False):
        super().__init__()
        self.causal = causal
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, dropout=dropout, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(
            nn.Linear(dim, mlp_dim), nn.GELU(), nn.Dropout(dropout), nn.Linear(mlp_dim, dim), nn.Dropout(dropout)
        )

    def forward(self, x):
        h = self.norm1(x)
        # A boolean mask (True: may not attend) rather than is_causal, which torch 1.13 lacks.
        mask = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool, device=x.device).triu(1) if self.causal else None
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class MixerBlock(nn.Module):
    """MLP-Mixer block (Tolstikhin et al. 2021): an MLP across tokens, then an MLP across channels."""

    def __init__(self, tokens, dim, token_mlp_dim, channel_mlp_dim, dropout=0.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.token_mlp = nn.Sequential(
            nn.Linear(tokens, token_mlp_dim), nn.GELU(), nn.Dropout(dropout), nn.Linear(token_mlp_dim, tokens), nn.Dropout(dropout)
        )
        self.norm2 = nn.LayerNorm(dim)
        self.channel_mlp = nn.Sequential(
            nn.Linear(dim, channel_mlp_dim), nn.GELU(), nn.Dropout(dropout), nn.Linear(channel_mlp_dim, dim), nn.Dropout(dropout)
        )

    def forward(self, x):
        x = x + self.token_mlp(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mlp(self.norm2(x))


class TokenPool(nn.Module):
    """Pools [batch, tokens, dim] over the tokens."""

    def __init__(self, mode="mean"):
        super().__init__()
        self.mode = mode

    def forward(self, x):
        return x.mean(dim=1) if self.mode == "mean" else x.amax(dim=1)


class TokenEmbedding(nn.Module):
    """Token embedding plus a learned position embedding, so order-blind layers can see positions."""

    def __init__(self, vocab_size, dim, length, padding_idx=None):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, dim, padding_idx=padding_idx)
        self.pos = nn.Parameter(torch.zeros(1, length, dim))
        nn.init.trunc_normal_(self.pos, std=0.02)

    def forward(self, x):
        # A language model may read fewer positions than it was built for (its recipe's context).
        return self.tok(x) + self.pos[:, :x.shape[1]]


class NgramEmbedding(nn.Module):
    """Hashed n-gram features, [batch, length] ids -> [batch, length, orders * dim]: at each position
    the last 1, 2, ..., orders ids (itself and the ones before it), each n-gram hashed to a row of one
    shared table. A neural n-gram model's input: it remembers a text's repeated phrases in one pass,
    where a recurrent or attention model learns them over many. Causal; the positions before the
    window's start read as `vocab_size`, an id no token has."""

    def __init__(self, orders, buckets, dim, vocab_size):
        super().__init__()
        self.orders, self.buckets, self.vocab_size = orders, buckets, vocab_size
        self.table = nn.Embedding(buckets, dim)
        nn.init.normal_(self.table.weight, std=0.02)

    def forward(self, x):
        # A polynomial hash of the n-gram, extended by one id per order and kept under 2**31 (a
        # prime modulus), then mixed by a multiplicative hash whose high bits pick the row: every
        # product fits int64. Padding and integer arithmetic only, so it runs under vmap.
        h = torch.zeros_like(x)
        rows = []
        for k in range(self.orders):
            earlier = F.pad(x, (k, 0), value=self.vocab_size)[:, :x.shape[1]]
            h = (h * (self.vocab_size + 7) + earlier + 1) % 2147483647
            rows.append((h * 2654435761 + k * 97531) // 128 % self.buckets)
        return self.table(torch.stack(rows, -1)).flatten(2)


class ByteCounts(nn.Module):
    """A byte-level language model's own n-gram: interpolated Kneser-Ney over bytes (orders
    1..`orders`, absolute discount DISCOUNT) from counts of the training text, held as buffers and
    mixed into the network's predictions. `forward(logits, x)` is log(weight * softmax(logits) +
    (1 - weight) * p_counts): log-probabilities, which softmax and cross-entropy read as logits.
    The trainer fills the buffers from the job's training rows (`fit_counts`) before it trains;
    the network trains alone (the model mixes in eval mode only), so it learns what the counts
    miss, and evaluation, kept weights and exports see the mixture. Unfitted, it passes the
    logits on.

    A lookup is gathers, compares and scatters, a fixed number of them per order, so it exports
    to ONNX (torch exports no searchsorted): each context (of each order, raw and continuation
    counts apart) is hashed to a slot of an open-addressing table whose PROBES slots from there
    are read at once (one cache line), each slot holding a context's index and a 31-bit
    fingerprint of its key, and its successors are stored one after the other. bench/lm_counts.py
    measures it against exact Kneser-Ney. Counts take about 26 bytes per distinct context: at
    order 12, 81 MB for 720 kB of text; the orders that fit MAX_BYTES are kept."""

    MODULUS = 2147483647  # the polynomial hash's prime: every product below fits int64
    MULTIPLIER = 263  # 256 byte values, the padding, and a margin
    PROBES = 16
    DISCOUNT = 0.95
    # Under the runner's limit on a job's files (a kept model's weights), with the network's.
    MAX_BYTES = 128 << 20
    BUFFERS = (("table", torch.int32), ("fingerprint", torch.int32), ("start", torch.int32),
               ("successor", torch.uint8), ("count", torch.int32), ("widths", torch.int32))

    def __init__(self, orders, weight):
        super().__init__()
        self.orders, self.weight = orders, weight
        for name, dtype in self.BUFFERS:
            self.register_buffer(name, torch.zeros(0, dtype=dtype))
        self._derive()

    def _derive(self):
        # Python ints, so a lookup's shapes are constants to tracing and exports. `slots`: those a
        # key hashes to; the table runs PROBES - 1 past them, so the last one's probes need no wrap.
        self.slots = max(0, self.table.numel() - self.PROBES + 1)
        self.gather_widths = self.widths.tolist()
        if self.slots:
            self.orders = len(self.gather_widths) // 2 - 1

    def _load_from_state_dict(self, state_dict, prefix, *args):
        # The buffers' sizes are the training text's, unknown when the module is built.
        for name, _ in self.BUFFERS:
            if prefix + name in state_dict:
                self._buffers[name] = torch.empty_like(state_dict[prefix + name], device=self._buffers[name].device)
        super()._load_from_state_dict(state_dict, prefix, *args)
        self._derive()

    def context_hashes(self, x):
        """[B, T] bytes -> [B, T, orders]: order n's hash of the n - 1 bytes that end at each
        position (order 1's is 0); -1 where the window holds fewer."""
        h = torch.zeros_like(x)
        out = [h]
        for k in range(1, self.orders):
            earlier = F.pad(x, (k - 1, 0), value=-1)[:, :x.shape[1]]
            h = (h * self.MULTIPLIER + earlier + 1) % self.MODULUS
            out.append(torch.where((out[-1] >= 0) & (earlier >= 0), h, torch.full_like(h, -1)))
        return torch.stack(out, -1)

    @staticmethod
    def context_key(h, n, continuation):
        """A context's key, under 2**37: its hash, its order and which counts."""
        return h * 64 + n * 2 + continuation + 1

    def slot(self, key):
        # Each part of the key times a multiplicative hash's constant: every product fits int64
        # (an overflow wraps in torch and differs between runtimes), and the slot depends on the
        # bits the fingerprint (the key mod MODULUS) does not hold. Division and remainder, not
        # shifts and masks: ONNX's opset 17 has no bitwise operators on integers.
        return ((key // 1048576) * 2246822519 + key % 1048576 * 2654435761) // 128 % self.slots

    @torch.no_grad()
    def fit_counts(self, rows):
        """Counts the training rows ([N, L] bytes, each read from its start) into the buffers, the
        orders that fit MAX_BYTES; returns what they hold."""
        rows = rows.to("cpu").long()
        h, nxt = self.context_hashes(rows[:, :-1]), rows[:, 1:]
        parts, longer = {}, None
        for n in range(self.orders, 0, -1):
            here = h[..., n - 1] >= 0
            raw, inverse, times = torch.unique(self.context_key(h[..., n - 1][here], n, 0) * 256 + nxt[here],
                                               return_inverse=True, return_counts=True)
            parts[n, 0] = raw, times
            if longer is not None:
                # Continuation counts: of (context, byte), how many distinct bytes came before it,
                # one for each distinct (byte, context, byte) of the order above.
                where, above, distinct = longer
                suffix = self.context_key(h[..., n - 1][where], n, 1) * 256 + nxt[where]
                parts[n, 1] = torch.unique(torch.zeros(distinct, dtype=torch.long).scatter_(0, above, suffix), return_counts=True)
            longer = here, inverse, len(raw)
        # A context costs two slots (an index and a fingerprint each) and a start; a successor its
        # byte and its count.
        cost = {n: sum(20 * len(torch.unique_consecutive(g // 256)) + 5 * len(g) for (m, _), (g, _) in parts.items() if m == n)
                for n in range(1, self.orders + 1)}
        while self.orders > 1 and sum(cost[n] for n in range(1, self.orders + 1)) > self.MAX_BYTES:
            self.orders -= 1
        kept = [(n, c) for n, c in parts if n < self.orders or (n, c) == (self.orders, 0)]
        # Every gram names its order and kind, so none repeats across the parts.
        grams, by_context = torch.cat([parts[k][0] for k in kept]).sort()
        counts = torch.cat([parts[k][1] for k in kept])[by_context]
        keys, length = torch.unique_consecutive(grams // 256, return_counts=True)
        start = torch.cat([length.cumsum(0) - length, length.sum()[None]])
        widths = torch.zeros(2 * self.orders + 2, dtype=torch.long).scatter_reduce_(0, (keys - 1) % 64, length, "amax")
        self.slots = 2 * len(keys) + 1
        table = self.placed(keys)
        fingerprint = torch.where(table >= 0, keys[table.clamp(min=0)] % self.MODULUS, torch.full_like(table, -1))
        device = self.table.device
        for (name, dtype), value in zip(self.BUFFERS, (table, fingerprint, start, grams % 256, counts, widths)):
            self._buffers[name] = value.to(device=device, dtype=dtype)
        self._derive()
        return {"orders": self.orders, "contexts": len(keys), "successors": len(grams), "dropped": int(len(keys) - (table >= 0).sum()),
                "bytes": sum(b.numel() * b.element_size() for b in self.buffers())}

    def placed(self, keys):
        """The table: each context's index at the first free slot of its probes, -1 where none
        (a context left out reads as unseen)."""
        table = torch.full((self.slots + self.PROBES - 1,), -1, dtype=torch.long)
        base = self.slot(keys)
        waiting = torch.arange(len(keys))
        for probe in range(self.PROBES):
            while len(waiting):
                at = base[waiting] + probe
                free = table[at] < 0
                if not free.any():
                    break
                spots, inverse = torch.unique(at[free], return_inverse=True)
                table[spots] = torch.full_like(spots, len(keys)).scatter_reduce_(0, inverse, waiting[free], "amin")
                waiting = waiting[table[at] != waiting]
        return table

    @staticmethod
    def gather(values, at):
        """values[at] for a 1-D `values`: index_select gathers about 3 times as fast on a CPU."""
        return values.index_select(0, at.reshape(-1)).view(at.shape)

    def level(self, h, n, continuation):
        """One Kneser-Ney level of [P] contexts of order n: each context's successors [P, W] (W the
        most any context of that order has), their discounted counts over the context's total, and
        the mass left to the level below ([P, 1]; all of it where the context is unseen)."""
        key = self.context_key(h, n, continuation)
        window = self.slot(key)[:, None] + torch.arange(self.PROBES, device=h.device)
        # An empty slot's fingerprint is -1, which no key's is.
        match = self.gather(self.fingerprint, window) == (key % self.MODULUS)[:, None]
        found = torch.where(match, self.gather(self.table, window).long(), torch.full_like(window, -1)).amax(-1)
        seen = ((found >= 0) & (h >= 0))[:, None]
        row = found.clamp(min=0)
        first = self.gather(self.start, row).long()
        steps = torch.arange(self.gather_widths[n * 2 + continuation], device=h.device)
        inside = (steps < (self.gather(self.start, row + 1) - first)[:, None]) & seen
        at = torch.where(inside, first[:, None] + steps, torch.zeros_like(steps))
        counts = self.gather(self.count, at).float() * inside
        total = counts.sum(-1, keepdim=True).clamp(min=1)
        mass = torch.where(seen, self.DISCOUNT * inside.sum(-1, keepdim=True) / total, torch.ones_like(total))
        return mass, self.gather(self.successor, at).long(), (counts - self.DISCOUNT).clamp(min=0) / total

    @staticmethod
    def mixed(levels):
        """The distribution of a chain of levels, highest first: each level's discounted counts
        weigh the product of the masses of the levels above it, and the uniform 1/256 the product
        of them all. One dense pass and a scatter of each level's few successors, where building
        the chain level by level would rescale all 256 bytes at every level."""
        # A running product, not cumprod: ONNX's opset 17 has none.
        weights = [torch.ones_like(levels[0][0])]
        for mass, _, _ in levels:
            weights.append(weights[-1] * mass)
        out = (weights[-1] / 256).expand(-1, 256).contiguous()
        for weight, (_, successors, discounted) in zip(weights, levels):
            out.scatter_add_(1, successors, discounted * weight)
        return out

    def probabilities(self, x):
        """[B, T] bytes -> [B, T, 256]: each next byte's probability, the highest order's raw
        counts over the chain of continuation counts below it. Each window is read from its
        start: position t has t + 1 bytes to read, so its highest order is t + 2 where that is
        below `orders`, and it is computed for that position alone."""
        b, t = x.shape
        h = self.context_hashes(x)
        chain = [self.level(h[..., n - 1].flatten(), n, 1) for n in range(1, self.orders)]
        top = self.mixed([self.level(h[..., -1].flatten(), self.orders, 0)] + chain[::-1]).view(b, t, 256)
        early = []
        for n in range(2, min(self.orders, t + 2)):
            below = [tuple(part.view(b, t, -1)[:, n - 2] for part in level) for level in chain[:n - 1]]
            early.append(self.mixed([self.level(h[:, n - 2, n - 1], n, 0)] + below[::-1]))
        return torch.cat([torch.stack(early, 1), top[:, len(early):]], 1) if early else top

    def forward(self, logits, x):
        if not self.slots:
            return logits
        mixed = self.weight * F.softmax(logits.float(), -1) + (1 - self.weight) * self.probabilities(x.long())
        return torch.log(mixed)


class SeqConv1d(nn.Conv1d):
    """Conv1d over [batch, length, channels], the layout embeddings and tokens use."""

    def forward(self, x):
        return super().forward(x.transpose(1, 2)).transpose(1, 2)


class SeqPool1d(nn.Module):
    """Max or average pooling along the length of [batch, length, channels]."""

    def __init__(self, mode, kernel_size, stride, padding=0):
        super().__init__()
        cls = nn.MaxPool1d if mode == "max" else nn.AvgPool1d
        self.pool = cls(kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        return self.pool(x.transpose(1, 2)).transpose(1, 2)


class TokenBatchNorm(nn.BatchNorm1d):
    """BatchNorm over the feature dim of [batch, tokens, dim]."""

    def forward(self, x):
        return super().forward(x.transpose(1, 2)).transpose(1, 2)


class ChannelLayerNorm(nn.LayerNorm):
    """LayerNorm over the channels of each pixel of [batch, C, H, W] (ConvNeXt style)."""

    def forward(self, x):
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class SeqGRU(nn.GRU):
    """A GRU over [batch, length, channels] that returns its output at every position."""

    def __init__(self, input_size, hidden_size, num_layers=1, dropout=0.0):
        super().__init__(input_size, hidden_size, num_layers=num_layers, dropout=dropout, batch_first=True)

    def forward(self, x):
        return super().forward(x)[0]
