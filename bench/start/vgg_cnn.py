"""The planner's VGG-style CPU template (agents/planner/templates.ts vgg-cnn) as a plain nn.Module,
for quick-evaluator measurements outside a run: two 3x3 conv-BN-ReLU blocks per stage, 24-48-96
channels, max-pooling, dropout 0.3 before the head; 170,242 parameters on 28x28 images."""
import torch.nn as nn


class VGG(nn.Module):
    def __init__(self, width=24, num_classes=10):
        super().__init__()
        layers, channels = [], 1
        for _ in range(3):
            layers += [nn.Conv2d(channels, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
                       nn.Conv2d(width, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
                       nn.MaxPool2d(2)]
            channels, width = width, width * 2
        self.net = nn.Sequential(*layers, nn.Flatten(), nn.Dropout(0.3), nn.Linear(channels * 3 * 3, num_classes))

    def forward(self, x):
        return self.net(x)
