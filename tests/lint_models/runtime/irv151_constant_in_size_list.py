"""IRV151: the frozen row count sits in the size list of ``view`` (IRV106 on the same
line); the traced model returns a (4, 5) tensor where the Python model returns (5, 4)."""
# irviz-lint-xfail: first_divergence ignores constants inside a prim::ListConstruct, so IRV151 falls back to the `def forward` line (wrong line)
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x.view(int(x.size(0)), -1)  # expect: IRV106, IRV151


example_inputs = {"Model": lambda: (torch.rand(4, 4),)}
