"""A torchvision subset for ``irviz lint``: one model of each family, as users build them.

Every factory makes a model with random weights (``weights=None``, and
``weights_backbone=None`` where the builder has one: nothing is downloaded) in eval mode,
seeded so that two runs lint the same weights. Inputs are the smallest the model is meant
for or comfortably takes (``example_inputs`` below): 64x64 for the classifiers with adaptive
pooling, 224x224 for Swin-T and ViT-B/16 (ViT checks its image size), 128x128 for LR-ASPP,
and one 320x320 image in a list for the detector (its transform resizes to 320 anyway).

Not a test file: torchvision is not a test dependency. ``benchmarks/lint_corpus.py`` lints
it with torchvision installed beside the CPU torch (``make lint-corpus``)::

    irviz lint benchmarks/torchvision_lint_models.py --format json --exit-zero
"""
import torch
from torchvision import models as M


def _build(builder, **kwargs):
    torch.manual_seed(0)
    return builder(weights=None, **kwargs).eval()


def _image(side: int = 64) -> torch.Tensor:
    return torch.rand(1, 3, side, side, generator=torch.Generator().manual_seed(side))


def resnet18():
    return _build(M.resnet18)


def mobilenet_v3_small():
    return _build(M.mobilenet_v3_small)


def squeezenet1_0():
    return _build(M.squeezenet1_0)


def shufflenet_v2_x0_5():
    return _build(M.shufflenet_v2_x0_5)


def efficientnet_b0():
    return _build(M.efficientnet_b0)


def convnext_tiny():
    return _build(M.convnext_tiny)


def swin_t():
    return _build(M.swin_t)


def vit_b_16():
    return _build(M.vit_b_16)


def googlenet():
    # aux_logits off: the eval model returns plain logits; init_weights=False skips the slow
    # truncated-normal initialisation (the weights stay random either way)
    return _build(M.googlenet, aux_logits=False, init_weights=False)


def regnet_y_400mf():
    return _build(M.regnet_y_400mf)


def lraspp_mobilenet_v3_large():
    return _build(M.segmentation.lraspp_mobilenet_v3_large, weights_backbone=None)


def fasterrcnn_mobilenet_v3_large_320_fpn():
    return _build(M.detection.fasterrcnn_mobilenet_v3_large_320_fpn, weights_backbone=None)


_SMALL = lambda: (_image(64),)  # noqa: E731

example_inputs = {
    "resnet18()": _SMALL,
    "mobilenet_v3_small()": _SMALL,
    "squeezenet1_0()": _SMALL,
    "shufflenet_v2_x0_5()": _SMALL,
    "efficientnet_b0()": _SMALL,
    "convnext_tiny()": _SMALL,
    "swin_t()": lambda: (_image(224),),
    "vit_b_16()": lambda: (_image(224),),
    "googlenet()": _SMALL,
    "regnet_y_400mf()": _SMALL,
    "lraspp_mobilenet_v3_large()": lambda: (_image(128),),
    # a detector takes a list of (C, H, W) images: one positional argument holding a list
    "fasterrcnn_mobilenet_v3_large_320_fpn()": lambda: (
        [torch.rand(3, 320, 320, generator=torch.Generator().manual_seed(320))],),
}
