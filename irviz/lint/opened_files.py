"""The files a model reads while it is loaded and captured, for the lint cache's key.

A model's findings depend on more than its Python files: a factory that reads a JSON
config (as Hugging Face models read theirs) builds another model when the file changes,
and a cached verdict for the old one would be stale. Python's audit hooks see every
``open`` (``builtins.open``, ``os.open``, ``io.open_code``), so :func:`recording` collects
the paths opened for reading while it is active.

A module imported once serves every later spec of the process (a ``--jobs`` worker lints
many): a data file its import read is charged to the Python files on the stack when it
was opened, and :func:`read_by` gives it to every later spec that depends on them.

An audit hook cannot be removed, so one hook is installed on first use and does nothing
(one emptiness check) while no recording is active. Files of the Python installation and
of installed libraries (their versions are in the key or their executed lines are among
the dependencies), irviz's own files, bytecode and the kernel's pseudo-files are left out.
"""
from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Iterator

__all__ = ["recording", "read_by"]

#: the sets being filled (one per active :func:`recording`; nested ones all get the path)
_ACTIVE: list[set[str]] = []
_INSTALLED = False
#: Python file -> the files opened while it was on the stack, in any recording so far
_READ_BY: dict[str, set[str]] = {}
#: opened by imports, not as data
_CODE = (".py", ".pyc", ".pyo", ".so", ".pyd")
#: os.open flags that write
_WRITING = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


def _hook(event: str, args: tuple) -> None:
    if not _ACTIVE or event != "open":
        return
    path, mode, flags = (tuple(args) + (None, None, None))[:3]
    if not isinstance(path, (str, bytes)):   # a file descriptor, or a path-like object
        path = os.fspath(path) if isinstance(path, os.PathLike) else None
        if path is None:
            return
    if isinstance(mode, str) and any(c in mode for c in "wax+"):
        return
    if mode is None and isinstance(flags, int) and flags & _WRITING:
        return
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if path.endswith(_CODE):   # imports: the dependency files cover Python code
        return
    path = os.path.abspath(path)
    for found in _ACTIVE:
        found.add(path)
    frame = sys._getframe(1)
    while frame is not None:
        _READ_BY.setdefault(frame.f_code.co_filename, set()).add(path)
        frame = frame.f_back


def _ignored_roots() -> tuple[str, ...]:
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, here, "/proc", "/sys", "/dev"}
    return tuple(os.path.join(os.path.abspath(r), "") for r in roots if r)


def _kept(path: str, ignored: tuple[str, ...]) -> bool:
    """A data file of the model's: a regular file outside the Python installation,
    installed libraries and irviz."""
    from ..paths import is_installed_library_file

    if path.startswith(ignored):
        return False
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
    except OSError:
        return True   # opened and gone (or never there): its absence is part of the key
    return not is_installed_library_file(path)


@contextlib.contextmanager
def recording() -> Iterator[list[str]]:
    """Collect the files opened for reading inside the ``with``; the list given is
    filled (sorted, filtered as the module says) when the block ends."""
    global _INSTALLED
    if not _INSTALLED:
        sys.addaudithook(_hook)
        _INSTALLED = True
    found: set[str] = set()
    out: list[str] = []
    _ACTIVE.append(found)
    try:
        yield out
    finally:
        del _ACTIVE[next(i for i, s in enumerate(_ACTIVE) if s is found)]
        out.extend(_filtered(found))


def read_by(code_files) -> list[str]:
    """The data files opened while one of ``code_files`` (Python files) was running, in
    any recording of this process: what an import made earlier read."""
    return _filtered({path for file in code_files for path in _READ_BY.get(file, ())})


def _filtered(paths: set[str]) -> list[str]:
    ignored = _ignored_roots()
    return sorted(p for p in paths if _kept(p, ignored))
