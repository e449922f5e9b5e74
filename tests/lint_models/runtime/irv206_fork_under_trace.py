"""IRV206 (off by default): a fork under torch.jit.trace; the forked function is traced
too, its branch on the data frozen (IRV101)."""
# irviz-lint-args: --extend-select IRV206
# irviz-lint-xfail: IRV206 is reported on the `def forward` line: torch records no source range for a traced prim::fork
import torch


def _branch(x):
    if x.sum() > 0:  # expect: IRV101
        return x
    return -x


class Model(torch.nn.Module):
    def forward(self, x):
        fut = torch.jit.fork(_branch, x)  # expect: IRV206
        y = x * 2
        return torch.jit.wait(fut) + y


example_inputs = {"Model": lambda: (torch.rand(3, 4),)}
