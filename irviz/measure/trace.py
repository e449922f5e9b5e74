"""A profiled call's Chrome trace -> the tasks of its timeline.

Why it exists: torch.profiler records every op of every thread; the timeline wants
one bar per task - the top-level call on the calling thread (lane 0) and each
``<forked function>`` event on a pool thread (lanes 1..) - labelled with what the
fork runs. The label comes from the call stack of the task's first op (its
``<forked function>`` frame gives the fork site, ``file.py:LINE``) looked up in
:func:`irviz.ir.serial_baseline.fork_site_labels`. Pure data in, data out: runs in
the profiling child, and in tests on hand-made traces.
"""
from __future__ import annotations

import os
import re
from typing import Any

from .result import Task

__all__ = ["tasks_from_trace"]


_FRAME = re.compile(r"^(.*)\((\d+)\): (.*)$")


def _frames(call_stack: str) -> list[tuple[str, int, str]]:
    out = []
    for part in call_stack.split(";"):
        m = _FRAME.match(part.strip())
        if m:
            out.append((m.group(1), int(m.group(2)), m.group(3)))
    return out


def _label_for(frames: list[tuple[str, int, str]], sites: dict) -> tuple[str, str | None]:
    """(label, site) of a task from the call stack of its first op (innermost first)."""
    for i in range(len(frames) - 1, -1, -1):
        file, line, name = frames[i]
        if name != "<forked function>":
            continue
        site = f"{os.path.basename(file)}:{line}"
        label = sites.get((file, line))
        if label is None:
            label = next((v for (f, ln), v in sites.items()
                          if ln == line and os.path.basename(f) == os.path.basename(file)), None)
        if label is None and i > 0:
            label = frames[i - 1][2]
        return label or "<forked function>", site
    return "<forked function>", None


def tasks_from_trace(trace: dict, main_tid: int, sites: dict | None = None,
                     top_label: str | None = None) -> list[Task]:
    """The tasks of one profiled call: the top-level call on the main thread (lane 0)
    and every ``<forked function>`` event (lanes 1.. by first appearance)."""
    sites = sites or {}
    ops = [e for e in trace.get("traceEvents", [])
           if e.get("ph") == "X" and e.get("cat") == "cpu_op"]
    main_ops = [e for e in ops if e.get("tid") == main_tid and e["name"] != "<forked function>"]
    if not main_ops:
        return []
    top = max(main_ops, key=lambda e: e.get("dur", 0))
    t0 = float(top["ts"])
    tasks = [Task(0, top["name"], 0.0, float(top.get("dur", 0)), top_label or top["name"])]
    forked = sorted((e for e in ops if e["name"] == "<forked function>"),
                    key=lambda e: float(e["ts"]))
    lanes: dict[Any, int] = {main_tid: 0}
    by_tid: dict[Any, list[dict]] = {}
    for e in ops:
        if e["name"] != "<forked function>":
            by_tid.setdefault(e.get("tid"), []).append(e)
    for lst in by_tid.values():
        lst.sort(key=lambda e: float(e["ts"]))
    for e in forked:
        tid = e.get("tid")
        lane = lanes.setdefault(tid, len(lanes))
        start, end = float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0))
        label, site = "<forked function>", None
        for op in by_tid.get(tid, []):
            ts = float(op["ts"])
            if ts < start:
                continue
            if ts > end:
                break
            stack = (op.get("args") or {}).get("Call stack")
            if stack:
                label, site = _label_for(_frames(stack), sites)
                break
        tasks.append(Task(lane, e["name"], round(start - t0, 3), float(e.get("dur", 0)),
                          label, site))
    return tasks
