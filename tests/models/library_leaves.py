"""Modules of an installed library (transformers) beside the user's own, for the plan's
library boxes: a library module that calls no other module is drawn as one box, like
``nn.Linear``; a library module that calls others stays open, and so does the user's own
leaf module."""
import torch
from torch import nn
from transformers.activations import NewGELUActivation
from transformers.models.gpt2.modeling_gpt2 import GPT2MLP
from transformers.pytorch_utils import Conv1D
from transformers import GPT2Config


class Scale(nn.Module):
    """The user's own leaf module."""

    def forward(self, x):
        return x * 2.0 + 1.0


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = Conv1D(8, 4)
        self.act = NewGELUActivation()
        self.mlp = GPT2MLP(16, GPT2Config(n_embd=8, resid_pdrop=0.0))
        self.scale = Scale()

    def forward(self, x):
        return self.scale(self.mlp(self.act(self.proj(x))))


class Scriptable(nn.Module):
    """Net without GPT2MLP, which torch.jit.script refuses."""

    def __init__(self):
        super().__init__()
        self.proj = Conv1D(8, 4)
        self.act = NewGELUActivation()
        self.scale = Scale()

    def forward(self, x):
        return self.scale(self.act(self.proj(x)))


example_inputs = {"Net": (torch.rand(2, 3, 4),), "Scriptable": (torch.rand(2, 3, 4),),
                  "Scale": (torch.rand(3),)}
