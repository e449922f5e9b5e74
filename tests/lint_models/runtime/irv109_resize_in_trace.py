"""IRV109: ``resize_`` under the tracer; later uses of the tensor are disconnected.

The consequences are real findings too: the scripted graph reads ``x.numel()`` where the
trace holds a constant (IRV150), the output no longer depends on ``x`` (IRV134), and a
trace of another shape embeds another constant (IRV151). One counterexample proves them
all: they are related locations of the IRV109, the line to fix.
"""
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        y = x.clone()
        y.resize_(x.numel())  # expect: IRV109
        return y + 1  # IRV134, IRV151: related locations of the IRV109 (one cause)


example_inputs = {"Model": lambda: (torch.rand(3, 4),)}
