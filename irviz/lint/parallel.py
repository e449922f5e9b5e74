"""``irviz lint --jobs N``: lint specs in N worker processes.

Each worker is a child of the kind ``--isolate`` starts (:mod:`irviz.childproc`: its own
session, killed with everything it started; :mod:`irviz.isolate`'s memory limit and
``IRVIZ_ISOLATED``), running ``python -m irviz.lint.parallel``. It reads one JSON line
with the run's settings, then one spec per line, and answers each with one JSON line:
the spec's :class:`~irviz.lint.spec_result.SpecResult`. Its stdout carries only that
protocol (whatever the model prints goes to stderr, relayed as it comes).

The parent hands the next spec to whichever worker is free and puts the results back in
the specs' order, so the gate and the formatters see what a serial run gives them:
the output is byte for byte the same. ``--timeout`` counts per spec: a spec that runs
longer, or a worker that dies (a crash in native code, the memory limit), becomes that
spec's error, and a fresh worker takes the rest.
"""
from __future__ import annotations

import json
import os
import selectors
import sys
import threading
import time
from dataclasses import dataclass, field

from ..errors import IrvizError
from .spec_result import SpecResult

__all__ = ["run_parallel", "worker_main"]


@dataclass
class _Worker:
    proc: object
    buffer: bytes = b""
    #: (index, spec) it is linting, and when it got it
    busy: tuple[int, str] | None = None
    since: float = 0.0
    relay: threading.Thread | None = None
    done: list = field(default_factory=list)


def _start(header: dict, memory_mb: int) -> _Worker:
    import subprocess

    from .. import childproc
    from ..isolate import ISOLATED_ENV, MEMORY_ENV

    env = dict(os.environ, **{ISOLATED_ENV: "1"})
    env.pop(MEMORY_ENV, None)
    setup = childproc.limits(memory_mb)
    if memory_mb > 0 and setup is not None:
        env[MEMORY_ENV] = str(memory_mb)
    proc = childproc.start([sys.executable, "-m", "irviz.lint.parallel"],
                           stdin=subprocess.PIPE, env=env, preexec_fn=setup)
    relay = threading.Thread(target=childproc.relay, args=(proc.stderr, "stderr"), daemon=True)
    relay.start()
    proc.stdin.write((json.dumps(header) + "\n").encode())
    proc.stdin.flush()
    return _Worker(proc, relay=relay)


def _stop(worker: _Worker, grace: float) -> None:
    from .. import childproc

    try:
        worker.proc.stdin.close()
    except OSError:
        pass
    if grace > 0:
        if childproc.wait(worker.proc, grace, 0.0):
            pass  # it was killed
    else:
        childproc.kill_group(worker.proc, 0.0)
    if worker.relay is not None:
        worker.relay.join(5.0)
    worker.proc.stdout.close()


def _died(spec: str, returncode: int | None, memory_mb: int, timeout: float = 0.0
          ) -> IrvizError:
    """Why the worker linting ``spec`` stopped, in :func:`irviz.childproc.explain`'s words."""
    from .. import childproc

    ended = childproc.explain(returncode if returncode is not None else 1, "the lint worker",
                              f" while it linted {spec}", timed_out=timeout > 0,
                              timeout=timeout, memory_mb=memory_mb)
    return IrvizError(ended.message, hint=ended.hint)


def run_parallel(header: dict, todo: list[tuple[int, str, bool]], jobs: int,
                 timeout: float, memory_mb: int) -> dict[int, SpecResult]:
    """The results of ``todo`` ((index, spec, from folder)) linted by ``jobs`` workers,
    by index. ``header`` is what :func:`worker_main` needs to set up its workspace."""
    from ..isolate import TERM_GRACE

    results: dict[int, SpecResult] = {}
    queue = list(todo)
    workers: list[_Worker] = []
    selector = selectors.DefaultSelector()

    def give(worker: _Worker) -> None:
        index, spec, from_folder = queue.pop(0)
        worker.busy, worker.since = (index, spec), time.monotonic()
        try:
            worker.proc.stdin.write((json.dumps([spec, from_folder]) + "\n").encode())
            worker.proc.stdin.flush()
        except OSError:
            pass  # it died: its stdout ends and the spec is reported below

    def retire(worker: _Worker, error: IrvizError | None, grace: float) -> None:
        selector.unregister(worker.proc.stdout)
        workers.remove(worker)
        _stop(worker, grace)
        if worker.busy is not None:
            index, spec = worker.busy
            error = error or _died(spec, worker.proc.returncode, memory_mb)
            results[index] = SpecResult(spec, errors=[(spec, error)])
        if queue:
            add()

    def add() -> None:
        worker = _start(header, memory_mb)
        workers.append(worker)
        selector.register(worker.proc.stdout, selectors.EVENT_READ, worker)
        give(worker)

    try:
        for _ in range(min(jobs, len(queue))):
            add()
        while workers:
            now = time.monotonic()
            wait = min(w.since + timeout - now for w in workers if w.busy) if any(
                w.busy for w in workers) else None
            for key, _ in selector.select(max(wait, 0.0) if wait is not None else None):
                worker = key.data
                chunk = os.read(worker.proc.stdout.fileno(), 1 << 16)
                if not chunk:
                    worker.proc.wait()
                    retire(worker, None, 0.0)
                    continue
                worker.buffer += chunk
                while b"\n" in worker.buffer and worker.busy is not None:
                    line, worker.buffer = worker.buffer.split(b"\n", 1)
                    answer = json.loads(line)
                    if "internal" in answer:
                        raise RuntimeError(answer["internal"])
                    index, _spec = worker.busy
                    results[index] = SpecResult.from_dict(answer["result"])
                    worker.busy = None
                    if queue:
                        give(worker)
                if worker.busy is None and worker in workers:
                    retire(worker, None, TERM_GRACE)
            now = time.monotonic()
            for worker in [w for w in workers if w.busy and now - w.since > timeout]:
                _, spec = worker.busy
                retire(worker, _died(spec, None, memory_mb, timeout), 0.0)
    finally:
        for worker in list(workers):
            selector.unregister(worker.proc.stdout)
            _stop(worker, 0.0)
        selector.close()
    return results


def worker_main() -> int:
    """A worker: settings from the first line of stdin, then one result line per spec."""
    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)          # the model's prints (Python's and C's) go to stderr
    sys.stdout = sys.stderr
    from .session import LintSession

    header = sys.stdin.readline()
    if not header:
        return 0
    session = LintSession.from_settings(json.loads(header))
    for line in sys.stdin:
        spec, from_folder = json.loads(line)
        try:
            result = session.spec(spec, from_folder)
        except BaseException as exc:  # noqa: BLE001 - the parent reports it
            import traceback

            from ..exits import out_of_memory

            oom = out_of_memory(exc) if isinstance(exc, Exception) else None
            if oom is None:
                protocol.write(json.dumps({"internal": "".join(
                    traceback.format_exception(type(exc), exc, exc.__traceback__))}) + "\n")
                protocol.flush()
                return 3
            result = SpecResult(spec, errors=[(spec, oom)])
        _convert_memory_errors(result)
        protocol.write(json.dumps({"result": result.to_dict()}) + "\n")
        protocol.flush()
    return 0


def _convert_memory_errors(result: SpecResult) -> None:
    """Errors that are the memory limit say so (the serial run does this when it prints)."""
    from ..exits import out_of_memory

    result.errors = [(spec, out_of_memory(error) or error) for spec, error in result.errors]


if __name__ == "__main__":
    sys.exit(worker_main())
