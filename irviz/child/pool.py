"""Many requests answered by N long-lived children, each request by whichever is free:
each child (``python -m MODULE``) gets the ``setup`` request, then one at a time. A
request that outlives ``timeout``, or whose child dies on it (a crash in native code, the
memory limit), gets how that child ended instead of a result; a fresh child goes on."""
from __future__ import annotations

import os
import selectors
import time
from dataclasses import dataclass
from typing import Any

from .ending import Ended
from .process import TERM_GRACE, Child
from .protocol import answer

__all__ = ["run_pool"]


@dataclass
class _Worker:
    child: Child
    buffer: bytes = b""
    #: the index of the request it answers, and since when
    busy: int | None = None
    since: float = 0.0


def run_pool(module: str, setup: Any, requests: list, jobs: int, timeout: float,
             memory_mb: int) -> list:
    """Each request's result, or how its child ended (:class:`Ended`), in order."""
    answers: dict[int, Any] = {}
    queue = list(range(len(requests)))
    workers: list[_Worker] = []
    selector = selectors.DefaultSelector()

    def give(worker: _Worker) -> None:
        worker.busy, worker.since = queue.pop(0), time.monotonic()
        worker.child.send(requests[worker.busy])

    def retire(worker: _Worker, ended: Ended | None, grace: float) -> None:
        selector.unregister(worker.child.proc.stdout)
        workers.remove(worker)
        worker.child.stop(grace)
        if worker.busy is not None:
            answers[worker.busy] = ended or Ended(worker.child.proc.returncode or 1,
                                                  memory_mb=memory_mb)
        if queue:
            add()

    def add() -> None:
        worker = _Worker(Child(module, memory_mb=memory_mb))
        worker.child.send(setup)
        workers.append(worker)
        selector.register(worker.child.proc.stdout, selectors.EVENT_READ, worker)
        give(worker)

    try:
        for _ in range(min(jobs, len(queue))):
            add()
        while workers:
            busy = [w.since + timeout - time.monotonic() for w in workers if w.busy is not None]
            for key, _ in selector.select(max(min(busy), 0.0) if busy else None):
                worker = key.data
                chunk = os.read(worker.child.proc.stdout.fileno(), 1 << 16)
                if not chunk:
                    worker.child.proc.wait()
                    retire(worker, None, 0.0)
                    continue
                worker.buffer += chunk
                while b"\n" in worker.buffer and worker.busy is not None:
                    line, worker.buffer = worker.buffer.split(b"\n", 1)
                    answers[worker.busy] = answer(line)
                    worker.busy = None
                    if queue:
                        give(worker)
                if worker.busy is None and worker in workers:
                    retire(worker, None, TERM_GRACE)
            now = time.monotonic()
            for worker in [w for w in workers if w.busy is not None and now - w.since > timeout]:
                retire(worker, Ended(-9, True, timeout, memory_mb), 0.0)
    finally:
        for worker in list(workers):
            selector.unregister(worker.child.proc.stdout)
            worker.child.stop(0.0)
        selector.close()
    return [answers[i] for i in range(len(requests))]
