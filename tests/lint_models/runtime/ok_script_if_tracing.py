"""Negative control: the documented fix for a data-dependent branch. The branch is in a
``@torch.jit.script_if_tracing`` function, so the trace calls its scripted graph and
keeps the ``if``."""
import torch


@torch.jit.script_if_tracing
def gate(x: torch.Tensor) -> torch.Tensor:
    if x.sum() > 0:
        return x
    return -x


class Model(torch.nn.Module):
    def forward(self, x):
        return gate(x) * 2


example_inputs = {"Model": lambda: (torch.rand(3, 4),)}
