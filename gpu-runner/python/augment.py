"""Per-batch image augmentations on [N, C, H, W] tensors, on whatever device the batch is on.

Vectorised over the batch (one random draw per sample) because a per-sample
Python loop would dominate a small CNN's step time on CPU. Randomness comes
from `generator`, or torch's global generator, which the trainer seeds, so a
seed replays.
Padding and cutout fill with 0, the per-channel mean after standardisation.
"""

import torch
import torch.nn.functional as F


def hflip(x, generator=None):
    flip = torch.rand(x.shape[0], device=x.device, generator=generator) < 0.5
    return torch.where(flip[:, None, None, None], x.flip(3), x)


def random_crop(x, padding, generator=None):
    n, _, h, w = x.shape
    padded = F.pad(x, (padding, padding, padding, padding)).permute(0, 2, 3, 1)
    dy = torch.randint(0, 2 * padding + 1, (n, 1), device=x.device, generator=generator)
    dx = torch.randint(0, 2 * padding + 1, (n, 1), device=x.device, generator=generator)
    rows = dy + torch.arange(h, device=x.device)
    cols = dx + torch.arange(w, device=x.device)
    batch = torch.arange(n, device=x.device)[:, None, None]
    return padded[batch, rows[:, :, None], cols[:, None, :]].permute(0, 3, 1, 2).contiguous()


def cutout(x, size, generator=None):
    n, _, h, w = x.shape
    top = torch.randint(0, h, (n, 1, 1), device=x.device, generator=generator) - size // 2
    left = torch.randint(0, w, (n, 1, 1), device=x.device, generator=generator) - size // 2
    ys = torch.arange(h, device=x.device).view(1, h, 1)
    xs = torch.arange(w, device=x.device).view(1, 1, w)
    hole = (ys >= top) & (ys < top + size) & (xs >= left) & (xs < left + size)
    return x.masked_fill(hole[:, None], 0.0)


def apply(x, config, generator=None):
    if config["hflip"]:
        x = hflip(x, generator)
    if config["crop_padding"]:
        x = random_crop(x, config["crop_padding"], generator)
    if config["cutout"]:
        x = cutout(x, config["cutout"], generator)
    return x


def wanted(config):
    return bool(config["hflip"] or config["crop_padding"] or config["cutout"])
