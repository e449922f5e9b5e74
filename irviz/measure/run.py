"""Measuring a model's forks: one child process per thread setting, results typed.

Why it exists: ``measure(spec)`` answers "what do my forks buy on this machine?" by
timing the model as written (forked) against its serial baseline
(:mod:`irviz.ir.serial_baseline`) in fresh child processes (:mod:`irviz.measure.child`),
one per (intra-op, inter-op) thread setting, and ``profile(...)`` records one forked
call's timeline. This module is the parent's side: it checks the arguments, shares
one wall-clock budget among the children (each is a :func:`irviz.child.protocol.call`,
so a hung or crashed child is killed and reported, never irviz's hang or crash),
turns a child's exit into a one-line reason, raises the user's own errors (bad spec,
inputs, capture) as :class:`irviz.errors.IrvizError`, and assembles the
:class:`~irviz.measure.result.MeasureResult`.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from ..child.ending import explain
from ..child.protocol import call
from ..errors import IrvizError, UsageError
from .result import BestSetting, MeasureResult, ProfileResult, SettingResult
from .settings import (MIN_SAMPLE_S, PHASE_PREFIX, Setting, check_setting, default_settings,
                       machine_facts)

__all__ = ["measure", "profile", "run_child", "CHILD_MODULE", "PROFILE_SETTLE_S"]

CHILD_MODULE = "irviz.measure.child"
#: how long the profiled child sleeps after the call before stopping the profiler
PROFILE_SETTLE_S = 0.05
_REPO_ROOT = str(Path(__file__).resolve().parent.parent.parent)


# --------------------------------------------------------------------------- child processes


def _last_phase(stderr: str) -> str | None:
    phase = None
    for line in stderr.splitlines():
        if line.startswith(PHASE_PREFIX):
            phase = line[len(PHASE_PREFIX):].strip()
    return phase


def _last_stderr_line(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines()
             if ln.strip() and not ln.startswith(PHASE_PREFIX) and "NumPy" not in ln
             and not ln.startswith("USDT:") and "_conversion_method_template" not in ln]
    return lines[-1][:300] if lines else ""


def run_child(payload: dict, timeout: float, module: str = CHILD_MODULE,
              cwd: str | None = None, args: tuple[str, ...] = ()) -> tuple[dict | None, str | None, float]:
    """``payload`` answered by ``python -m module *args`` within ``timeout`` seconds.

    Returns ``(result, error, seconds)``: ``error`` is a one-line reason (and ``result``
    None) when the child timed out, crashed or wrote no result, saying in which phase.
    """
    reply = call(module, payload, max(timeout, 0.1), args=args, cwd=cwd,
                 pythonpath=(_REPO_ROOT,),
                 extra_env={"PYTHONWARNINGS": os.environ.get("PYTHONWARNINGS", "ignore")})
    if reply.result is not None:
        ended = explain(reply.ended, "the measuring process", " after reporting its result")
        if ended is not None:   # torch's pool threads sometimes abort at exit
            reply.result.setdefault("notes", []).append(ended.message)
        return reply.result, None, reply.seconds
    phase = _last_phase(reply.stderr)
    failure = reply.failure("the measuring process", f" during {phase}" if phase else "",
                            timeout_option="its share of the time budget")
    tail = "" if reply.ended.timed_out else _last_stderr_line(reply.stderr)
    return None, failure.message + (f": {tail}" if tail else ""), reply.seconds


def _raise_user_error(info: dict) -> None:
    from .. import errors

    cls = getattr(errors, info.get("class", ""), None)
    if not (isinstance(cls, type) and issubclass(cls, IrvizError)):
        cls = IrvizError
    raise cls(info.get("message", "measuring failed"), hint=info.get("hint"),
              detail=info.get("detail"))


# --------------------------------------------------------------------------- public API


def _check_mode(mode: str) -> str:
    """A capture mode; ``"archive"`` (what a capture of a .pt file reports) means as loaded."""
    from ..frontends.capture import MODES

    if mode == "archive":
        return "script"
    if mode not in MODES:
        raise UsageError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    return mode


def _payload(spec: str, mode: str, inputs: str | None, setting: Setting, **extra: Any) -> dict:
    return {"spec": spec, "mode": mode, "inputs": inputs,
            "intra_op": setting[0], "inter_op": setting[1], **extra}


def profile(spec: str, mode: str = "script", inputs: str | None = None, *,
            intra_op: int | None = None, inter_op: int | None = None,
            warmup: int = 3, timeout: float = 120.0) -> ProfileResult:
    """Profile one forked call in a child process (the ``profile`` of :func:`measure`).

    A crash or timeout of the child gives a result with ``error`` set (and no trace),
    never an exception; errors in the user's spec, inputs or capture raise
    :class:`irviz.errors.IrvizError` subclasses.
    """
    setting = check_setting((intra_op, inter_op))
    mode = _check_mode(mode)
    result, error, _ = run_child(_payload(spec, mode, inputs, setting, action="profile",
                                          warmup=warmup, settle_s=PROFILE_SETTLE_S), timeout)
    if result is not None and result.get("user_error"):
        _raise_user_error(result["user_error"])
    if result is None:
        return ProfileResult.not_run(f"profiling failed: {error}", setting)
    return ProfileResult.from_child(result)


def profile_ops(spec: str, mode: str = "script", inputs: str | None = None, *,
                runs: int = 5, warmup: int = 3, timeout: float = 300.0,
                trace_out: str | None = None) -> dict:
    """``render --profile``: the model run ``runs`` times under torch.profiler in a child
    process (Kineto with stacks has crashed forked models in-process), its top-level aten
    events returned as ``{"op_events": [...], "runs": N, "memory": {...} | None}`` or
    ``{"error": str}``; ``memory`` is one more run's allocations
    (:func:`~irviz.measure.op_events.memory_peak`). With ``trace_out`` the child writes
    the timed runs' Chrome trace there. Errors in the user's spec, inputs or capture raise
    :class:`irviz.errors.IrvizError` subclasses."""
    mode = _check_mode(mode)
    result, error, _ = run_child(_payload(spec, mode, inputs, (None, None),
                                          action="profile_ops", runs=runs, warmup=warmup,
                                          settle_s=PROFILE_SETTLE_S, trace_out=trace_out),
                                 timeout)
    if result is not None and result.get("user_error"):
        _raise_user_error(result["user_error"])
    if result is None:
        return {"error": f"profiling failed: {error}"}
    return result


def measure(spec: str, mode: str = "script", inputs: str | None = None, *,
            settings: list[tuple[int, int]] | None = None,
            warmup: int = 3, repeats: int = 7, timeout: float = 300.0,
            profile: bool = True, calibrate: bool = False,
            min_sample_s: float = MIN_SAMPLE_S) -> MeasureResult:
    """Time ``spec``'s model forked vs its serial baseline in one child per thread setting.

    ``spec`` names one model (README: Targets); ``inputs`` is an ``--inputs``
    expression (else the file's ``example_inputs``). ``settings`` are
    ``(intra_op, inter_op)`` pairs, ``None`` meaning torch's default
    (default: :func:`~irviz.measure.settings.default_settings`). ``timeout`` is the
    wall-clock budget of the whole measurement in seconds: each child gets what is
    left, and a child still running at the deadline is killed - its setting, and the
    settings not yet started, get an ``error``. With ``profile`` one forked call at
    the best setting is profiled too. Errors in the user's spec, inputs or capture
    raise :class:`irviz.errors.IrvizError` subclasses; failures of the model at run
    time, crashes and timeouts are reported in the result. ``calibrate`` times only the
    serial baseline (``--calibrate``: its wall and CPU time per setting are what the
    calibrated prediction needs; no forked timing, no profile). Each of the ``repeats``
    timed samples is at least ``min_sample_s`` seconds of back-to-back calls.
    """
    mode = _check_mode(mode)
    if not isinstance(warmup, int) or warmup < 0:
        raise UsageError(f"warmup must be an integer >= 0, got {warmup!r}")
    if not isinstance(repeats, int) or repeats < 1:
        raise UsageError(f"repeats must be an integer >= 1, got {repeats!r}")
    if not (isinstance(min_sample_s, (int, float)) and min_sample_s >= 0):
        raise UsageError(f"min_sample_s must be a number of seconds >= 0, got {min_sample_s!r}")
    if not (isinstance(timeout, (int, float)) and timeout > 0):
        raise UsageError(f"timeout must be a positive number of seconds, got {timeout!r}")
    chosen = [check_setting(s) for s in (settings if settings is not None else default_settings())]
    if not chosen:
        raise UsageError("no thread settings given", hint="leave settings=None for the default matrix")

    facts = machine_facts()
    deadline = time.monotonic() + timeout
    report = MeasureResult(spec=spec, model=None, mode=None,
                           torch_version=facts["torch_version"], cpu_count=facts["cpu_count"],
                           warmup=warmup, repeats=repeats,
                           kind="calibrate" if calibrate else "measure",
                           min_sample_s=min_sample_s)
    for setting in chosen:
        row = SettingResult(setting[0], setting[1], setting, cpu_count=facts["cpu_count"])
        report.settings.append(row)
        left = deadline - time.monotonic()
        if left <= 0.5:
            row.error = f"not run: the time budget of {timeout:g} s was used up"
            continue
        result, error, elapsed = run_child(
            _payload(spec, mode, inputs, setting, action="time", warmup=warmup,
                     repeats=repeats, serial_only=calibrate, min_sample_s=min_sample_s), left)
        row.child_s = round(elapsed, 3)
        if result is not None and result.get("user_error"):
            _raise_user_error(result["user_error"])
        if result is None:
            row.error = error
            continue
        report.take(result)
        row.take(result)

    matches = [r.outputs_match for r in report.settings if r.outputs_match is not None]
    report.outputs_match = all(matches) if matches else None
    ranked = [(i, r) for i, r in enumerate(report.settings)
              if r.error is None and r.speedup is not None]
    if ranked:
        i, best = max(ranked, key=lambda ir: ir[1].speedup)
        report.best_setting = BestSetting(best.intra_op, best.inter_op, best.speedup, i)

    if profile and not calibrate:
        report.profile = _profile_best(report, spec, mode, inputs, warmup, timeout, deadline)
    return report


def _profile_best(report: MeasureResult, spec: str, mode: str, inputs: str | None,
                  warmup: int, timeout: float, deadline: float) -> ProfileResult:
    ok = [(i, r) for i, r in enumerate(report.settings)
          if r.error is None and r.forked is not None]
    if not ok:
        return ProfileResult.not_run("not run: no thread setting was measured successfully")
    if report.best_setting is not None:
        i = report.best_setting.index
    else:  # no baseline: the setting where the forked model was fastest
        i, _ = min(ok, key=lambda ir: ir[1].forked.median_s)
    requested = report.settings[i].requested
    left = deadline - time.monotonic()
    if left <= 0.5:
        return ProfileResult.not_run(f"not run: the time budget of {timeout:g} s was used up",
                                     requested)
    return profile(spec, mode, inputs, intra_op=requested[0], inter_op=requested[1],
                   warmup=min(warmup, 3), timeout=left)
