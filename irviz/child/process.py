"""Spawn a child that can neither hang irviz nor outlive it, and stop it.

- it starts in its own session, so it leads a process group (pgid == pid) holding
  everything it starts (POSIX; elsewhere only the child itself can be stopped);
- at the deadline the whole group is stopped: SIGTERM, then SIGKILL after ``grace``
  seconds (``grace=0``: SIGKILL at once), and the child is reaped;
- after a normal exit, processes it left behind in its group are killed, so they
  cannot hold irviz's pipes open.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from typing import Any, Sequence

__all__ = ["Child", "start", "wait", "kill_group", "limits", "relay", "environment",
           "ISOLATED_ENV", "MEMORY_ENV", "TERM_GRACE", "LIMITS_ENFORCED"]

_POSIX = os.name == "posix"
#: Set in every child's environment: it runs irviz's work, it does not isolate again.
ISOLATED_ENV = "IRVIZ_ISOLATED"
#: The child's memory limit in MB, for its "ran out of memory" message (irviz.exits).
MEMORY_ENV = "IRVIZ_MEMORY_LIMIT_MB"
#: Seconds between SIGTERM and SIGKILL for a child stopped at its deadline.
TERM_GRACE = 1.0
#: Seconds to wait for a relay to drain a pipe once the child is gone.
DRAIN_WAIT = 5.0
#: ``--memory-limit`` is enforced here (RLIMIT_DATA, Linux only).
LIMITS_ENFORCED = sys.platform.startswith("linux")


def start(module: str, *args: str, stdin: Any, memory_mb: int = 0,
          cwd: str | os.PathLike | None = None, pythonpath: Sequence[str] = (),
          extra_env: dict[str, str] | None = None) -> subprocess.Popen:
    """``python -m module *args`` in a new session (its own process group), with our
    :func:`environment` and its :func:`limits`, stdout and stderr piped. Raises OSError."""
    return subprocess.Popen([sys.executable, "-m", module, *args], stdin=stdin,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                            env=environment(memory_mb, pythonpath, extra_env),
                            start_new_session=_POSIX, preexec_fn=limits(memory_mb))


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
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
        _signal_group(proc, signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    _signal_group(proc, signal.SIGKILL)
    proc.wait()


def wait(proc: subprocess.Popen, timeout: float, grace: float = 0.0) -> bool:
    """Wait for the child until ``timeout``; True when it timed out (its group is then
    stopped with ``grace``). Either way the child is reaped and its group is gone."""
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc, grace)
        return True
    _signal_group(proc, signal.SIGKILL)  # what it left running in its group
    return False


def limits(memory_mb: int):
    """The ``preexec_fn`` of the child: memory limit and death with its parent (Linux).

    The limit is ``RLIMIT_DATA`` rather than ``RLIMIT_AS``: both make a runaway
    allocation fail (torch and Python report it), but ``RLIMIT_AS`` also counts
    address space that is only reserved, so it breaks programs that reserve a lot
    up front: wasmtime (the WebAssembly Graphviz engine) reserves 4 GiB for its
    linear memory and fails under any limit below that.
    """
    if not LIMITS_ENFORCED:
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


def environment(memory_mb: int = 0, pythonpath: Sequence[str] = (),
                extra: dict[str, str] | None = None) -> dict[str, str]:
    """Our environment for a child: ``IRVIZ_ISOLATED``, its memory limit when enforced
    (else the limit it inherits, if any), ``pythonpath`` ahead of ``PYTHONPATH``, ``extra``."""
    env = dict(os.environ, **{ISOLATED_ENV: "1"}, **(extra or {}))
    if memory_mb > 0 and LIMITS_ENFORCED:
        env[MEMORY_ENV] = str(memory_mb)
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (*pythonpath, env.get("PYTHONPATH"))
                                            if p)
    return env


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


class Child:
    """``python -m MODULE *args`` running as a child, its stderr relayed as it comes.

    With ``requests`` its stdin and stdout carry JSON lines (:meth:`send`; the results
    are read from ``proc.stdout``); without, it is a command whose stdout is relayed
    too, byte for byte, and whose stdin is ``/dev/null``.
    """

    def __init__(self, module: str, *args: str, memory_mb: int = 0, requests: bool = True):
        self.proc = start(module, *args, memory_mb=memory_mb,
                          stdin=subprocess.PIPE if requests else subprocess.DEVNULL)
        pipes = [] if requests else [(self.proc.stdout, "stdout")]
        self.relays = [threading.Thread(target=relay, args=pipe, daemon=True)
                       for pipe in (*pipes, (self.proc.stderr, "stderr"))]
        for thread in self.relays:
            thread.start()

    def send(self, request: Any) -> None:
        """One request line; a child that died shows it by its exit, not by EPIPE here."""
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
        except OSError:
            pass

    def drain(self) -> None:
        """Wait (a while) for the relays to copy what the ended child wrote."""
        for thread in self.relays:
            thread.join(DRAIN_WAIT)

    def stop(self, grace: float = 0.0) -> None:
        """End of requests; the child has ``grace`` s to exit (0: killed at once)."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        if grace > 0:
            wait(self.proc, grace)
        else:
            kill_group(self.proc)
        self.drain()
        self.proc.stdout.close()
