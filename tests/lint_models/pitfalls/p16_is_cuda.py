"""A device test: the tracing machine decides which branch is kept."""
import torch


class Precision(torch.nn.Module):
    def forward(self, x):
        if x.is_cuda:  # expect: warning
            return x.half().float() * 2
        return x * 2


example_inputs = {"Precision": lambda: (torch.rand(3),)}
