"""A TracerWarning in irviz's words: the message of the lint rule that recognises it.

Both the terminal (:mod:`irviz.commands.warning_lines`) and the picture's notes
(:meth:`irviz.view.Visualization.notes`) say "the trace keeps only the branch the example
input took (lint rule IRV101)" rather than torch's "Converting a tensor to a Python boolean
might cause the trace to be incorrect".
"""
from __future__ import annotations

import re

__all__ = ["first_sentence", "rule_words"]


def first_sentence(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    head, dot, _ = line.partition(". ")
    return head + "." if dot else line


def rule_words(message: str, filename: str, lineno: int) -> str | None:
    """``<the rule's message> (lint rule IRV1xx)`` when a tracer rule recognises
    ``message``; not ``CODE message``, which reads as a finding the lint gate let through."""
    from ..location import source_line
    from .layers.context import TRACER_RULES

    rule = next((r for prefix, r in TRACER_RULES if message.startswith(prefix)), None)
    if rule is None:
        return None
    try:
        code = re.sub(r"\s+#.*$", "", source_line(f"{filename}:{lineno}:1") or "").strip()
        if not code and "{expr}" in rule.message:   # no source to quote: torch's words
            return None
        words = rule.message.format(expr=code, text=first_sentence(message))
    except (KeyError, IndexError):  # a template that needs more than the line
        return None
    return f"{words} (lint rule {rule.code})"
