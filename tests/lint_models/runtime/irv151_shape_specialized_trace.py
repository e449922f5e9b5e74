"""IRV151: a second trace with dim 0 one larger has another graph.

``int(...)`` freezes the slice end (IRV106 on the same line); the re-trace shows the
result: ``aten::slice(0, 0, 1, 1)`` for 3 rows, ``aten::slice(0, 0, 2, 1)`` for 4.
"""
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x[: int(x.size(0) / 2)]  # expect: IRV106, IRV151


example_inputs = {"Model": lambda: (torch.rand(3, 4),)}
