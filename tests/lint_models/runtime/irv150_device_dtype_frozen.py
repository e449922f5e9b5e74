"""IRV150: the trace freezes ``x.device`` and ``x.dtype`` (CPU and float32 here); the
scripted graph reads them (``prim::device``, ``prim::dtype``) on every call."""
# irviz-lint-xfail: prim::device/prim::dtype carry no source range in the scripted graph, so analyses/divergence.py skips them (false negative)
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        offset = torch.ones(4, device=x.device)  # expect: IRV150
        return x + torch.arange(4, dtype=x.dtype) + offset  # expect: IRV150


example_inputs = {"Model": lambda: (torch.rand(3, 4),)}
