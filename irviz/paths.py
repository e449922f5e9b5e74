"""Paths as irviz shows them, and which files are torch's own.

One copy of two questions every layer asks: "how do I print this path?" (relative to the
working directory when inside it, so output does not depend on where a checkout lives) and
"is this file torch itself?" (by path components: ``site-packages/torchvision/`` is *not*
inside ``site-packages/torch``, whatever a string prefix says).
"""
from __future__ import annotations

import os
from pathlib import Path

import torch

__all__ = ["TORCH_DIR", "display_path", "is_torch_file", "torch_relative", "is_inside"]

#: the directory of the installed ``torch`` package
TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))


def display_path(path: str | os.PathLike) -> str:
    """``path`` relative to the working directory when it lies inside it, else absolute.

    >>> display_path(os.path.join(os.getcwd(), "a", "b.py")) == os.path.join("a", "b.py")
    True
    """
    p = Path(path)
    try:
        absolute = p if p.is_absolute() else Path.cwd() / p
        rel = os.path.relpath(absolute, Path.cwd())
    except ValueError:  # another drive on Windows
        return str(p)
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return os.path.normpath(str(absolute))
    return rel


def is_inside(path: str | os.PathLike, directory: str | os.PathLike) -> bool:
    """True when ``path`` is ``directory`` or lies below it (compared by components).

    >>> is_inside("/x/site-packages/torchvision/ops.py", "/x/site-packages/torch")
    False
    >>> is_inside("/x/site-packages/torch/nn/modules/conv.py", "/x/site-packages/torch")
    True
    """
    path, directory = os.path.abspath(path), os.path.abspath(directory)
    try:
        return os.path.commonpath([path, directory]) == directory
    except ValueError:  # different drives, or a relative/absolute mix
        return False


def is_torch_file(path: str | os.PathLike | None) -> bool:
    """True for files of torch itself (not torchvision, torchaudio, torch_geometric...)
    and for Python's frozen modules, which are never a user's code."""
    if not path:
        return False
    text = os.fspath(path)
    if text.startswith("<frozen"):
        return True
    if text.startswith("<"):   # "<string>", "<stdin>": not a file of torch's
        return False
    return is_inside(text, TORCH_DIR)


def torch_relative(path: str | os.PathLike) -> str:
    """A torch file's path relative to the torch package (``nn/modules/conv.py``)."""
    return os.path.relpath(os.fspath(path), TORCH_DIR)
