"""``irviz lint --jobs N``: lint specs in N worker processes, a role of
:mod:`irviz.child` (:func:`~irviz.child.pool.run_pool`).

A worker (``python -m irviz.lint.parallel``) reads the run's settings
(:meth:`~irviz.lint.session.LintSession.settings`), then one ``[spec, from_folder]``
request per spec, and answers each with the spec's
:class:`~irviz.lint.spec_result.SpecResult`. The results come back in the specs' order,
so the gate and the formatters see what a serial run gives them: the output is byte for
byte the same. A spec that outlives ``--timeout``, or whose worker dies, gets that as its
error.
"""
from __future__ import annotations

import sys

from ..errors import IrvizError
from .spec_result import SpecResult

__all__ = ["run_parallel", "worker"]


def run_parallel(settings: dict, todo: list[tuple[int, str, bool]], jobs: int,
                 timeout: float, memory_mb: int) -> dict[int, SpecResult]:
    """The results of ``todo`` ((index, spec, from folder)) linted by ``jobs`` workers,
    by index."""
    from ..child.ending import Ended, explain
    from ..child.pool import run_pool

    requests = [[spec, from_folder] for _, spec, from_folder in todo]
    found = run_pool("irviz.lint.parallel", settings, requests, jobs, timeout, memory_mb)
    results = {}
    for (index, spec, _), result in zip(todo, found):
        if isinstance(result, Ended):
            ended = explain(result, "the lint worker", f" while it linted {spec}")
            results[index] = SpecResult(spec, errors=[(spec, IrvizError(ended.message,
                                                                        hint=ended.hint))])
        else:
            results[index] = SpecResult.from_dict(result)
    return results


def worker(requests):
    """The settings, then one spec after another: each one's SpecResult, as a dict. Its
    errors that are the memory limit say so (the serial run does this when it prints)."""
    from ..exits import out_of_memory
    from .session import LintSession

    settings = next(requests, None)
    if settings is None:
        return
    session = LintSession.from_settings(settings)
    for spec, from_folder in requests:
        try:
            result = session.spec(spec, from_folder)
        except Exception as exc:
            oom = out_of_memory(exc)
            if oom is None:
                raise
            result = SpecResult(spec, errors=[(spec, oom)])
        result.errors = [(spec, out_of_memory(error) or error) for spec, error in result.errors]
        yield result.to_dict()


if __name__ == "__main__":
    from ..child.protocol import serve

    sys.exit(serve(worker))
