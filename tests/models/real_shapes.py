"""Small models with the shapes of defects found on real models (torchvision corpus).

Each one is the smallest model of its kind: a library line shared by two modules, a stage
whose first op reads only early values, an attribute-only ``if`` after some ops, a warning
raised by compiled code, a quantized conv.
"""
from typing import List
import warnings

import torch


class TwoReLUs(torch.nn.Module):
    """``nn.ReLU(inplace=True)`` runs ``relu_``; its ``else: relu`` never runs. The only
    non-inplace relu that runs is another module's, with another shape: the untaken branch
    must not borrow it (Faster R-CNN's backbone showed the box head's 1000×1024)."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.act = torch.nn.ReLU(inplace=True)
        self.pool = torch.nn.AdaptiveAvgPool2d(1)
        self.fc = torch.nn.Linear(8, 10)
        self.out_act = torch.nn.ReLU()

    def forward(self, x):
        x = self.act(self.conv(x))
        x = self.pool(x).flatten(1)
        return self.out_act(self.fc(x))


class Norms(torch.nn.Module):
    """Normalisations whose functional form dispatches under another name
    (``F.batch_norm`` runs ``native_batch_norm``): scripted, their shapes were unknown."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.bn = torch.nn.BatchNorm2d(4)
        self.gn = torch.nn.GroupNorm(2, 4)
        self.ln = torch.nn.LayerNorm(6)

    def forward(self, x):
        return self.ln(self.gn(self.bn(self.conv(x))))


class ReusedReLU(torch.nn.Module):
    """One ``relu`` module called twice with different shapes, as every torchvision ResNet
    block does: each call has its own shape, although the module's records disagree."""

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 4, 3)
        self.c2 = torch.nn.Conv2d(4, 8, 3)
        self.relu = torch.nn.ReLU(inplace=True)

    def forward(self, x):
        return self.relu(self.c2(self.relu(self.c1(x))))


class AnnotatedInit(torch.nn.Module):
    """Scripting it, torch's checker (run through the standard library's ``ast``) warns
    about the annotation in ``__init__``: the innermost frame that is not torch's is
    ``ast.py``, which is nobody's model code."""

    def __init__(self):
        super().__init__()
        self.names: List[str] = []

    def forward(self, x):
        return x + 1


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)
        self.proj2 = torch.nn.Linear(8, 8)
        self.proj3 = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.tanh(self.proj3(torch.tanh(self.proj2(torch.tanh(self.proj(x))))))


class Head(torch.nn.Module):
    """Its first op reads only the model's input, its last the encoder's result."""

    def __init__(self):
        super().__init__()
        self.out = torch.nn.Linear(8, 4)

    def forward(self, x, features):
        gate = torch.sigmoid(x.mean())
        return self.out(features) * gate


class Stages(torch.nn.Module):
    """Two stages in program order: the head must be drawn below the encoder."""

    def __init__(self):
        super().__init__()
        self.encoder = Encoder()
        self.head = Head()

    def forward(self, x):
        features = self.encoder(x)
        return self.head(x, features)


class TrainingBranch(torch.nn.Module):
    """``if self.training:`` after some ops: a condition nothing flows into."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(8, 8)
        self.b = torch.nn.Linear(8, 8)
        self.c = torch.nn.Linear(8, 8)

    def forward(self, x):
        x = torch.relu(self.a(x))
        x = torch.relu(self.b(x))
        x = torch.relu(self.c(x))
        if self.training:
            x = x * 0.5
        return x


class EvalOnly(torch.nn.Module):
    """``if self.training: raise``: neither the condition nor the raise reads anything."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(8, 8)
        self.b = torch.nn.Linear(8, 8)
        self.c = torch.nn.Linear(8, 8)
        self.eval()

    def forward(self, x):
        h = torch.relu(self.a(x))
        h = torch.relu(self.b(h))
        h = torch.relu(self.c(h))
        if self.training:
            raise RuntimeError("EvalOnly is for inference")
        return h * 2


class Warner(torch.nn.Module):
    def forward(self, x):
        warnings.warn("Warner always warns when it runs")
        return x + 1


class WarnsWhenCompiled(torch.nn.Module):
    """A warning raised while TorchScript runs the model: no Python frame of the model
    exists, only its aten::warn's source line."""

    def __init__(self):
        super().__init__()
        self.inner = Warner()

    def forward(self, x):
        return self.inner(x) * 2


class QuantizedConv(torch.nn.Module):
    """A conv + relu and a conv, quantized the eager-mode way (fuse, prepare, calibrate,
    convert, all in place): torch.ao.nn.intrinsic.quantized.ConvReLU2d and
    torch.ao.nn.quantized.Conv2d, whose scripted forwards hold padding checks and loops."""

    def __init__(self):
        from torch.ao import quantization as q

        super().__init__()
        self.quant = q.QuantStub()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.relu = torch.nn.ReLU()
        self.conv2 = torch.nn.Conv2d(8, 8, 3)
        self.dequant = q.DeQuantStub()
        engines = torch.backends.quantized.supported_engines
        torch.backends.quantized.engine = "fbgemm" if "fbgemm" in engines else "qnnpack"
        self.eval()
        self.qconfig = q.get_default_qconfig(torch.backends.quantized.engine)
        q.fuse_modules(self, [["conv", "relu"]], inplace=True)
        q.prepare(self, inplace=True)
        with torch.no_grad():
            self(torch.rand(2, 3, 16, 16))
        q.convert(self, inplace=True)

    def forward(self, x):
        return self.dequant(self.conv2(self.relu(self.conv(self.quant(x)))))


example_inputs = {
    "TwoReLUs": lambda: (torch.rand(1, 3, 16, 16),),
    "Stages": lambda: (torch.rand(2, 8),),
    "Norms": lambda: (torch.rand(1, 3, 8, 8),),
    "ReusedReLU": lambda: (torch.rand(1, 3, 8, 8),),
    "TrainingBranch": lambda: (torch.rand(2, 8),),
    "EvalOnly": lambda: (torch.rand(2, 8),),
    "WarnsWhenCompiled": lambda: (torch.rand(2, 3),),
    "QuantizedConv": lambda: (torch.rand(1, 3, 16, 16),),
    "Encoder": lambda: (torch.rand(2, 8),),
    "Warner": lambda: (torch.rand(2, 3),),
}
