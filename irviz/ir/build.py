"""Which builder draws a capture, decided in one place: an ExportedProgram
(:mod:`irviz.ir.build_export`), a trace without its TracedModule
(:mod:`irviz.ir.build_trace`), else the TorchScript program (:mod:`irviz.ir.build_script`).
All three write the vocabulary of :mod:`irviz.ir.model`."""
from __future__ import annotations

import networkx as nx

from ..frontends.capture import Capture
from .build_export import build_export_graph
from .build_script import ScriptBuilder
from .build_trace import build_trace_graph

__all__ = ["build_graph"]


def build_graph(capture: Capture) -> nx.DiGraph:
    """The IR graph of a capture (see :mod:`irviz.ir.model`); a trace the trace builder
    cannot draw is drawn from its TracedModule, and the capture's notes say why."""
    if capture.exported is not None:   # --mode export, a .pt2
        return build_export_graph(capture)
    if capture.trace_graph is not None:
        try:
            return build_trace_graph(capture)
        except Exception as exc:  # noqa: BLE001 - a trace form the reconstruction does not know
            capture.notes.append(f"the trace could not be drawn without its TracedModule "
                                 f"({type(exc).__name__}: {exc}); drawn from the TracedModule")
            capture.trace_graph = None
    return ScriptBuilder(capture).build()
