"""IRV134: an output that no input reaches; the traced model returns a constant.

The finding is on the line that produces the output (``mask``), not on the return.
"""
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        mask = torch.ones(4, 4).tril()  # expect: IRV134
        return x @ mask, mask


example_inputs = {"Model": lambda: (torch.rand(3, 4),)}
