"""A small residual network a researcher might bring (28 x 28 grey images): a stem, two stages of
residual blocks (the second at half the resolution and twice the width), global average pooling.
Its width, depth, dropout and normalisation are constructor arguments. A second starting point
for `launch --from bench/start/residual_net.py --class ResNetSmall`, of another shape than
reference_cnn.py."""
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, width, bn):
        super().__init__()
        norm = (lambda: nn.BatchNorm2d(width)) if bn else nn.Identity
        self.body = nn.Sequential(
            nn.Conv2d(width, width, 3, padding=1, bias=not bn), norm(), nn.ReLU(),
            nn.Conv2d(width, width, 3, padding=1, bias=not bn), norm(),
        )
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(x + self.body(x))


class ResNetSmall(nn.Module):
    def __init__(self, num_classes=10, width=16, blocks=1, dropout=0.0, bn=True):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, width, 3, padding=1), nn.ReLU())
        self.stage1 = nn.Sequential(*[Block(width, bn) for _ in range(blocks)])
        self.down = nn.Sequential(nn.Conv2d(width, 2 * width, 3, stride=2, padding=1), nn.ReLU())
        self.stage2 = nn.Sequential(*[Block(2 * width, bn) for _ in range(blocks)])
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(dropout), nn.Linear(2 * width, num_classes))

    def forward(self, x):
        return self.head(self.stage2(self.down(self.stage1(self.stem(x)))))
