"""The specs one ``irviz lint`` names, folders expanded to their ``.py`` files.

Kept apart from the runner (and free of torch) so a run whose results all come from the
cache never imports torch."""
from __future__ import annotations

import fnmatch
import os
import re
from pathlib import Path

from ..config import Config

__all__ = ["expand_specs", "spec_location"]


def expand_specs(specs: list, config: Config | None) -> list[tuple[object, bool]]:
    """Specs with folders expanded to their ``.py`` files: (spec, came from a folder).
    A model object (not a string) stands for itself."""
    out = []
    exclude = config.exclude if config else []
    for spec in specs:
        if not isinstance(spec, str):   # a model object (the Python API): itself
            out.append((spec, False))
            continue
        path = Path(spec)
        if path.is_dir():
            for file in sorted(path.rglob("*.py")):
                parts = file.relative_to(path).parts
                if any(p.startswith(".") or p == "__pycache__" for p in parts):
                    continue
                rel = str(file.relative_to(path))
                if any(fnmatch.fnmatch(rel, g) or fnmatch.fnmatch(file.name, g) for g in exclude):
                    continue
                out.append((str(file), True))
        else:
            out.append((spec, False))
    return out


def spec_location(spec: str) -> str:
    """The path (or module) part of a spec: ``model.py:Net`` -> ``model.py``. The split
    :func:`irviz.frontends.loader.load` makes, without importing the loader (torch)."""
    if os.path.exists(spec):
        return spec
    match = re.match(r"^(.+?\.py)(?::(.*))?$", spec, re.S)
    if match:
        return match.group(1)
    start = 2 if re.match(r"^[A-Za-z]:[\\/]", spec) else 0  # Windows drive letter
    colon = spec.find(":", start)
    return spec[:colon] if colon >= 0 else spec
