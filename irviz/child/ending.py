"""How a child ended, in the same user's words for every child irviz runs (the roles of
:mod:`irviz.child`, and Graphviz's ``dot``)."""
from __future__ import annotations

import signal
from dataclasses import dataclass

__all__ = ["Ended", "Exit", "explain", "signal_name", "CRASHES"]

#: what a fatal signal most likely means, in the user's words
CRASHES = {
    "SIGSEGV": "a segmentation fault, e.g. in a native extension",
    "SIGBUS": "a bus error, e.g. in a native extension",
    "SIGILL": "an illegal instruction, e.g. in a native extension",
    "SIGFPE": "an arithmetic fault in native code",
    "SIGABRT": "e.g. a native extension or os.abort()",
}


def signal_name(returncode: int) -> str | None:
    """The signal that ended a child: a negative ``returncode`` (the child's own), or one
    above 128 (a shell's ``128 + N``); None for an ordinary exit code."""
    number = -returncode if returncode < 0 else (returncode - 128 if returncode > 128 else None)
    if number is None:
        return None
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


@dataclass(frozen=True)
class Ended:
    """How a child ended: its exit status (negative: the signal), or stopped at its
    deadline of ``timeout`` s; ``memory_mb`` is the limit it ran under (0: none)."""

    returncode: int
    timed_out: bool = False
    timeout: float = 0.0
    memory_mb: int = 0


@dataclass(frozen=True)
class Exit:
    """How a child ended, in the user's words: one :attr:`message` and a :attr:`hint`."""

    message: str
    hint: str


def explain(ended: Ended, who: str, doing: str = "", *,
            timeout_option: str = "--timeout") -> Exit | None:
    """Why ``who`` (``"the model's process"``, ``"the lint worker"``...) stopped while it
    was ``doing`` (`` while irviz ran `render m.py` ``): a timeout, the OOM killer's
    SIGKILL, a crash by a fatal signal, or an unexpected exit code. None for exit 0."""
    if ended.timed_out:
        return Exit(f"{who} did not finish within {round(ended.timeout, 1):g} s "
                    f"({timeout_option}){doing}; it may loop forever or be too slow",
                    "make the model or its example inputs smaller, or allow more time with "
                    f"{timeout_option} SECONDS")
    if not ended.returncode:
        return None
    name = signal_name(ended.returncode)
    if name == "SIGKILL":
        return Exit(f"{who} was killed (SIGKILL){doing}; most likely the system ran out of "
                    "memory and its OOM killer stopped it",
                    "make the model or its example inputs smaller, or set --memory-limit MB "
                    "below the machine's memory so it fails with a clear message")
    if name is not None:
        oom = (f"; a failed allocation in native code ends this way too, so it may have run "
               f"out of memory (limit {ended.memory_mb} MB, --memory-limit)"
               if ended.memory_mb > 0 and name in ("SIGABRT", "SIGSEGV") else "")
        return Exit(f"{who} crashed ({name}, {CRASHES.get(name, 'a fatal signal')}){doing}",
                    "it crashed in the model's code or a library it calls; set "
                    "PYTHONFAULTHANDLER=1 to see the Python line where it crashed" + oom)
    return Exit(f"{who} exited unexpectedly (exit code {ended.returncode}){doing}",
                "run it again without isolation to see what went wrong")
