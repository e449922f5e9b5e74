"""IRV141: forward returns a dict.

Tracing fails with the default ``strict=True`` ("Encountering a dict at the
output of the tracer"); that failure is the pitfall.
"""
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return {"double": x * 2, "plus": x + 1}  # expect: IRV141


example_inputs = {"Model": lambda: (torch.rand(3, 4),)}
