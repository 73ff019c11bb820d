/** PyTorch model sources used across tests: well-behaved ones and hostile ones. */

export const DIGITS_CNN = `
import torch.nn as nn

class DigitsNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(32 * 4 * 4, num_classes))

    def forward(self, x):
        return self.head(self.features(x))
`;

export const FASHION_CNN = `
import torch.nn as nn

class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(32 * 7 * 7, 10),
        )

    def forward(self, x):
        return self.net(x)
`;

/** A body for forward() or __init__ wrapped into a digits-shaped module. */
export function hostile(initBody: string, forwardBody = "return self.fc(x.flatten(1))"): string {
  const indent = (s: string) =>
    s
      .trim()
      .split("\n")
      .map((l) => `        ${l}`)
      .join("\n");
  return `
import os, socket, ctypes, time
import torch
import torch.nn as nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 10)
${indent(initBody)}

    def forward(self, x):
${indent(forwardBody)}
`;
}
