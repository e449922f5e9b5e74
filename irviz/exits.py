"""How a run ends: an error shown as one message (never a traceback for a user's
mistake) and the exit code that goes with it.

0 success, 1 lint findings (see :class:`irviz.lint.run_report.RunReport`), 2 a user
error (bad target, inputs, options, unwritable output, no Graphviz engine), 3 an
internal irviz error (its traceback with ``--debug``).
"""
from __future__ import annotations

import errno
import os
import sys
import traceback

from .errors import IrvizError

__all__ = ["INTERNAL_ERROR", "fail", "out_of_memory"]

INTERNAL_ERROR = 3


def _err(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


#: How a failed allocation reads when it comes wrapped in another error (torch's CPU
#: allocator raises RuntimeError; the capture turns it into a CaptureError).
_OOM_TEXT = ("can't allocate memory", "Cannot allocate memory", "std::bad_alloc",
             "out of memory")


def out_of_memory(exc: BaseException) -> IrvizError | None:
    """An allocation failure as one clear error, or None.

    In the child of ``--isolate`` (which sets ``IRVIZ_MEMORY_LIMIT_MB``) a failed
    allocation anywhere in ``exc``'s chain means the memory limit was hit. Elsewhere only
    a bare ``MemoryError`` (otherwise an "internal error") is turned into one; an
    IrvizError that already quotes torch's allocator message stays as it is.
    """
    limit = os.environ.get("IRVIZ_MEMORY_LIMIT_MB")  # set for a child by irviz.child.process
    if not limit and (isinstance(exc, IrvizError) or not isinstance(exc, MemoryError)):
        return None
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if (isinstance(e, MemoryError) or (isinstance(e, OSError) and e.errno == errno.ENOMEM)
                or any(text in str(e) for text in _OOM_TEXT)):
            break
        todo += [e.__cause__, e.__context__]
    else:
        return None
    what = exc.message if isinstance(exc, IrvizError) else (
        f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
    if isinstance(exc, IrvizError) and exc.detail:
        what += "\n" + exc.detail
    if limit:
        return IrvizError(f"ran out of memory (limit {limit} MB, --memory-limit)", detail=what,
                          hint="the model needs more memory than that: give it smaller "
                               "example inputs, or raise --memory-limit (0 = no limit)")
    return IrvizError("ran out of memory", detail=what,
                      hint="give the model smaller example inputs; `--isolate --memory-limit "
                           "MB` stops a runaway model early with this message")


def fail(exc: BaseException, debug: bool) -> int:
    """Print ``exc`` the way a user should see it; return the exit code."""
    exc = out_of_memory(exc) or exc
    if isinstance(exc, IrvizError):
        _err(exc.format())
        if debug:
            traceback.print_exception(exc, file=sys.stderr)
        return exc.exit_code
    _err(f"internal error: {type(exc).__name__}: {exc}")
    if debug:
        traceback.print_exception(exc, file=sys.stderr)
    else:
        _err("this is a bug in irviz; run again with --debug for the traceback and report it")
    return INTERNAL_ERROR
