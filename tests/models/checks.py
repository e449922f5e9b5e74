"""Validation code for the checks analysis: what is folded, and what must not be."""
from typing import List

import torch


def validate(x: torch.Tensor) -> None:
    """A helper that only validates: its call is a check."""
    if x.dim() != 2:
        raise ValueError("expected a matrix")
    if x.size(1) != 4:
        raise ValueError("expected 4 columns")


class Checked(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, boxes: List[torch.Tensor]) -> torch.Tensor:
        validate(x)
        for b in boxes:  # checks each target's boxes: a loop of checks
            if b.shape[-1] != 4:
                raise ValueError("boxes must be (N, 4)")
        torch._assert(x.shape[0] > 0, "empty batch")
        y = self.lin(x)
        if y.sum() > -1000:  # a real branch: it computes
            y = y / 2
        else:
            raise RuntimeError("not a check: the other branch computes")
        scale = 2.0 if x.shape[0] > 1 else 1.0  # an if whose value is used
        return y * scale


example_inputs = {"Checked": lambda: (torch.rand(3, 4), [torch.rand(2, 4)])}
