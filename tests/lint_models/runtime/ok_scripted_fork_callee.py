"""Negative control for IRV206: the documented fix. The forked function is scripted, so
the traced fork calls its compiled graph; nothing in it is traced."""
# irviz-lint-args: --extend-select IRV206
import torch


@torch.jit.script
def heavy(x: torch.Tensor) -> torch.Tensor:
    return torch.relu(x @ x.t() @ x)


class Model(torch.nn.Module):
    def forward(self, x):
        fut = torch.jit.fork(heavy, x)
        y = torch.tanh(x @ x.t() @ x)
        return torch.jit.wait(fut) + y


example_inputs = {"Model": lambda: (torch.rand(64, 64),)}
