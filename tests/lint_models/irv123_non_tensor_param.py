"""IRV123: a non-tensor forward parameter.

``torch.jit.trace`` rejects a Python float ("Type 'Tuple[Tensor, float]' cannot be
traced") and irviz's example inputs must be tensors, so the example passes a
0-dim tensor where the annotation says float: the trace runs, and the parameter
is what the rule is about.
"""
import torch


class Model(torch.nn.Module):
    def forward(self, x, scale: float):  # expect: IRV123
        return x * scale


example_inputs = {"Model": lambda: (torch.rand(3, 4), torch.tensor(2.0))}
