"""Norms that run torch's batch-size check (the TracerWarning a BatchNorm in training mode
gives) yet normalise the same way in eval mode: GroupNorm, a weight-standardising
``F.batch_norm(w, None, None, training=True)`` (timm's StdConv2d) and a BatchNorm with no
running statistics left in training mode. None of them "ran in training mode"."""
import torch
import torch.nn.functional as F
from torch import nn


class StdConv2d(nn.Conv2d):
    def forward(self, x):
        w = F.batch_norm(self.weight.reshape(1, self.out_channels, -1), None, None,
                         training=True, momentum=0.0, eps=1e-5).reshape_as(self.weight)
        return F.conv2d(x, w, self.bias)


group_norm = nn.Sequential(nn.Conv2d(3, 4, 3), nn.GroupNorm(2, 4)).eval()
standardized = nn.Sequential(StdConv2d(3, 4, 3), nn.ReLU()).eval()
#: training mode, but no running statistics: the batch's statistics in either mode
untracked = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4, track_running_stats=False))

example_inputs = {name: (lambda: (torch.rand(2, 3, 8, 8),))
                  for name in ("group_norm", "standardized", "untracked")}
