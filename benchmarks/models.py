"""Models the benchmarks draw, as zero-argument factories irviz can load.

``irviz render benchmarks/models.py:resnet18()`` works like any other target: the
factories build the model (random weights, nothing downloaded) and ``example_inputs``
gives their inputs. ``stacked(n)`` is the synthetic model of the scaling benchmark.
"""
from __future__ import annotations

import torch
from torch import nn

SEQ_LEN = 128


# -- a ResNet-18-like CNN (torchvision's layout: BasicBlock x [2, 2, 2, 2]) ---------------

class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = nn.Identity()
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                            nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + self.downsample(x))


class ResNet18(nn.Module):
    def __init__(self, num_classes: int = 1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        widths = [64, 128, 256, 512]
        layers = []
        cin = 64
        for i, w in enumerate(widths):
            stride = 1 if i == 0 else 2
            layers.append(nn.Sequential(BasicBlock(cin, w, stride), BasicBlock(w, w)))
            cin = w
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet18() -> nn.Module:
    torch.manual_seed(0)
    return ResNet18().eval()


# -- transformers models, random weights --------------------------------------------------

def bert() -> nn.Module:
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    return BertModel(BertConfig(torchscript=True, return_dict=False)).eval()


def gpt2() -> nn.Module:
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    return GPT2Model(GPT2Config(torchscript=True, use_cache=False, return_dict=False)).eval()


# -- the scaling benchmark's synthetic model ---------------------------------------------

class Block(nn.Module):
    """Linear + ReLU with a residual connection."""

    def __init__(self, width: int):
        super().__init__()
        self.fc = nn.Linear(width, width)
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.act(self.fc(x))


class Stacked(nn.Module):
    def __init__(self, n: int, width: int = 8):
        super().__init__()
        # a ModuleList, not nn.Sequential: irviz collapses torch.nn containers into one box
        self.blocks = nn.ModuleList([Block(width) for _ in range(n)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return x


def stacked(n: int = 10) -> nn.Module:
    torch.manual_seed(0)
    return Stacked(int(n)).eval()


def token_ids() -> tuple:
    return (torch.randint(0, 1000, (1, SEQ_LEN)),)


example_inputs = {
    "resnet18": lambda: (torch.rand(1, 3, 224, 224),),
    "bert": token_ids,
    "gpt2": token_ids,
    "stacked": lambda: (torch.rand(2, 8),),
}
