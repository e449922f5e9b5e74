"""IRV131: branches on ``self.training`` (baked to the mode at trace time)."""
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        if self.training:  # expect: IRV131
            x = x * 0.5
        return x + 1 if self.training else x  # expect: IRV131


example_inputs = {"Model": lambda: (torch.rand(3, 4),)}
