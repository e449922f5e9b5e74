"""One ``irviz lint`` run over many specs: expand, take the ``--shard``, read the cache,
lint what is left (here or in ``--jobs`` workers), store it, merge in order, gate.

Whatever path a spec's result takes (linted here, by a worker, or read from the cache),
the results meet in the specs' order before the gate, so output and exit code are those
of a serial run without cache.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from .gate import Gate
from .run_report import RunReport
from .spec_result import SpecResult, merge
from .targets import expand_specs

__all__ = ["BatchOptions", "lint_batch", "cpu_count"]


def cpu_count() -> int:
    """The CPUs this process may run on (``--jobs 0``/``auto``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class BatchOptions:
    """How the run is spread and remembered (none of it changes findings)."""

    jobs: int = 1
    #: use ``.irviz_cache`` (``--no-cache``: False)
    cache: bool = True
    #: ``(K, N)`` of ``--shard K/N``, or None
    shard: tuple[int, int] | None = None
    #: per spec in a worker (``--timeout``), and the worker's memory limit in MB
    timeout: float = 300.0
    memory_mb: int = 4096
    #: ``--force-exclude``: files given one by one are treated as found in a folder
    force_exclude: bool = False


def _as_found_in_a_folder(expanded: list[tuple[str, bool]], config, root
                          ) -> list[tuple[str, bool]]:
    """``--force-exclude`` (what a pre-commit hook passes: every staged ``.py`` file):
    ``exclude`` applies to a file given by name too (its path relative to the project
    root, or its name), and a file that defines no models is a note, not an error."""
    import fnmatch
    from pathlib import Path

    out = []
    for spec, from_folder in expanded:
        path = Path(spec)
        if not from_folder and spec.endswith(".py") and path.is_file():
            try:
                rel = path.resolve().relative_to(root.resolve()).as_posix()
            except ValueError:
                rel = path.as_posix()
            if any(fnmatch.fnmatch(rel, g) or fnmatch.fnmatch(path.name, g)
                   for g in config.exclude):
                continue
            from_folder = True
        out.append((spec, from_folder))
    return out


def lint_batch(config, settings: dict, specs: list[str], gate: Gate, batch: BatchOptions,
               prepare) -> tuple[RunReport, dict]:
    """The run's report, and what it did: ``{"linted": n, "cached": n, "cache": LintCache
    or None}``. ``prepare()`` gives the :class:`~irviz.lint.session.LintSession`; it is only
    called when some spec is not in the cache, so a run answered from the cache imports
    neither torch nor a model."""
    from .cache import LintCache, project_root
    from .shard import select_shard

    root = project_root(config)
    expanded = expand_specs(specs, config)
    if batch.force_exclude:
        expanded = _as_found_in_a_folder(expanded, config, root)
    expanded = select_shard(expanded, batch.shard, root)
    cache = None
    if batch.cache and (settings["inputs"] is None or isinstance(settings["inputs"], str)):
        cache = LintCache(root, settings)
    results: dict[int, SpecResult] = {}
    todo = []
    for index, (spec, from_folder) in enumerate(expanded):
        found = cache.get(spec) if cache is not None else None
        if found is not None:
            results[index] = found
        else:
            todo.append((index, spec, from_folder))
    if todo:
        session = prepare()
        if batch.jobs > 1 and len(todo) > 1:
            from .parallel import run_parallel

            results.update(run_parallel(session.settings(), todo, batch.jobs,
                                        batch.timeout, batch.memory_mb))
        else:
            for index, spec, from_folder in todo:
                results[index] = session.spec(spec, from_folder)
    if cache is not None:
        for index, _spec, _ in todo:
            cache.put(results[index])
    ordered = [results[i] for i in range(len(expanded))]
    return merge(ordered, gate), {"linted": len(todo), "cached": len(expanded) - len(todo),
                                  "cache": cache}
