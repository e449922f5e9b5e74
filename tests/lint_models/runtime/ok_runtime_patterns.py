"""Negative controls for the runtime layers (trace, script-vs-trace, retrace, ir).

None of these may produce a finding, with IRV205 (fork-tiny-task) and IRV404
(library-tracer-warning) selected as well: a model traced in eval mode (no IRV130, no
library warning from BatchNorm), outputs that all depend on the inputs (IRV134), a
reshape that keeps the batch size traced (IRV150/IRV151), a scripted submodule inside a
scripted model (IRV303), a scriptable model without example inputs (IRV301), and a fork
with real work on both sides (IRV201-IRV205).
"""
# irviz-lint-args: --extend-select IRV205,IRV404
import torch


class _Classifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.norm = torch.nn.BatchNorm1d(4)
        self.drop = torch.nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.norm(self.lin(x)))


#: an instance in eval mode: what should be traced
classifier = _Classifier().eval()


class DependsOnInputs(torch.nn.Module):
    def forward(self, x):
        mask = torch.ones(x.size(-1), x.size(-1)).tril()
        zeros = torch.zeros(x.shape)
        flat = x.view(x.size(0), -1)
        return x @ mask, mask, zeros + flat


class _Scaled(torch.nn.Module):
    def forward(self, x):
        return torch.clamp(x, min=0.0) * 2


class ScriptedParent(torch.nn.Module):
    """Deployed by scripting (no example inputs); its child is scripted too."""

    def __init__(self):
        super().__init__()
        self.child = torch.jit.script(_Scaled())

    def forward(self, x):
        for _ in range(3):
            x = self.child(x)
        return x


class Scriptable(torch.nn.Module):
    """No example inputs: scripted only, and it scripts."""

    def forward(self, x):
        return torch.relu(x).sum(0)


def _heavy(x):
    return torch.relu(x @ x.t() @ x)


class ForkRealWork(torch.nn.Module):
    def forward(self, x):
        fut = torch.jit.fork(_heavy, x)
        y = torch.tanh(x @ x.t() @ x)
        return torch.jit.wait(fut) + y


example_inputs = {
    "classifier": lambda: (torch.rand(8, 4),),
    "DependsOnInputs": lambda: (torch.rand(3, 4),),
    "ForkRealWork": lambda: (torch.rand(256, 256),),
}
