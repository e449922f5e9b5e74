"""``--mode export``'s one layer: the migration rules (IRV5xx) of
:mod:`irviz.lint.export_checks`, which take the place of every other layer.
"""
from __future__ import annotations

from .context import LayerContext


def run(ctx: LayerContext) -> None:
    """``--mode export``: the migration rules (IRV5xx) on the export capture (or its
    failure) and the scripted capture (:mod:`irviz.lint.export_checks`)."""
    from ..export_checks import export_findings

    export_findings(ctx.workspace, ctx.target, ctx.run, ctx.findings)
