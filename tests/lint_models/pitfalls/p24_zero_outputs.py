"""A dead ReLU: with these weights the output is exactly 0 on every input, so the trace's
wrong branch gives the model's output too. Compared with the weights redrawn, it does not."""
import torch


class DeadRelu(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        with torch.no_grad():
            self.lin.bias.fill_(-1e6)

    def forward(self, x):
        if x.sum() > 0:  # expect: error
            y = x * 2
        else:
            y = x - 1
        return torch.relu(self.lin(y))


example_inputs = {"DeadRelu": lambda: (torch.rand(2, 4),)}
