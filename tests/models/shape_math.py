"""Models whose forward computes with tensor sizes (the traced size -> Int -> list chains)."""
import torch


class Heads(torch.nn.Module):
    """Multi-head reshape, as transformers write it: sizes read, then a view."""

    def forward(self, x):
        b, s = x.size(0), x.size(1)
        h = x.view(b, s, 2, x.size(2) // 2)
        return h.transpose(1, 2).reshape(b * s, -1)


class SizeGate(torch.nn.Module):
    """A comparison on a size stays drawn: it is the condition, not arithmetic."""

    def forward(self, x):
        if x.size(0) > 2:
            return x * 2
        return x - 1


class ScaleBySize(torch.nn.Module):
    """A size used in tensor math: the multiplication is a real op and stays drawn."""

    def forward(self, x):
        return x * x.size(1)


example_inputs = {"Heads": lambda: (torch.rand(2, 3, 8),),
                  "SizeGate": lambda: (torch.rand(3, 4),),
                  "ScaleBySize": lambda: (torch.rand(2, 5),)}


class Skip(torch.nn.Module):
    """A residual block whose shortcut is an nn.Identity: traced, it records nothing."""

    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(4, 4)
        self.shortcut = torch.nn.Identity()

    def forward(self, x):
        return self.body(x) + self.shortcut(x)


example_inputs["Skip"] = lambda: (torch.rand(2, 4),)
