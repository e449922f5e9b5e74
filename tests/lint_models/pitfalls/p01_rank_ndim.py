"""A head that also takes unbatched input: the rank decides, and the trace keeps one."""
import torch


class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(6, 2)

    def forward(self, x):
        if x.ndim == 2:  # expect: error
            x = x.unsqueeze(0)
        return self.proj(x).sum(1)


example_inputs = {"Head": lambda: (torch.rand(4, 5, 6),)}
