"""Seed 1, part 2: a data-dependent ``if`` inside a submodule.

Tracing ``MyCell`` freezes the branch ``MyDecisionGate`` took for the example
input; scripting keeps both branches as a ``prim::If``.
"""
import torch


class MyDecisionGate(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x
        else:
            return -x


class MyCell(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.dg = MyDecisionGate()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x, h):
        new_h = torch.tanh(self.dg(self.linear(x)) + h)
        return new_h, new_h


# irviz convention: example inputs per model name (a tuple, a tensor, or a
# zero-argument callable returning one of them).
example_inputs = {
    "MyDecisionGate": lambda: (torch.rand(3, 4),),
    "MyCell": lambda: (torch.rand(3, 4), torch.rand(3, 4)),
}

# MyCell's gate takes the side its random weights give: seeded here (at import, before
# irviz builds the models), so that every run traces the same branch, the `else` (`-x`)
torch.manual_seed(0)
