"""irviz: TorchScript graph-IR visualizer and static analyzer.

>>> import irviz
>>> view = irviz.visualize(model, inputs=x)[0]     # doctest: +SKIP

``import irviz`` imports neither torch, networkx nor Graphviz: the API's names
(:mod:`irviz.api`) load on first use (PEP 562), so a CLI start or a ``--help`` pays
nothing for them. ``irviz.lint`` and ``irviz.report`` are also the names of
subpackages; calling them calls the API functions (see ``_CallablePackage``).
"""
from __future__ import annotations

import importlib
import sys
import types

__version__ = "0.1.0"

#: public name -> the module that defines it, imported when the name is first used
_LAZY = {
    "visualize": "irviz.api", "diff": "irviz.api", "build": "irviz.api",
    "LintResult": "irviz.api", "Report": "irviz.api", "DiffResult": "irviz.api",
    "trace": "irviz.api", "TraceResult": "irviz.api",
    "Visualization": "irviz.view", "Workspace": "irviz.workspace",
    "RenderOptions": "irviz.render.dot", "load": "irviz.frontends.loader",
    "capture": "irviz.frontends.capture",
}
#: API functions named like a subpackage: the subpackage, made callable; and the API's
#: own module (``irviz.api.visualize`` after a bare ``import irviz``)
_PACKAGES = {"lint": "irviz.lint", "report": "irviz.report", "api": "irviz.api"}

__all__ = ["__version__", "visualize", "lint", "report", "diff", "trace", "build",
           "Visualization", "Workspace", "RenderOptions", "load", "capture", "LintResult",
           "Report", "DiffResult", "TraceResult"]


class _CallablePackage(types.ModuleType):
    """``irviz.lint`` is both the lint subpackage and the API function: Python binds an
    imported subpackage over the parent's attribute of the same name, so the package
    itself forwards calls to :func:`irviz.api.lint` (likewise ``irviz.report``)."""

    def _function(self):
        from . import api

        return getattr(api, self.__name__.rsplit(".", 1)[1])

    def __call__(self, *args, **kwargs):
        return self._function()(*args, **kwargs)

    @property
    def __signature__(self):   # inspect.signature / a notebook's help show the function's
        import inspect

        return inspect.signature(self._function())


def _callable_package(name: str) -> None:
    """Called by ``irviz/lint/__init__.py`` and ``irviz/report/__init__.py`` as they load:
    however the package is first imported, ``irviz.lint(...)`` works."""
    sys.modules[name].__class__ = _CallablePackage


def __getattr__(name: str):
    if name in _PACKAGES:   # importing it binds it here (lint's and report's __init__
        # make them callable)
        return importlib.import_module(_PACKAGES[name])
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value   # once: later lookups do not come here
        return value
    raise AttributeError(f"module 'irviz' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(__all__) | {n for n in globals() if n.startswith("__")})
