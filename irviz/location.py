"""Where a node, a frame or an error points in the user's source, parsed in one place and
written as ``file:line:col`` (the graph's attributes keep the string; :class:`Location` is
it parsed). A scripted node carries an exact range (``File "f.py", line N`` and ``~~~``
under the columns); a traced node the Python stack that recorded it (``f.py(N): forward``,
innermost first), no column. Columns are 1-based, like editors, ruff and flake8; traced
nodes get column 1. An archive's node torch names by its serialized code only is looked up
in the archive's debug info (:class:`ArchiveDebugInfo`)."""
from __future__ import annotations

import bisect
import functools
import io
import linecache
import os
import pickle
import re
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from .paths import is_torch_file

if TYPE_CHECKING:  # pragma: no cover
    import torch

#: the header of a scripted node's range; the path may hold quotes and newlines, so it
#: ends at the first ``", line N`` that ends a line
_SCRIPTED = re.compile(r'\s*File "(.+?)", line (\d+)(?:\n|\Z)', re.S)
_TRACED = re.compile(r"^(.+)\((\d+)\): ")


def node_locations(node: torch._C.Node, debug: ArchiveDebugInfo | None = None
                   ) -> tuple[str | None, str | None]:
    """``(source, user_source)`` of a node.

    ``source`` is the innermost location (may be inside torch for inlined
    library code); ``user_source`` is the innermost location outside torch's
    own files, which is what a user wants to jump to. With an archive's ``debug`` info,
    a node torch names by its serialized code only (a function call) gets its original
    line (see :class:`ArchiveDebugInfo`).
    """
    try:
        text = node.sourceRange()
    except RuntimeError:
        return None, None
    if not text:
        return None, None
    found = _locations(text)
    if found[0] is not None or debug is None or not text.startswith("Serialized"):
        return found
    original = debug.original(text)
    if original is None:
        return found
    return original, (None if is_torch_file(Location.parse(original).path) else original)


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
        return loc, (None if is_torch_file(path) else loc)
    source = None
    for path, line in _traced_frames(text):  # innermost first; stop at the first outside torch
        location = f"{path}:{line}:1"
        if source is None:
            source = location
        if not is_torch_file(path):
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


#: a Python frame as tracebacks, FX/export stack traces and torch's error messages write it
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def stack_frames(text: str) -> list[tuple[str, int]]:
    """``(path, line)`` of every ``File "x.py", line N`` in ``text``, in order (a
    traceback, an FX node's ``stack_trace``, torch's error message)."""
    return [(m.group(1), int(m.group(2))) for m in _FRAME.finditer(text)]


def traced_stack(text: str) -> list[tuple[str, int]]:
    """``(path, line)`` of each frame of a traced node's source range, innermost first
    (``[]`` for a scripted node's range)."""
    return [] if _SCRIPTED.match(text) else list(_traced_frames(text))


class Location(NamedTuple):
    """A place in a source file: ``path``, 1-based ``line`` and ``col``. A tuple, so a
    finding's ``where`` and a sort key are the location itself."""

    path: str
    line: int
    col: int = 1

    @classmethod
    def parse(cls, text: str) -> Location:
        """``"f.py:12:5"`` -> ``Location("f.py", 12, 5)`` (the path may hold colons)."""
        path, line, col = text.rsplit(":", 2)
        return cls(path, int(line), int(col))


def source_line(location: str | None) -> str | None:
    """The stripped text of the source line a location points at."""
    if not location:
        return None
    path, line, _ = Location.parse(location)
    text = linecache.getline(path, line).strip()
    return text or None


def short_location(location: str | None, root: str | None = None) -> str | None:
    """``file.py:12:5`` with the path relative to ``root`` (or just the file name).

    The column is left out when it is 1 (traced nodes have no column).
    """
    if not location:
        return None
    path, line, col = Location.parse(location)
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


# -- an archive's debug info ------------------------------------------------------------
# A loaded archive's node has its original range (found in ``code/__torch__/X.py.debug_pkl``
# at the first byte of its serialized range) and its serialized one (``Serialized File
# "code/__torch__/X.py", line 14``). For a call that first byte is the callee's name, which
# has no range, so ``F.relu(...)`` reads as sourceless; the debug info maps the next byte,
# its ``(``, to the user's line: the first range the serialized span holds is taken. The
# pickle (a file the user handed over) is read resolving no global but torch's list markers.
_SERIALIZED = re.compile(r'Serialized\s+File "(.+?)", line (\d+)\n')


def serialized_location(range_text: str) -> str | None:
    """``code/__torch__/rnn_loop.py:52``: where a loaded archive's node is in the archive's
    serialized code. torch.profiler names that frame (not the original line) for the ops an
    archive runs, so ``render --profile`` matches an archive's events by it."""
    m = _SERIALIZED.search(range_text)
    return f"{m.group(1)}:{m.group(2)}" if m else None


def _same(data, *_):
    return data


#: the only globals torch's pickler writes into debug info: typed-list markers that
#: return their data (``torch.jit._pickle.build_intlist``)
_LIST_MARKERS = ("build_intlist", "build_doublelist", "build_boollist", "restore_type_tag")


class _PlainData(pickle.Unpickler):
    def find_class(self, module, name):  # noqa: D102 - plain data only
        if module == "torch.jit._pickle" and name in _LIST_MARKERS:
            return _same
        raise pickle.UnpicklingError(f"debug info names a global ({module}.{name})")


class _CodeFile:
    """One serialized code file: its bytes and its debug ranges, by byte offset (torch
    counts bytes, in the serialized code and in the original text alike)."""

    def __init__(self, code: bytes, entries: list[tuple[int, tuple | None]]):
        self.code = code
        self.line_starts = [0] + [m.end() for m in re.finditer(b"\n", code)]
        entries.sort(key=lambda e: e[0])
        self.offsets = [e[0] for e in entries]
        self.ranges = [e[1] for e in entries]

    def original(self, line: int, col: int, width: int) -> str | None:
        """The first original location the serialized span at ``line``, 0-based ``col``,
        ``width`` bytes long (cut at the line's end), holds."""
        if not 1 <= line <= len(self.line_starts):
            return None
        start = self.line_starts[line - 1] + col
        end = self.code.find(b"\n", start)
        end = min(len(self.code) if end < 0 else end, start + max(width, 1))
        first = max(bisect.bisect_right(self.offsets, start) - 1, 0)
        for i in range(first, len(self.offsets)):
            if i > first and self.offsets[i] > end:
                break
            if self.ranges[i] is not None:
                return _location(*self.ranges[i])
        return None


def _location(path: str, first_line: int, text: str, start: int) -> str:
    before = text.encode("utf-8")[:start].decode("utf-8", "ignore")
    line = first_line + before.count("\n")
    col = len(before) - (before.rfind("\n") + 1) + 1
    return f"{path}:{line}:{col}"


def _decode(data: object) -> list[tuple[int, tuple | None]]:
    """``[(offset, (path, first line, text, start) | None)]`` from either layout torch
    writes: ``("FORMAT_WITH_STRING_TABLE", strings, entries)`` (torch >= 1.13), or the
    entries alone with the text inline."""
    strings: tuple = ()
    entries = data
    if isinstance(data, tuple) and len(data) == 3 and data[0] == "FORMAT_WITH_STRING_TABLE":
        _, strings, entries = data
    out = []
    for entry in entries:
        offset, ((text, path, first_line), start, _end) = entry[0], entry[1]
        if strings:
            text = "".join(strings[k] for k in text)
            path = strings[path]
        found = (path, int(first_line), text, int(start)) if text and path else None
        out.append((int(offset), found))
    return out


class ArchiveDebugInfo:
    """The debug info of one archive file, read lazily, one code file at a time."""

    def __init__(self, archive: Path):
        self.archive = archive
        self._files: dict[str, _CodeFile | None] = {}

    def original(self, range_text: str) -> str | None:
        """``file:line:col`` of the original code behind a node's range text as
        ``sourceRange()`` gives it (``Serialized File "code/...", line N``, the code, and
        ``~`` under the node's columns), or None."""
        m = _SERIALIZED.search(range_text)
        if not m:
            return None
        marker = next((ln for ln in range_text[m.end():].splitlines()
                       if ln.strip().startswith("~")), None)
        if marker is None:
            return None
        col = marker.index("~")
        code = self._code_file(m.group(1))
        return code.original(int(m.group(2)), col, marker.count("~")) if code else None

    def _code_file(self, name: str) -> _CodeFile | None:
        if name not in self._files:
            try:
                self._files[name] = self._read(name)
            except Exception:  # noqa: BLE001 - no or unreadable debug info: no line
                self._files[name] = None
        return self._files[name]

    def _read(self, name: str) -> _CodeFile | None:
        with zipfile.ZipFile(self.archive) as zf:
            names = zf.namelist()
            code = next((n for n in names if n == name or n.endswith("/" + name)), None)
            if code is None or code + ".debug_pkl" not in names:
                return None
            text = zf.read(code)
            raw = zf.read(code + ".debug_pkl")
        return _CodeFile(text, _decode(_PlainData(io.BytesIO(raw)).load()))
