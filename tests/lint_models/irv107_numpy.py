"""IRV107: NumPy inside forward (the values become constants of the trace).

Needs NumPy to run at all: without it ``.numpy()`` raises "Numpy is not
available", so tracing this model fails there (the pitfall is still visible in
the source, which is what this fixture is for).
"""
import torch

try:
    import numpy as np
except ImportError:  # NumPy is optional for irviz
    np = None


class Model(torch.nn.Module):
    def forward(self, x):
        values = x.detach().numpy()  # expect: IRV107, IRV301
        index = np.arange(x.shape[0])  # expect: IRV107
        return torch.from_numpy(values * 2) + torch.from_numpy(index)[:, None]  # expect: IRV108


# (the IRV134 and IRV151 on the return line are related locations of its IRV108: one cause)
example_inputs = {"Model": lambda: (torch.rand(3, 4),)}
