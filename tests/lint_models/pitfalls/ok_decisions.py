"""Negative controls for condition coverage: decisions a variant drives both ways with
the trace still right, and the correct ways to keep a decision dynamic. irviz lint must
exit 0 here (held, never undecided or a counterexample)."""
import torch


@torch.jit.script_if_tracing
def _odd_pad(x: torch.Tensor) -> torch.Tensor:
    if x.size(-1) % 2 == 1:
        x = torch.nn.functional.pad(x, (0, 1))
    return x


class Where(torch.nn.Module):
    def forward(self, x):
        return torch.where(x.sum() > 0, x, -x)


class EmptyBatch(torch.nn.Module):
    def forward(self, x):
        if x.size(0) > 0:
            x = x * 2
        return x * 2


class HalfClamp(torch.nn.Module):
    def forward(self, x):
        if x.dtype == torch.float16:
            x = x.clamp(-65504, 65504)
        return x.relu()


class ScriptedPad(torch.nn.Module):
    def forward(self, x):
        return _odd_pad(x).view(x.size(0), -1, 2).sum(-1)


class Validated(torch.nn.Module):
    def forward(self, x):
        if x.dim() != 2:
            raise ValueError("expected a batch of vectors")
        return x.softmax(-1)


class ConstructorFlag(torch.nn.Module):
    def __init__(self, residual=True):
        super().__init__()
        self.residual = residual
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        if self.residual:
            y = y + x
        return y


class LongEnough(torch.nn.Module):
    def forward(self, x):
        if x.size(1) > 4096:
            x = torch.cat([x[:, :4096], x[:, 4096:]], 1)
        return x.sum(1)


example_inputs = {
    "Where": lambda: (torch.rand(2, 3),),
    "EmptyBatch": lambda: (torch.rand(2, 3),),
    "HalfClamp": lambda: (torch.rand(2, 3),),
    "ScriptedPad": lambda: (torch.rand(2, 8),),
    "Validated": lambda: (torch.rand(2, 3),),
    "ConstructorFlag": lambda: (torch.rand(2, 4),),
    "LongEnough": lambda: (torch.rand(2, 8),),
}
