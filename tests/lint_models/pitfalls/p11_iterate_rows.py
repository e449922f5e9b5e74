"""Iterates over the batch in Python."""
import torch


class PerRow(torch.nn.Module):
    def forward(self, x):
        outs = []
        for row in x:  # expect: error
            outs.append(row.max())
        return torch.stack(outs)


example_inputs = {"PerRow": lambda: (torch.rand(4, 3),)}
