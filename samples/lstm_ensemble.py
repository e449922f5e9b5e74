"""Seed 2, part 3: the bidirectional-LSTM ensemble, in the tutorial's three steps.

* ``SerialLSTMEnsemble`` - every LSTM runs one after another (tutorial: 2.05 s);
* ``BiForkLSTMEnsemble`` - each member forks its forward LSTM and runs the
  backward one meanwhile (tutorial: 1.71 s);
* ``LSTMEnsemble`` - additionally forks every ensemble member and waits for
  them in a second loop (tutorial's final version: 1.40 s).

The tutorial uses ``T, B, C = 50, 50, 1024``; the defaults here are small
enough to script, trace and run in about a second on a laptop.
"""
from typing import List

import torch


class BidirectionalRecurrentLSTM(torch.nn.Module):
    """Forward and backward LSTM, one after the other."""

    def __init__(self, channels: int = 16):
        super().__init__()
        self.cell_f = torch.nn.LSTM(input_size=channels, hidden_size=channels)
        self.cell_b = torch.nn.LSTM(input_size=channels, hidden_size=channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        output_f, _ = self.cell_f(x)
        x_rev = torch.flip(x, dims=[0])
        output_b, _ = self.cell_b(x_rev)
        output_b_rev = torch.flip(output_b, dims=[0])
        return torch.cat((output_f, output_b_rev), dim=2)


class ForkedBidirectionalRecurrentLSTM(BidirectionalRecurrentLSTM):
    """Forks the forward LSTM and runs the backward one while it works."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        future_f = torch.jit.fork(self.cell_f, x)
        x_rev = torch.flip(x, dims=[0])
        output_b, _ = self.cell_b(x_rev)
        output_b_rev = torch.flip(output_b, dims=[0])
        output_f, _ = torch.jit.wait(future_f)
        return torch.cat((output_f, output_b_rev), dim=2)


class SerialLSTMEnsemble(torch.nn.Module):
    """The tutorial's starting point: members run one after another."""

    def __init__(self, n_models: int = 4, channels: int = 16):
        super().__init__()
        self.models = torch.nn.ModuleList(
            [BidirectionalRecurrentLSTM(channels) for _ in range(n_models)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        results = []
        for model in self.models:
            results.append(model(x))
        return torch.stack(results).sum(dim=0)


class BiForkLSTMEnsemble(torch.nn.Module):
    """Members run one after another, each forking its forward LSTM."""

    def __init__(self, n_models: int = 4, channels: int = 16):
        super().__init__()
        self.models = torch.nn.ModuleList(
            [ForkedBidirectionalRecurrentLSTM(channels) for _ in range(n_models)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        results = []
        for model in self.models:
            results.append(model(x))
        return torch.stack(results).sum(dim=0)


class LSTMEnsemble(torch.nn.Module):
    """The tutorial's final version: every member is forked, then waited."""

    def __init__(self, n_models: int = 4, channels: int = 16):
        super().__init__()
        self.models = torch.nn.ModuleList(
            [ForkedBidirectionalRecurrentLSTM(channels) for _ in range(n_models)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        futures: List[torch.jit.Future[torch.Tensor]] = []
        for model in self.models:
            futures.append(torch.jit.fork(model, x))
        results = [torch.jit.wait(fut) for fut in futures]
        return torch.stack(results).sum(dim=0)


def _sequence():
    return (torch.rand(5, 2, 16),)  # T, B, C


example_inputs = {
    "BidirectionalRecurrentLSTM": _sequence,
    "ForkedBidirectionalRecurrentLSTM": _sequence,
    "SerialLSTMEnsemble": _sequence,
    "BiForkLSTMEnsemble": _sequence,
    "LSTMEnsemble": _sequence,
}
