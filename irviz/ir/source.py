"""Source locations of TorchScript nodes, as ``file:line:col`` strings.

Scripted nodes carry an exact range (``File "f.py", line N`` plus a ``~~~``
marker under the columns); traced nodes carry the Python stack that recorded
them (``f.py(N): forward``, innermost first) and no column. Columns are
reported 1-based, like editors, ruff and flake8; traced nodes get column 1.
"""
from __future__ import annotations

import linecache
import os
import re

import torch

_TORCH_DIR = os.path.dirname(torch.__file__)
_SCRIPTED = re.compile(r'^\s*File "([^"]+)", line (\d+)')
_TRACED = re.compile(r"^(.+)\((\d+)\): ")


def is_library_file(path: str) -> bool:
    """True for files of torch itself (where inlined library ops come from)."""
    return path.startswith(_TORCH_DIR)


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
    lines = text.splitlines()
    first = _SCRIPTED.match(lines[0])
    if first:
        path, line = first.group(1), int(first.group(2))
        col = 1
        for marker in lines[1:]:
            if "~" in marker and "<--- HERE" in marker or marker.strip().startswith("~"):
                col = marker.index("~") + 1
                break
        loc = f"{path}:{line}:{col}"
        return loc, (None if is_library_file(path) else loc)
    frames = []
    for entry in lines:
        m = _TRACED.match(entry)
        if m:
            frames.append((m.group(1), int(m.group(2))))
    if not frames:
        return None, None
    source = f"{frames[0][0]}:{frames[0][1]}:1"
    user = next((f"{p}:{n}:1" for p, n in frames if not is_library_file(p)), None)
    return source, user


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
