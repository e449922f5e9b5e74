"""IRV301: a model deployed by scripting (no example inputs, so never traced) that
``torch.jit.script`` cannot compile."""
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        try:  # expect: IRV301
            return x.inverse()
        except RuntimeError:
            return x
