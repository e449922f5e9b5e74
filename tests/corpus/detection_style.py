"""Scripted models with real control flow, written in torchvision's detection style.

torchvision's own wheels cannot be installed beside the CPU torch of the test machines, so
the tests use these: a backbone with a feature pyramid, a head that loops over the
pyramid's levels, input validation that raises, a branch on the image size, a top-k capped
by the number of candidates, and a training-only path. The lines marked ``# PITFALL`` are
what ``torch.jit.trace`` freezes and lint must find; everything else must stay quiet.
"""
from typing import Dict, List, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class Backbone(nn.Module):
    """Three stages, each halving the resolution; returns every stage's features."""

    def __init__(self, width: int = 8):
        super().__init__()
        self.stem = nn.Conv2d(3, width, 3, stride=2, padding=1)
        self.stages = nn.ModuleList(
            [nn.Conv2d(width, width, 3, stride=2, padding=1) for _ in range(3)])

    def forward(self, x: Tensor) -> List[Tensor]:
        x = F.relu(self.stem(x))
        features: List[Tensor] = []
        for stage in self.stages:
            x = F.relu(stage(x))
            features.append(x)
        return features


class FeaturePyramid(nn.Module):
    """Top-down pathway: each level gets the upsampled coarser level added."""

    def __init__(self, width: int = 8, levels: int = 3):
        super().__init__()
        self.lateral = nn.ModuleList([nn.Conv2d(width, width, 1) for _ in range(levels)])

    def forward(self, features: List[Tensor]) -> Dict[str, Tensor]:
        laterals: List[Tensor] = []
        for i, conv in enumerate(self.lateral):
            laterals.append(conv(features[i]))
        out: Dict[str, Tensor] = {}
        last = laterals[-1]
        out[str(len(laterals) - 1)] = last
        for i in range(len(laterals) - 2, -1, -1):
            top_down = F.interpolate(last, size=laterals[i].shape[-2:], mode="nearest")
            last = laterals[i] + top_down
            out[str(i)] = last
        return out


class AnchorHead(nn.Module):
    """Class scores and box deltas for every level, flattened and concatenated."""

    def __init__(self, width: int = 8, anchors: int = 3, classes: int = 4):
        super().__init__()
        self.cls = nn.Conv2d(width, anchors * classes, 3, padding=1)
        self.box = nn.Conv2d(width, anchors * 4, 3, padding=1)
        self.classes = classes

    def forward(self, features: List[Tensor]) -> Tuple[Tensor, Tensor]:
        scores: List[Tensor] = []
        boxes: List[Tensor] = []
        for feature in features:
            n = feature.shape[0]
            scores.append(self.cls(feature).permute(0, 2, 3, 1).reshape(n, -1, self.classes))
            boxes.append(self.box(feature).permute(0, 2, 3, 1).reshape(n, -1, 4))
        return torch.cat(scores, 1), torch.cat(boxes, 1)


class Detector(nn.Module):
    """Validate, pad to the stride, backbone -> pyramid -> head, keep the top detections."""

    def __init__(self, detections: int = 50):
        super().__init__()
        self.backbone = Backbone()
        self.fpn = FeaturePyramid()
        self.head = AnchorHead()
        self.detections = detections

    def forward(self, images: Tensor) -> Tuple[Tensor, Tensor]:
        if images.dim() != 4:
            raise ValueError("expected a batch of images (N, C, H, W)")
        torch._assert(images.shape[1] == 3, "expected RGB images")
        if images.shape[-1] % 16 != 0:  # PITFALL: the padding the example needed is frozen
            images = F.pad(images, (0, 16 - images.shape[-1] % 16))
        pyramid = self.fpn(self.backbone(images))
        levels: List[Tensor] = []
        for key in sorted(pyramid.keys()):
            levels.append(pyramid[key])
        scores, boxes = self.head(levels)
        best = scores.max(-1).values
        k = min(self.detections, best.shape[1])  # PITFALL: the candidate count is frozen
        top = best.topk(k, dim=1).indices
        if self.training:
            raise RuntimeError("Detector is inference-only here")
        return best.gather(1, top), boxes.gather(1, top.unsqueeze(-1).expand(-1, -1, 4))


def make_detector():
    # fixed weights: with some random ones the frozen padding changed the top scores by
    # only ~1e-3, at the edge of lint's tolerance, and its test failed one run in five
    with torch.random.fork_rng():
        torch.manual_seed(0)
        return Detector().eval()


example_inputs = {
    "make_detector()": lambda: (
        torch.rand(1, 3, 40, 40, generator=torch.Generator().manual_seed(0)),),
}
