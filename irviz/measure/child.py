"""What runs in a measuring child process (``python -m irviz.measure.child``).

Why it exists: torch lets a process set its inter-op thread count only once and
before any parallel work, so every thread setting needs a fresh process, and a
model or the profiler may hang or crash; :mod:`irviz.measure.run` starts this
module once per setting, with a deadline. A role of :mod:`irviz.child`; its request is
one payload::

    {"action": "time" | "profile", "spec": str, "mode": str, "inputs": str | None,
     "intra_op": int | None, "inter_op": int | None, "warmup": int, "repeats": int,
     "min_sample_s": float, "settle_s": float, "serial_only": bool}

(``serial_only``: time only the serial baseline - ``--calibrate``.)

It sets the thread counts *first* (torch accepts the inter-op count only before any
parallel work), loads, resolves inputs, captures, builds the serial baseline, and
answers with one JSON object; ``irviz-measure: phase=NAME`` lines on stderr let the
parent say where a killed child was. Errors caused by the user's input are returned as
``{"user_error": {"class", "message", "hint", "detail"}}`` for the parent to raise;
failures of the model at run time as ``{"error": str}``. The process ends with
``os._exit`` after flushing, so torch's pool threads cannot abort it at interpreter
shutdown after the result is out.
"""
from __future__ import annotations

import gc
import json
import math
import os
import statistics
import sys
import time
from typing import Any

from .handoff_probe import make_probe, probe_result
from .settings import MIN_SAMPLE_S, PHASE_PREFIX


def _phase(name: str) -> None:
    sys.stderr.write(f"{PHASE_PREFIX}{name}\n")
    sys.stderr.flush()


def _user_error(exc: Any) -> dict:
    return {"user_error": {"class": type(exc).__name__, "message": exc.message,
                           "hint": exc.hint, "detail": exc.detail}}


def _set_threads(intra: int | None, inter: int | None) -> None:
    import torch

    if inter is not None:
        torch.set_num_interop_threads(int(inter))
    if intra is not None:
        torch.set_num_threads(int(intra))


def _prepare(payload: dict) -> tuple[Any, Any, tuple]:
    """Load, resolve inputs, capture, through a Workspace as every command does (``auto``
    falls back the same way). Raises IrvizError for the user's mistakes."""
    import torch

    from ..errors import InputsError, UsageError
    from ..workspace import Workspace

    workspace = Workspace(inputs=payload.get("inputs"))
    _phase("load")
    result = workspace.load(payload["spec"])
    if len(result.targets) != 1:
        names = ", ".join(t.name for t in result.targets)
        raise UsageError(f"{payload['spec']} names {len(result.targets)} models ({names}); "
                         "measure takes one",
                         hint=f"name one, e.g. {payload['spec']}:{result.targets[0].name}")
    target = result.targets[0]
    _phase("inputs")
    inputs = workspace.inputs_for(target)
    _phase("capture")
    # the timed runs read no executed lines: the trace skips its line recorder
    cap = workspace.capture(target, payload.get("mode") or "script", lines=False)
    scripted = cap.scripted
    if inputs is None:
        graph = scripted.graph
        n_args = len(list(graph.inputs())) - (1 if isinstance(scripted, torch.jit.ScriptModule) else 0)
        if n_args > 0:
            where = ("pass them with inputs=... (--inputs)" if target.kind == "archive"
                     else "pass them with inputs=... (--inputs) or define `example_inputs` "
                          "in the model file (see README: Example inputs)")
            raise InputsError(f"measuring runs {target.spec}, so it needs example inputs",
                              hint=where)
        return target, cap, ()
    if isinstance(scripted, torch.jit.ScriptModule):
        scripted.eval()
    # the compiled graph's own inputs, positionally (keyword inputs placed by name)
    positional = cap.graph_input_examples()
    while positional and positional[-1] is None:
        positional.pop()
    return target, cap, tuple(positional)


def _clone(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, (tuple, list)):
        return type(value)(_clone(v) for v in value)
    if isinstance(value, dict):
        return {k: _clone(v) for k, v in value.items()}
    return value


def _wake_task(x):
    return x + 1


def wake_us(calls: int = 60) -> float:
    """How long waking a sleeping pool thread takes here, in microseconds: half of what a
    fork + wait of a trivial task adds to the call after the pool went idle (the task's
    thread wakes up, then the blocked caller does). The calibrated prediction charges it
    at every task start, continuation and return (:mod:`irviz.analyses.schedule`)."""
    import torch

    def forked(x):
        return torch.jit.wait(torch.jit.fork(_wake_task, x))

    def inline(x):
        return _wake_task(x)

    forked_s, inline_s = torch.jit.script(forked), torch.jit.script(inline)
    x = torch.zeros(4)
    for _ in range(10):
        forked_s(x)
        inline_s(x)
    a, b = [], []
    for _ in range(calls):
        time.sleep(0.001)           # the pool threads go back to sleep, as between calls
        t0 = time.perf_counter()
        forked_s(x)
        t1 = time.perf_counter()
        inline_s(x)
        t2 = time.perf_counter()
        a.append(t1 - t0)
        b.append(t2 - t1)
    return round(max(0.0, statistics.median(a) - statistics.median(b)) / 2 * 1e6, 1)


def serial_call_s(fn: Any, inputs: tuple, calls: int = 3) -> float:
    """The fastest of a few calls of ``fn``: what sizes the hand-off probe's tasks."""
    best = math.inf
    for _ in range(calls):
        t0 = time.perf_counter()
        fn(*inputs)
        best = min(best, time.perf_counter() - t0)
    return best


def make_pair(fn: Any, inputs: tuple) -> Any | None:
    """Two copies of ``fn`` side by side in TorchScript (a traced ``fork(fn) ; fn ; wait``:
    one copy on the caller, one on the inter-op pool), or None when it cannot be built
    (Python threads are no substitute: the calls serialise on the GIL). Timed next to the
    model (:func:`round_robin`), it says how much two copies of the model's own ops slow
    each other on this machine now - shared cores, caches, intra-op threads, other jobs;
    the calibrated prediction turns that into the cores the forked tasks really get.
    ``fn``: a module, a function, or a :class:`~irviz.ir.serial_baseline.SerialBaseline`."""
    return _traced_fork(fn, inputs, caller_copy=True)


def make_pool_pair(fn: Any, inputs: tuple) -> Any | None:
    """Two copies of ``fn`` forked at once onto the inter-op pool while the caller waits (a
    traced ``fork ; fork ; wait ; wait``), or None when it cannot be built. Forked tasks
    run there, and not at the caller's speed: with two intra-op threads the seed's
    SerialLSTMEnsemble at C = 64 took 37.5 ms on the caller, its two pool copies 25.4 ms
    for both, and the forked LSTMEnsemble (the same work as one copy) 13.4 ms. Timed next
    to the serial baseline, it gives the calibrated prediction the speed of busy pool
    threads (:func:`irviz.analyses.prediction.pool_speed`)."""
    return _traced_fork(fn, inputs, caller_copy=False)


def _traced_fork(fn: Any, inputs: tuple, caller_copy: bool) -> Any | None:
    import torch

    owner, call = _pair_parts(fn)

    class Forked(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.owner = owner  # a ScriptModule must be a submodule of what is traced

        def one(self, *args):
            return call(self.owner, *args)

        def forward(self, *args):
            fut = torch.jit.fork(self.one, *args)
            if not caller_copy:         # a second copy on the pool too
                other = torch.jit.fork(self.one, *args)
                return torch.jit.wait(fut), torch.jit.wait(other)
            mine = self.one(*args)      # the caller's copy runs before the wait
            return torch.jit.wait(fut), mine

    try:
        traced = torch.jit.trace(Forked(), inputs, check_trace=False)
        traced(*inputs)
        traced(*inputs)
    except Exception:  # noqa: BLE001 - a model the tracer cannot take: no figure
        return None
    return traced


def calibration_probes(serial: Any, inputs: tuple, forks: bool) -> tuple[dict, dict | None]:
    """What the calibrated prediction needs timed in the same rounds as the serial
    baseline ``serial``: the pair, the pool pair and (``forks``: the model forks) the
    hand-off probe. Returns the functions for :func:`round_robin` and the hand-off
    probe's shape for :func:`calibration_figures`. ``irviz report --measure`` and
    ``benchmarks/tutorial_parallelism.py`` both use it, so a probe changes once."""
    fns: dict[str, Any] = {}
    for name, make in (("pair", make_pair), ("pool_pair", make_pool_pair)):
        built = make(serial, inputs)
        if built is not None:
            fns[name] = built
    probe = None
    if forks:
        probe_fns, probe = make_probe(serial_call_s(serial, inputs))
        fns.update(probe_fns)
    return fns, probe


def calibration_figures(probe: dict | None, wall: dict[str, list[float]]) -> dict:
    """``pair_s``, ``pool_pair_s`` (median wall seconds, None: not timed) and ``handoff``
    (:func:`~irviz.measure.handoff_probe.probe_result`) from the rounds' samples."""
    def median(name: str) -> float | None:
        return round(statistics.median(wall[name]), 6) if wall.get(name) else None

    return {"pair_s": median("pair"), "pool_pair_s": median("pool_pair"),
            "handoff": probe_result(probe, wall)}


def _pair_parts(fn: Any) -> tuple[Any, Any]:
    """(the module the traced pair must own, how one copy is called with it)."""
    import torch

    module, function = getattr(fn, "module", None), getattr(fn, "function", None)
    if module is not None and function is not None:   # a rewritten forward: fn(obj, *x)
        return module, lambda owner, *args: function(owner._c, *args)
    plain = function if function is not None else getattr(fn, "fn", fn)  # a SerialBaseline
    if isinstance(plain, torch.nn.Module):
        return plain, lambda owner, *args: owner(*args)
    return None, lambda owner, *args: plain(*args)


def calls_per_sample(seconds_per_call: float, min_sample_s: float = MIN_SAMPLE_S) -> int:
    """How many back-to-back calls make a sample of at least ``min_sample_s``."""
    if seconds_per_call <= 0:
        return 1
    return max(1, math.ceil(min_sample_s / seconds_per_call))


def sizing_calls(fns: dict[str, Any], inputs: tuple,
                 min_sample_s: float = MIN_SAMPLE_S) -> int:
    """:func:`calls_per_sample` for the slowest of ``fns``, each timed over enough calls
    to last an eighth of a sample (one call of a microsecond model after the warm-up can
    be ten times its steady time). That batch is timed three times and the fastest kept:
    one scheduler hiccup in a single sizing batch once made a 0.1 ms model look 4 ms long
    and its 20 ms samples 0.5 ms. Every variant is then sampled with the same count, so
    a round compares like with like."""
    slowest = 0.0
    for fn in fns.values():
        calls = 1
        while True:
            took = _batch_s(fn, inputs, calls)
            if took >= min_sample_s / 8 or calls >= 1 << 16:
                break
            calls *= 4
        took = min(took, _batch_s(fn, inputs, calls), _batch_s(fn, inputs, calls))
        slowest = max(slowest, took / calls)
    return calls_per_sample(slowest, min_sample_s)


def _batch_s(fn, inputs: tuple, calls: int) -> float:
    """Seconds for ``calls`` back-to-back calls of ``fn``."""
    t0 = time.perf_counter()
    for _ in range(calls):
        fn(*inputs)
    return time.perf_counter() - t0


def round_robin(fns: dict[str, Any], inputs: tuple, repeats: int,
                calls: int) -> tuple[dict, dict, float | None]:
    """Time ``fns`` in rounds (A B C, A B C, ...), each sample ``calls`` calls back to back.

    Returns per-call wall and CPU seconds per sample (``{name: [s, ...]}``) and the CPUs
    other processes kept busy meanwhile (None: not on Linux). Interleaving puts every
    variant under the same machine state; the caller's ``torch.no_grad()`` applies.
    """
    from .settings import OtherLoad

    wall: dict[str, list[float]] = {name: [] for name in fns}
    cpu: dict[str, list[float]] = {name: [] for name in fns}
    gc.collect()
    gc.disable()
    try:
        with OtherLoad() as others:
            for _ in range(repeats):
                for name, fn in fns.items():
                    c0, t0 = time.process_time(), time.perf_counter()
                    for _ in range(calls):
                        fn(*inputs)
                    t1, c1 = time.perf_counter(), time.process_time()
                    wall[name].append((t1 - t0) / calls)
                    cpu[name].append((c1 - c0) / calls)
    finally:
        gc.enable()
    return wall, cpu, others.value


def _time(payload: dict, out: dict) -> None:
    import torch

    from ..frontends.overloads import entry_callable
    from ..ir.serial_baseline import (BaselineError, build_serial_baseline, one_line,
                                      outputs_equal)
    from .result import summarize

    target, cap, inputs = _prepare(payload)
    forked = entry_callable(cap.scripted, cap.entry)   # an overload of an nn.LSTM's forward
    out.update(model=target.name, mode=cap.mode)
    _phase("baseline")
    try:
        serial = build_serial_baseline(cap.scripted, cap.entry)
        out["baseline"] = serial.description
        out["baseline_info"] = serial.info
    except BaselineError as exc:
        serial = None
        out["baseline_error"] = str(exc)
    warmup = int(payload.get("warmup", 3))
    repeats = int(payload.get("repeats", 7))
    with torch.no_grad():
        _phase("first call")
        try:
            ref = forked(*_clone(inputs))
        except Exception as exc:  # noqa: BLE001 - the user's model
            out["error"] = f"the model raised {one_line(exc)}"
            return
        if serial is not None:
            _phase("first serial call")
            try:
                got = serial(*_clone(inputs))
            except Exception as exc:  # noqa: BLE001
                out["baseline_error"] = f"the serial baseline raised {one_line(exc)}"
                out.pop("baseline", None)
                out.pop("baseline_info", None)
                serial = None
            else:
                out["outputs_match"] = outputs_equal(ref, got)
        variants = [("serial", serial), ("forked", forked)] if serial is not None \
            else [("forked", forked)]
        if payload.get("serial_only") and serial is not None:  # --calibrate
            variants = [("serial", serial)]
        _phase("warm-up")
        try:
            for _ in range(warmup):
                for _, fn in variants:
                    fn(*inputs)
            timed = dict(variants)
            probe = None
            if serial is not None:          # sampled in the same rounds as the model
                _phase("probes")
                fns, probe = calibration_probes(
                    serial, inputs, bool(out.get("baseline_info", {}).get("forks")))
                timed.update(fns)
            calls = sizing_calls(timed, inputs, float(payload.get("min_sample_s",
                                                                  MIN_SAMPLE_S)))
            out["calls_per_sample"] = calls
            _phase("timing")
            wall, cpu, out["other_load"] = round_robin(timed, inputs, repeats, calls)
            if serial is not None:
                out.update(calibration_figures(probe, wall))
            _phase("wake-up probe")
            out["wake_us"] = wake_us()
        except Exception as exc:  # noqa: BLE001
            out["error"] = f"the model raised {one_line(exc)}"
            return
    for name, _ in variants:
        out[name] = summarize(wall[name], cpu[name]).to_dict()
    if serial is not None and "forked" in out:
        out["speedup"] = round(out["serial"]["median_s"] / out["forked"]["median_s"], 4) \
            if out["forked"]["median_s"] > 0 else None
        pairs = [s / f for s, f in zip(wall["serial"], wall["forked"]) if f > 0]
        out["speedup_paired"] = round(statistics.median(pairs), 4) if pairs else None


def _profile(payload: dict, out: dict) -> None:
    import torch
    from torch.profiler import ProfilerActivity, profile

    from ..frontends.overloads import entry_callable
    from ..ir.serial_baseline import fork_site_labels, one_line
    from .trace import tasks_from_trace

    target, cap, inputs = _prepare(payload)
    sites = fork_site_labels(cap.scripted)
    top = target.name + (".forward" if isinstance(cap.scripted, torch.jit.ScriptModule) else "")
    model = entry_callable(cap.scripted, cap.entry)   # an overload of an nn.LSTM's forward
    out.update(model=target.name, mode=cap.mode)
    settle = float(payload.get("settle_s", 0.05))
    with torch.no_grad():
        _phase("warm-up")
        try:
            for _ in range(max(int(payload.get("warmup", 3)), 1)):
                model(*inputs)
            time.sleep(settle)
            _phase("profiled call")
            with profile(activities=[ProfilerActivity.CPU], with_stack=True) as prof:
                model(*inputs)
                # the pool threads finish their profiler callbacks after the call returns;
                # stopping the profiler at once has crashed the process
                time.sleep(settle)
        except Exception as exc:  # noqa: BLE001
            out["error"] = f"the model raised {one_line(exc)}"
            return
    trace = _chrome_trace(prof)
    out["chrome_trace"] = trace
    out["tasks"] = [t.to_dict() for t in tasks_from_trace(trace, os.getpid(), sites, top)]
    out["sites"] = {f"{os.path.basename(f)}:{line}": label for (f, line), label in sites.items()}


def _profile_ops(payload: dict, out: dict) -> None:
    """``render --profile``: warm-up runs, then ``runs`` profiled runs under ``no_grad``,
    each inside a ``record_function`` that marks where it starts and ends; the trace's
    top-level aten events go back (:mod:`.op_events`), not the trace (it is large)."""

    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    from ..frontends.overloads import entry_callable
    from ..ir.serial_baseline import one_line
    from .op_events import memory_peak, op_events

    target, cap, inputs = _prepare(payload)
    model = entry_callable(cap.scripted, cap.entry)   # an overload of an nn.LSTM's forward
    out.update(model=target.name, mode=cap.mode)
    runs = max(int(payload.get("runs", 5)), 1)
    with torch.no_grad():
        _phase("warm-up")
        try:
            for _ in range(max(int(payload.get("warmup", 3)), 1)):
                model(*inputs)
            _phase("profiled runs")
            # one session: a second one in this process crashed Kineto on forked models;
            # allocations are recorded in it too (profile_memory)
            with profile(activities=[ProfilerActivity.CPU], with_stack=True,
                         with_modules=True, profile_memory=True) as prof:
                for _ in range(runs):
                    with record_function(RUN_MARK):
                        model(*inputs)
                time.sleep(float(payload.get("settle_s", 0.05)))
        except Exception as exc:  # noqa: BLE001
            out["error"] = f"the model raised {one_line(exc)}"
            return
    out["runs"] = runs
    trace = _chrome_trace(prof)
    out["op_events"] = [e.to_dict() for e in op_events(trace, RUN_MARK)]
    out["memory"] = memory_peak(trace, RUN_MARK)
    walls = sorted(e["dur"] for e in trace.get("traceEvents", [])
                   if e.get("ph") == "X" and e.get("name") == RUN_MARK)
    out["run_us"] = round(walls[len(walls) // 2], 3) if walls else None
    if payload.get("trace_out"):   # --trace-out: the trace itself, for Perfetto
        with open(payload["trace_out"], "w", encoding="utf-8") as fh:
            json.dump(trace, fh)


def _chrome_trace(prof) -> dict:
    """The profile as Chrome-trace JSON (torch writes it only to a file)."""
    import tempfile

    _phase("export")
    fd, path = tempfile.mkstemp(suffix=".json", prefix="irviz-trace-")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    finally:
        os.unlink(path)


#: the record_function around each profiled run
RUN_MARK = "irviz::run"


def answer(payload: dict) -> dict:
    """The measuring child's one result for ``payload`` (see the module's docstring)."""
    _phase("threads")
    out: dict[str, Any] = {"error": None}
    try:
        _set_threads(payload.get("intra_op"), payload.get("inter_op"))
    except Exception as exc:  # noqa: BLE001
        out["error"] = f"cannot set the thread counts: {exc}"
    else:
        import torch

        from ..errors import IrvizError
        from .settings import machine_facts

        facts = machine_facts()
        out.update(intra_op=torch.get_num_threads(), inter_op=torch.get_num_interop_threads(),
                   cpu_count=facts["cpu_count"], load_avg=facts["load_avg"])
        try:
            if payload.get("action") == "profile":
                _profile(payload, out)
            elif payload.get("action") == "profile_ops":
                _profile_ops(payload, out)
            else:
                _time(payload, out)
        except IrvizError as exc:
            out = _user_error(exc)
        except Exception as exc:  # noqa: BLE001 - never a traceback instead of a result
            from ..ir.serial_baseline import one_line

            out["error"] = f"measuring failed: {one_line(exc)}"
    _phase("done")
    return out


if __name__ == "__main__":
    from ..child.protocol import serve

    code = serve(lambda payloads: map(answer, payloads))
    sys.stderr.flush()
    os._exit(code)   # torch's pool threads cannot abort it at shutdown after the result
