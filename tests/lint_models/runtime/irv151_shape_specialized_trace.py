"""IRV151: a second trace with dim 0 one larger has another graph.

``int(...)`` freezes the row count (IRV106 on that line); the re-trace shows the
consequence where it is used: ``aten::slice(0, 0, 1, 1)`` for 3 rows,
``aten::slice(0, 0, 2, 1)`` for 4.
"""
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        half = int(x.size(0) / 2)  # expect: IRV106
        return x[:half]  # IRV151 here: a related location of the IRV106 (one cause)


example_inputs = {"Model": lambda: (torch.rand(3, 4),)}
