"""Requests and results as JSON lines: :func:`serve` is the child's side, :func:`call`
one request answered within a deadline. A result line is ``{"result": ...}``, or
``{"internal": traceback}`` when irviz itself failed in the child: :func:`answer` raises
that as a RuntimeError, never reported as the user's error."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

from .ending import Ended, Exit, explain
from .process import kill_group, start, wait

__all__ = ["serve", "call", "answer", "Reply"]


def serve(role: Callable[[Iterator[Any]], Iterator[Any]]) -> int:
    """Run ``role`` (the requests it reads -> a result for each) on the JSON lines on stdin;
    each result goes out as one line on the real stdout at once, while whatever the model
    prints (Python's and C's stdout) goes to stderr. The exit code: 0, or 3 after an
    internal error."""
    results = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        for result in role(json.loads(line) for line in sys.stdin):
            results.write(json.dumps({"result": result}) + "\n")
            results.flush()
    except BaseException:  # noqa: BLE001 - irviz's own failure: raised in the parent
        import traceback

        results.write(json.dumps({"internal": traceback.format_exc()}) + "\n")
        results.flush()
        return 3
    return 0


def answer(line: bytes | str) -> Any:
    """The result on one line a child wrote; its internal error raised."""
    found = json.loads(line)
    if "internal" in found:
        raise RuntimeError(f"irviz failed in a child process:\n{found['internal']}")
    return found["result"]


@dataclass
class Reply:
    """What :func:`call` got back."""

    #: the child's result, or None when it wrote none
    result: Any
    ended: Ended
    #: everything the child wrote on stderr
    stderr: str
    #: wall time from the start to the end of the child (kill included)
    seconds: float

    def failure(self, who: str, doing: str = "", *,
                timeout_option: str = "--timeout") -> Exit | None:
        """Why there is no result (:func:`~irviz.child.ending.explain`); None if there is."""
        if self.result is not None:
            return None
        return explain(self.ended, who, doing, timeout_option=timeout_option) or Exit(
            f"{who} wrote no result{doing}", "run it again without isolation to see why")


def call(module: str, request: Any, timeout: float, *, args: Sequence[str] = (),
         cwd: str | os.PathLike | None = None, pythonpath: Sequence[str] = (),
         extra_env: dict[str, str] | None = None, memory_mb: int = 0) -> Reply:
    """``request`` answered by a ``python -m module *args`` child that :func:`serve`\\ s one
    request, within ``timeout`` seconds: at the deadline the child and whatever it
    started are killed. If the caller is interrupted (KeyboardInterrupt &c.) the group is
    killed before the exception goes on. Failing to start raises (OSError, ...)."""
    started = time.perf_counter()
    proc = start(module, *args, stdin=subprocess.PIPE, memory_mb=memory_mb, cwd=cwd,
                 pythonpath=pythonpath, extra_env=extra_env)
    timed_out = False
    try:
        try:
            out, err = proc.communicate((json.dumps(request) + "\n").encode(), timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            kill_group(proc)
            out, err = proc.communicate()
        else:
            wait(proc, 0)   # its leftovers killed
    except BaseException:
        kill_group(proc)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            stream.close()
        raise
    last = out.decode("utf-8", "replace").rpartition("\n")[0].rpartition("\n")[2]
    result = answer(last) if last.startswith("{") else None   # a whole last line
    return Reply(result, Ended(proc.returncode, timed_out, timeout, memory_mb),
                 err.decode("utf-8", "replace"), time.perf_counter() - started)
