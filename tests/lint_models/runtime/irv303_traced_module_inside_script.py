"""IRV303: a scripted model (no example inputs) calls a traced child whose loop over
``x.size(0)`` stays unrolled to the 3 rows it was traced with."""
import torch


class _RowSum(torch.nn.Module):
    def forward(self, x):
        out = torch.zeros_like(x[0])
        for i in range(x.size(0)):
            out = out + x[i]
        return out


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rows = torch.jit.trace(_RowSum(), torch.rand(3, 2))

    def forward(self, x):
        return self.rows(x) * 2  # expect: IRV303
