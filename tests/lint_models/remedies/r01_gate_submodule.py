"""The tutorial's case: a gate with a data-dependent `if` inside a cell meant for tracing.
The remedy is the tutorial's own move: script the gate, trace the rest."""
import torch


class Gate(torch.nn.Module):
    def forward(self, x):
        if x.mean() > 0:  # remedy: script-submodule gate
            return x
        return -x


class Cell(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.gate = Gate()

    def forward(self, x):
        # a Python-only call: the cell itself does not script
        scale = float(len(x.shape))
        return torch.tanh(self.gate(self.lin(x))) * scale


example_inputs = {"Cell": lambda: (torch.ones(3, 4),)}
