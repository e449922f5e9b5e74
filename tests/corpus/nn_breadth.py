"""A breadth corpus: torch.nn modules and torch ops, each with sample inputs.

Every entry is ``(name, make_model, make_inputs)``; ``tests/test_nn_breadth.py`` scripts
and traces each one through irviz and checks the drawn shapes against eager execution.
Written for irviz (no fixture is shaped to pass): the common module families, in their
usual configurations, and the op families models are made of.
"""
from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn


def _r(*shape):
    return lambda: (torch.rand(*shape),)


MODULES: list[tuple[str, Callable[[], nn.Module], Callable[[], tuple]]] = [
    # convolutions
    ("Conv1d", lambda: nn.Conv1d(3, 4, 3, padding=1), _r(2, 3, 10)),
    ("Conv2d", lambda: nn.Conv2d(3, 4, 3, stride=2), _r(2, 3, 9, 9)),
    ("Conv2d-groups", lambda: nn.Conv2d(4, 8, 3, groups=2, dilation=2), _r(1, 4, 9, 9)),
    ("Conv3d", lambda: nn.Conv3d(2, 3, 2), _r(1, 2, 4, 4, 4)),
    ("ConvTranspose1d", lambda: nn.ConvTranspose1d(3, 2, 3, stride=2), _r(2, 3, 5)),
    ("ConvTranspose2d", lambda: nn.ConvTranspose2d(3, 2, 3, stride=2, output_padding=1),
     _r(1, 3, 5, 5)),
    ("ConvTranspose3d", lambda: nn.ConvTranspose3d(2, 2, 2), _r(1, 2, 3, 3, 3)),
    # pooling
    ("MaxPool1d", lambda: nn.MaxPool1d(2), _r(2, 3, 8)),
    ("MaxPool2d", lambda: nn.MaxPool2d(3, stride=2, padding=1), _r(1, 2, 9, 9)),
    ("MaxPool3d", lambda: nn.MaxPool3d(2), _r(1, 2, 4, 4, 4)),
    ("AvgPool1d", lambda: nn.AvgPool1d(3), _r(2, 3, 9)),
    ("AvgPool2d", lambda: nn.AvgPool2d(2, ceil_mode=True), _r(1, 2, 7, 7)),
    ("AvgPool3d", lambda: nn.AvgPool3d(2), _r(1, 2, 4, 4, 4)),
    ("AdaptiveAvgPool1d", lambda: nn.AdaptiveAvgPool1d(4), _r(2, 3, 10)),
    ("AdaptiveAvgPool2d", lambda: nn.AdaptiveAvgPool2d((2, 3)), _r(1, 2, 9, 9)),
    ("AdaptiveMaxPool2d", lambda: nn.AdaptiveMaxPool2d(3), _r(1, 2, 9, 9)),
    ("AdaptiveAvgPool3d", lambda: nn.AdaptiveAvgPool3d(1), _r(1, 2, 4, 4, 4)),
    ("LPPool2d", lambda: nn.LPPool2d(2, 2), _r(1, 2, 6, 6)),
    ("MaxUnpool-pair", None, None),   # filled below (a pool and its unpool)
    # normalization
    ("BatchNorm1d", lambda: nn.BatchNorm1d(4).eval(), _r(3, 4)),
    ("BatchNorm2d", lambda: nn.BatchNorm2d(3).eval(), _r(2, 3, 5, 5)),
    ("BatchNorm3d", lambda: nn.BatchNorm3d(2).eval(), _r(1, 2, 3, 3, 3)),
    ("LayerNorm", lambda: nn.LayerNorm(8), _r(2, 5, 8)),
    ("GroupNorm", lambda: nn.GroupNorm(2, 4), _r(2, 4, 5)),
    ("InstanceNorm2d", lambda: nn.InstanceNorm2d(3), _r(2, 3, 5, 5)),
    ("LocalResponseNorm", lambda: nn.LocalResponseNorm(2), _r(1, 4, 5, 5)),
    ("RMSNorm", lambda: nn.RMSNorm(6), _r(2, 6)),
    # activations
    *[(name, getattr(nn, name), _r(3, 6)) for name in (
        "ReLU", "ReLU6", "LeakyReLU", "PReLU", "ELU", "SELU", "CELU", "GELU", "SiLU",
        "Mish", "Sigmoid", "Tanh", "Hardtanh", "Hardsigmoid", "Hardswish", "Softplus",
        "Softshrink", "Hardshrink", "Tanhshrink", "Softsign", "LogSigmoid", "GLU")],
    ("Threshold", lambda: nn.Threshold(0.5, 0.0), _r(3, 5)),
    ("RReLU", lambda: nn.RReLU().eval(), _r(3, 5)),
    ("Softmax", lambda: nn.Softmax(dim=1), _r(3, 5)),
    ("LogSoftmax", lambda: nn.LogSoftmax(dim=-1), _r(3, 5)),
    ("Softmin", lambda: nn.Softmin(dim=0), _r(3, 5)),
    ("Softmax2d", lambda: nn.Softmax2d(), _r(1, 3, 4, 4)),
    # dropout (eval)
    ("Dropout", lambda: nn.Dropout(0.3).eval(), _r(3, 5)),
    ("Dropout2d", lambda: nn.Dropout2d().eval(), _r(1, 3, 4, 4)),
    ("AlphaDropout", lambda: nn.AlphaDropout().eval(), _r(3, 5)),
    # linear and shape
    ("Linear", lambda: nn.Linear(5, 3), _r(2, 4, 5)),
    ("Bilinear", lambda: nn.Bilinear(3, 4, 2), lambda: (torch.rand(5, 3), torch.rand(5, 4))),
    ("Identity", lambda: nn.Identity(), _r(3, 5)),
    ("Flatten", lambda: nn.Flatten(), _r(2, 3, 4)),
    ("Unflatten", lambda: nn.Unflatten(1, (2, 3)), _r(4, 6)),
    ("Embedding", lambda: nn.Embedding(10, 4), lambda: (torch.randint(0, 10, (2, 5)),)),
    ("EmbeddingBag", lambda: nn.EmbeddingBag(10, 4, mode="mean"),
     lambda: (torch.randint(0, 10, (2, 5)),)),
    ("PixelShuffle", lambda: nn.PixelShuffle(2), _r(1, 8, 3, 3)),
    ("PixelUnshuffle", lambda: nn.PixelUnshuffle(2), _r(1, 2, 4, 4)),
    ("ChannelShuffle", lambda: nn.ChannelShuffle(2), _r(1, 4, 3, 3)),
    ("Upsample-nearest", lambda: nn.Upsample(scale_factor=2), _r(1, 2, 3, 3)),
    ("Upsample-bilinear", lambda: nn.Upsample(size=(5, 7), mode="bilinear"), _r(1, 2, 3, 3)),
    ("ZeroPad2d", lambda: nn.ZeroPad2d((1, 2, 0, 1)), _r(1, 2, 3, 3)),
    ("ReflectionPad1d", lambda: nn.ReflectionPad1d(2), _r(1, 2, 5)),
    ("ReplicationPad2d", lambda: nn.ReplicationPad2d(1), _r(1, 2, 3, 3)),
    ("ConstantPad3d", lambda: nn.ConstantPad3d(1, 0.5), _r(1, 1, 2, 2, 2)),
    ("CosineSimilarity", lambda: nn.CosineSimilarity(dim=1),
     lambda: (torch.rand(3, 5), torch.rand(3, 5))),
    ("PairwiseDistance", lambda: nn.PairwiseDistance(), lambda: (torch.rand(3, 5),
                                                                 torch.rand(3, 5))),
    ("Fold", lambda: nn.Fold((4, 5), (2, 2)), _r(1, 12, 12)),
    ("Unfold", lambda: nn.Unfold((2, 3)), _r(1, 2, 4, 5)),
    # recurrent
    ("RNN", lambda: nn.RNN(4, 6), _r(5, 2, 4)),
    ("LSTM", lambda: nn.LSTM(4, 6), _r(5, 2, 4)),
    ("GRU", lambda: nn.GRU(4, 6), _r(5, 2, 4)),
    ("LSTM-batch_first-bidir-2layers", lambda: nn.LSTM(4, 6, num_layers=2,
                                                      bidirectional=True, batch_first=True),
     _r(2, 5, 4)),
    ("GRU-2layers", lambda: nn.GRU(4, 6, num_layers=2), _r(5, 2, 4)),
    ("RNNCell", lambda: nn.RNNCell(4, 6), _r(3, 4)),
    ("LSTMCell", lambda: nn.LSTMCell(4, 6), _r(3, 4)),
    ("GRUCell", lambda: nn.GRUCell(4, 6), _r(3, 4)),
    # attention and transformers
    ("MultiheadAttention", lambda: nn.MultiheadAttention(8, 2).eval(),
     lambda: (torch.rand(5, 2, 8), torch.rand(5, 2, 8), torch.rand(5, 2, 8))),
    ("TransformerEncoderLayer", lambda: nn.TransformerEncoderLayer(8, 2, 16).eval(),
     _r(5, 2, 8)),
    ("TransformerDecoderLayer", lambda: nn.TransformerDecoderLayer(8, 2, 16).eval(),
     lambda: (torch.rand(4, 2, 8), torch.rand(5, 2, 8))),
    # losses
    ("MSELoss", lambda: nn.MSELoss(), lambda: (torch.rand(3, 4), torch.rand(3, 4))),
    ("L1Loss", lambda: nn.L1Loss(reduction="sum"), lambda: (torch.rand(3, 4),
                                                            torch.rand(3, 4))),
    ("SmoothL1Loss", lambda: nn.SmoothL1Loss(), lambda: (torch.rand(3, 4), torch.rand(3, 4))),
    ("HuberLoss", lambda: nn.HuberLoss(), lambda: (torch.rand(3, 4), torch.rand(3, 4))),
    ("CrossEntropyLoss", lambda: nn.CrossEntropyLoss(),
     lambda: (torch.rand(3, 5), torch.randint(0, 5, (3,)))),
    ("NLLLoss", lambda: nn.NLLLoss(), lambda: (torch.rand(3, 5).log_softmax(1),
                                               torch.randint(0, 5, (3,)))),
    ("BCELoss", lambda: nn.BCELoss(), lambda: (torch.rand(3, 4), torch.rand(3, 4))),
    ("BCEWithLogitsLoss", lambda: nn.BCEWithLogitsLoss(),
     lambda: (torch.rand(3, 4), torch.rand(3, 4))),
    ("KLDivLoss", lambda: nn.KLDivLoss(reduction="batchmean"),
     lambda: (torch.rand(3, 4).log(), torch.rand(3, 4))),
    ("CosineEmbeddingLoss", lambda: nn.CosineEmbeddingLoss(),
     lambda: (torch.rand(3, 4), torch.rand(3, 4), torch.ones(3))),
    ("MarginRankingLoss", lambda: nn.MarginRankingLoss(),
     lambda: (torch.rand(3), torch.rand(3), torch.ones(3))),
    ("TripletMarginLoss", lambda: nn.TripletMarginLoss(),
     lambda: (torch.rand(3, 4), torch.rand(3, 4), torch.rand(3, 4))),
    ("SoftMarginLoss", lambda: nn.SoftMarginLoss(), lambda: (torch.rand(3, 4),
                                                             torch.ones(3, 4))),
    ("MultiLabelSoftMarginLoss", lambda: nn.MultiLabelSoftMarginLoss(),
     lambda: (torch.rand(3, 4), torch.randint(0, 2, (3, 4)).float())),
    ("MultiMarginLoss", lambda: nn.MultiMarginLoss(),
     lambda: (torch.rand(3, 5), torch.randint(0, 5, (3,)))),
    ("HingeEmbeddingLoss", lambda: nn.HingeEmbeddingLoss(),
     lambda: (torch.rand(3, 4), torch.ones(3, 4))),
    ("PoissonNLLLoss", lambda: nn.PoissonNLLLoss(), lambda: (torch.rand(3, 4),
                                                             torch.rand(3, 4))),
    ("GaussianNLLLoss", lambda: nn.GaussianNLLLoss(),
     lambda: (torch.rand(3, 4), torch.rand(3, 4), torch.rand(3, 4) + 0.1)),
    ("CTCLoss", lambda: nn.CTCLoss(),
     lambda: (torch.rand(6, 2, 5).log_softmax(2), torch.randint(1, 5, (2, 3)),
              torch.tensor([6, 6]), torch.tensor([3, 2]))),
    # more configurations of the common layers
    ("Conv2d-same-reflect", lambda: nn.Conv2d(2, 3, 3, padding="same",
                                              padding_mode="reflect"), _r(1, 2, 5, 6)),
    ("Conv1d-circular", lambda: nn.Conv1d(2, 2, 3, padding=1, padding_mode="circular"),
     _r(1, 2, 7)),
    ("MaxPool2d-indices", lambda: nn.MaxPool2d(2, return_indices=True), _r(1, 2, 4, 6)),
    ("AdaptiveMaxPool1d", lambda: nn.AdaptiveMaxPool1d(3), _r(2, 3, 10)),
    ("AdaptiveMaxPool3d", lambda: nn.AdaptiveMaxPool3d((1, 2, 2)), _r(1, 2, 4, 4, 4)),
    ("InstanceNorm1d-affine", lambda: nn.InstanceNorm1d(3, affine=True), _r(2, 3, 7)),
    ("LayerNorm-no-affine", lambda: nn.LayerNorm((4, 5), elementwise_affine=False),
     _r(2, 4, 5)),
    ("Dropout1d", lambda: nn.Dropout1d().eval(), _r(2, 3, 5)),
    ("Dropout3d", lambda: nn.Dropout3d().eval(), _r(1, 2, 3, 3, 3)),
    ("FeatureAlphaDropout", lambda: nn.FeatureAlphaDropout().eval(), _r(1, 2, 3, 3)),
    ("ReflectionPad2d", lambda: nn.ReflectionPad2d((1, 0, 2, 1)), _r(1, 2, 4, 4)),
    ("CircularPad2d", lambda: nn.CircularPad2d(1), _r(1, 2, 3, 3)),
    ("RNN-relu-batch_first", lambda: nn.RNN(4, 6, nonlinearity="relu", batch_first=True),
     _r(2, 5, 4)),
    ("LSTM-proj", lambda: nn.LSTM(4, 6, proj_size=3), _r(5, 2, 4)),
    ("MultiheadAttention-batch_first-masks", lambda: nn.MultiheadAttention(
        8, 2, batch_first=True, kdim=6, vdim=4).eval(),
     lambda: (torch.rand(2, 5, 8), torch.rand(2, 3, 6), torch.rand(2, 3, 4),
              torch.tensor([[False, False, True], [False, False, False]]))),
    ("TransformerEncoder-2layers", lambda: nn.TransformerEncoder(
        nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2,
        enable_nested_tensor=False).eval(), _r(2, 5, 8)),
    ("Transformer", lambda: nn.Transformer(8, 2, 1, 1, 16).eval(),
     lambda: (torch.rand(5, 2, 8), torch.rand(4, 2, 8))),
    # containers
    ("Sequential", lambda: nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)),
     _r(3, 4)),
    ("ModuleList-ModuleDict", None, None),   # filled below
]


def _unpool_pair():
    class PoolUnpool(nn.Module):
        def __init__(self):
            super().__init__()
            self.pool = nn.MaxPool2d(2, return_indices=True)
            self.unpool = nn.MaxUnpool2d(2)

        def forward(self, x):
            y, idx = self.pool(x)
            return self.unpool(y, idx)

    return PoolUnpool()


def _containers():
    class Containers(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
            self.heads = nn.ModuleDict({"a": nn.Linear(4, 2), "b": nn.Linear(4, 3)})

        def forward(self, x):
            for block in self.blocks:
                x = torch.relu(block(x))
            return self.heads["a"](x), self.heads["b"](x)

    return Containers()


_FILLED = {"MaxUnpool-pair": (_unpool_pair, _r(1, 2, 4, 4)),
           "ModuleList-ModuleDict": (_containers, _r(3, 4))}
MODULES = [(n, *_FILLED[n]) if n in _FILLED else (n, f, i) for n, f, i in MODULES]


def _binary(*shape):
    return lambda: (torch.rand(*shape), torch.rand(*shape))


# -- torch ops: plain functions (scripted and traced as functions) -----------------------
def op_sum_dim(x):
    return x.sum(dim=1, keepdim=True)


def op_mean_max_min(x):
    return x.mean(0) + x.max(dim=0)[0] - x.min(dim=0).values


def op_argmax_std_var(x):
    return x.std(1) + x.var(1) + x.argmax(1).float()


def op_norm_logsumexp(x):
    return torch.norm(x, dim=1) + torch.logsumexp(x, 1)


def op_cumsum_cumprod(x):
    return torch.cumsum(x, 1) * torch.cumprod(x, 0)


def op_index_slice(x):
    return x[1:, :2] + x[:-1, ::2]


def op_index_select_gather(x, i):
    return torch.index_select(x, 0, i) + torch.gather(x, 0, i.unsqueeze(1).expand(-1, x.size(1)))


def op_scatter_add(x, i):
    return torch.zeros(5, 3).scatter_add(0, i, x)


def op_cat_stack(a, b):
    return torch.cat([a, b], 0).sum(0) + torch.stack([a, b]).mean(0)


def op_split_chunk(x):
    return torch.split(x, 2, 1)[0] * x.chunk(2, dim=1)[1]


def op_unbind_narrow(x):
    return x.unbind(0)[0] + x.narrow(0, 1, 1).squeeze(0)


def op_view_reshape(x):
    return x.view(2, -1).reshape(-1, 3, 2).flatten(1)


def op_permute_transpose(x):
    return x.permute(2, 0, 1).transpose(1, 2).contiguous()


def op_squeeze_unsqueeze_expand(x):
    return x.unsqueeze(0).expand(3, -1, -1).squeeze()


def op_repeat_tile_flip(x):
    return x.repeat(2, 1) + torch.tile(x, (2, 1)).flip(0)


def op_matmul_bmm_mm(a, b):
    return torch.matmul(a, b.transpose(-1, -2)).bmm(a).sum() + torch.mm(a[0], b[0].t()).sum()


def op_einsum(a, b):
    return torch.einsum("bij,bkj->bik", a, b)


def op_where_masked_fill(x):
    return torch.where(x > 0.5, x, -x).masked_fill(x < 0.2, 0.0)


def op_sort_topk(x):
    return torch.sort(x, 1)[0][:, :2] + torch.topk(x, 2, 1).values


def op_clamp_abs_sqrt(x):
    return torch.clamp(x - 0.5, -0.2, 0.2).abs().sqrt()


def op_pow_exp_log(x):
    return (x ** 2).exp() + torch.log1p(x) - x.rsqrt()


def op_trig(x):
    return torch.sin(x) * torch.cos(x) + torch.atan2(x, x + 1)


def op_softmax_f(x):
    return F.softmax(x, -1) + F.log_softmax(x, 0)


def op_interpolate(x):
    return F.interpolate(x, scale_factor=2.0, mode="nearest")


def op_pad_f(x):
    return F.pad(x, (1, 1, 2, 0), value=0.5)


def op_conv_f(x, w):
    return F.conv2d(x, w, padding=1)


def op_linear_f(x, w):
    return F.linear(x, w)


def op_normalize_dropout_f(x):
    return F.dropout(F.normalize(x, dim=1), 0.5, training=False)


def op_comparisons(a, b):
    return ((a > b) & (a != b) | (a <= 0.1)).float()


def op_arange_zeros_ones(x):
    return x + torch.arange(x.size(1)).float() + torch.zeros_like(x) \
        + torch.ones(x.size(0), x.size(1))


def op_type_casts(x):
    return x.double().half().float() + x.long().float()


def op_tril_triu_diag(x):
    return torch.tril(x) + torch.triu(x, 1) + torch.diag(torch.diag(x))


def op_outer_dot(a, b):
    return torch.outer(a, b).sum() + torch.dot(a, b)


def op_unique_count(x):
    return torch.round(x * 3).unique(sorted=True).sum() + torch.count_nonzero(x > 0.5)


def op_roll_rot90(x):
    return torch.roll(x, 1, 0) + torch.rot90(x, 2, (0, 1))


def op_layer_norm_f(x):
    return F.layer_norm(x, (4,))


def op_embedding_f(i, w):
    return F.embedding(i, w)


def op_one_hot(i):
    return F.one_hot(i, 5).float()


def op_baddbmm_addmm(a, b, c):
    return torch.addmm(c[0], a[0], b[0]) + torch.baddbmm(c, a, b)


OPS = [(f"op:{fn.__name__[3:]}", (lambda fn=fn: fn), inputs) for fn, inputs in (
    (op_sum_dim, _r(3, 4, 5)),
    (op_mean_max_min, _r(3, 4)),
    (op_argmax_std_var, _r(3, 4)),
    (op_norm_logsumexp, _r(3, 4)),
    (op_cumsum_cumprod, _r(3, 4)),
    (op_index_slice, _r(4, 4)),
    (op_index_select_gather, lambda: (torch.rand(5, 3), torch.tensor([0, 2, 4]))),
    (op_scatter_add, lambda: (torch.rand(2, 3), torch.tensor([[0, 1, 2], [4, 3, 0]]))),
    (op_cat_stack, _binary(3, 4)),
    (op_split_chunk, _r(3, 4)),
    (op_unbind_narrow, _r(3, 4)),
    (op_view_reshape, _r(3, 4)),
    (op_permute_transpose, _r(2, 3, 4)),
    (op_squeeze_unsqueeze_expand, _r(1, 4)),
    (op_repeat_tile_flip, _r(2, 3)),
    (op_matmul_bmm_mm, _binary(2, 3, 4)),
    (op_einsum, _binary(2, 3, 4)),
    (op_where_masked_fill, _r(3, 4)),
    (op_sort_topk, _r(3, 5)),
    (op_clamp_abs_sqrt, _r(3, 4)),
    (op_pow_exp_log, _r(3, 4)),
    (op_trig, _r(3, 4)),
    (op_softmax_f, _r(3, 4)),
    (op_interpolate, _r(1, 2, 3, 3)),
    (op_pad_f, _r(1, 2, 3, 3)),
    (op_conv_f, lambda: (torch.rand(1, 3, 5, 5), torch.rand(4, 3, 3, 3))),
    (op_linear_f, lambda: (torch.rand(2, 5), torch.rand(3, 5))),
    (op_normalize_dropout_f, _r(3, 4)),
    (op_comparisons, _binary(3, 4)),
    (op_arange_zeros_ones, _r(3, 4)),
    (op_type_casts, _r(3, 4)),
    (op_tril_triu_diag, _r(4, 4)),
    (op_outer_dot, _binary(4)),
    (op_unique_count, _r(3, 4)),
    (op_roll_rot90, _r(3, 3)),
    (op_layer_norm_f, _r(3, 4)),
    (op_embedding_f, lambda: (torch.randint(0, 6, (2, 3)), torch.rand(6, 4))),
    (op_one_hot, lambda: (torch.randint(0, 5, (4,)),)),
    (op_baddbmm_addmm, lambda: (torch.rand(2, 3, 4), torch.rand(2, 4, 5), torch.rand(2, 3, 5))),
)]

#: every entry: ``(name, make_model, make_inputs)``
ENTRIES = MODULES + OPS
