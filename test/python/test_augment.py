"""augment.py: per-sample random augmentations, vectorised over the batch."""

import torch
import torch.nn.functional as F

import augment

OFF = {"hflip": False, "crop_padding": 0, "cutout": 0}


def batch(n=64, c=2, h=6, w=7):
    # Distinct positive values everywhere, so a zero can only come from padding or a hole.
    return torch.arange(1, n * c * h * w + 1, dtype=torch.float32).reshape(n, c, h, w)


def test_hflip_mirrors_some_samples_and_leaves_the_others():
    x = batch()
    torch.manual_seed(0)
    out = augment.hflip(x)
    flipped = [bool(torch.equal(o, s.flip(2))) for o, s in zip(out, x)]
    kept = [bool(torch.equal(o, s)) for o, s in zip(out, x)]
    assert all(f != k for f, k in zip(flipped, kept))
    assert 0 < sum(flipped) < len(x)


def test_random_crop_takes_a_window_of_the_zero_padded_image():
    x = batch()
    padding = 2
    torch.manual_seed(1)
    out = augment.random_crop(x, padding)
    assert out.shape == x.shape and out.is_contiguous()
    padded = F.pad(x, (padding,) * 4)
    h, w = x.shape[2:]
    offsets = set()
    for o, p in zip(out, padded):
        found = [(dy, dx) for dy in range(2 * padding + 1) for dx in range(2 * padding + 1)
                 if torch.equal(o, p[:, dy:dy + h, dx:dx + w])]
        assert len(found) == 1
        offsets.add(found[0])
    assert len(offsets) > 1


def test_cutout_zeroes_one_square_per_sample_at_most():
    x = batch()
    size = 3
    torch.manual_seed(2)
    out = augment.cutout(x, size)
    assert out.shape == x.shape
    holes = out == 0
    assert torch.equal(out[~holes], x[~holes])
    for hole in holes:
        # The same hole in every channel, a size x size square clipped at the borders.
        assert torch.equal(hole[0], hole[1])
        rows, cols = hole[0].nonzero(as_tuple=True)
        assert 1 <= len(rows) <= size * size
        assert rows.max() - rows.min() < size and cols.max() - cols.min() < size
        assert len(rows) == (rows.max() - rows.min() + 1) * (cols.max() - cols.min() + 1)


def test_apply_is_reproducible_from_the_seed_and_a_no_op_when_off():
    x = batch()
    config = {"hflip": True, "crop_padding": 1, "cutout": 2}
    torch.manual_seed(3)
    first = augment.apply(x, config)
    torch.manual_seed(3)
    assert torch.equal(augment.apply(x, config), first)
    assert not torch.equal(first, x)
    assert augment.apply(x, OFF) is x
    assert not augment.wanted(OFF)
    assert all(augment.wanted({**OFF, key: on}) for key, on in (("hflip", True), ("crop_padding", 1), ("cutout", 4)))
