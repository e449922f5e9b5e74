"""IRV205 (off by default): the forked task costs less than forking it."""
# irviz-lint-args: --extend-select IRV205
import torch


def _scale(x):
    return x * 2


class Model(torch.nn.Module):
    def forward(self, x):
        fut = torch.jit.fork(_scale, x)  # expect: IRV205
        y = torch.relu(x @ x.t() @ x)
        return torch.jit.wait(fut) + y


example_inputs = {"Model": lambda: (torch.rand(4, 4),)}
