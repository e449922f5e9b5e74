"""Source locations of TorchScript nodes, as ``file:line:col`` strings.

Scripted nodes carry an exact range (``File "f.py", line N`` plus a ``~~~``
marker under the columns); traced nodes carry the Python stack that recorded
them (``f.py(N): forward``, innermost first) and no column. Columns are
reported 1-based, like editors, ruff and flake8; traced nodes get column 1.
"""
from __future__ import annotations

import functools
import linecache
import os
import re

import torch

from ..paths import is_torch_file

#: the header of a scripted node's range; the path may hold quotes and newlines, so it
#: ends at the first ``", line N`` that ends a line
_SCRIPTED = re.compile(r'\s*File "(.+?)", line (\d+)(?:\n|\Z)', re.S)
_TRACED = re.compile(r"^(.+)\((\d+)\): ")


def is_library_file(path: str) -> bool:
    """True for files of torch itself (where inlined library ops come from)."""
    return is_torch_file(path)


def node_locations(node: torch._C.Node) -> tuple[str | None, str | None]:
    """``(source, user_source)`` of a node.

    ``source`` is the innermost location (may be inside torch for inlined
    library code); ``user_source`` is the innermost location outside torch's
    own files, which is what a user wants to jump to.
    """
    try:
        text = node.sourceRange()
    except RuntimeError:
        return None, None
    if not text:
        return None, None
    return _locations(text)


@functools.lru_cache(maxsize=8192)
def _locations(text: str) -> tuple[str | None, str | None]:
    """Parsed once per distinct range: repeated layers share their traced stacks."""
    first = _SCRIPTED.match(text)
    if first:
        path, line = first.group(1), int(first.group(2))
        col = 1
        for marker in text[first.end():].splitlines():
            if "~" in marker and "<--- HERE" in marker or marker.strip().startswith("~"):
                col = marker.index("~") + 1
                break
        loc = f"{path}:{line}:{col}"
        return loc, (None if is_library_file(path) else loc)
    source = None
    for path, line in _traced_frames(text):  # innermost first; stop at the first outside torch
        location = f"{path}:{line}:1"
        if source is None:
            source = location
        if not is_library_file(path):
            return source, location
    return source, None


def _traced_frames(text: str):
    """``(path, line)`` of each ``path(N): function`` frame of a traced node's stack.

    A file name may hold newlines: the lines before a frame that are no frame
    themselves belong to its path when the file of the joined name exists.
    """
    pending: list[str] = []
    for entry in text.split("\n"):
        m = _TRACED.match(entry)
        if not m:
            pending.append(entry)
            continue
        path = m.group(1)
        if pending:
            joined = "\n".join(pending + [path])
            if os.path.isfile(joined):
                path = joined
            pending = []
        yield path, int(m.group(2))


def traced_stack(text: str) -> list[tuple[str, int]]:
    """``(path, line)`` of each frame of a traced node's source range, innermost first
    (``[]`` for a scripted node's range)."""
    return [] if _SCRIPTED.match(text) else list(_traced_frames(text))


def split_location(location: str) -> tuple[str, int, int]:
    """``"f.py:12:5"`` -> ``("f.py", 12, 5)``."""
    path, line, col = location.rsplit(":", 2)
    return path, int(line), int(col)


def source_line(location: str | None) -> str | None:
    """The stripped text of the source line a location points at."""
    if not location:
        return None
    path, line, _ = split_location(location)
    text = linecache.getline(path, line).strip()
    return text or None


def short_location(location: str | None, root: str | None = None) -> str | None:
    """``file.py:12:5`` with the path relative to ``root`` (or just the file name).

    The column is left out when it is 1 (traced nodes have no column).
    """
    if not location:
        return None
    path, line, col = split_location(location)
    if root:
        try:
            rel = os.path.relpath(path, root)
            if not rel.startswith(".."):
                path = rel
            else:
                path = os.path.basename(path)
        except ValueError:
            path = os.path.basename(path)
    else:
        path = os.path.basename(path)
    return f"{path}:{line}" + (f":{col}" if col > 1 else "")
