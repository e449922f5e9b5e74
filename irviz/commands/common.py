"""What every command does around its own work: status on stderr (stdout may carry
SVG/DOT/JSON), the torch check, the model's prints kept off stdout."""
from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from typing import Iterator


@dataclass(frozen=True)
class Console:
    """Status lines on stderr; ``quiet`` keeps only errors (and, for lint, findings)."""

    quiet: bool = False

    def say(self, text: str) -> None:
        if not self.quiet:
            print(text, file=sys.stderr, flush=True)

    @staticmethod
    def always(text: str) -> None:
        print(text, file=sys.stderr, flush=True)


def start() -> None:
    """Check torch first: an unsupported or TorchScript-less torch is one clear error."""
    from ..compat import check_torch

    check_torch()


@contextlib.contextmanager
def model_output_to_stderr() -> Iterator[None]:
    """The user's model may print while it runs: keep that out of stdout's DOT/JSON."""
    with contextlib.redirect_stdout(sys.stderr):
        yield
