"""IRV130 must not fire where the training flag the trace recorded changes nothing: the
loader creates these in training mode, yet each one's trace equals its eval-mode model on
every input. Norms with no running statistics use the input's statistics in either mode
(InstanceNorm2d's default, GroupNorm, a weight-standardising ``F.batch_norm`` call),
dropout with p=0 is the identity, and a BatchNorm whose output is not used (only its
running statistics would differ) is refuted by running the eval-mode model."""
import torch
import torch.nn.functional as F
from torch import nn


class InstanceNormed(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.norm = nn.InstanceNorm2d(4, affine=True)   # track_running_stats=False
        self.drop = nn.Dropout(0.0)

    def forward(self, x):
        return self.drop(self.norm(self.conv(x)))


class StandardizedConv(nn.Conv2d):
    """Weight standardisation (as timm's StdConv2d): batch_norm over the weight."""

    def forward(self, x):
        w = F.batch_norm(self.weight.reshape(1, self.out_channels, -1), None, None,
                         training=True, momentum=0.0, eps=1e-5).reshape_as(self.weight)
        return F.conv2d(x, w, self.bias)


class GroupNormed(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = StandardizedConv(3, 4, 3)
        self.norm = nn.GroupNorm(2, 4)
        self.inorm = nn.InstanceNorm1d(4)

    def forward(self, x):
        y = self.norm(self.conv(x))
        return self.inorm(y.flatten(2))


class UnusedStatistics(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        self.bn(x)   # updates the running statistics; the output does not depend on it
        return x * 2


example_inputs = {
    "InstanceNormed": lambda: (torch.rand(2, 3, 16, 16),),
    "GroupNormed": lambda: (torch.rand(2, 3, 16, 16),),
    "UnusedStatistics": lambda: (torch.rand(3, 4),),
}
