"""IRV103: loops whose trip count comes from a shape (unrolled silently by the trace).

The ``while`` test also converts a traced size to a Python bool (IRV101).
"""
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        out = torch.zeros_like(x[0])
        for i in range(x.size(0)):  # expect: IRV103
            out = out + x[i]
        i = 0
        n = x.shape[1]
        while i < n:  # expect: IRV101, IRV103
            out = out * 0.5  # IRV151 here is folded into the IRV101 above: one root cause
            i += 1
        rows = [x[k] * 2 for k in range(x.shape[0])]  # expect: IRV103
        return out + torch.stack(rows).sum(0)


example_inputs = {"Model": lambda: (torch.rand(3, 4),)}
