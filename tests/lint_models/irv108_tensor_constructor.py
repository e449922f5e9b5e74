"""IRV108: ``torch.tensor``/``torch.as_tensor`` fed by input-derived values (baked)."""
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        counts = torch.tensor([x.size(0), x.size(1)], dtype=torch.float32)  # expect: IRV108
        shape = torch.as_tensor(x.shape)  # expect: IRV108
        return x * counts.sum() + shape.sum()


example_inputs = {"Model": lambda: (torch.rand(3, 4),)}
