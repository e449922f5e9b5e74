"""A third-party zoo for ``irviz lint`` against an irviz-free oracle
(``benchmarks/lint_oracle_zoo.py``): models of timm, MONAI and segmentation-models-pytorch
whose own test suites script or trace them, in small configurations (random weights,
nothing downloaded, eval mode, seeded), so each builds and traces in seconds. Left out for
time on a 2-core machine or because they do not build here: timm's ghostnet, hrnet,
poolformer and BiT (``layers`` clashes with the BiT builder), MONAI's DenseNet121 and
SwinUNETR (needs einops), smp's PAN (needs inputs of 128 and more).

Each factory imports its library itself: a process that lints one model imports one
library. ``example_inputs`` is the input the trace is made at; ``VARIANTS`` are the other
inputs the oracle runs the trace and the eager model on (other batch sizes, and image sizes
that are not multiples of 32, of a window or of the downsampling factor).

Not a test file: these libraries are not test dependencies (``make lint-corpus`` installs
them into ``build/corpus-site``).
"""
import torch


def _eval(model):
    return model.eval()


def _timm(name, **kwargs):
    import timm

    torch.manual_seed(0)
    return _eval(timm.create_model(name, pretrained=False, num_classes=10, **kwargs))


def _monai(cls_name, **kwargs):
    from monai import networks

    torch.manual_seed(0)
    return _eval(getattr(networks.nets, cls_name)(**kwargs))


def _smp(arch, **kwargs):
    import segmentation_models_pytorch as smp

    torch.manual_seed(0)
    return _eval(getattr(smp, arch)(encoder_name="resnet18", encoder_weights=None, classes=2,
                                    **kwargs))


# -- timm (tests/test_models.py scripts and traces every model) --------------------------
def timm_resnet18():
    return _timm("resnet18")


def timm_efficientnet_b0():
    return _timm("efficientnet_b0")


def timm_mobilenetv3_small():
    return _timm("mobilenetv3_small_050")


def timm_convnext_atto():
    return _timm("convnext_atto")


def timm_regnetx_002():
    return _timm("regnetx_002")


def timm_nf_resnet26():
    """NFNet family: ScaledStdConv2d, no BatchNorm."""
    return _timm("nf_resnet26")


def timm_vit_tiny_dynamic():
    """ViT with ``dynamic_img_size``: the position embedding is resampled to the input."""
    return _timm("vit_tiny_patch16_224", img_size=64, dynamic_img_size=True, depth=2)


def timm_vit_tiny_fixed():
    return _timm("vit_tiny_patch16_224", img_size=64, depth=2)


def timm_swin_tiny_any_size():
    """Swin without a fixed image size: windows are padded when the size is not a
    multiple of the window (``if pad_r > 0 or pad_b > 0``)."""
    return _timm("swin_tiny_patch4_window7_224", img_size=64, window_size=4, depths=(1, 1),
                 num_heads=(1, 2), embed_dim=16, strict_img_size=False)


def timm_mobilevit_xxs():
    return _timm("mobilevit_xxs")


def timm_maxvit_tiny():
    return _timm("maxxvit_rmlp_nano_rw_256", img_size=64)


# -- MONAI (tests/test_*.py run test_script_save on the networks) ------------------------
def monai_unet():
    return _monai("UNet", spatial_dims=2, in_channels=3, out_channels=2, channels=(8, 16, 32),
                  strides=(2, 2), num_res_units=1)


def monai_basic_unet():
    """Pads the decoder's upsampled map when the encoder's had an odd size."""
    return _monai("BasicUNet", spatial_dims=2, in_channels=3, out_channels=2,
                  features=(8, 8, 16, 16, 32, 8))


def monai_segresnet():
    return _monai("SegResNet", spatial_dims=2, in_channels=3, out_channels=2, init_filters=8)


def monai_attention_unet():
    return _monai("AttentionUnet", spatial_dims=2, in_channels=3, out_channels=2,
                  channels=(8, 16, 32), strides=(2, 2))


def monai_dynunet():
    return _monai("DynUNet", spatial_dims=2, in_channels=3, out_channels=2,
                  kernel_size=[3, 3, 3], strides=[1, 2, 2], upsample_kernel_size=[2, 2],
                  filters=[8, 16, 32], norm_name="instance")


def monai_highresnet():
    return _monai("HighResNet", spatial_dims=2, in_channels=3, out_channels=2)


def monai_regunet():
    return _monai("RegUNet", spatial_dims=2, in_channels=3, num_channel_initial=8, depth=2,
                  out_channels=2)


# -- segmentation-models-pytorch (tests trace and script the decoders) -------------------
def smp_unet():
    return _smp("Unet")


def smp_fpn():
    return _smp("FPN")


def smp_linknet():
    return _smp("Linknet")


def smp_pspnet():
    return _smp("PSPNet")


def smp_deeplabv3plus():
    return _smp("DeepLabV3Plus")


def smp_manet():
    return _smp("MAnet")


def smp_unetplusplus():
    return _smp("UnetPlusPlus", decoder_channels=(64, 32, 16, 16, 8))


def _image(batch: int, side: int, channels: int = 3):
    return torch.rand(batch, channels, side, side, generator=torch.Generator().manual_seed(side))


#: the image side each model is traced at
SIDE = {name: 64 for name in [k for k, v in dict(globals()).items()
                              if callable(v) and k.startswith(("timm_", "monai_", "smp_"))]}

example_inputs = {f"{name}()": (lambda side=side: (_image(2, side),)) for name, side in SIDE.items()}

#: (batch, side) of the other inputs the oracle tries, besides the example's (2, 64)
VARIANTS = [(1, 64), (3, 64), (2, 96), (2, 80), (2, 72), (2, 68), (2, 65), (1, 100)]
