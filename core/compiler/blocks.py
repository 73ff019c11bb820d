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
