"""IRV130: traced in training mode (the loader creates instances in training mode), so
dropout keeps dropping and BatchNorm keeps using batch statistics in the trace."""
import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.drop = torch.nn.Dropout(0.1)
        self.norm = torch.nn.BatchNorm1d(4)

    def forward(self, x):
        x = self.drop(self.lin(x))  # expect: IRV130
        return self.norm(x)  # expect: IRV130


example_inputs = {"Model": lambda: (torch.rand(3, 4),)}
