"""IRV304: forward calls a ``@torch.jit.ignore`` method (the scripted model cannot be saved)."""
import torch


class Model(torch.nn.Module):
    @torch.jit.ignore
    def debug_stats(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean()

    def forward(self, x):
        centre = self.debug_stats(x)  # expect: IRV304
        return x - centre


example_inputs = {"Model": lambda: (torch.rand(3, 4),)}
