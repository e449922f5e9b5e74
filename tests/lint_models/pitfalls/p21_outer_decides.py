"""An odd width is fixed up; the inner test reads a flag that is off for this model."""
import torch
import torch.nn.functional as F


class EvenWidth(torch.nn.Module):
    def __init__(self, trim=False):
        super().__init__()
        self.trim = trim

    def forward(self, x):
        if x.size(-1) % 2 == 1:  # expect: error
            if self.trim and x.size(-1) > 1:
                x = x[..., 1:]
            else:
                x = F.pad(x, (0, 1))
        return x.view(x.size(0), -1, 2).sum(-1)


example_inputs = {"EvenWidth": lambda: (torch.rand(2, 8),)}
