"""IRV108: ``torch.tensor``/``torch.as_tensor`` fed by input-derived values (baked).

Asking for a float tensor from traced sizes also converts each size to a Python
float (IRV106).
"""
import torch


class Model(torch.nn.Module):
    def forward(self, x):  # expect: IRV151
        counts = torch.tensor([x.size(0), x.size(1)], dtype=torch.float32)  # expect: IRV106, IRV108
        shape = torch.as_tensor(x.shape)  # expect: IRV108
        return x * counts.sum() + shape.sum()


example_inputs = {"Model": lambda: (torch.rand(3, 4),)}
