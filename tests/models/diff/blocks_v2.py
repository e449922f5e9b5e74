"""A stack of residual blocks (version 2: GELU). ``blocks_v1.py`` is the same model with
ReLU as every block's activation: ``irviz diff`` must report exactly those ops."""
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, width: int = 8):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, 2 * width)
        self.fc2 = nn.Linear(2 * width, width)

    def forward(self, x):
        h = self.fc1(self.norm(x))
        h = nn.functional.gelu(h)
        return x + self.fc2(h)


class Stack(nn.Module):
    def __init__(self, depth: int = 4, width: int = 8):
        super().__init__()
        self.blocks = nn.ModuleList([Block(width) for _ in range(depth)])
        self.head = nn.Linear(width, 2)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x).softmax(dim=1)


example_inputs = {"Stack": lambda: (torch.rand(3, 8),)}
