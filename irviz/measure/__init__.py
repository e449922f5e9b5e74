"""Measured speed-up of a model's ``torch.jit.fork`` tasks: forked vs a serial baseline.

Why it is a package: measuring has parts with different reasons to change - the
parent's runner (:mod:`.run`: :func:`measure`, :func:`profile`), what runs in each
child process (:mod:`.child`), the thread settings and machine facts (:mod:`.settings`),
the profile's trace -> timeline tasks (:mod:`.trace`) and the typed result, which is
the report's ``measured`` schema (:mod:`.result`). The serial baseline itself is an IR
rewrite and lives in :mod:`irviz.ir.serial_baseline`; the child processes are
:mod:`irviz.child`'s.

The names below are loaded on first use, so ``irviz.measure.settings`` (the load meter
the benchmarks use) and ``.result`` import without torch, and ``python -m
irviz.measure.child`` does not import its own module twice.
"""
from __future__ import annotations

import importlib
from typing import Any

#: public name -> the module that defines it
_EXPORTS = {
    "measure": ".run", "profile": ".run", "run_child": ".run", "profile_ops": ".run",
    "MeasureResult": ".result", "SettingResult": ".result", "Stats": ".result",
    "BaselineInfo": ".result", "BestSetting": ".result", "ProfileResult": ".result",
    "Task": ".result", "summarize": ".result",
    "default_settings": ".settings", "machine_facts": ".settings", "OtherLoad": ".settings",
    "usable_cpus": ".settings",
    "tasks_from_trace": ".trace",
    "build_serial_baseline": "..ir.serial_baseline", "BaselineError": "..ir.serial_baseline",
    "outputs_equal": "..ir.serial_baseline", "fork_site_labels": "..ir.serial_baseline",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
