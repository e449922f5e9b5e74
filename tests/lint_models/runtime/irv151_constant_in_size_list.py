"""IRV151: the frozen row count sits in the size list of ``view``; the re-trace compares
constants inside that list too, and finds the difference on the line that uses it."""
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        rows = int(x.size(0))  # expect: IRV106
        return x.view(rows, -1)  # expect: IRV151


example_inputs = {"Model": lambda: (torch.rand(4, 4),)}
