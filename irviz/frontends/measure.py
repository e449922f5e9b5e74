"""Measured speed-up of a model's ``torch.jit.fork`` tasks: forked vs a serial baseline.

``measure(spec)`` answers "what do my forks buy on this machine?" by timing the
model as written (forked) against a *serial baseline of the same model* in
fresh child processes, one per thread setting.

Why child processes: torch lets a process set its inter-op thread count only
once and before any parallel work, so every (intra-op, inter-op) setting needs
its own process; a child also contains what a model or the profiler may do
(hang, crash with SIGSEGV/SIGABRT): the parent kills it at the deadline and
reports the setting as failed, never hangs or dies with it.

The serial baseline (built in the child, see :func:`build_serial_baseline`)
------------------------------------------------------------------------
The entry graph is *copied* (graphs are shared per compiled type: the user's
graph is never changed), every call is inlined, also inside fork subgraphs, and
each ``prim::fork`` is rewritten, outermost first:

* the task's body is inserted into the caller where the fork was, so the task
  runs right there, on the caller's thread, before the code that followed the fork;
* a fork whose future is only ever consumed by ``aten::wait`` (a direct
  fork/wait pair) disappears: each wait is replaced by the task's result;
* a fork whose future goes elsewhere (into a list of futures, a tuple, a loop
  value, a return) stays, but its task becomes the identity function of the
  already computed result - a future that is complete when it is created.
  All types stay the same, so lists of futures, waits in loops, nested forks,
  forks in loops and traced forks all keep working.

``torch._C._jit_pass_inline_fork_wait`` does the first two steps only; it
breaks on futures in lists (``aten::append(Future[Tensor][], Tensor)``, an
INTERNAL ASSERT at run time) and on nested forks (``unordered_map::at``), which
is why irviz does its own rewrite. The baseline is a TorchScript function made
from the rewritten graph; for modules it takes the module object as ``self``, so
it reads the same parameters as the forked model. It is checked against the
forked model on the example inputs (``torch.allclose`` on every output tensor).

Result of :func:`measure` (JSON-serialisable)::

    {
      "spec": str, "model": str, "mode": "script" | "trace" | "archive",
      "torch_version": str, "cpu_count": int, "warmup": int, "repeats": int,
      "baseline": str | None,        # how the serial version was built, None = impossible
      "baseline_info": {"method": "inline" | "inline+completed" | "model-has-no-forks",
                        "forks": int,          # prim::fork nodes rewritten (after inlining)
                        "inlined": int,        # direct fork/wait pairs removed
                        "completed": int}      # forks kept as already-completed futures
                     | None,
      "baseline_error": str | None,  # why no serial baseline could be built
      "outputs_match": bool | None,  # serial == forked outputs in every setting that ran
      "settings": [{
          "intra_op": int, "inter_op": int,          # the counts the child really had
          "requested": [int | None, int | None],     # None = torch's default
          "serial": STATS | None, "forked": STATS | None,
          "speedup": float | None,                   # serial median / forked median
          "speedup_paired": float | None,            # median of serial_i / forked_i over the
                                                     # rounds: robust when the load shifts mid-run
          "outputs_match": bool | None,
          "cpu_count": int, "load_avg": [1 min, 5 min, 15 min] | None,
          "other_load": float | None,   # CPUs other processes kept busy during the timing
                                         # (/proc/stat; Linux only) - 1.0 on 2 CPUs = 1 left
          "child_s": float,                          # wall time of the child process
          "error": None | str,                       # one line: exception, crash, timeout
      }, ...],
      "best_setting": {"intra_op", "inter_op", "speedup", "index"} | None,
      "profile": {                                   # only when profile=True
          "intra_op": int, "inter_op": int,
          "chrome_trace": dict,                      # torch.profiler's Chrome/Perfetto JSON
          "tasks": [{"lane": int,                    # 0 = the calling (main) thread
                     "name": str,                    # "forward", "<forked function>", ...
                     "start_us": float,              # from the start of the call
                     "dur_us": float,
                     "label": str,                   # e.g. "cell_f: LSTM", else "<forked function>"
                     "site": "file.py:LINE" | None}],   # the fork call that started the task
          "error": None | str,
      },
    }

    STATS = {"median_s", "min_s", "max_s", "spread_s" (interquartile range),
             "cpu_median_s" (process CPU time per call, all threads),
             "cpu_per_wall" (cpu_median_s / median_s: about 1.0 = no two threads ran at once),
             "runs" [s, ...]}

Default thread settings (:func:`default_settings`), with P = usable CPUs:
``(default, default)`` - what the user's process gets (intra-op = cores,
inter-op = cores); ``(1, P)`` - intra-op parallelism off, so forked tasks are
what fills the cores (on 2 cores the LSTM ensemble went from 1.0-1.2x with
the default to 1.5-1.9x here); ``(1, 2P)`` - more inter-op threads than cores,
because a waiting task's continuation and nested forks need pool threads too
(``(1, 4)`` was the best setting measured on 2 cores).
"""
from __future__ import annotations

import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import torch

from ..errors import IrvizError, UsageError
from .capture import MODES

__all__ = ["measure", "profile", "default_settings", "build_serial_baseline",
           "SerialBaseline", "BaselineError", "fork_site_labels", "tasks_from_trace",
           "summarize", "outputs_equal", "machine_facts", "run_child", "OtherLoad"]

CHILD_MODULE = "irviz.frontends.measure_child"
#: the child writes ``irviz-measure: phase=NAME`` lines to stderr; timeouts name the phase
PHASE_PREFIX = "irviz-measure: phase="
#: how long the profiled child sleeps after the call before stopping the profiler
PROFILE_SETTLE_S = 0.05
_REPO_ROOT = str(Path(__file__).resolve().parent.parent.parent)

Setting = tuple  # (intra_op | None, inter_op | None)


# --------------------------------------------------------------------------- machine


def usable_cpus() -> int:
    """CPUs this process may run on (the affinity mask, else os.cpu_count())."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def machine_facts() -> dict:
    try:
        load = [round(v, 2) for v in os.getloadavg()]
    except (AttributeError, OSError):
        load = None
    return {"cpu_count": usable_cpus(), "load_avg": load, "torch_version": torch.__version__}


def _host_ticks() -> tuple[int, int] | None:
    """(busy, total) clock ticks of all CPUs since boot, from /proc/stat (Linux), else None."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            fields = [int(v) for v in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    if len(fields) < 5:
        return None
    idle = fields[3] + fields[4]  # idle + iowait
    total = sum(fields[:8])       # without guest time (already counted in user)
    return total - idle, total


class OtherLoad:
    """How many CPUs *other* processes kept busy while a block ran (Linux; else None).

    ``(host busy CPU time - this process's CPU time) / wall time``: on a shared
    machine, 1.0 on a 2-CPU box means only one CPU was left for the measurement.
    """

    def __init__(self, include_children: bool = False):
        #: count this process's finished children as its own (a benchmark's tool runs)
        self.include_children = include_children

    def _own_cpu(self) -> float:
        own = time.process_time()
        if self.include_children:
            import resource
            kids = resource.getrusage(resource.RUSAGE_CHILDREN)
            own += kids.ru_utime + kids.ru_stime
        return own

    def __enter__(self) -> "OtherLoad":
        self.value: float | None = None
        self._ticks = _host_ticks()
        self._cpu = self._own_cpu()
        self._wall = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        end = _host_ticks()
        wall = time.perf_counter() - self._wall
        own = self._own_cpu() - self._cpu
        if self._ticks is None or end is None or wall <= 0:
            return
        try:
            hz = os.sysconf("SC_CLK_TCK")
        except (AttributeError, ValueError, OSError):
            hz = 100
        busy = (end[0] - self._ticks[0]) / hz
        self.value = round(max(busy - own, 0.0) / wall, 2)


def default_settings(cpu_count: int | None = None) -> list[Setting]:
    """``[(default, default), (1, P), (1, 2P)]`` (see the module docstring)."""
    p = cpu_count or usable_cpus()
    out: list[Setting] = []
    for s in [(None, None), (1, p), (1, 2 * p)]:
        if s not in out:
            out.append(s)
    return out


# --------------------------------------------------------------------------- statistics


def summarize(runs: list[float], cpu: list[float] | None = None) -> dict:
    """Median, min, max, interquartile range (``spread_s``) of per-call times."""
    runs = [float(r) for r in runs]
    if len(runs) >= 2:
        q1, _, q3 = statistics.quantiles(runs, n=4, method="inclusive")
        spread = q3 - q1
    else:
        spread = 0.0
    out = {"median_s": statistics.median(runs), "min_s": min(runs), "max_s": max(runs),
           "spread_s": spread, "runs": runs}
    if cpu:
        out["cpu_median_s"] = statistics.median(cpu)
        out["cpu_per_wall"] = round(out["cpu_median_s"] / out["median_s"], 3) \
            if out["median_s"] > 0 else None
    return out


def outputs_equal(a: Any, b: Any) -> bool:
    """``torch.allclose`` on every tensor of two (nested) outputs; ``==`` on the rest."""
    if isinstance(a, torch._C.Future) and isinstance(b, torch._C.Future):
        return outputs_equal(a.wait(), b.wait())  # a model may return futures
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return False
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.is_floating_point() or a.is_complex():
            return bool(torch.allclose(a, b, equal_nan=True))
        return bool(torch.equal(a, b))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(outputs_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(outputs_equal(a[k], b[k]) for k in a)
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - an object without a usable ==
        return False


# --------------------------------------------------------------------------- serial baseline


class BaselineError(Exception):
    """No serial baseline could be built for the model (the message says why)."""


def _fork_nodes(block: Any) -> list:
    """Every ``prim::fork`` in a graph or block, including nested If/Loop blocks
    (not inside fork subgraphs)."""
    out = []
    for node in block.nodes():
        if node.kind() == "prim::fork":
            out.append(node)
        for sub in node.blocks():
            out.extend(_fork_nodes(sub))
    return out


_SOURCE = re.compile(r'File "([^"]+)", line (\d+)')


def _site(node: Any) -> tuple[str, int] | None:
    m = _SOURCE.search(node.sourceRange() or "")
    return (m.group(1), int(m.group(2))) if m else None


def _attr_path(value: Any) -> str | None:
    """``models.0`` for a value made by a chain of ``prim::GetAttr`` from ``self``."""
    names = []
    node = value.node()
    while node.kind() == "prim::GetAttr":
        names.append(node.s("name"))
        node = node.inputsAt(0).node()
    return ".".join(reversed(names)) or None


def _short_type(value: Any) -> str:
    return str(value.type()).rsplit(".", 1)[-1]


def _callee(fork: Any) -> str:
    """What a fork runs, read from its (not yet inlined) subgraph."""
    sub = fork.g("Subgraph")
    sub_inputs = list(sub.inputs())
    fork_inputs = list(fork.inputs())
    for node in sub.nodes():
        kind = node.kind()
        if kind == "prim::Constant":
            continue
        if kind == "prim::CallFunction":
            fn = node.inputsAt(0).node()
            if fn.kind() == "prim::Constant" and fn.hasAttribute("name"):
                return fn.s("name")
            return "function"
        if kind == "prim::CallMethod":
            obj = node.inputsAt(0)
            path = None
            for i, v in enumerate(sub_inputs):
                if v.unique() == obj.unique() and i < len(fork_inputs):
                    path = _attr_path(fork_inputs[i])
            method = re.sub(r"__\d+$", "", node.s("name"))  # LSTM's overloads: forward__0
            what = _short_type(obj) + ("" if method == "forward" else f".{method}")
            return f"{path}: {what}" if path else what
        return kind.split("::", 1)[-1]
    return "task"


def _merge_labels(labels: list[str]) -> str:
    """One label for the forks of one source line (ModuleList loops are unrolled)."""
    unique = list(dict.fromkeys(labels))
    if len(unique) == 1:
        return unique[0]
    parts = [u.split(": ", 1) for u in unique]
    if all(len(p) == 2 for p in parts) and len({p[1] for p in parts}) == 1:
        paths = [p[0].rsplit(".", 1) for p in parts]
        if all(len(p) == 2 for p in paths) and len({p[0] for p in paths}) == 1:
            return f"{paths[0][0]}.*: {parts[0][1]}"
    return " / ".join(unique)


def deep_inline(graph: Any, sites: dict | None = None) -> None:
    """Inline every call of ``graph`` in place, also inside fork subgraphs (copied first).

    When ``sites`` is a dict, record ``(file, line) -> [callee label, ...]`` for every
    fork that has a source range (traced forks have none).
    """
    torch._C._jit_pass_inline(graph)
    for fork in _fork_nodes(graph):
        if sites is not None:
            where = _site(fork)
            if where is not None:
                sites.setdefault(where, []).append(_callee(fork))
        sub = fork.g("Subgraph").copy()
        deep_inline(sub, sites)
        fork.g_("Subgraph", sub)


def _is_identity(sub: Any) -> bool:
    ins, outs = list(sub.inputs()), list(sub.outputs())
    return (not list(sub.nodes()) and len(ins) == 1 and len(outs) == 1
            and outs[0].unique() == ins[0].unique())


def serialize_forks(graph: Any) -> dict:
    """Rewrite every fork of a deep-inlined ``graph`` in place so its task runs inline.

    Returns ``{"forks", "inlined", "completed"}`` (see the module docstring).
    """
    stats = {"forks": 0, "inlined": 0, "completed": 0}
    while True:
        todo = [f for f in _fork_nodes(graph) if not _is_identity(f.g("Subgraph"))]
        if not todo:
            break
        fork = todo[0]
        stats["forks"] += 1
        with graph.insert_point_guard(fork):
            [result] = graph.insertGraph(fork.g("Subgraph"), list(fork.inputs()))
        users = [use.user for use in fork.output().uses()]
        if all(u.kind() == "aten::wait" for u in users):
            for wait in users:
                wait.output().replaceAllUsesWith(result)
                wait.destroy()
            fork.destroy()
            stats["inlined"] += 1
        else:
            identity = torch._C.Graph()
            value = identity.addInput()
            value.setType(result.type())
            identity.registerOutput(value)
            fork.removeAllInputs()
            fork.addInput(result)
            fork.g_("Subgraph", identity)
            stats["completed"] += 1
    graph.lint()
    return stats


class SerialBaseline:
    """The serial version of a scripted model: ``baseline(*inputs)``."""

    def __init__(self, fn: Callable, description: str, info: dict):
        self.fn = fn
        self.description = description
        self.info = info

    def __call__(self, *inputs: Any) -> Any:
        return self.fn(*inputs)


def build_serial_baseline(scripted: Any) -> SerialBaseline:
    """A serial baseline of a ScriptModule / ScriptFunction (see the module docstring).

    Raises :class:`BaselineError` when the graph cannot be rewritten or compiled.
    """
    is_module = isinstance(scripted, torch.jit.ScriptModule)
    try:
        graph = scripted.graph.copy()
    except Exception as exc:  # noqa: BLE001
        raise BaselineError(f"its graph cannot be copied ({_one_line(exc)})") from None
    try:
        deep_inline(graph)
        if not _fork_nodes(graph):
            info = {"method": "model-has-no-forks", "forks": 0, "inlined": 0, "completed": 0}
            return SerialBaseline(scripted, "the model has no prim::fork: the serial "
                                            "baseline is the model itself", info)
        stats = serialize_forks(graph)
        fn = torch._C._create_function_from_graph("irviz_serial_forward", graph)
    except Exception as exc:  # noqa: BLE001 - torch raises RuntimeError & co.
        raise BaselineError(f"rewriting its forks failed: {_one_line(exc)}") from None
    if is_module:
        obj = scripted._c
        call = lambda *inputs: fn(obj, *inputs)  # noqa: E731
    else:
        call = fn
    method = "inline" if stats["completed"] == 0 else "inline+completed"
    text = (f"copy of the {'forward ' if is_module else ''}graph with calls inlined; "
            f"{stats['forks']} fork(s) run inline in the caller: {stats['inlined']} "
            f"direct fork/wait pair(s) removed")
    if stats["completed"]:
        text += (f", {stats['completed']} fork(s) whose futures go elsewhere (lists, loops, "
                 f"returns) kept as already-completed futures (identity tasks)")
    return SerialBaseline(call, text, {"method": method, **stats})


def fork_site_labels(scripted: Any) -> dict[tuple[str, int], str]:
    """``(file, line) -> label`` of every fork site of a scripted model (e.g. ``cell_f: LSTM``)."""
    sites: dict[tuple[str, int], list[str]] = {}
    try:
        graph = scripted.graph.copy()
        deep_inline(graph, sites)
    except Exception:  # noqa: BLE001 - labels are a nicety
        return {}
    return {k: _merge_labels(v) for k, v in sites.items()}


# --------------------------------------------------------------------------- profile


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
                     top_label: str | None = None) -> list[dict]:
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
    tasks = [{"lane": 0, "name": top["name"], "start_us": 0.0, "dur_us": float(top.get("dur", 0)),
              "label": top_label or top["name"], "site": None}]
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
        tasks.append({"lane": lane, "name": e["name"], "start_us": round(start - t0, 3),
                      "dur_us": float(e.get("dur", 0)), "label": label, "site": site})
    return tasks


# --------------------------------------------------------------------------- child processes


def _one_line(exc: BaseException) -> str:
    """``Type: message`` in one line; for TorchScript errors the underlying exception."""
    text = str(exc).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if "The following operation failed in the TorchScript interpreter" in text and lines:
        last = lines[-1]
        last = last.removeprefix("builtins.")
        return last if ":" in last else f"{type(exc).__name__}: {last}"
    first = lines[0] if lines else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def _signal_name(returncode: int) -> str | None:
    num = -returncode if returncode < 0 else (returncode - 128 if returncode > 128 else None)
    if num is None:
        return None
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


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
    """Run ``python -m module *args`` with ``payload`` (JSON on stdin) and a hard deadline.

    Returns ``(result, error, seconds)``: ``result`` is the JSON object the child
    printed on stdout (or None), ``error`` a one-line reason when the child timed
    out, crashed or printed nothing usable. The child is killed at the deadline.
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = _REPO_ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("PYTHONWARNINGS", "ignore")
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", module, *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=cwd or os.getcwd(), env=env, start_new_session=True)
    try:
        out, err = proc.communicate(json.dumps(payload), timeout=max(timeout, 0.1))
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        phase = _last_phase(err or "")
        where = f" during {phase}" if phase else ""
        return None, (f"timed out after {timeout:.1f} s{where}; the child process was killed"), \
            time.perf_counter() - started
    except BaseException:
        proc.kill()
        proc.communicate()
        raise
    elapsed = time.perf_counter() - started
    result = None
    for line in reversed((out or "").splitlines()):
        if line.startswith("{"):
            try:
                result = json.loads(line)
            except ValueError:
                result = None
            break
    rc = proc.returncode
    if rc != 0:
        sig = _signal_name(rc)
        phase = _last_phase(err or "")
        where = f" during {phase}" if phase else ""
        if result is not None and phase == "done":
            # the result was complete; torch's pool threads sometimes abort at exit
            result.setdefault("notes", []).append(
                f"the child exited with {sig or f'code {rc}'} after reporting its result")
            return result, None, elapsed
        reason = (f"the child process crashed with {sig}{where}" if sig
                  else f"the child process exited with code {rc}{where}")
        tail = _last_stderr_line(err or "")
        return None, reason + (f": {tail}" if tail else ""), elapsed
    if result is None:
        tail = _last_stderr_line(err or "")
        return None, "the child process printed no result" + (f": {tail}" if tail else ""), elapsed
    return result, None, elapsed


def _raise_user_error(info: dict) -> None:
    from .. import errors

    cls = getattr(errors, info.get("class", ""), None)
    if not (isinstance(cls, type) and issubclass(cls, IrvizError)):
        cls = IrvizError
    raise cls(info.get("message", "measuring failed"), hint=info.get("hint"),
              detail=info.get("detail"))


# --------------------------------------------------------------------------- public API


def _check_setting(s: Any) -> Setting:
    if not (isinstance(s, (tuple, list)) and len(s) == 2):
        raise UsageError(f"a thread setting must be a pair (intra_op, inter_op), got {s!r}",
                         hint="e.g. settings=[(None, None), (1, 2)]; None means torch's default")
    for v in s:
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
            raise UsageError(f"thread counts must be positive integers or None, got {s!r}")
    return (s[0], s[1])


def _check_mode(mode: str) -> str:
    """A capture mode; ``"archive"`` (what a capture of a .pt file reports) means as loaded."""
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
            warmup: int = 3, timeout: float = 120.0) -> dict:
    """Profile one forked call in a child process (the ``"profile"`` part of :func:`measure`).

    Returns ``{"intra_op", "inter_op", "chrome_trace", "tasks", "error"}``; a crash or
    timeout of the child gives ``"error"`` (and no trace), never an exception.
    """
    setting = _check_setting((intra_op, inter_op))
    mode = _check_mode(mode)
    result, error, _ = run_child(_payload(spec, mode, inputs, setting, action="profile",
                                          warmup=warmup, settle_s=PROFILE_SETTLE_S), timeout)
    if result is not None and result.get("user_error"):
        _raise_user_error(result["user_error"])
    if result is None:
        return {"intra_op": intra_op, "inter_op": inter_op, "chrome_trace": None, "tasks": [],
                "error": f"profiling failed: {error}"}
    result.setdefault("error", None)
    return result


def measure(spec: str, mode: str = "script", inputs: str | None = None, *,
            settings: list[tuple[int, int]] | None = None,
            warmup: int = 3, repeats: int = 7, timeout: float = 300.0,
            profile: bool = True) -> dict:
    """Time ``spec``'s model forked vs its serial baseline in one child per thread setting.

    ``spec`` names one model (README: Targets); ``inputs`` is an ``--inputs``
    expression (else the file's ``example_inputs``). ``settings`` are
    ``(intra_op, inter_op)`` pairs, ``None`` meaning torch's default
    (default: :func:`default_settings`). ``timeout`` is the wall-clock budget of
    the whole measurement in seconds: each child gets what is left, and a child
    still running at the deadline is killed - its setting, and the settings not
    yet started, get an ``"error"``. Returns the dict described in the module
    docstring. Errors in the user's spec, inputs or capture raise
    :class:`irviz.errors.IrvizError` subclasses; failures of the model at run
    time, crashes and timeouts are reported in the result.
    """
    mode = _check_mode(mode)
    if not isinstance(warmup, int) or warmup < 0:
        raise UsageError(f"warmup must be an integer >= 0, got {warmup!r}")
    if not isinstance(repeats, int) or repeats < 1:
        raise UsageError(f"repeats must be an integer >= 1, got {repeats!r}")
    if not (isinstance(timeout, (int, float)) and timeout > 0):
        raise UsageError(f"timeout must be a positive number of seconds, got {timeout!r}")
    chosen = [_check_setting(s) for s in (settings if settings is not None else default_settings())]
    if not chosen:
        raise UsageError("no thread settings given", hint="leave settings=None for the default matrix")

    facts = machine_facts()
    deadline = time.monotonic() + timeout
    report: dict[str, Any] = {
        "spec": spec, "model": None, "mode": None, "torch_version": facts["torch_version"],
        "cpu_count": facts["cpu_count"], "warmup": warmup, "repeats": repeats,
        "baseline": None, "baseline_info": None, "baseline_error": None,
        "outputs_match": None, "settings": [], "best_setting": None,
    }
    for setting in chosen:
        row: dict[str, Any] = {"intra_op": setting[0], "inter_op": setting[1],
                               "requested": list(setting), "serial": None, "forked": None,
                               "speedup": None, "speedup_paired": None, "outputs_match": None,
                               "cpu_count": facts["cpu_count"], "load_avg": None,
                               "other_load": None, "child_s": 0.0, "error": None}
        left = deadline - time.monotonic()
        if left <= 0.5:
            row["error"] = f"not run: the time budget of {timeout:g} s was used up"
            report["settings"].append(row)
            continue
        result, error, elapsed = run_child(
            _payload(spec, mode, inputs, setting, action="time", warmup=warmup,
                     repeats=repeats), left)
        row["child_s"] = round(elapsed, 3)
        if result is not None and result.get("user_error"):
            _raise_user_error(result["user_error"])
        if result is None:
            row["error"] = error
            report["settings"].append(row)
            continue
        for key in ("model", "mode"):
            if result.get(key) and report[key] is None:
                report[key] = result[key]
        if result.get("baseline") and report["baseline"] is None:
            report["baseline"] = result["baseline"]
            report["baseline_info"] = result.get("baseline_info")
        if result.get("baseline_error") and report["baseline_error"] is None:
            report["baseline_error"] = result["baseline_error"]
        for key in ("intra_op", "inter_op", "serial", "forked", "speedup", "speedup_paired",
                    "outputs_match",
                    "cpu_count", "load_avg", "other_load", "error"):
            if key in result:
                row[key] = result[key]
        if result.get("notes"):
            row["notes"] = result["notes"]
        report["settings"].append(row)

    matches = [r["outputs_match"] for r in report["settings"] if r["outputs_match"] is not None]
    report["outputs_match"] = all(matches) if matches else None
    ranked = [(i, r) for i, r in enumerate(report["settings"])
              if r["error"] is None and r["speedup"] is not None]
    if ranked:
        i, best = max(ranked, key=lambda ir: ir[1]["speedup"])
        report["best_setting"] = {"intra_op": best["intra_op"], "inter_op": best["inter_op"],
                                  "speedup": best["speedup"], "index": i}

    if profile:
        report["profile"] = _profile_best(report, spec, mode, inputs, warmup, timeout, deadline)
    return report


def _profile_best(report: dict, spec: str, mode: str, inputs: str | None, warmup: int,
                  timeout: float, deadline: float) -> dict:
    ok = [(i, r) for i, r in enumerate(report["settings"])
          if r["error"] is None and r["forked"] is not None]
    if not ok:
        return {"chrome_trace": None, "tasks": [],
                "error": "not run: no thread setting was measured successfully"}
    if report["best_setting"] is not None:
        i = report["best_setting"]["index"]
    else:  # no baseline: the setting where the forked model was fastest
        i, _ = min(ok, key=lambda ir: ir[1]["forked"]["median_s"])
    requested = report["settings"][i]["requested"]
    left = deadline - time.monotonic()
    if left <= 0.5:
        return {"intra_op": requested[0], "inter_op": requested[1], "chrome_trace": None,
                "tasks": [], "error": f"not run: the time budget of {timeout:g} s was used up"}
    return profile(spec, mode, inputs, intra_op=requested[0], inter_op=requested[1],
                   warmup=min(warmup, 3), timeout=left)
