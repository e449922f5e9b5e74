"""IRV201: a fork waited right away - no overlap, only the fork's overhead."""
import torch


def _double(x):
    return x * 2


class Model(torch.nn.Module):
    def forward(self, x):
        fut = torch.jit.fork(_double, x)  # expect: IRV201
        y = torch.jit.wait(fut)
        z = torch.jit.wait(torch.jit.fork(_double, y))  # expect: IRV201
        return z


example_inputs = {"Model": lambda: (torch.rand(3, 4),)}
