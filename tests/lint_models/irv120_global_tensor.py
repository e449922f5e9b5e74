"""IRV120: tensors read from module globals or closures (frozen into the trace).

Traces; does not script (a closed-over global Tensor cannot be used as a value).
"""
import torch

SCALE = torch.tensor([2.0])


def _make_offset():
    offset = torch.ones(4)

    def add_offset(x):
        return x + offset  # expect: IRV120, IRV301

    return add_offset


add_offset = _make_offset()


class Model(torch.nn.Module):
    def forward(self, x):
        return add_offset(x) * SCALE  # expect: IRV120


example_inputs = {"Model": lambda: (torch.rand(3, 4),)}
