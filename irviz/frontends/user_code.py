"""The user's code, kept apart from irviz's and torch's: tracebacks that show only the
user's frames, and torch's TorchScript deprecation chatter and printed output kept off
the user's terminal."""
from __future__ import annotations

import contextlib
import importlib
import io
import logging
import os
import sys
import tempfile
import traceback
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from irviz.paths import IRVIZ_DIR, is_inside

__all__ = ["USER_TRACEBACK_HEADER", "quiet_torch_warnings", "quiet_output", "user_traceback"]

USER_TRACEBACK_HEADER = "Traceback from your code (most recent call last):"

_IMPORTLIB_DIR = str(Path(importlib.__file__).resolve().parent)

@contextmanager
def quiet_torch_warnings() -> Iterator[None]:
    """Silence torch's deprecation warnings about TorchScript (jit.script/trace/load)."""
    with warnings.catch_warnings():
        for category in (DeprecationWarning, FutureWarning):
            warnings.filterwarnings("ignore", category=category, module=r"torch(\.|$)")
            warnings.filterwarnings("ignore", category=category,
                                    message=r".*(torch\.jit|TorchScript)")
        yield


def _is_internal_frame(filename: str) -> bool:
    if filename.startswith("<frozen importlib") or filename.startswith("<frozen zipimport"):
        return True
    try:
        real = str(Path(filename).resolve())
    except (OSError, ValueError):
        return False
    return is_inside(real, os.path.realpath(IRVIZ_DIR)) or real.startswith(_IMPORTLIB_DIR + os.sep)


def user_traceback(exc: BaseException) -> str:
    """The traceback of ``exc`` without irviz/importlib frames, marked as the user's."""
    te = traceback.TracebackException(type(exc), exc, exc.__traceback__)
    for part in _chain(te):
        part.stack = traceback.StackSummary.from_list(
            [f for f in part.stack if not _is_internal_frame(f.filename)])
    lines = []
    for chunk in te.format():
        if chunk.strip() == "Traceback (most recent call last):":
            chunk = USER_TRACEBACK_HEADER + "\n"
        lines.append(chunk)
    text = "".join(lines).rstrip()
    if USER_TRACEBACK_HEADER not in text:  # no frames left: still say where it came from
        text = USER_TRACEBACK_HEADER + "\n" + text
    return text


def _chain(te: traceback.TracebackException) -> Iterator[traceback.TracebackException]:
    seen = set()
    while te is not None and id(te) not in seen:
        seen.add(id(te))
        yield te
        te = te.__cause__ or (None if te.__suppress_context__ else te.__context__)


@contextlib.contextmanager
def quiet_output() -> Iterator[io.StringIO]:
    """Keep everything written to stdout/stderr inside the block (Python's streams, the
    file descriptors C++ and logging handlers write to, torch's log records) in the
    yielded buffer; nothing reaches the user's terminal."""
    kept = io.StringIO()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    saved: list[tuple[int, int]] = []
    tmp = tempfile.TemporaryFile(mode="w+b")
    for fd in (1, 2):
        try:
            saved.append((fd, os.dup(fd)))
            os.dup2(tmp.fileno(), fd)
        except OSError:  # no such descriptor (embedded interpreters)
            pass
    previous_disable = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        with contextlib.redirect_stdout(kept), contextlib.redirect_stderr(kept):
            yield kept
    finally:
        logging.disable(previous_disable)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        for fd, copy in saved:
            os.dup2(copy, fd)
            os.close(copy)
        tmp.seek(0)
        kept.write(tmp.read().decode("utf-8", "replace"))
        tmp.close()
