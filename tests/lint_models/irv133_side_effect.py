"""IRV133: Python side effects in forward (they run once, at trace time).

Traces (the counter is not used in the output, so check_trace passes); does not
script (a global list cannot be mutated from TorchScript).
"""
import torch

CALLS = []


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1  # expect: IRV133
        CALLS.append(self.calls)  # expect: IRV133, IRV301
        print("forward called")  # expect: IRV133
        return x * 2


example_inputs = {"Model": lambda: (torch.rand(3, 4),)}
