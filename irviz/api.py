"""The Python API: draw any model from a notebook or a script.

>>> import irviz
>>> [view] = irviz.visualize("samples/decision_gate.py:MyCell")      # doctest: +SKIP
>>> [view] = irviz.visualize(MyCell(), mode="trace",
...                          inputs=(torch.rand(3, 4), torch.rand(3, 4)))  # doctest: +SKIP
>>> view.svg()          # bytes; in Jupyter the object shows itself as SVG

Everything here goes through :class:`irviz.workspace.Workspace`, the same pipeline the
CLI and the Sphinx extension use.
"""
from __future__ import annotations

import networkx as nx

from .frontends.capture import Capture, capture
from .frontends.loader import load
from .render.dot import RenderOptions
from .view import Visualization
from .workspace import Workspace

__all__ = ["Visualization", "Workspace", "load", "capture", "build", "visualize",
           "RenderOptions"]


def build(cap: Capture) -> nx.DiGraph:
    """The IR graph of a capture, with every analysis's facts annotated on it."""
    return Workspace().graph(cap)


def visualize(model: object, mode: str = "script", inputs: object = None,
              options: RenderOptions | None = None, *, lint: bool = False,
              workspace: Workspace | None = None) -> list[Visualization]:
    """Capture ``model`` and build its annotated graph; one Visualization per model.

    ``model`` is a spec string (``"model.py"``, ``"model.py:MyCell"``, ``"pkg.mod:NAME"``,
    ``"archive.pt"``; see README: Targets) or a model object you built: an ``nn.Module``,
    a ScriptModule, or a scripted or plain function. ``inputs`` is an expression string
    (as ``--inputs``), a tensor, a tuple of tensors, or a dict of ``forward``'s
    arguments by name; without it the model file's ``example_inputs`` are used.
    ``lint=True`` draws the lint findings (the ``[tool.irviz]`` gate applies when the
    workspace has a config).
    """
    ws = workspace or Workspace(inputs=inputs)
    views = []
    for target in ws.targets(model):
        findings = None
        if lint:
            from .lint.gate import Gate

            findings = Gate.from_config(ws.config).apply(ws.lint(target).found).kept
        views.append(ws.view(target, mode, options, findings=findings))
    return views
