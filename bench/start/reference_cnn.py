"""The 61k-parameter reference CNN of bench/runner-bench.ts (FashionCNN), as a researcher would
write it: the same network at its defaults, its width and dropout in the constructor.
A starting point for `launch --from bench/start/reference_cnn.py --class FashionCNN`."""
import torch.nn as nn


def block(cin, cout):
    return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()]


class FashionCNN(nn.Module):
    def __init__(self, num_classes=10, width=24, dropout=0.2):
        super().__init__()
        self.net = nn.Sequential(
            *block(1, width), nn.MaxPool2d(2),
            *block(width, 2 * width), nn.MaxPool2d(2),
            *block(2 * width, 4 * width), nn.MaxPool2d(2),
            nn.Flatten(), nn.Dropout(dropout), nn.Linear(4 * width * 3 * 3, num_classes),
        )

    def forward(self, x):
        return self.net(x)
