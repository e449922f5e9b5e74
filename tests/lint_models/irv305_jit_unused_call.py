"""IRV305: forward calls a ``@torch.jit.unused`` method.

Traces and scripts; the scripted model raises when run (the pitfall).
"""
import torch


class Model(torch.nn.Module):
    @torch.jit.unused
    def slow_path(self, x: torch.Tensor) -> torch.Tensor:
        return x.cumsum(0)

    def forward(self, x):
        return self.slow_path(x) + 1  # expect: IRV305


example_inputs = {"Model": lambda: (torch.rand(3, 4),)}
