"""The obvious remedy fails: the gate holding the `if` leaves torch (NumPy), so neither
the gate nor the model scripts, and no verified remedy is offered."""
import numpy as np
import torch


class Gate(torch.nn.Module):
    def forward(self, x):
        if np.sum(x.detach().numpy()) > 0:  # remedy: none
            return x
        return -x


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.gate = Gate()

    def forward(self, x):
        return self.gate(self.lin(x)).relu()


example_inputs = {"Net": lambda: (torch.ones(2, 4),)}
