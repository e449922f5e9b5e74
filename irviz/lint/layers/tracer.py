"""The ``trace`` layer: the TracerWarnings torch raised while tracing, each attributed to the
user's line (a library's to the model's line that called it).
"""
from __future__ import annotations

from collections.abc import Iterable

from ...frontends.capture import CapturedWarning
from ...frontends.records import Target
from ...paths import display_path
from ..rules.passthrough import UnclassifiedTracerWarning
from ..rules.scripting import LibraryTracerWarning
from .context import (
    CONFIRM_ONLY, TRACER_RULES, LayerContext, code_at, Findings, forward_location)


def run(ctx: LayerContext) -> None:
    """The trace's warnings, or those torch raised before the trace failed."""
    warnings = (ctx.failed_trace_warnings if ctx.run.trace is None
                else ctx.run.trace.warnings)
    _tracer_layer(ctx.target, warnings, ctx.findings)


def _tracer_layer(target: Target, warnings: Iterable[CapturedWarning],
                  findings: Findings) -> None:
    """A finding for every TracerWarning torch raised while tracing ``target`` (a failed
    trace's warnings too: :attr:`CaptureError.warnings`), at the line it is attributed to.
    One raised in another file than the model's (a library the model calls into) also
    names the line of the model's file that called it (``related``: "called from")."""
    forward = forward_location(target)
    for w in warnings:
        if w.category != "TracerWarning":
            continue
        text = w.message.splitlines()[0]
        related = _called_from(w)
        if w.origin is not None:
            findings.report(LibraryTracerWarning, (w.filename, w.lineno), "trace",
                            origin=w.origin, text=text)
            findings.relate(LibraryTracerWarning.code, (w.filename, w.lineno), related)
            continue
        rule = next((r for prefix, r in TRACER_RULES if w.message.startswith(prefix)),
                    UnclassifiedTracerWarning)
        location = (w.filename, w.lineno) if w.in_user_code else forward
        if location is None:
            continue
        if location != (w.filename, w.lineno):
            related = ()  # the forward of the model's own file: called from nowhere else
        path = display_path(location[0])
        if rule in CONFIRM_ONLY and (rule.code, path, location[1]) not in findings.found:
            continue
        seen_here = {c for (c, p, line) in findings.found if (p, line) == (path, location[1])
                     and c.startswith("IRV1")}
        if seen_here and rule.code not in seen_here:  # the source layer named the cause
            for code in seen_here:  # and the call that led there is the warning's
                findings.relate(code, location, related)
            continue
        findings.report(rule, location, "trace", expr=code_at(location), text=text)
        findings.relate(rule.code, location, related)


def _called_from(w: CapturedWarning) -> tuple[tuple[str, int, str], ...]:
    """The warning's ``called_from`` as a related location, or none."""
    site = getattr(w, "called_from", None)
    return ((display_path(site[0]), int(site[1]), "called from"),) if site else ()
