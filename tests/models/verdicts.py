"""Models for the lint's evidence ladder (tests/test_lint_verdicts.py): for each kind of
variant input, a branch it breaks and a branch it leaves alone; raise-only validations;
the certainties; scripting failures. Each `# verdict:` comment is what lint must say on
that line: `error` (with a counterexample of the named kind), `info`, or `certain`."""
from typing import Dict, List

import torch
import torch.nn.functional as F


class BatchBranch(torch.nn.Module):
    def forward(self, x):
        if x.size(0) > 1:  # verdict: error shape
            return x * 2
        return x


class BatchHarmless(torch.nn.Module):
    def forward(self, x):
        if x.size(0) > 0:  # verdict: info
            return x * 2
        return x


class LengthBranch(torch.nn.Module):
    def forward(self, x):
        if x.size(1) > 8:  # verdict: error shape
            x = x[:, :8]
        return x.sum(1)


class LengthCut(torch.nn.Module):
    def forward(self, x):
        if x.size(1) > 4096:  # verdict: error shape
            x = x[:, :4096]
        return x.sum(1)


class LengthHarmless(torch.nn.Module):
    def forward(self, x):
        if x.size(1) > 4096:  # verdict: info
            x = torch.cat([x[:, :4096], x[:, 4096:]], 1)
        return x.sum(1)


class LengthCheck(torch.nn.Module):
    def forward(self, x):
        if x.size(1) > 4096:  # verdict: info validation
            raise ValueError("sequences longer than 4096 are not supported")
        return x.sum(1)


class DtypeBranch(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        if x.dtype != self.linear.weight.dtype:  # verdict: error dtype
            x = x.to(self.linear.weight.dtype)
        return self.linear(x)


class DtypeHarmless(torch.nn.Module):
    def forward(self, x):
        if x.dtype == torch.float16:  # verdict: info
            x = x.clamp(-65504, 65504)
        return x.relu()


class MaskShortcut(torch.nn.Module):
    def forward(self, x, mask):
        if mask.all():  # verdict: error mask
            return x.mean(1)
        m = mask.unsqueeze(-1).to(x.dtype)
        return (x * m).sum(1) / m.sum(1)


class MaskHarmless(torch.nn.Module):
    def forward(self, x, mask):
        m = mask.unsqueeze(-1).to(x.dtype)
        if mask.any():  # verdict: info
            return (x * m).sum(1) / m.sum(1).clamp(min=1)
        return torch.zeros_like(x[:, 0])


class SignGate(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # verdict: error value
            return x
        return -x


class ReturnsNone(torch.nn.Module):
    def forward(self, x):
        x.add_(1)
        return None  # verdict: certain


class TakesList(torch.nn.Module):
    def forward(self, xs: List[torch.Tensor]):  # verdict: certain
        return torch.stack(xs).sum(0)


class TakesDict(torch.nn.Module):
    def forward(self, d: Dict[str, torch.Tensor]):  # verdict: certain
        return d["a"] + d["b"]


class BakedDevice(torch.nn.Module):
    def forward(self, x):
        return x + torch.ones(x.shape[-1], device=x.device)  # verdict: certain


class FunctionalDropout(torch.nn.Module):
    def forward(self, x):
        return F.dropout(x, 0.5)  # verdict: certain


class BadView(torch.nn.Module):
    def forward(self, x):
        return x.view(5, -1)


class KwargsForward(torch.nn.Module):
    def forward(self, x, **kwargs):
        return x * 2


def _rows(n=2, length=8):
    return (torch.rand(n, length, generator=torch.Generator().manual_seed(n + length)),)


example_inputs = {
    "BatchBranch": lambda: (torch.rand(2, 4),),
    "BatchHarmless": lambda: (torch.rand(2, 4),),
    "LengthBranch": _rows, "LengthCut": _rows, "LengthHarmless": _rows, "LengthCheck": _rows,
    "DtypeBranch": lambda: (torch.rand(3, 4),),
    "DtypeHarmless": lambda: (torch.rand(3, 4),),
    "MaskShortcut": lambda: (torch.rand(2, 5, 4), torch.ones(2, 5, dtype=torch.long)),
    "MaskHarmless": lambda: (torch.rand(2, 5, 4), torch.ones(2, 5, dtype=torch.long)),
    "SignGate": lambda: (torch.rand(3, 4),),
    "ReturnsNone": lambda: (torch.rand(3),),
    "TakesList": lambda: ([torch.rand(3), torch.rand(3)],),
    "TakesDict": lambda: ({"a": torch.rand(3), "b": torch.rand(3)},),
    "BakedDevice": lambda: (torch.rand(2, 3),),
    "FunctionalDropout": lambda: (torch.rand(2, 3),),
    "BadView": lambda: (torch.rand(3, 4),),
    "KwargsForward": lambda: (torch.rand(3, 4),),
}
