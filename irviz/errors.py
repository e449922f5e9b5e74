"""The errors irviz reports to users.

Every error a user can cause is an :class:`IrvizError`: the CLI prints its
message (and hint) without a Python traceback and exits with code 2. Messages
say what is wrong, where (file, line, option), and what to do next.
"""
from __future__ import annotations


class IrvizError(Exception):
    """Root of every error caused by the user's input or environment."""

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None, *, detail: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        #: extra text shown below the message, e.g. the traceback of the user's own code
        self.detail = detail

    def __str__(self) -> str:  # pragma: no cover - trivial
        return self.message

    def format(self) -> str:
        """The full text shown to the user: message, detail, hint."""
        parts = [f"error: {self.message}"]
        if self.detail:
            parts.append(self.detail.rstrip())
        if self.hint:
            parts.append(f"hint: {self.hint}")
        return "\n".join(parts)


class UsageError(IrvizError):
    """Bad or conflicting command-line options."""


class ModelLoadError(IrvizError):
    """The target (file, module, attribute, archive) could not be loaded."""


class InputsError(IrvizError):
    """Example inputs are missing, fail to evaluate, or are not tensors."""


class CaptureError(IrvizError):
    """torch.jit.script or torch.jit.trace failed on the user's model.

    ``warnings`` holds what torch warned before it failed (the capture's
    ``CapturedWarning`` records): a failed trace's TracerWarnings still say what it froze."""

    warnings: list = []
    #: ``True`` when the model compiled (or traced) and it is running it on its example
    #: inputs that raised: the inputs or the model are wrong, not the capture
    raised_on_inputs: bool = False


class GraphBuildError(IrvizError):
    """The captured TorchScript graph could not be walked."""


class RenderError(IrvizError):
    """Graphviz failed or no Graphviz engine is usable."""


class OutputError(IrvizError):
    """An output file could not be written."""
