"""One way to run a child process that can neither hang irviz nor outlive it.

irviz runs the user's model in child processes in four places: ``--isolate``
(:mod:`irviz.isolate`), ``lint --jobs`` workers (:mod:`irviz.lint.parallel`), the
measurement (:mod:`irviz.measure`) and the Sphinx directive (:mod:`irviz.sphinxext`);
Graphviz's ``dot`` is one too (:mod:`irviz.render.engines`). A model can loop forever, crash in native code
or start processes of its own, so each child gets the same treatment, written once
here:

- it starts in its own session, so it leads a process group (pgid == pid) holding
  everything it starts (POSIX; elsewhere only the child itself can be stopped);
- at the deadline the whole group is stopped: SIGTERM, then SIGKILL after ``grace``
  seconds (``grace=0``: SIGKILL at once), and the child is reaped;
- after a normal exit, processes it left behind in its group are killed, so they
  cannot hold irviz's pipes open.

:func:`run` collects stdout/stderr (``communicate``); callers that stream the output
themselves (``--isolate`` relays it live, :func:`relay`) use :func:`start` and
:func:`wait`; :func:`limits` is the child's memory limit. :func:`explain` says how a child
ended (a timeout, the OOM killer, a crash, an exit code) in the same words for every
caller.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

__all__ = ["Finished", "start", "run", "wait", "signal_group", "kill_group",
           "kill_leftovers", "limits", "relay", "Exit", "explain", "signal_name", "CRASHES"]

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


# -- spawn with limits, relay its output -----------------------------------------------
def limits(memory_mb: int):
    """The ``preexec_fn`` of the child: memory limit and death with its parent (Linux).

    The limit is ``RLIMIT_DATA`` rather than ``RLIMIT_AS``: both make a runaway
    allocation fail (torch and Python report it), but ``RLIMIT_AS`` also counts
    address space that is only reserved, so it breaks programs that reserve a lot
    up front: wasmtime (the WebAssembly Graphviz engine) reserves 4 GiB for its
    linear memory and fails under any limit below that.
    """
    if not sys.platform.startswith("linux"):
        return None
    import resource

    limit = None
    if memory_mb > 0:
        limit = memory_mb * 2**20
        _soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
        if hard != resource.RLIM_INFINITY and hard < limit:
            limit = hard  # already tighter; setrlimit cannot raise a hard limit
    prctl = None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl  # loaded here: no dlopen after fork
    except (OSError, AttributeError):
        pass

    def setup() -> None:
        if prctl is not None:
            prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: die if irviz is killed
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))

    return setup


def relay(pipe, stream_name: str) -> None:
    """Copy the child's pipe to our ``sys.stdout``/``sys.stderr`` as bytes arrive."""
    dead = False
    try:
        while True:
            chunk = os.read(pipe.fileno(), 65536)
            if not chunk:
                return
            if dead:
                continue
            stream = getattr(sys, stream_name)
            try:
                binary = getattr(stream, "buffer", None)
                if binary is not None:
                    binary.write(chunk)
                    binary.flush()
                else:
                    stream.write(chunk.decode("utf-8", "replace"))
                    stream.flush()
            except (BrokenPipeError, ValueError, OSError):
                if stream_name == "stdout":  # our reader left: let the child see EPIPE too
                    return
                dead = True  # stderr gone: keep draining so the child never blocks
    finally:
        pipe.close()


# -- one wording for how a child ended ------------------------------------------------
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
class Exit:
    """How a child ended, in the user's words: one :attr:`message` and a :attr:`hint`."""

    message: str
    hint: str


def explain(returncode: int | None, who: str, doing: str = "", *, timed_out: bool = False,
            timeout: float = 0.0, timeout_option: str = "--timeout",
            memory_mb: int = 0) -> Exit | None:
    """Why ``who`` (``"the model's process"``, ``"the lint worker"``...) stopped while it
    was ``doing`` (`` while irviz ran `render m.py` ``): a timeout, the OOM killer's
    SIGKILL, a crash by a fatal signal, or an unexpected exit code. None for exit 0.
    Every child irviz runs says it in these words."""
    if timed_out:
        return Exit(f"{who} did not finish within {timeout:g} s ({timeout_option}){doing}; "
                    "it may loop forever or be too slow",
                    "make the model or its example inputs smaller, or allow more time with "
                    f"{timeout_option} SECONDS")
    if not returncode:
        return None
    name = signal_name(returncode)
    if name == "SIGKILL":
        return Exit(f"{who} was killed (SIGKILL){doing}; most likely the system ran out of "
                    "memory and its OOM killer stopped it",
                    "make the model or its example inputs smaller, or set --memory-limit MB "
                    "below the machine's memory so it fails with a clear message")
    if name is not None:
        oom = (f"; a failed allocation in native code ends this way too, so it may have run "
               f"out of memory (limit {memory_mb} MB, --memory-limit)"
               if memory_mb > 0 and name in ("SIGABRT", "SIGSEGV") else "")
        return Exit(f"{who} crashed ({name}, {CRASHES.get(name, 'a fatal signal')}){doing}",
                    "it crashed in the model's code or a library it calls; set "
                    "PYTHONFAULTHANDLER=1 to see the Python line where it crashed" + oom)
    return Exit(f"{who} exited unexpectedly (exit code {returncode}){doing}",
                "run it again without isolation to see what went wrong")
