"""IRV202: forks whose future is never waited (TorchScript deletes them)."""
import torch


def _double(x):
    return x * 2


class Model(torch.nn.Module):
    def forward(self, x):
        torch.jit.fork(_double, x)  # expect: IRV202
        fut = torch.jit.fork(_double, x + 1)  # expect: IRV202
        return x + 1


example_inputs = {"Model": lambda: (torch.rand(3, 4),)}
