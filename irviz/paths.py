"""Paths as irviz shows them, and which files are torch's own.

One copy of two questions every layer asks: "how do I print this path?" (relative to the
working directory when inside it, so output does not depend on where a checkout lives) and
"is this file torch itself?" (by path components: ``site-packages/torchvision/`` is *not*
inside ``site-packages/torch``, whatever a string prefix says).
"""
from __future__ import annotations

import importlib.util
import os
import sysconfig
from pathlib import Path

__all__ = ["TORCH_DIR", "IRVIZ_DIR", "STDLIB_DIRS", "display_path", "is_torch_file", "is_stdlib_file",
           "is_installed_library_file", "torch_relative", "is_inside"]

#: the directory of the installed ``torch`` package (found without importing torch, so
#: what only needs paths, a cached ``irviz lint`` among them, starts fast)
_TORCH_SPEC = importlib.util.find_spec("torch")
TORCH_DIR = (os.path.dirname(os.path.abspath(_TORCH_SPEC.origin))
             if _TORCH_SPEC is not None and _TORCH_SPEC.origin
             else os.path.join(sysconfig.get_paths()["purelib"], "torch"))  # not installed
#: irviz's own package directory (its frames are never a model's code)
IRVIZ_DIR = os.path.dirname(os.path.abspath(__file__))
#: Python's standard library (``ast.py`` runs torch's own checks while it scripts). In a
#: venv ``platstdlib`` is the venv's ``lib/python3.X``, which also holds site-packages:
#: installed libraries are not the standard library (see :func:`is_stdlib_file`).
STDLIB_DIRS = tuple(sorted({sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]}))
_SITE_DIRS = tuple(sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}))


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


#: irviz's stand-in for torch's ``Module._slow_forward`` while tracing
#: (:func:`irviz.frontends.trace_graph._slow_forward`): its frame stands in a traced op's
#: stack where torch's own stood, and counts as torch's
_STAND_IN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "frontends",
                         "trace_graph.py")


def is_torch_file(path: str | os.PathLike | None) -> bool:
    """True for files of torch itself (not torchvision, torchaudio, torch_geometric...),
    irviz's stand-in for a frame of torch's, and Python's frozen modules, which are never
    a user's code."""
    if not path:
        return False
    text = os.fspath(path)
    if text.endswith("trace_graph.py") and os.path.abspath(text) == _STAND_IN:
        return True
    if text.startswith("<frozen"):
        return True
    if text.startswith("<"):   # "<string>", "<stdin>": not a file of torch's
        return False
    return is_inside(text, TORCH_DIR)


def is_stdlib_file(path: str | os.PathLike) -> bool:
    """True for a file of Python's standard library (never a model's code); not for an
    installed package (torchvision, transformers), even inside a venv's ``lib/``."""
    return any(is_inside(path, d) for d in STDLIB_DIRS) \
        and not any(is_inside(path, d) for d in _SITE_DIRS)


#: directory names pip and the distributions install packages into
_INSTALL_DIR_NAMES = ("site-packages", "dist-packages")


def is_installed_library_file(path: str | os.PathLike | None) -> bool:
    """True for a file of an installed package (transformers, torchvision, ...: inside this
    Python's site-packages, or any ``site-packages``/``dist-packages`` directory), not for
    the user's own files.

    >>> is_installed_library_file("/x/lib/python3.11/site-packages/transformers/a.py")
    True
    >>> is_installed_library_file("/home/me/project/model.py")
    False
    """
    if not path:
        return False
    text = os.fspath(path)
    if text.startswith("<"):
        return False
    if any(is_inside(text, d) for d in _SITE_DIRS):
        return True
    return any(part in _INSTALL_DIR_NAMES for part in Path(os.path.abspath(text)).parts)


def torch_relative(path: str | os.PathLike) -> str:
    """A torch file's path relative to the torch package (``nn/modules/conv.py``)."""
    return os.path.relpath(os.fspath(path), TORCH_DIR)
