"""IRV102: branches on rank, dtype or device metadata (silent when tracing).

Traces; ``torch.jit.script`` rejects ``torch.cuda.is_available()`` (attribute
lookup on a Python module), as in the catalog's p49.
"""
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        if x.dim() == 3:  # expect: IRV102
            x = x.sum(0)
        if x.dtype == torch.float64 or x.is_cuda:  # expect: IRV102
            x = x.float()
        if torch.cuda.is_available():  # expect: IRV102, IRV301
            x = x + 1
        return x


example_inputs = {"Model": lambda: (torch.rand(3, 4),)}
