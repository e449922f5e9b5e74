"""Writing output files atomically: a reader never sees half a file."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .errors import OutputError


def check_writable_dir(directory: Path, option: str = "-o/--output") -> None:
    """Fail early (before any capture work) when output cannot be written there."""
    if not directory.exists():
        raise OutputError(f"output directory {directory} does not exist",
                          hint=f"create it first or pass another {option}")
    if not directory.is_dir():
        raise OutputError(f"{directory} is not a directory", hint=f"check {option}")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise OutputError(f"output directory {directory} is not writable",
                          hint=f"pass a writable location with {option}")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file in the same directory."""
    path = Path(path)
    check_writable_dir(path.parent if str(path.parent) else Path("."))
    if path.is_dir():
        raise OutputError(f"{path} is a directory, not a file",
                          hint="give a file name, e.g. -o model.svg")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise OutputError(f"could not write {path}: {exc.strerror or exc}",
                          hint="pass a writable location with -o/--output") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a normal file is wanted
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise OutputError(f"could not write {path}: {exc.strerror or exc}",
                          hint="pass a writable location with -o/--output") from None
