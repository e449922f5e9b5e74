"""IRV203: fork and wait in the same loop iteration (iterations run one by one)."""
import torch


def _double(x):
    return x * 2


class Model(torch.nn.Module):
    def forward(self, x):
        for _ in range(3):
            fut = torch.jit.fork(_double, x)  # expect: IRV203
            y = x + 1
            x = torch.jit.wait(fut) + y
        outs = [torch.jit.wait(torch.jit.fork(_double, x + k)) for k in range(3)]  # expect: IRV201, IRV203
        return x + torch.stack(outs).sum(0)


example_inputs = {"Model": lambda: (torch.rand(3, 4),)}
