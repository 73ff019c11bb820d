"""core/compiler/blocks.py: each helper module builds, runs forward and backward, and keeps the shapes compile.ts infers."""

import inspect
import os
import sys

import numpy as np
import pytest
import torch
import torch.nn as nn

import blocks

BATCH = 2


def parameters(module):
    return sum(p.numel() for p in module.parameters())


# (module, input, expected output shape without the batch, expected parameter count or None)
CASES = {
    "Residual identity": (
        lambda: blocks.Residual(nn.Sequential(nn.Conv2d(4, 4, 3, padding=1), nn.BatchNorm2d(4)), act=nn.ReLU()),
        torch.randn(BATCH, 4, 8, 8), [4, 8, 8], None),
    "Residual projected": (
        lambda: blocks.Residual(nn.Conv2d(4, 8, 3, stride=2, padding=1),
                                shortcut=nn.Sequential(nn.Conv2d(4, 8, 1, stride=2, bias=False), nn.BatchNorm2d(8))),
        torch.randn(BATCH, 4, 8, 8), [8, 4, 4], None),
    "SqueezeExcite": (lambda: blocks.SqueezeExcite(16, 4), torch.randn(BATCH, 16, 5, 5), [16, 5, 5],
                      16 * 4 + 4 + 4 * 16 + 16),
    "GhostModule": (lambda: blocks.GhostModule(8, 13, ratio=3, kernel_size=1, dw_size=3, stride=2),
                    torch.randn(BATCH, 8, 9, 9), [13, 5, 5], None),
    "MBConv expand+SE skip": (lambda: blocks.MBConv(8, 8, hidden=32, kernel_size=3, stride=1, se_hidden=2),
                              torch.randn(BATCH, 8, 6, 6), [8, 6, 6], None),
    "MBConv no expand stride 2": (lambda: blocks.MBConv(8, 16, hidden=8, kernel_size=5, stride=2, act=nn.ReLU),
                                  torch.randn(BATCH, 8, 7, 7), [16, 4, 4], None),
    "PatchEmbed": (lambda: blocks.PatchEmbed(3, 24, patch_size=4, num_patches=16), torch.randn(BATCH, 3, 16, 16),
                   [16, 24], 3 * 24 * 16 + 24 + 16 * 24),
    "PatchEmbed without positions": (lambda: blocks.PatchEmbed(1, 8, patch_size=7, num_patches=16,
                                                               position_embedding=False),
                                     torch.randn(BATCH, 1, 28, 28), [16, 8], 49 * 8 + 8),
    "TransformerBlock": (lambda: blocks.TransformerBlock(24, heads=4, mlp_dim=48, dropout=0.1),
                         torch.randn(BATCH, 10, 24), [10, 24], 4 * 24 + (4 * 24 * 24 + 4 * 24) + (2 * 24 * 48 + 48 + 24)),
    "MixerBlock": (lambda: blocks.MixerBlock(10, 24, token_mlp_dim=12, channel_mlp_dim=48),
                   torch.randn(BATCH, 10, 24), [10, 24], 4 * 24 + (2 * 10 * 12 + 12 + 10) + (2 * 24 * 48 + 48 + 24)),
    "TokenPool mean": (lambda: blocks.TokenPool("mean"), torch.randn(BATCH, 10, 24), [24], 0),
    "TokenPool max": (lambda: blocks.TokenPool("max"), torch.randn(BATCH, 10, 24), [24], 0),
    "TokenEmbedding": (lambda: blocks.TokenEmbedding(100, 16, length=12, padding_idx=0),
                       torch.randint(0, 100, (BATCH, 12)), [12, 16], 100 * 16 + 12 * 16),
    "NgramEmbedding": (lambda: blocks.NgramEmbedding(4, 1000, 8, vocab_size=256), torch.randint(0, 256, (BATCH, 12)),
                       [12, 32], 1000 * 8),
    "SeqConv1d": (lambda: blocks.SeqConv1d(16, 32, kernel_size=3, stride=2, padding=1), torch.randn(BATCH, 12, 16),
                  [6, 32], 16 * 32 * 3 + 32),
    "SeqPool1d max": (lambda: blocks.SeqPool1d("max", 2, 2), torch.randn(BATCH, 12, 16), [6, 16], 0),
    "SeqPool1d avg": (lambda: blocks.SeqPool1d("avg", 3, 2, padding=1), torch.randn(BATCH, 12, 16), [6, 16], 0),
    "TokenBatchNorm": (lambda: blocks.TokenBatchNorm(16), torch.randn(BATCH, 12, 16), [12, 16], 32),
    "ChannelLayerNorm": (lambda: blocks.ChannelLayerNorm(6), torch.randn(BATCH, 6, 5, 5), [6, 5, 5], 12),
    "TransformerBlock causal": (lambda: blocks.TransformerBlock(24, heads=4, mlp_dim=48, causal=True),
                                torch.randn(BATCH, 10, 24), [10, 24], None),
    "TokenEmbedding shorter input": (lambda: blocks.TokenEmbedding(100, 16, length=12),
                                     torch.randint(0, 100, (BATCH, 5)), [5, 16], None),
    "SeqGRU": (lambda: blocks.SeqGRU(16, 24, num_layers=2, dropout=0.1), torch.randn(BATCH, 12, 16), [12, 24],
               3 * (24 * 16 + 24 * 24 + 2 * 24) + 3 * (2 * 24 * 24 + 2 * 24)),
}


def test_every_helper_is_exercised():
    helpers = {name for name, value in vars(blocks).items()
               if inspect.isclass(value) and value.__module__ == "blocks"}
    # ByteCounts counts a text before it runs: its own tests are below.
    assert helpers == {case.split(" ")[0] for case in CASES} | {"ByteCounts"}


@pytest.mark.parametrize("case", sorted(CASES))
def test_helper_forward_backward_and_shapes(case):
    build, x, shape, params = CASES[case]
    torch.manual_seed(0)
    module = build()
    if params is not None:
        assert parameters(module) == params
    out = module(x)
    assert list(out.shape) == [BATCH] + shape
    if parameters(module):
        out.float().pow(2).mean().backward()
        assert all(p.grad is not None for p in module.parameters() if p.requires_grad)
    module.eval()
    with torch.no_grad():
        assert list(module(x).shape) == [BATCH] + shape


def test_a_causal_block_reads_no_later_position():
    torch.manual_seed(0)
    block = blocks.TransformerBlock(24, heads=4, mlp_dim=48, causal=True).eval()
    x = torch.randn(1, 10, 24)
    later = x.clone()
    later[:, 6] += torch.randn(24)  # not a constant: LayerNorm would remove it
    with torch.no_grad():
        before, after = block(x), block(later)
    assert torch.allclose(before[:, :6], after[:, :6], atol=1e-6)
    assert not torch.allclose(before[:, 6:], after[:, 6:])
    # Without the mask, position 0 already sees position 6.
    open_block = blocks.TransformerBlock(24, heads=4, mlp_dim=48).eval()
    open_block.load_state_dict(block.state_dict())
    with torch.no_grad():
        assert not torch.allclose(open_block(x)[:, :6], open_block(later)[:, :6])


def test_ngram_embedding_reads_the_last_orders_ids_only():
    """Position t's features change with ids t-orders+1..t and no other: causal, and an n-gram model."""
    torch.manual_seed(0)
    block = blocks.NgramEmbedding(3, 1 << 16, 4, vocab_size=256)
    x = torch.randint(0, 256, (1, 12))
    for changed in range(12):
        other = x.clone()
        other[0, changed] = (x[0, changed] + 1) % 256
        moved = (block(x) != block(other)).any(-1)[0]
        assert moved.nonzero().flatten().tolist() == list(range(changed, min(changed + 3, 12)))
    # Each order has its own rows: the same id alone and the same id after another differ.
    ids = torch.tensor([[7, 7, 7]])
    features = block(ids)[0].view(3, 3, 4)
    assert torch.equal(features[1, 0], features[2, 0])  # order 1: the id itself
    assert not torch.equal(features[1, 0], features[1, 1])
    # The bytes before the window read as an id no token has: position 0's order 2 is not "7 7".
    assert not torch.equal(features[0, 1], features[2, 1])
    assert torch.equal(features[1, 1], features[2, 1])


def test_token_pool_modes_differ():
    x = torch.tensor([[[1.0, 4.0], [3.0, 2.0]]])
    assert blocks.TokenPool("mean")(x).tolist() == [[2.0, 3.0]]
    assert blocks.TokenPool("max")(x).tolist() == [[3.0, 4.0]]


def test_mbconv_skips_only_when_shapes_allow():
    assert blocks.MBConv(8, 8, hidden=16).skip
    assert not blocks.MBConv(8, 8, hidden=16, stride=2).skip
    assert not blocks.MBConv(8, 16, hidden=16).skip


def test_channel_layer_norm_normalises_each_pixel_over_channels():
    out = blocks.ChannelLayerNorm(6)(torch.randn(BATCH, 6, 3, 3) * 5 + 2)
    assert torch.allclose(out.mean(dim=1), torch.zeros(BATCH, 3, 3), atol=1e-5)


def test_token_batch_norm_normalises_features_over_batch_and_tokens():
    norm = blocks.TokenBatchNorm(4).train()
    out = norm(torch.randn(8, 5, 4) * 3 + 1)
    assert torch.allclose(out.mean(dim=(0, 1)), torch.zeros(4), atol=1e-5)


def _text_rows(n_rows=24, length=65, seed=0):
    """Rows of a small repetitive text, as a language model's dataset holds them."""
    rng = np.random.default_rng(seed)
    words = [b"the ", b"lord ", b"said ", b"unto ", b"moses ", b"and ", b"it ", b"was ", b"so. "]
    text = b"".join(words[i] for i in rng.integers(0, len(words), n_rows * length))
    return torch.tensor(list(text[:n_rows * length]), dtype=torch.uint8).view(n_rows, length)


def test_byte_counts_are_the_peers_kneser_ney():
    """The block's probabilities are bench/lm_baseline.py's exact interpolated Kneser-Ney (the
    language model's peer) at the same order and discount, window by window."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
    from lm_baseline import KneserNey
    rows = _text_rows()
    train, held = rows[:20], rows[20:]
    counts = blocks.ByteCounts(5, weight=0.5)
    counts.fit_counts(train)
    exact = KneserNey(train.numpy())
    ctx = 16
    x = held[:, :-1].reshape(-1, ctx).long()
    y = held[:, 1:].reshape(-1, ctx).long()
    p = counts.probabilities(x)
    assert torch.allclose(p.sum(-1), torch.ones(()), atol=1e-5)
    want = torch.tensor(exact.probabilities(held.numpy(), ctx, blocks.ByteCounts.DISCOUNT))[:, 5].reshape(y.shape)
    assert torch.allclose(p.gather(-1, y[..., None])[..., 0].double(), want.double(), rtol=1e-4)


def test_byte_counts_read_no_later_byte_and_mix_into_a_distribution():
    rows = _text_rows()
    counts = blocks.ByteCounts(4, weight=0.3)
    counts.fit_counts(rows)
    x = rows[:2, :32].long()
    for changed in (0, 9, 31):
        other = x.clone()
        other[:, changed] = (other[:, changed] + 1) % 256
        moved = (counts.probabilities(x) != counts.probabilities(other)).any(-1).any(0)
        # Order 4 reads 3 bytes: the prediction at a position and the two after it.
        assert moved.nonzero().flatten().tolist() == list(range(changed, min(changed + 3, 32)))
    mixed = counts(torch.randn(2, 32, 256), x)
    assert torch.allclose(mixed.logsumexp(-1), torch.zeros(()), atol=1e-5)


def test_byte_counts_travel_in_the_state_dict_and_pass_logits_on_unfitted():
    """A kept model's counts are in its weights: a module built afresh (its buffers empty, as an
    export or a prediction outside the run builds it) loads them and predicts the same."""
    rows = _text_rows()
    counts = blocks.ByteCounts(4, weight=0.3)
    logits, x = torch.randn(2, 32, 256), rows[:2, :32].long()
    assert torch.equal(counts(logits, x), logits)
    stats = counts.fit_counts(rows)
    assert stats["orders"] == 4 and stats["dropped"] == 0 and stats["contexts"] > 100
    fresh = blocks.ByteCounts(4, weight=0.3)
    fresh.load_state_dict(counts.state_dict())
    assert torch.equal(fresh(logits, x), counts(logits, x))


def test_byte_counts_keep_the_orders_that_fit(monkeypatch):
    rows = _text_rows()
    whole = blocks.ByteCounts(8, weight=0.3).fit_counts(rows)
    monkeypatch.setattr(blocks.ByteCounts, "MAX_BYTES", whole["bytes"] // 2)
    counts = blocks.ByteCounts(8, weight=0.3)
    capped = counts.fit_counts(rows)
    assert capped["orders"] < 8 and capped["bytes"] <= whole["bytes"] // 2
    assert counts.orders == capped["orders"] and counts.context_hashes(rows[:1].long()).shape[-1] == capped["orders"]
    fresh = blocks.ByteCounts(8, weight=0.3)
    fresh.load_state_dict(counts.state_dict())
    assert fresh.orders == capped["orders"]
