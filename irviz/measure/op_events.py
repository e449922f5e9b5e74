"""A profiled run's Chrome trace -> the op events that can be put on IR nodes.

Why it exists: ``torch.profiler`` with ``with_stack=True, with_modules=True`` gives every
aten event of a TorchScript run its TorchScript call stack (``Call stack``, innermost
first: ``linear.py(134): forward;model.py(7): forward``) and the module it ran in
(``Module Hierarchy``: ``TOP(M)::forward.l1(Linear)::forward.``). Only the *top-level*
aten events stand for IR nodes: ``aten::linear`` is the node, its ``aten::addmm`` child is
part of its time (self time excludes them). Pure data in, data out: it runs in the
profiling child (the trace is large) and in tests.
"""
from __future__ import annotations

import os
import re
import statistics
from dataclasses import asdict, dataclass

__all__ = ["OpEvent", "op_events", "module_path", "memory_peak", "tag_trace"]

_FRAME = re.compile(r"^(.*)\((\d+)\): (.*)$")
_MODULE = re.compile(r"\.([A-Za-z0-9_]+)\([^)]*\)::")


@dataclass(frozen=True)
class OpEvent:
    """One top-level aten op of one profiled run."""

    name: str            # aten::linear
    run: int             # which profiled run (0..)
    order: int           # its place among the run's events (start time order)
    tid: int
    total_us: float      # with its children
    self_us: float       # without its aten children
    file: str | None     # innermost TorchScript frame: basename
    line: int | None
    module: str          # module path ("" = root, "layer1.0.conv1")
    #: the op ran in a fork's task: ``module`` is relative to the forked module
    forked: bool = False
    #: the innermost fork site of a task's op: ``"model.py:37"``
    fork_site: str | None = None
    #: when it started, from the start of its run (the forks' measured overlap)
    start_us: float = 0.0
    #: its place in the trace's ``traceEvents`` (``--trace-out`` writes its node there)
    index: int = -1

    def to_dict(self) -> dict:
        return asdict(self)


def module_path(hierarchy: str | None) -> tuple[str, bool]:
    """``TOP(M)::forward.l1(Linear)::forward.`` -> ``("l1", False)``; a method a module
    calls on itself adds ``SELF``, which is dropped. A fork's task starts its own
    hierarchy (``TOP(LSTM)::<forked function>.SELF(LSTM)::forward__0.``): its path is
    relative to the forked module, and the second value says so."""
    if not hierarchy:
        return "", False
    names = [n for n in _MODULE.findall(hierarchy) if n != "SELF"]
    return ".".join(names), "<forked function>" in hierarchy


def _frame(stack: str | None) -> tuple[str | None, int | None]:
    """The innermost frame: the file's basename, or for a loaded archive's serialized code
    its path in the archive (``code/__torch__/model.py``: a basename could be the user's)."""
    for part in (stack or "").split(";"):
        m = _FRAME.match(part.strip())
        if m:
            path = m.group(1)
            return (path if path.startswith("code/") else os.path.basename(path)), int(m.group(2))
    return None, None


def _fork_site(stack: str | None) -> str | None:
    for part in (stack or "").split(";"):
        m = _FRAME.match(part.strip())
        if m and m.group(3) == "<forked function>":
            path = m.group(1)
            return f"{path if path.startswith('code/') else os.path.basename(path)}:{m.group(2)}"
    return None


def op_events(trace: dict, run_name: str = "forward") -> list[OpEvent]:
    """The top-level aten events of each profiled run. A run is a top-level ``run_name``
    event on the calling thread (the scripted module's call); events on other threads (a
    fork's task) belong to the run whose interval holds their start."""
    events = [dict(e, _index=i) for i, e in enumerate(trace.get("traceEvents", []))
              if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation")]
    by_tid: dict[int, list[dict]] = {}
    for e in events:
        by_tid.setdefault(e["tid"], []).append(e)
    runs: list[tuple[float, float]] = []
    top: list[tuple[dict, float]] = []   # (event, time in aten children)
    for tid, evs in by_tid.items():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack: list[dict] = []
        child_us: dict[int, float] = {}
        for e in evs:
            end = e["ts"] + e["dur"]
            while stack and stack[-1]["ts"] + stack[-1]["dur"] < end - 1e-3:
                stack.pop()
            aten_parent = next((p for p in reversed(stack)
                                if p["name"].startswith("aten::")), None)
            if e["name"] == run_name and not stack:
                runs.append((e["ts"], end))
            if e["name"].startswith("aten::"):
                if aten_parent is None:
                    top.append((e, 0.0))
                    child_us[id(e)] = 0.0
                elif id(aten_parent) in child_us and stack and stack[-1] is aten_parent:
                    child_us[id(aten_parent)] += e["dur"]
            stack.append(e)
        top = [(e, child_us.get(id(e), 0.0)) if e["tid"] == tid else (e, c) for e, c in top]
    runs.sort()
    out: list[OpEvent] = []
    counters: dict[int, int] = {}
    for e, children in sorted(top, key=lambda ec: ec[0]["ts"]):
        run = next((i for i, (start, end) in enumerate(runs) if start <= e["ts"] <= end), None)
        if run is None:
            continue
        order = counters.get(run, 0)
        counters[run] = order + 1
        args = e.get("args") or {}
        file, line = _frame(args.get("Call stack"))
        module, forked = module_path(args.get("Module Hierarchy"))
        out.append(OpEvent(e["name"], run, order, e["tid"], float(e["dur"]),
                           max(float(e["dur"]) - children, 0.0), file, line, module, forked,
                           _fork_site(args.get("Call stack")) if forked else None,
                           round(float(e["ts"]) - runs[run][0], 3), e["_index"]))
    return out


def memory_peak(trace: dict, run_name: str = "forward") -> dict | None:
    """The bytes a profiled run (``profile_memory=True``) had allocated at its peak, above
    what was allocated when it started (its inputs and the weights are not counted), and
    what it still held at its end (its outputs): the median over the runs; None when the
    trace has no allocations. The ``[memory]`` events carry the allocator's running total;
    every thread's allocations count (a fork's task allocates on its pool thread)."""
    events = trace.get("traceEvents", [])
    runs = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                  if e.get("ph") == "X" and e.get("name") == run_name)
    mem = sorted((e for e in events if e.get("name") == "[memory]"
                  and "Total Allocated" in (e.get("args") or {})), key=lambda e: e["ts"])
    peaks, ends, counts = [], [], []
    for start, end in runs:
        inside = [e for e in mem if start <= e["ts"] <= end]
        if not inside:
            continue
        base = inside[0]["args"]["Total Allocated"] - inside[0]["args"].get("Bytes", 0)
        peaks.append(max(e["args"]["Total Allocated"] for e in inside) - base)
        ends.append(inside[-1]["args"]["Total Allocated"] - base)
        counts.append(sum(1 for e in inside if e["args"].get("Bytes", 0) > 0))
    if not peaks:
        return None
    return {"peak_bytes": int(statistics.median(peaks)), "end_bytes": int(statistics.median(ends)),
            "allocations": int(statistics.median(counts)), "runs": len(peaks)}


def tag_trace(trace: dict, nodes: dict[int, str], name: str) -> dict:
    """The trace with each matched event's IR node in its args (``irviz node``: the id the
    picture's SVG and JSON use, ``n12/call/n3``), so a user can go from an event in
    Perfetto to the node; the trace is named after the model."""
    events = trace.get("traceEvents", [])
    for index, node in nodes.items():
        if 0 <= index < len(events):
            events[index].setdefault("args", {})["irviz node"] = node
    trace.setdefault("otherData", {})["irviz model"] = name
    return trace
