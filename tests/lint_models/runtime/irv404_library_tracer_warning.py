"""IRV404 (off by default): torch warns inside its own code (``nn/modules/rnn.py``) while
tracing an LSTM; irviz reports it on the user's line that called the library."""
# irviz-lint-args: --extend-select IRV404
import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(4, 8)

    def forward(self, x):
        out, _ = self.lstm(x)  # expect: IRV404
        return out


example_inputs = {"Model": lambda: (torch.rand(5, 2, 4),)}
