"""IRV123: a non-tensor forward parameter.

Tracing cannot run with these example inputs: ``torch.jit.trace`` rejects the
Python float ("Type 'Tuple[Tensor, float]' cannot be traced"), which is the pitfall.
"""
import torch


class Model(torch.nn.Module):
    def forward(self, x, scale: float):  # expect: IRV123
        return x * scale


example_inputs = {"Model": lambda: (torch.rand(3, 4), 2.0)}
