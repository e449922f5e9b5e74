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


def _shown(spec: str) -> str:
    """A target as the user reads it: a file relative to the working directory."""
    from ..paths import display_path

    path, colon, name = spec.partition(".py:")
    return display_path(path + ".py") + colon[3:] + name if colon else display_path(spec)


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
    #: ``spec: what the variant inputs showed`` per model verified (``-v`` prints them)
    verified: list[str] = field(default_factory=list)

    def summary(self, info_shown: bool = True) -> str:
        """``Found 2 findings (1 error, 1 warning) in 14 models; 12 info not shown
        (--show-info); 1 suppressed by noqa.`` Info findings are counted apart: they
        never fail a run."""
        proven = [d for d in self.diagnostics if d.severity != "info"]
        info = len(self.diagnostics) - len(proven)
        models = _plural(self.models, "model")
        if proven:
            counts = [(s, sum(d.severity == s for d in proven)) for s in ("error", "warning")]
            text = (f"Found {_plural(len(proven), 'finding')} ("
                    + ", ".join(_plural(n, s) for s, n in counts if n) + f") in {models}")
        elif self.errors:  # nothing passed that was not checked
            text = f"No findings in {models}"
        else:
            text = f"All checks passed for {models}"
        if self.errors:
            failed = [spec for spec, _ in self.errors]
            text += (f"; {_plural(len(failed), 'target')} could not be linted (errors "
                     f"above): {', '.join(_shown(spec) for spec in failed)}")
        if info:
            text += f"; {info} info" + ("" if info_shown else " not shown (--show-info)")
        if self.suppressed:
            text += f"; {self.suppressed} suppressed by noqa"
        return text + "."

    def exit_code(self, exit_zero: bool = False) -> int:
        """0 clean (info findings never count), 1 errors or warnings (0 with
        ``--exit-zero``), 2 something could not be linted."""
        if self.errors:
            return COULD_NOT_RUN
        proven = any(d.severity != "info" for d in self.diagnostics)
        return FINDINGS if proven and not exit_zero else CLEAN
