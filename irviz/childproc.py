"""One way to run a child process that can neither hang irviz nor outlive it.

irviz runs the user's model in child processes in three places: ``--isolate``
(:mod:`irviz.isolate`), the measurement (:mod:`irviz.measure`) and the Sphinx
directive (:mod:`irviz.sphinxext`). A model can loop forever, crash in native code
or start processes of its own, so each child gets the same treatment, written once
here:

- it starts in its own session, so it leads a process group (pgid == pid) holding
  everything it starts (POSIX; elsewhere only the child itself can be stopped);
- at the deadline the whole group is stopped: SIGTERM, then SIGKILL after ``grace``
  seconds (``grace=0``: SIGKILL at once), and the child is reaped;
- after a normal exit, processes it left behind in its group are killed, so they
  cannot hold irviz's pipes open.

:func:`run` collects stdout/stderr (``communicate``); callers that stream the output
themselves (``--isolate`` relays it live) use :func:`start` and :func:`wait`. What a
timeout or a crash *means* (the message) stays with each caller.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

__all__ = ["Finished", "start", "run", "wait", "signal_group", "kill_group",
           "kill_leftovers"]

_POSIX = os.name == "posix"


def start(argv: Sequence[str], *, stdin: Any = subprocess.DEVNULL,
          stdout: Any = subprocess.PIPE, stderr: Any = subprocess.PIPE, text: bool = False,
          env: dict | None = None, cwd: str | os.PathLike | None = None,
          preexec_fn: Callable[[], None] | None = None) -> subprocess.Popen:
    """``Popen(argv)`` in a new session (its own process group). Raises OSError &c."""
    return subprocess.Popen(list(argv), stdin=stdin, stdout=stdout, stderr=stderr, text=text,
                            env=env, cwd=cwd, start_new_session=_POSIX, preexec_fn=preexec_fn)


def signal_group(proc: subprocess.Popen, sig: int) -> None:
    """Send ``sig`` to the child's process group (POSIX); a group already gone is fine."""
    if not _POSIX:  # pragma: no cover - no process groups
        return
    try:
        os.killpg(proc.pid, sig)  # the child leads its own group: pgid == pid
    except (ProcessLookupError, PermissionError):
        pass


def kill_group(proc: subprocess.Popen, grace: float = 0.0) -> None:
    """Stop the child and everything it started (SIGTERM, ``grace`` s, SIGKILL); reap it."""
    if not _POSIX:  # pragma: no cover - Windows: no process groups here
        proc.kill()
        proc.wait()
        return
    if grace > 0:
        signal_group(proc, signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    signal_group(proc, signal.SIGKILL)
    proc.wait()


def kill_leftovers(proc: subprocess.Popen) -> None:
    """After the child exited: kill what it left running in its group (POSIX only)."""
    if _POSIX:
        signal_group(proc, signal.SIGKILL)


def wait(proc: subprocess.Popen, timeout: float, grace: float = 0.0) -> bool:
    """Wait for the child until ``timeout``; True when it timed out (its group is then
    stopped with ``grace``). Either way the child is reaped and its group is gone."""
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc, grace)
        return True
    kill_leftovers(proc)
    return False


@dataclass
class Finished:
    """What :func:`run` saw of a child."""

    #: the child's exit status (negative: the signal that ended it)
    returncode: int
    #: everything the child wrote (``None`` for a stream that was not captured)
    stdout: str | bytes | None
    stderr: str | bytes | None
    #: True when the deadline passed and the group was stopped
    timed_out: bool
    #: wall time from the start to the end of the child (kill included), seconds
    seconds: float


def run(argv: Sequence[str], timeout: float, *, input: str | bytes | None = None,
        grace: float = 0.0, stdout: Any = subprocess.PIPE, stderr: Any = subprocess.PIPE,
        text: bool = False, env: dict | None = None,
        cwd: str | os.PathLike | None = None) -> Finished:
    """Run ``argv`` to its end or to ``timeout`` seconds and collect its output.

    ``input`` goes to the child's stdin (else stdin is ``/dev/null``). At the deadline
    the group is stopped (see :func:`kill_group`) and what the child wrote so far is
    returned with ``timed_out=True``. If the caller is interrupted (KeyboardInterrupt
    &c.) the group is killed before the exception goes on. Failing to start raises
    (OSError, ...).
    """
    started = time.perf_counter()
    proc = start(argv, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                 stdout=stdout, stderr=stderr, text=text, env=env, cwd=cwd)
    timed_out = False
    try:
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            kill_group(proc, grace)
            out, err = proc.communicate()
        else:
            kill_leftovers(proc)
    except BaseException:
        if proc.poll() is None:
            kill_group(proc, 0.0)
        else:
            kill_leftovers(proc)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        raise
    return Finished(proc.returncode, out, err, timed_out, time.perf_counter() - started)
