"""User modules nested in user modules, for the viewer's module pages.

With ``depth=1``: ``encoder`` is drawn open, its four identical ``layers.N`` and its
``final`` are boxes (two page structures), ``head.pool`` is a box (a third), and the
torch.nn ``out`` and ``norm`` are library boxes (no page).
``Hostile``: user modules under names that are markup.
"""
import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        return torch.softmax(self.proj(x), -1) * x


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attention()
        self.norm = nn.LayerNorm(8)

    def forward(self, x):
        return self.norm(x + self.attn(x))


class Final(nn.Module):
    def forward(self, x):
        return torch.cumsum(x, -1).clamp(min=0.0)


class Encoder(nn.Module):
    def __init__(self, n: int = 4):
        super().__init__()
        self.layers = nn.ModuleList([Layer() for _ in range(n)])
        self.final = Final()

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.final(x)


class Pool(nn.Module):
    def forward(self, x):
        return x.amax(-1) + x.mean(-1)


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = Pool()

    def forward(self, x):
        return torch.tanh(self.pool(x))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()
        self.out = nn.Linear(8, 8)
        self.head = Head()

    def forward(self, x):
        return self.head(self.out(self.encoder(x)))


class Hostile(nn.Module):
    def __init__(self):
        super().__init__()
        self.d = nn.ModuleDict({"</script><script>alert(1)</script>": Pool(),
                                '"];x->y[label="': Final(),
                                "javascript:alert(1)": Attention()})

    def forward(self, x):
        x = self.d['"];x->y[label="'](x)
        x = self.d["javascript:alert(1)"](x)
        return self.d["</script><script>alert(1)</script>"](x)


example_inputs = {"Net": lambda: (torch.rand(2, 8),), "Hostile": lambda: (torch.rand(2, 8),)}
