"""Noise only in training; traced as constructed (training mode), deployed in eval."""
import torch


class Jitter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        y = self.lin(x)
        if self.training:  # expect: error
            y = y * 0.9
        return y


example_inputs = {"Jitter": lambda: (torch.rand(2, 3),)}
