"""Run a module like ``python -m MODULE ARGS`` and record this process's peak RSS.

    python benchmarks/peak_rss.py irviz render samples/decision_gate.py:MyCell -o x.svg

At exit it writes ``VmHWM`` (kB, from /proc/self/status) to the file named by
``$BENCH_HWM_FILE``. The harness uses it because ``ru_maxrss`` of a child started by
fork/vfork + exec also counts the parent's pages at the time of the exec (Linux keeps
the larger of the old and the new address space's high-water mark), so it would show
the harness's own size, not the child's. Child processes of this one (e.g. ``dot``) are
not counted.
"""
import atexit
import os
import runpy
import sys


def _write_peak() -> None:
    target = os.environ.get("BENCH_HWM_FILE")
    if not target:
        return
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    with open(target, "w", encoding="ascii") as out:
                        out.write(line.split()[1])
                    return
    except OSError:
        pass


if __name__ == "__main__":
    atexit.register(_write_peak)
    module = sys.argv[1]
    sys.argv = [module, *sys.argv[2:]]
    sys.path.pop(0)  # this script's directory; `python -m` would put the cwd there
    sys.path.insert(0, os.getcwd())
    runpy.run_module(module, run_name="__main__", alter_sys=True)
