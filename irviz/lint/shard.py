"""``--shard K/N``: the K-th of N deterministic parts of a lint's targets, so N CI jobs
(a matrix) each lint one part and their findings add up to the whole run.

The expanded specs (a folder's files one by one) are ordered by their path relative to
the project root, with ``/`` separators, and dealt round-robin: the same checkout gives
the same parts on every machine, wherever it is checked out and whatever the working
directory. Each part keeps the specs in the run's own order.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from ..errors import UsageError

__all__ = ["parse_shard", "select_shard"]

_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def parse_shard(value: str | None) -> tuple[int, int] | None:
    """``"2/4"`` -> ``(2, 4)``; a UsageError naming ``--shard`` for anything else."""
    if value is None:
        return None
    match = _SHARD.match(value)
    if match is None:
        raise UsageError(f"--shard {value!r} is not K/N",
                         hint="give the part and the number of parts, e.g. --shard 1/4")
    k, n = int(match.group(1)), int(match.group(2))
    if n < 1 or not 1 <= k <= n:
        raise UsageError(f"--shard {value}: K must be between 1 and N (N >= 1)",
                         hint=f"the parts of {max(n, 1)} are 1/{max(n, 1)} to "
                              f"{max(n, 1)}/{max(n, 1)}")
    return k, n


def _stable_key(spec: str, root: Path) -> str:
    """The spec with its path part relative to ``root`` (``/`` separators)."""
    from .targets import spec_location

    location = spec_location(spec)
    attr = spec[len(location) + 1:] if len(spec) > len(location) else None
    if os.path.exists(location):
        try:
            location = Path(os.path.abspath(location)).relative_to(root.resolve()).as_posix()
        except ValueError:
            location = Path(location).as_posix()
    return location if attr is None else f"{location}:{attr}"


def select_shard(specs: list[tuple[str, bool]], shard: tuple[int, int] | None,
                 root: Path) -> list[tuple[str, bool]]:
    """The specs of part ``shard`` = (K, N), in their given order."""
    if shard is None:
        return specs
    k, n = shard
    order = sorted(range(len(specs)), key=lambda i: (_stable_key(specs[i][0], root), i))
    mine = {index for position, index in enumerate(order) if position % n == k - 1}
    return [spec for i, spec in enumerate(specs) if i in mine]
