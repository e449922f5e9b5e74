"""Models the benchmarks draw, as zero-argument factories irviz can load.

``irviz render benchmarks/models.py:resnet18()`` works like any other target: the
factories build the model (random weights, nothing downloaded) and ``example_inputs``
gives their inputs. ``stacked(n)`` is the synthetic model of the scaling benchmark,
``mlp_stack(n)`` the one of the 100k-IR-node benchmark (issue 32).

Issue 16's set: ``detector()`` (scripted, Mask R-CNN's layout in torchvision's style, 11k
IR nodes), ``densenet()`` (DenseNet-121's concatenations, for layout), ``vit()`` and
``bert_kw()`` (transformers' default configurations called with keyword inputs) and
``fasterrcnn()`` (torchvision's, only where torchvision imports).
"""
from __future__ import annotations

import math
from collections import OrderedDict
from typing import Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

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


# -- a DenseNet-121-like CNN (torchvision's layout: every layer sees all earlier features) --

class DenseLayer(nn.Module):
    """BN-ReLU-1x1 conv (bottleneck) then BN-ReLU-3x3 conv over the concatenated inputs."""

    def __init__(self, cin: int, growth: int, bn_size: int = 4):
        super().__init__()
        self.norm1 = nn.BatchNorm2d(cin)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(cin, bn_size * growth, 1, bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth)
        self.relu2 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(bn_size * growth, growth, 3, padding=1, bias=False)

    def forward(self, inputs: List[Tensor]) -> Tensor:
        concated = torch.cat(inputs, 1)
        bottleneck = self.conv1(self.relu1(self.norm1(concated)))
        return self.conv2(self.relu2(self.norm2(bottleneck)))


class DenseBlock(nn.ModuleDict):
    def __init__(self, layers: int, cin: int, growth: int):
        super().__init__()
        for i in range(layers):
            self.add_module(f"denselayer{i + 1}", DenseLayer(cin + i * growth, growth))

    def forward(self, init_features: Tensor) -> Tensor:
        features = [init_features]
        for _, layer in self.items():
            features.append(layer(features))
        return torch.cat(features, 1)


class Transition(nn.Sequential):
    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.norm = nn.BatchNorm2d(cin)
        self.relu = nn.ReLU(inplace=True)
        self.conv = nn.Conv2d(cin, cout, 1, bias=False)
        self.pool = nn.AvgPool2d(2, 2)


class DenseNet(nn.Module):
    def __init__(self, growth: int = 32, blocks: Tuple[int, ...] = (6, 12, 24, 16),
                 init_features: int = 64, num_classes: int = 1000):
        super().__init__()
        stem = [("conv0", nn.Conv2d(3, init_features, 7, 2, 3, bias=False)),
                ("norm0", nn.BatchNorm2d(init_features)), ("relu0", nn.ReLU(inplace=True)),
                ("pool0", nn.MaxPool2d(3, 2, 1))]
        self.features = nn.Sequential(OrderedDict(stem))
        channels = init_features
        for i, layers in enumerate(blocks):
            self.features.add_module(f"denseblock{i + 1}", DenseBlock(layers, channels, growth))
            channels += layers * growth
            if i != len(blocks) - 1:
                self.features.add_module(f"transition{i + 1}", Transition(channels, channels // 2))
                channels //= 2
        self.features.add_module("norm5", nn.BatchNorm2d(channels))
        self.classifier = nn.Linear(channels, num_classes)

    def forward(self, x: Tensor) -> Tensor:
        out = F.relu(self.features(x), inplace=True)
        out = torch.flatten(F.adaptive_avg_pool2d(out, (1, 1)), 1)
        return self.classifier(out)


def densenet() -> nn.Module:
    torch.manual_seed(0)
    return DenseNet().eval()


# -- transformers models, random weights --------------------------------------------------

def bert() -> nn.Module:
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    return BertModel(BertConfig(torchscript=True, return_dict=False)).eval()


def gpt2() -> nn.Module:
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    return GPT2Model(GPT2Config(torchscript=True, use_cache=False, return_dict=False)).eval()


def bert_kw() -> nn.Module:
    """BERT-base as people bring it: default configuration (a ModelOutput back), called
    with keyword inputs (``bert_inputs``)."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    return BertModel(BertConfig()).eval()


def vit() -> nn.Module:
    """ViT-Base/16 at 224x224, default configuration, called with ``pixel_values=``."""
    from transformers import ViTConfig, ViTModel

    torch.manual_seed(0)
    return ViTModel(ViTConfig()).eval()


def fasterrcnn() -> nn.Module:
    """torchvision's Faster R-CNN (ResNet-50 FPN), random weights; only where torchvision
    imports (its wheels here are CUDA builds)."""
    from torchvision.models.detection import fasterrcnn_resnet50_fpn

    torch.manual_seed(0)
    return fasterrcnn_resnet50_fpn(weights=None, weights_backbone=None).eval()


# -- a detection-scale scripted model in torchvision's style (Faster R-CNN-like) --------
# No torchvision: its wheels here are CUDA builds that do not import beside the CPU torch.
# BatchNorm (not torchvision's FrozenBatchNorm2d) on purpose: its scripted checks add many
# IR nodes, as in a user's own detector.

class Bottleneck(nn.Module):
    expansion: int = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1,
                 downsample: Optional[nn.Module] = None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * self.expansion, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x: Tensor) -> Tensor:
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNetBody(nn.Module):
    """ResNet-101's body; returns the four stages' features by name (IntermediateLayerGetter)."""

    def __init__(self, layers: Tuple[int, int, int, int] = (3, 4, 23, 3)):
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = self._make_layer(64, layers[0])
        self.layer2 = self._make_layer(128, layers[1], 2)
        self.layer3 = self._make_layer(256, layers[2], 2)
        self.layer4 = self._make_layer(512, layers[3], 2)

    def _make_layer(self, planes: int, blocks: int, stride: int = 1) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes * Bottleneck.expansion:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes * Bottleneck.expansion, 1, stride, bias=False),
                nn.BatchNorm2d(planes * Bottleneck.expansion))
        layers = [Bottleneck(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * Bottleneck.expansion
        layers += [Bottleneck(self.inplanes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Dict[str, Tensor]:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        out: Dict[str, Tensor] = {}
        x = self.layer1(x)
        out["0"] = x
        x = self.layer2(x)
        out["1"] = x
        x = self.layer3(x)
        out["2"] = x
        x = self.layer4(x)
        out["3"] = x
        return out


def conv_norm(cin: int, cout: int, kernel: int, relu: bool = False) -> nn.Sequential:
    """torchvision's Conv2dNormActivation: conv without bias, BatchNorm, optional ReLU."""
    layers: List[nn.Module] = [nn.Conv2d(cin, cout, kernel, padding=kernel // 2, bias=False),
                               nn.BatchNorm2d(cout)]
    if relu:
        layers.append(nn.ReLU(inplace=True))
    return nn.Sequential(*layers)


class FeaturePyramidNetwork(nn.Module):
    """torchvision's FPN (with BatchNorm, as in the v2 detection models): lateral 1x1 convs,
    top-down upsampling, 3x3 output convs, and a max-pooled extra level."""

    def __init__(self, in_channels: List[int], out_channels: int = 256):
        super().__init__()
        self.inner_blocks = nn.ModuleList([conv_norm(c, out_channels, 1) for c in in_channels])
        self.layer_blocks = nn.ModuleList(
            [conv_norm(out_channels, out_channels, 3) for _ in in_channels])

    def get_result_from_inner_blocks(self, x: Tensor, idx: int) -> Tensor:
        num_blocks = len(self.inner_blocks)
        if idx < 0:
            idx += num_blocks
        out = x
        for i, module in enumerate(self.inner_blocks):
            if i == idx:
                out = module(x)
        return out

    def get_result_from_layer_blocks(self, x: Tensor, idx: int) -> Tensor:
        num_blocks = len(self.layer_blocks)
        if idx < 0:
            idx += num_blocks
        out = x
        for i, module in enumerate(self.layer_blocks):
            if i == idx:
                out = module(x)
        return out

    def forward(self, x: Dict[str, Tensor]) -> Dict[str, Tensor]:
        names = list(x.keys())
        feats = list(x.values())
        last_inner = self.get_result_from_inner_blocks(feats[-1], -1)
        results: List[Tensor] = [self.get_result_from_layer_blocks(last_inner, -1)]
        for idx in range(len(feats) - 2, -1, -1):
            inner_lateral = self.get_result_from_inner_blocks(feats[idx], idx)
            feat_shape = inner_lateral.shape[-2:]
            inner_top_down = F.interpolate(last_inner, size=feat_shape, mode="nearest")
            last_inner = inner_lateral + inner_top_down
            results.insert(0, self.get_result_from_layer_blocks(last_inner, idx))
        names.append("pool")
        results.append(F.max_pool2d(results[-1], 1, 2, 0))
        out: Dict[str, Tensor] = {}
        for name, res in zip(names, results):
            out[name] = res
        return out


def box_area(boxes: Tensor) -> Tensor:
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def box_iou(a: Tensor, b: Tensor) -> Tensor:
    lt = torch.max(a[:, None, :2], b[:, :2])
    rb = torch.min(a[:, None, 2:], b[:, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[:, :, 0] * wh[:, :, 1]
    return inter / (box_area(a)[:, None] + box_area(b) - inter)


def nms(boxes: Tensor, scores: Tensor, iou_threshold: float) -> Tensor:
    """Greedy non-maximum suppression (torchvision.ops.nms without its C++ kernel)."""
    order = scores.argsort(descending=True)
    boxes = boxes[order]
    iou = box_iou(boxes, boxes)
    n = boxes.shape[0]
    suppressed = torch.zeros(n, dtype=torch.bool, device=boxes.device)
    keep: List[int] = []
    for i in range(n):
        if bool(suppressed[i]):
            continue
        keep.append(i)
        suppressed = suppressed | (iou[i] > iou_threshold)
    return order[torch.tensor(keep, dtype=torch.long, device=boxes.device)]


def batched_nms(boxes: Tensor, scores: Tensor, idxs: Tensor, iou_threshold: float) -> Tensor:
    """NMS per category at once: boxes of different categories are moved apart."""
    if boxes.numel() == 0:
        return torch.empty((0,), dtype=torch.int64, device=boxes.device)
    offsets = idxs.to(boxes) * (boxes.max() + 1)
    return nms(boxes + offsets[:, None], scores, iou_threshold)


def clip_boxes_to_image(boxes: Tensor, size: Tuple[int, int]) -> Tensor:
    height, width = size
    x = boxes[..., 0::2].clamp(min=0, max=width)
    y = boxes[..., 1::2].clamp(min=0, max=height)
    return torch.stack((x, y), dim=-1).reshape(boxes.shape)


def remove_small_boxes(boxes: Tensor, min_size: float) -> Tensor:
    ws, hs = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
    return torch.where((ws >= min_size) & (hs >= min_size))[0]


class BoxCoder(nn.Module):
    """Box deltas <-> boxes (torchvision's BoxCoder, weights and the exp clamp)."""

    def __init__(self, weights: Tuple[float, float, float, float] = (1.0, 1.0, 1.0, 1.0)):
        super().__init__()
        self.weights = weights
        self.bbox_xform_clip = math.log(1000.0 / 16)

    def decode(self, rel_codes: Tensor, boxes: List[Tensor]) -> Tensor:
        torch._assert(isinstance(boxes, (list, tuple)), "boxes must be a list of tensors")
        boxes_per_image = [b.size(0) for b in boxes]
        concat_boxes = torch.cat(boxes, dim=0)
        box_sum = 0
        for val in boxes_per_image:
            box_sum += val
        if box_sum > 0:
            rel_codes = rel_codes.reshape(box_sum, -1)
        pred = self.decode_single(rel_codes, concat_boxes)
        if box_sum > 0:
            pred = pred.reshape(box_sum, -1, 4)
        return pred

    def decode_single(self, rel_codes: Tensor, boxes: Tensor) -> Tensor:
        boxes = boxes.to(rel_codes.dtype)
        widths = boxes[:, 2] - boxes[:, 0]
        heights = boxes[:, 3] - boxes[:, 1]
        ctr_x = boxes[:, 0] + 0.5 * widths
        ctr_y = boxes[:, 1] + 0.5 * heights
        wx, wy, ww, wh = self.weights
        dx = rel_codes[:, 0::4] / wx
        dy = rel_codes[:, 1::4] / wy
        dw = torch.clamp(rel_codes[:, 2::4] / ww, max=self.bbox_xform_clip)
        dh = torch.clamp(rel_codes[:, 3::4] / wh, max=self.bbox_xform_clip)
        pred_ctr_x = dx * widths[:, None] + ctr_x[:, None]
        pred_ctr_y = dy * heights[:, None] + ctr_y[:, None]
        pred_w = torch.exp(dw) * widths[:, None]
        pred_h = torch.exp(dh) * heights[:, None]
        c_to_c_h = torch.tensor(0.5, dtype=pred_ctr_y.dtype) * pred_h
        c_to_c_w = torch.tensor(0.5, dtype=pred_ctr_x.dtype) * pred_w
        x1, y1 = pred_ctr_x - c_to_c_w, pred_ctr_y - c_to_c_h
        x2, y2 = pred_ctr_x + c_to_c_w, pred_ctr_y + c_to_c_h
        return torch.stack((x1, y1, x2, y2), dim=2).flatten(1)


class AnchorGenerator(nn.Module):
    """One anchor size per level, three aspect ratios, shifted over each level's grid."""

    def __init__(self, sizes: Tuple[int, ...] = (32, 64, 128, 256, 512),
                 aspect_ratios: Tuple[float, ...] = (0.5, 1.0, 2.0)):
        super().__init__()
        self.cell_anchors = [self.generate_anchors(s, aspect_ratios) for s in sizes]

    @staticmethod
    def generate_anchors(size: int, aspect_ratios: Tuple[float, ...]) -> Tensor:
        scales = torch.tensor([float(size)])
        ratios = torch.tensor(aspect_ratios)
        h_ratios = torch.sqrt(ratios)
        w_ratios = 1 / h_ratios
        ws = (w_ratios[:, None] * scales[None, :]).view(-1)
        hs = (h_ratios[:, None] * scales[None, :]).view(-1)
        return (torch.stack([-ws, -hs, ws, hs], dim=1) / 2).round()

    def grid_anchors(self, grid_sizes: List[List[int]], strides: List[List[Tensor]]
                     ) -> List[Tensor]:
        anchors: List[Tensor] = []
        torch._assert(len(grid_sizes) == len(strides) == len(self.cell_anchors),
                      "one anchor size per feature level is expected")
        for size, stride, base_anchors in zip(grid_sizes, strides, self.cell_anchors):
            grid_height, grid_width = size
            stride_height, stride_width = stride
            shifts_x = torch.arange(0, grid_width, dtype=torch.int32) * stride_width
            shifts_y = torch.arange(0, grid_height, dtype=torch.int32) * stride_height
            shift_y, shift_x = torch.meshgrid(shifts_y, shifts_x, indexing="ij")
            shift_x, shift_y = shift_x.reshape(-1), shift_y.reshape(-1)
            shifts = torch.stack((shift_x, shift_y, shift_x, shift_y), dim=1)
            anchors.append((shifts.view(-1, 1, 4) + base_anchors.view(1, -1, 4)).reshape(-1, 4))
        return anchors

    def forward(self, images: Tensor, feature_maps: List[Tensor]) -> List[Tensor]:
        grid_sizes = [list(f.shape[-2:]) for f in feature_maps]
        image_size = images.shape[-2:]
        strides = [[torch.empty((), dtype=torch.int64).fill_(image_size[0] // g[0]),
                    torch.empty((), dtype=torch.int64).fill_(image_size[1] // g[1])]
                   for g in grid_sizes]
        anchors_over_levels = self.grid_anchors(grid_sizes, strides)
        anchors: List[Tensor] = []
        for _ in range(images.shape[0]):
            anchors.append(torch.cat(anchors_over_levels))
        return anchors


class RPNHead(nn.Module):
    """A shared conv, then objectness and box deltas, looped over the feature levels."""

    def __init__(self, in_channels: int = 256, num_anchors: int = 3):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(in_channels, in_channels, 3, padding=1),
                                  nn.ReLU(inplace=True))
        self.cls_logits = nn.Conv2d(in_channels, num_anchors, 1)
        self.bbox_pred = nn.Conv2d(in_channels, num_anchors * 4, 1)

    def forward(self, x: List[Tensor]) -> Tuple[List[Tensor], List[Tensor]]:
        logits: List[Tensor] = []
        bbox_reg: List[Tensor] = []
        for feature in x:
            t = self.conv(feature)
            logits.append(self.cls_logits(t))
            bbox_reg.append(self.bbox_pred(t))
        return logits, bbox_reg


def permute_and_flatten(layer: Tensor, n: int, a: int, c: int, h: int, w: int) -> Tensor:
    return layer.view(n, -1, c, h, w).permute(0, 3, 4, 1, 2).reshape(n, -1, c)


class RegionProposalNetwork(nn.Module):
    """Anchors, objectness per level, decode, per-level top-k, clip, NMS per image."""

    def __init__(self, pre_nms_top_n: int = 200, post_nms_top_n: int = 100,
                 nms_thresh: float = 0.7, min_size: float = 1e-3):
        super().__init__()
        self.anchor_generator = AnchorGenerator()
        self.head = RPNHead()
        self.box_coder = BoxCoder()
        self.pre_nms_top_n = pre_nms_top_n
        self.post_nms_top_n = post_nms_top_n
        self.nms_thresh = nms_thresh
        self.min_size = min_size

    def _get_top_n_idx(self, objectness: Tensor, num_anchors_per_level: List[int]) -> Tensor:
        r: List[Tensor] = []
        offset = 0
        for ob in objectness.split(num_anchors_per_level, 1):
            num_anchors = ob.shape[1]
            pre_nms_top_n = min(self.pre_nms_top_n, num_anchors)
            _, top_n_idx = ob.topk(pre_nms_top_n, dim=1)
            r.append(top_n_idx + offset)
            offset += num_anchors
        return torch.cat(r, dim=1)

    def filter_proposals(self, proposals: Tensor, objectness: Tensor,
                         image_size: Tuple[int, int], num_anchors_per_level: List[int]
                         ) -> List[Tensor]:
        num_images = proposals.shape[0]
        objectness = objectness.detach().reshape(num_images, -1)
        level_ids = [torch.full((n,), idx, dtype=torch.int64)
                     for idx, n in enumerate(num_anchors_per_level)]
        levels = torch.cat(level_ids, 0).reshape(1, -1).expand_as(objectness)
        top_n_idx = self._get_top_n_idx(objectness, num_anchors_per_level)
        batch_idx = torch.arange(num_images)[:, None]
        objectness = objectness[batch_idx, top_n_idx]
        levels = levels[batch_idx, top_n_idx]
        proposals = proposals[batch_idx, top_n_idx]
        final_boxes: List[Tensor] = []
        for boxes, scores, lvl in zip(proposals, torch.sigmoid(objectness), levels):
            boxes = clip_boxes_to_image(boxes, image_size)
            keep = remove_small_boxes(boxes, self.min_size)
            boxes, scores, lvl = boxes[keep], scores[keep], lvl[keep]
            keep = batched_nms(boxes, scores, lvl, self.nms_thresh)
            final_boxes.append(boxes[keep[: self.post_nms_top_n]])
        return final_boxes

    def forward(self, images: Tensor, features: Dict[str, Tensor]) -> List[Tensor]:
        feats = list(features.values())
        objectness, pred_bbox_deltas = self.head(feats)
        anchors = self.anchor_generator(images, feats)
        num_images = len(anchors)
        num_anchors_per_level = [o[0].numel() for o in objectness]
        box_cls: List[Tensor] = []
        box_reg: List[Tensor] = []
        for cls_level, reg_level in zip(objectness, pred_bbox_deltas):
            n, axc, h, w = cls_level.shape
            a = reg_level.shape[1] // 4
            box_cls.append(permute_and_flatten(cls_level, n, a, axc // a, h, w))
            box_reg.append(permute_and_flatten(reg_level, n, a, 4, h, w))
        flat_cls = torch.cat(box_cls, dim=1).flatten(0, -2)
        flat_reg = torch.cat(box_reg, dim=1).reshape(-1, 4)
        proposals = self.box_coder.decode(flat_reg.detach(), anchors).view(num_images, -1, 4)
        size = (int(images.shape[-2]), int(images.shape[-1]))
        return self.filter_proposals(proposals, flat_cls, size, num_anchors_per_level)


class MultiScaleRoIPool(nn.Module):
    """Each box pooled from the level its size maps to (torchvision's LevelMapper), by
    bilinear sampling on a 7x7 grid (roi_align without its C++ kernel)."""

    def __init__(self, featmap_names: List[str], output_size: int = 7):
        super().__init__()
        self.featmap_names = featmap_names
        self.output_size = output_size
        self.k_min, self.k_max = 2, 5

    def map_levels(self, boxes: Tensor) -> Tensor:
        s = torch.sqrt(box_area(boxes))
        target = torch.floor(4 + torch.log2(s / 224 + 1e-6))
        return (torch.clamp(target, min=self.k_min, max=self.k_max) - self.k_min).to(torch.int64)

    def pool_one(self, feature: Tensor, box: Tensor, scale: float) -> Tensor:
        steps = torch.linspace(0.0, 1.0, self.output_size)
        h, w = feature.shape[-2], feature.shape[-1]
        x = (box[0] + (box[2] - box[0]) * steps) * scale / max(w - 1, 1) * 2 - 1
        y = (box[1] + (box[3] - box[1]) * steps) * scale / max(h - 1, 1) * 2 - 1
        gy, gx = torch.meshgrid(y, x, indexing="ij")
        grid = torch.stack((gx, gy), dim=-1)[None]
        return F.grid_sample(feature, grid, align_corners=True)[0]

    def forward(self, features: Dict[str, Tensor], proposals: List[Tensor],
                image_size: Tuple[int, int]) -> Tensor:
        feats: List[Tensor] = []
        for name in self.featmap_names:
            feats.append(features[name])
        channels = feats[0].shape[1]
        results: List[Tensor] = []
        for image_idx, boxes in enumerate(proposals):
            levels = self.map_levels(boxes)
            pooled = torch.zeros((boxes.shape[0], channels, self.output_size, self.output_size))
            for level, feature in enumerate(feats):
                scale = feature.shape[-1] / image_size[1]
                idx = torch.where(levels == level)[0]
                boxes_here: List[int] = idx.tolist()
                for j in boxes_here:
                    pooled[j] = self.pool_one(feature[image_idx: image_idx + 1], boxes[j], scale)
            results.append(pooled)
        return torch.cat(results, 0)


class TwoMLPHead(nn.Module):
    def __init__(self, in_channels: int, representation_size: int = 1024):
        super().__init__()
        self.fc6 = nn.Linear(in_channels, representation_size)
        self.fc7 = nn.Linear(representation_size, representation_size)

    def forward(self, x: Tensor) -> Tensor:
        return F.relu(self.fc7(F.relu(self.fc6(x.flatten(start_dim=1)))))


class FastRCNNPredictor(nn.Module):
    def __init__(self, in_channels: int = 1024, num_classes: int = 91):
        super().__init__()
        self.cls_score = nn.Linear(in_channels, num_classes)
        self.bbox_pred = nn.Linear(in_channels, num_classes * 4)

    def forward(self, x: Tensor) -> Tuple[Tensor, Tensor]:
        if x.dim() == 4:
            torch._assert(list(x.shape[2:]) == [1, 1], "x must be (N, C, 1, 1)")
        x = x.flatten(start_dim=1)
        return self.cls_score(x), self.bbox_pred(x)


class MaskRCNNHeads(nn.Sequential):
    """Four 3x3 conv + BatchNorm + ReLU layers (torchvision's v2 mask head)."""

    def __init__(self, in_channels: int = 256, layers: int = 4):
        super().__init__(*[conv_norm(in_channels, in_channels, 3, relu=True)
                           for _ in range(layers)])


class MaskRCNNPredictor(nn.Module):
    def __init__(self, in_channels: int = 256, num_classes: int = 91):
        super().__init__()
        self.conv5_mask = nn.ConvTranspose2d(in_channels, in_channels, 2, 2)
        self.relu = nn.ReLU(inplace=True)
        self.mask_fcn_logits = nn.Conv2d(in_channels, num_classes, 1)

    def forward(self, x: Tensor) -> Tensor:
        return self.mask_fcn_logits(self.relu(self.conv5_mask(x)))


def maskrcnn_inference(x: Tensor, labels: List[Tensor]) -> List[Tensor]:
    """Each detection's mask probabilities for its own class, split per image."""
    mask_prob = x.sigmoid()
    boxes_per_image = [label.shape[0] for label in labels]
    all_labels = torch.cat(labels)
    index = torch.arange(mask_prob.shape[0], device=all_labels.device)
    mask_prob = mask_prob[index, all_labels][:, None]
    return mask_prob.split(boxes_per_image, dim=0)


class RoIHeads(nn.Module):
    """Pool, two MLP layers, class scores and boxes, then per image and class: threshold,
    NMS and the top detections; then a mask for each detection (Mask R-CNN)."""

    def __init__(self, score_thresh: float = 0.05, nms_thresh: float = 0.5,
                 detections_per_img: int = 100):
        super().__init__()
        self.box_roi_pool = MultiScaleRoIPool(["0", "1", "2", "3"])
        self.box_head = TwoMLPHead(256 * 7 * 7)
        self.box_predictor = FastRCNNPredictor()
        self.box_coder = BoxCoder((10.0, 10.0, 5.0, 5.0))
        self.mask_roi_pool = MultiScaleRoIPool(["0", "1", "2", "3"], output_size=14)
        self.mask_head = MaskRCNNHeads()
        self.mask_predictor = MaskRCNNPredictor()
        self.score_thresh = score_thresh
        self.nms_thresh = nms_thresh
        self.detections_per_img = detections_per_img

    def postprocess_detections(self, class_logits: Tensor, box_regression: Tensor,
                               proposals: List[Tensor], image_size: Tuple[int, int]
                               ) -> List[Dict[str, Tensor]]:
        num_classes = class_logits.shape[-1]
        boxes_per_image = [p.shape[0] for p in proposals]
        pred_boxes = self.box_coder.decode(box_regression, proposals)
        pred_scores = F.softmax(class_logits, -1)
        result: List[Dict[str, Tensor]] = []
        for boxes, scores in zip(pred_boxes.split(boxes_per_image, 0),
                                 pred_scores.split(boxes_per_image, 0)):
            boxes = clip_boxes_to_image(boxes, image_size)
            labels = torch.arange(num_classes).view(1, -1).expand_as(scores)
            boxes, scores, labels = boxes[:, 1:], scores[:, 1:], labels[:, 1:]
            boxes, scores, labels = boxes.reshape(-1, 4), scores.reshape(-1), labels.reshape(-1)
            inds = torch.where(scores > self.score_thresh)[0]
            boxes, scores, labels = boxes[inds], scores[inds], labels[inds]
            keep = remove_small_boxes(boxes, 1e-2)
            boxes, scores, labels = boxes[keep], scores[keep], labels[keep]
            keep = batched_nms(boxes, scores, labels, self.nms_thresh)[: self.detections_per_img]
            result.append({"boxes": boxes[keep], "scores": scores[keep], "labels": labels[keep]})
        return result

    def forward(self, features: Dict[str, Tensor], proposals: List[Tensor],
                image_size: Tuple[int, int]) -> List[Dict[str, Tensor]]:
        for p in proposals:
            torch._assert(p.dtype in (torch.float, torch.double, torch.half),
                          "proposals must be floating point")
        box_features = self.box_head(self.box_roi_pool(features, proposals, image_size))
        class_logits, box_regression = self.box_predictor(box_features)
        result = self.postprocess_detections(class_logits, box_regression, proposals,
                                             image_size)
        mask_proposals = [r["boxes"] for r in result]
        mask_features = self.mask_head(self.mask_roi_pool(features, mask_proposals, image_size))
        mask_logits = self.mask_predictor(mask_features)
        labels = [r["labels"] for r in result]
        for mask_prob, r in zip(maskrcnn_inference(mask_logits, labels), result):
            r["masks"] = mask_prob
        return result


class ImageTransform(nn.Module):
    """Resize small images, normalise, pad to the stride: torchvision's
    ``GeneralizedRCNNTransform``, the detector's first stage."""

    def __init__(self, min_size: int = 64, size_divisible: int = 32):
        super().__init__()
        self.min_size = min_size
        self.size_divisible = size_divisible
        self.register_buffer("image_mean", torch.tensor([0.485, 0.456, 0.406]).view(-1, 1, 1))
        self.register_buffer("image_std", torch.tensor([0.229, 0.224, 0.225]).view(-1, 1, 1))

    def forward(self, images: Tensor) -> Tuple[Tensor, Tuple[int, int]]:
        if min(images.shape[-2], images.shape[-1]) < self.min_size:
            images = F.interpolate(images, scale_factor=2.0, mode="bilinear",
                                   align_corners=False)
        images = (images - self.image_mean) / self.image_std
        stride = self.size_divisible
        pad_h = (stride - images.shape[-2] % stride) % stride
        pad_w = (stride - images.shape[-1] % stride) % stride
        if pad_h > 0 or pad_w > 0:
            images = F.pad(images, (0, pad_w, 0, pad_h))
        return images, (int(images.shape[-2]), int(images.shape[-1]))


class Detector(nn.Module):
    """Validate, transform (resize, normalise, pad), ResNet-101 backbone -> FPN neck -> RPN
    -> RoI heads (boxes and masks): Mask R-CNN's layout."""

    def __init__(self, min_size: int = 64, size_divisible: int = 32):
        super().__init__()
        self.transform = ImageTransform(min_size, size_divisible)
        self.backbone = ResNetBody()
        self.neck = FeaturePyramidNetwork([256, 512, 1024, 2048])
        self.rpn = RegionProposalNetwork()
        self.roi_heads = RoIHeads()

    def forward(self, images: Tensor, targets: Optional[List[Dict[str, Tensor]]] = None
                ) -> List[Dict[str, Tensor]]:
        if self.training:
            raise RuntimeError("this detector is inference-only")
        if images.dim() != 4:
            raise ValueError("expected a batch of images (N, 3, H, W)")
        torch._assert(images.shape[1] == 3, "expected RGB images")
        if targets is not None:
            for target in targets:
                boxes = target["boxes"]
                torch._assert(boxes.dim() == 2 and boxes.shape[-1] == 4,
                              "expected target boxes of shape (N, 4)")
                degenerate = boxes[:, 2:] <= boxes[:, :2]
                if degenerate.any():
                    raise ValueError("all bounding boxes should have positive height and width")
        images, size = self.transform(images)
        features = self.neck(self.backbone(images))
        proposals = self.rpn(images, features)
        return self.roi_heads(features, proposals, size)


def detector() -> nn.Module:
    torch.manual_seed(0)
    return Detector().eval()


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


# -- the 100k-IR-node scaling benchmark's model (issue 32) ------------------------------

class MLPBlock(nn.Module):
    """A pre-norm transformer MLP with its residual: ``x + fc2(gelu(fc1(ln(x))))``."""

    def __init__(self, width: int, hidden: int):
        super().__init__()
        self.ln = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, hidden)
        self.fc2 = nn.Linear(hidden, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(F.gelu(self.fc1(self.ln(x))))


class MLPStack(nn.Module):
    def __init__(self, n: int, width: int = 8, hidden: int = 16):
        super().__init__()
        # a ModuleList: each block is a user module of its own (see Stacked)
        self.blocks = nn.ModuleList([MLPBlock(width, hidden) for _ in range(n)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return x


def mlp_stack(n: int = 10) -> nn.Module:
    """``n`` LayerNorm-MLP residual blocks, traced: 17 IR nodes a block plus 2 (588 blocks
    are 9,998 IR nodes, 5,882 are 99,996: ``benchmarks/scaling_100k.py``)."""
    torch.manual_seed(0)
    return MLPStack(int(n)).eval()


def token_ids() -> tuple:
    return (torch.randint(0, 1000, (1, SEQ_LEN)),)


def bert_inputs() -> dict:
    """Keyword inputs: ids, a padding mask (the last 16 positions padded), segment ids."""
    g = torch.Generator().manual_seed(0)
    mask = torch.ones(1, SEQ_LEN, dtype=torch.long)
    mask[:, -16:] = 0
    segments = torch.zeros(1, SEQ_LEN, dtype=torch.long)
    segments[:, SEQ_LEN // 2:] = 1
    return dict(input_ids=torch.randint(0, 1000, (1, SEQ_LEN), generator=g),
                attention_mask=mask, token_type_ids=segments)


example_inputs = {
    "resnet18": lambda: (torch.rand(1, 3, 224, 224),),
    "bert": token_ids,
    "gpt2": token_ids,
    "stacked": lambda: (torch.rand(2, 8),),
    "mlp_stack": lambda: (torch.rand(2, 8),),
    "densenet": lambda: (torch.rand(1, 3, 224, 224),),
    "bert_kw": bert_inputs,
    "vit": lambda: dict(pixel_values=torch.rand(1, 3, 224, 224)),
    "fasterrcnn": lambda: ([torch.rand(3, 320, 320)],),
    "detector": lambda: (torch.rand(1, 3, 120, 120, generator=torch.Generator().manual_seed(0)),),
}
