"""torch.cuda.is_available() read while tracing."""
import torch


class Pick(torch.nn.Module):
    def forward(self, x):
        if torch.cuda.is_available():  # expect: warning
            x = x.clamp(max=1.0)
        return x + 1


example_inputs = {"Pick": lambda: (torch.rand(3),)}
