"""The record of one finding: :class:`Diagnostic`.

Rules never build a Diagnostic by hand: they call ``Rule.diagnostic(...)``
(:mod:`irviz.lint.registry`), the one place findings are created, so the code,
name, severity and hint always come from the rule class.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..frontends.records import Attempt, Remedy, remedy_line

#: how bad a finding is; ``info`` becomes ``note`` in SARIF and ``notice`` on GitHub
SEVERITIES = ("error", "warning", "info")
#: what settles a finding (docs/lint.md: the evidence ladder), strongest first:
#: ``counterexample`` a valid input on which the trace and the Python model differ;
#: ``certain`` a fact no input can change (torch.jit.trace refuses the model, a dropout
#: recorded in training mode, a branch the machine decides); ``held`` some valid variant
#: drove the decision the finding rests on the other way and the trace still agreed
#: with the model (for a finding resting on no decision: it agreed on every variant; or
#: the line only validates and raises); ``undecided`` no variant drove the decision the
#: other way, or nothing ran that could tell (no inputs, ``--no-exec``, ``--verify 0``).
VERDICTS = ("counterexample", "certain", "held", "undecided")

#: how a finding was detected (a rule may use several; the report says which fired):
#: ``trace`` what torch.jit.trace warned or raised; ``script-vs-trace`` the scripted
#: graph keeps what the trace froze; ``retrace`` the graph changed when traced again
#: with other inputs; ``ast`` the Python source, without running it; ``ir`` a pattern
#: in the TorchScript graph; ``export`` what torch.export made of the model or raised
#: (``--mode export``); ``export-vs-script`` the scripted graph keeps what the exported
#: program lost (a loop, a fork); ``verify`` the trace and the Python model differ on a
#: variant input.
LAYERS = ("trace", "script-vs-trace", "retrace", "ast", "ir", "export", "export-vs-script",
          "verify")


@dataclass(frozen=True)
class Evidence:
    """Why a finding has its severity: the verdict (:data:`VERDICTS`) and what shows it.

    ``summary`` is the one line the text output prints after the verdict
    (``counterexample: pixel_values float32 -> float64: the trace raises "expected scalar
    type Double but found Float"; the model runs``). For a counterexample, ``variant`` is
    the changed input, ``output`` the output that differs (None when the trace raised),
    ``difference`` the error or the largest difference, and ``compared`` how outputs were
    compared (``values``, ``values under a fixed seed``, ``shapes``). ``held_on`` names the
    variants a held finding was checked on; ``reason`` says why a certainty is one, or why
    a held finding is harmless (a validation that raises)."""

    verdict: str
    summary: str
    variant: str | None = None
    output: str | None = None
    difference: str | None = None
    compared: str | None = None
    held_on: tuple[str, ...] = ()
    reason: str | None = None

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"evidence verdict {self.verdict!r} is not one of "
                             f"{', '.join(VERDICTS)}")
        object.__setattr__(self, "held_on", tuple(self.held_on))

    def line(self) -> str:
        """``counterexample: ...``, ``held on: ...`` or ``certain: ...`` for text output."""
        if self.verdict == "held" and not self.reason:
            return "held on: " + self.summary
        return f"{self.verdict}: {self.summary}"

    def to_dict(self) -> dict:
        return {"verdict": self.verdict, "summary": self.summary, "variant": self.variant,
                "output": self.output, "difference": self.difference,
                "compared": self.compared, "held_on": list(self.held_on),
                "reason": self.reason}

    @classmethod
    def from_dict(cls, data: dict) -> "Evidence":
        return cls(**{k: data.get(k) for k in ("verdict", "summary", "variant", "output",
                                                 "difference", "compared", "reason")},
                   held_on=tuple(data.get("held_on") or ()))


@dataclass(frozen=True)
class Diagnostic:
    """One finding of one rule at one place of the user's source.

    ``line`` and ``column`` are 1-based. ``end_line``/``end_column`` are optional;
    ``end_column`` is exclusive (the column just past the flagged text), as in ruff's
    JSON and SARIF regions. ``path`` is kept as given (the formatters decide how to
    show it). ``target`` names the model the finding is about (``"MyCell"``), and
    ``layers`` which detection layers (:data:`LAYERS`) found it.

    ``related`` are other places that explain the finding, each ``(path, line,
    message)``: for a finding inside a library the model calls into, the line of the
    user's own file that called it (``("model.py", 31, "called from")``). Given as
    ``{"path", "line", "message"}`` dicts (the JSON form) they are read the same way.
    """

    code: str
    name: str
    message: str
    severity: str
    path: str
    line: int
    column: int
    end_line: int | None = None
    end_column: int | None = None
    target: str | None = None
    layers: tuple[str, ...] = ()
    hint: str | None = None
    related: tuple[tuple[str, int, str], ...] = ()
    #: what settles the finding (the gate sets ``severity`` from it); None before the
    #: verification layer ran
    evidence: Evidence | None = None
    #: a fix irviz verified for a counterexample (:mod:`irviz.frontends.remedies`)
    remedy: Remedy | None = None
    #: the candidates that did not verify, each with why (set when a search found none)
    remedy_tried: tuple[Attempt, ...] = ()

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"{self.code}: severity {self.severity!r} is not one of "
                             f"{', '.join(SEVERITIES)}")
        layers = tuple(self.layers)
        unknown = [layer for layer in layers if layer not in LAYERS]
        if unknown:
            raise ValueError(f"{self.code}: unknown detection layer(s) {', '.join(unknown)}; "
                             f"valid layers: {', '.join(LAYERS)}")
        # a list passed by a caller would make the frozen record unhashable
        object.__setattr__(self, "layers", layers)
        object.__setattr__(self, "related", _related(self.code, self.related))
        if isinstance(self.evidence, dict):
            object.__setattr__(self, "evidence", Evidence.from_dict(self.evidence))
        if isinstance(self.remedy, dict):
            object.__setattr__(self, "remedy", Remedy.from_dict(self.remedy))
        object.__setattr__(self, "remedy_tried", tuple(
            Attempt(**a) if isinstance(a, dict) else a for a in self.remedy_tried or ()))

    def to_dict(self) -> dict:
        """The JSON form (``irviz lint --format json``); keys in a fixed order."""
        return {
            "code": self.code,
            "name": self.name,
            "message": self.message,
            "severity": self.severity,
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "target": self.target,
            "layers": list(self.layers),
            "hint": self.hint,
            "related": [{"path": path, "line": line, "message": message}
                        for path, line, message in self.related],
            "evidence": self.evidence.to_dict() if self.evidence is not None else None,
            "remedy": self.remedy.to_dict() if self.remedy is not None else None,
            "remedy_tried": [a.to_dict() for a in self.remedy_tried],
        }

    def remedy_line(self) -> str | None:
        """The remedy line the text output prints (:func:`~irviz.frontends.records.remedy_line`);
        None when no search ran (the finding has no counterexample)."""
        return remedy_line(self.remedy, self.remedy_tried, self.target)

    def with_related(self, *related) -> "Diagnostic":
        """This finding with ``related`` locations added (those it has already kept once,
        in their order)."""
        merged = tuple(dict.fromkeys(self.related + _related(self.code, related)))
        if merged == self.related:
            return self
        from dataclasses import replace

        return replace(self, related=merged)

    def with_evidence(self, evidence: Evidence | None, severity: str | None = None
                      ) -> "Diagnostic":
        """This finding with ``evidence`` (and ``severity``, when given)."""
        from dataclasses import replace

        return replace(self, evidence=evidence, severity=severity or self.severity)

    def sort_key(self) -> tuple:
        """Report order: by file, then position, then code."""
        return (self.path, self.line, self.column, self.code)


def _related(code: str, items) -> tuple[tuple[str, int, str], ...]:
    """``items`` as ``(path, line, message)`` tuples (from tuples or JSON dicts)."""
    out = []
    for item in items or ():
        if isinstance(item, dict):
            item = (item.get("path"), item.get("line"), item.get("message"))
        try:
            path, line, message = item
        except (TypeError, ValueError):
            raise ValueError(f"{code}: a related location is (path, line, message), "
                             f"got {item!r}") from None
        if not isinstance(path, str) or not isinstance(line, int) or isinstance(line, bool) \
                or not isinstance(message, str):
            raise ValueError(f"{code}: a related location is (path: str, line: int, "
                             f"message: str), got {item!r}")
        out.append((path, line, message))
    return tuple(dict.fromkeys(out))
