"""What linting one expanded spec (a model file, ``FILE.py:NAME``, an archive) produced,
before the gate, in a form that crosses process boundaries and survives on disk.

One unit for three callers: the in-process run, the ``--jobs`` workers (which send it to
the parent as one JSON line) and the result cache (which stores it). The parent merges
the units in the specs' order and only then applies the gate, so a parallel or cached
run prints exactly what a serial one prints.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import errors as _errors
from ..errors import IrvizError
from .diagnostic import Diagnostic
from .run_report import RunReport

__all__ = ["SpecResult", "merge"]


def _error_to_dict(error: IrvizError) -> dict:
    return {"type": type(error).__name__, "message": error.message, "hint": error.hint,
            "detail": error.detail}


def _error_from_dict(data: dict) -> IrvizError:
    kind = getattr(_errors, str(data.get("type")), IrvizError)
    if not (isinstance(kind, type) and issubclass(kind, IrvizError)):
        kind = IrvizError
    return kind(data["message"], hint=data.get("hint"), detail=data.get("detail"))


@dataclass
class SpecResult:
    """The findings (before the gate), notes, errors and models of one spec."""

    spec: str
    found: list[Diagnostic] = field(default_factory=list)
    #: (spec or target spec, error): what could not be linted (exit code 2)
    errors: list[tuple[str, IrvizError]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    verified: list[str] = field(default_factory=list)
    models: int = 0
    #: absolute paths of the Python files the result depends on (the cache key's files)
    files: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"spec": self.spec, "found": [d.to_dict() for d in self.found],
                "errors": [[spec, _error_to_dict(e)] for spec, e in self.errors],
                "notes": list(self.notes), "verified": list(self.verified),
                "models": self.models, "files": list(self.files)}

    @classmethod
    def from_dict(cls, data: dict) -> "SpecResult":
        """The result ``to_dict`` wrote; raises (KeyError, TypeError, ValueError) on a
        malformed one, which callers treat as no result."""
        return cls(spec=data["spec"], found=[Diagnostic(**d) for d in data["found"]],
                   errors=[(spec, _error_from_dict(e)) for spec, e in data["errors"]],
                   notes=[str(n) for n in data["notes"]],
                   verified=[str(v) for v in data["verified"]], models=int(data["models"]),
                   files=[str(f) for f in data["files"]])


def merge(results: list[SpecResult], gate) -> RunReport:
    """One :class:`RunReport` from the results in the specs' order, through ``gate``."""
    report = RunReport()
    found: list[Diagnostic] = []
    for result in results:
        report.errors.extend(result.errors)
        report.notes.extend(result.notes)
        report.verified.extend(result.verified)
        report.models += result.models
        found.extend(result.found)
    passed = gate.apply(found)
    report.diagnostics, report.suppressed = passed.kept, passed.suppressed
    return report
