"""What one ``irviz lint`` run found, its summary line and its exit code (Black's
``Report``): the CLI prints and exits, it does not decide."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import IrvizError
from .diagnostic import Diagnostic

__all__ = ["RunReport", "CLEAN", "FINDINGS", "COULD_NOT_RUN"]

CLEAN, FINDINGS, COULD_NOT_RUN = 0, 1, 2


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


@dataclass
class RunReport:
    """The gated findings of every model linted, and what could not be linted."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    #: (spec, error) for what could not be linted at all (exit code 2)
    errors: list[tuple[str, IrvizError]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: findings a ``# noqa`` comment held back
    suppressed: int = 0
    #: how many models were linted
    models: int = 0

    def summary(self) -> str:
        """``Found 5 findings (3 errors, 2 warnings) in 14 models; 1 suppressed by noqa.``"""
        found = self.diagnostics
        models = _plural(self.models, "model")
        if found:
            counts = [(s, sum(d.severity == s for d in found)) for s in ("error", "warning",
                                                                           "info")]
            text = (f"Found {_plural(len(found), 'finding')} ("
                    + ", ".join(_plural(n, s) for s, n in counts if n) + f") in {models}")
        else:
            text = f"All checks passed for {models}"
        if self.suppressed:
            text += f"; {self.suppressed} suppressed by noqa"
        return text + "."

    def exit_code(self, exit_zero: bool = False) -> int:
        """0 clean, 1 findings (0 with ``--exit-zero``), 2 something could not be linted."""
        if self.errors:
            return COULD_NOT_RUN
        return FINDINGS if self.diagnostics and not exit_zero else CLEAN
