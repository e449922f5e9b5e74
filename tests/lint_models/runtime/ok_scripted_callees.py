"""Negative control: branches inside code that is already scripted (a ``@torch.jit.script``
function called from a traced model, a ``torch.jit.script``-ed child of a scripted
model) are compiled, not traced: nothing is frozen."""
import torch


@torch.jit.script
def clip(x: torch.Tensor) -> torch.Tensor:
    if bool(x.sum() > 0):
        return x
    return -x


class Traced(torch.nn.Module):
    def forward(self, x):
        return clip(x) * 2


class _Scaled(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return x


class ScriptedParent(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.child = torch.jit.script(_Scaled())

    def forward(self, x):
        return self.child(x) + 1


example_inputs = {"Traced": lambda: (torch.rand(3, 4),)}
