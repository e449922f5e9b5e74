"""IRV001: a TracerWarning that no specific rule recognises (here the model raises it
itself); irviz keeps torch's text and reports it on the line that warned."""
import warnings

import torch


class Model(torch.nn.Module):
    def forward(self, x):
        if torch.jit.is_tracing():
            warnings.warn("the cache size is fixed when tracing", torch.jit.TracerWarning)  # expect: IRV001, IRV301
        return x * 2


example_inputs = {"Model": lambda: (torch.rand(3, 4),)}
