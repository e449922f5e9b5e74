"""IRV150: the scripted graph reads a value the trace froze, with no more specific rule.

``x.dim()`` outside a branch (so not IRV102): the trace flattens from dimension 0 for
every input, the scripted model from ``rank - 2``.
"""
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x.flatten(x.dim() - 2)  # expect: IRV150


example_inputs = {"Model": lambda: (torch.rand(3, 4),)}
