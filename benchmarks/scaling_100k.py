"""Issue 32: irviz's stages on ~10k, ~25k and ~100k IR nodes against torch's bare trace.

    .venv/bin/python benchmarks/scaling_100k.py              # 2 interleaved rounds (~3 min)
    .venv/bin/python benchmarks/scaling_100k.py --blocks 588 --rounds 1 --profile out.prof

The model is ``benchmarks/models.py:mlp_stack(n)``: ``n`` LayerNorm-MLP residual blocks
(``x + fc2(gelu(fc1(ln(x))))``, a user module per block, 17 IR nodes each), traced. In
ONE process, for every size and round (sizes interleaved, the order reversed every other
round, since the machine is shared): torch's bare trace (``torch.jit._get_trace_graph``,
the tracer irviz's capture drives), then ``irviz render -v``'s stages as the
:class:`~irviz.workspace.Workspace` times them (capture, graph, analyses, DOT, layout of
the drawn picture), each stage's µs per IR node, and the process's peak RSS over that
size's run (``VmHWM``, reset before it through ``/proc/self/clear_refs``: it starts again
from the current RSS, so a later round carries what earlier runs left allocated). The
ratios are per round: render / bare trace of the same model in the same round. Prints two
markdown tables, wall and CPU time of this process (less sensitive to other jobs on a
shared machine), then the goals checked on the CPU-time medians of the rounds (render <= 2x
the bare trace at the largest size, each stage's per-node cost there <= 1.2x that at the
smallest, peak <= 2 GB); ``--json`` writes the raw figures.

torch runs on one thread (``--threads``): on a shared 2-CPU machine its two-thread pool
makes every parallelised op (layer_norm, gelu) wait milliseconds for a busy CPU (50
gelu calls on a 2x8 tensor: 590 ms on two threads, 1 ms on one), which would bury
irviz's own cost in the bare trace's.
"""
from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path
from statistics import median

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import vm_hwm_kb  # noqa: E402

BLOCKS = (588, 1470, 5882)     # 17 IR nodes a block + 2: 10k, 25k, 100k IR nodes
STAGES = ("capture", "graph", "analyses", "dot", "layout")


def _reset_peak() -> bool:
    """Start a new ``VmHWM`` (Linux: writing 5 to clear_refs resets the peak RSS)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def bare_trace(model, inputs) -> tuple[float, float]:
    """(wall, CPU) seconds of torch's trace alone."""
    import torch

    t, c = time.perf_counter(), time.process_time()
    torch.jit._get_trace_graph(model, tuple(inputs.flat))
    return time.perf_counter() - t, time.process_time() - c


def _cpu_stages():
    """irviz's stage timer, also keeping each stage's CPU time (this process's): on a
    shared machine the wall time carries the other jobs' load, the CPU time much less."""
    from contextlib import contextmanager

    from irviz.progress import Stages

    class CpuStages(Stages):
        def __init__(self):
            super().__init__(interactive=False)
            self.cpu: list[tuple[str, float]] = []

        @contextmanager
        def stage(self, name):
            c = time.process_time()
            try:
                with super().stage(name):
                    yield
            finally:
                self.cpu.append((name, time.process_time() - c))

    return CpuStages()


def render_stages(spec: str, target) -> tuple[dict, dict, int, int]:
    """One ``irviz render --mode trace -v`` of ``target`` in this process: stage wall
    and CPU times, IR nodes, drawn nodes."""
    from irviz.render import engines
    from irviz.workspace import Workspace

    ws = Workspace(stages=_cpu_stages())
    view = ws.view(target, "trace")
    with ws.stage("dot"):
        dot = view.dot()
    with ws.stage("layout"):
        engines.render(dot, "svg", "dot")
    times = {name.split(" ")[0]: t for name, t in ws.stages.times}
    cpu = {name.split(" ")[0]: t for name, t in ws.stages.cpu}
    return times, cpu, view.graph.number_of_nodes(), view.drawn_nodes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--blocks", default=",".join(map(str, BLOCKS)),
                    help="block counts (default: %(default)s)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--profile", help="write a cProfile of the irviz stages (last size, "
                    "last round) to this file")
    ap.add_argument("--json", help="write the raw figures to this file")
    ap.add_argument("--threads", type=int, default=1, help="torch's intra-op threads "
                    "(default: %(default)s, see above)")
    args = ap.parse_args(argv)
    import torch
    torch.set_num_threads(args.threads)
    sizes = [int(s) for s in args.blocks.split(",")]

    from irviz.frontends.inputs import resolve_inputs
    from irviz.frontends.loader import load
    from irviz.gc_pause import freeze_bulk_survivors, freeze_loaded_objects

    targets = {}
    for n in sizes:
        spec = f"benchmarks/models.py:mlp_stack({n})"
        [target] = load(spec).targets
        targets[n] = (spec, target, resolve_inputs(target, None))
    freeze_loaded_objects()   # as `irviz render` does once the model is loaded,
    freeze_bulk_survivors()   # and of one model, its stages' survivors
    # warm-up: torch's and irviz's first-call costs (lazy imports, op registrations)
    render_stages(*targets[sizes[0]][:2])
    runs: dict[int, list[dict]] = {n: [] for n in sizes}
    for r in range(args.rounds):
        for n in (sizes if r % 2 == 0 else sizes[::-1]):
            spec, target, inputs = targets[n]
            gc.collect()
            _reset_peak()
            bare, bare_cpu = bare_trace(target.obj, inputs)
            gc.collect()
            prof = None
            if args.profile and r == args.rounds - 1 and n == sizes[-1]:
                import cProfile
                prof = cProfile.Profile()
                prof.enable()
            stages, cpu, ir_nodes, drawn = render_stages(spec, target)
            if prof is not None:
                prof.disable()
                prof.dump_stats(args.profile)
            run = {"round": r, "bare": bare, "stages": stages, "ir_nodes": ir_nodes,
                   "drawn": drawn, "peak_kb": vm_hwm_kb(), "bare_cpu": bare_cpu, "cpu": cpu}
            runs[n].append(run)
            print(f"round {r} blocks {n}: {ir_nodes} IR nodes, bare {bare:.2f} s, "
                  + ", ".join(f"{s} {stages.get(s, 0):.2f}" for s in STAGES)
                  + f", render/bare {sum(stages.values()) / bare:.2f}x, "
                  f"peak {run['peak_kb'] / 1024:.0f} MB", flush=True)
    print()
    print("Wall time:\n")
    print(table(runs))
    print("\nCPU time of this process:\n")
    print(table(runs, cpu=True))
    print("\nThe goals, on the CPU-time medians of the rounds:\n")
    print(goals(runs))
    if args.json:
        Path(args.json).write_text(json.dumps(runs, indent=1))
    return 0


def table(runs: dict[int, list[dict]], cpu: bool = False) -> str:
    """One row per size and round: seconds and µs/IR node of each stage, the ratio
    (``cpu``: of the CPU times)."""
    head = ("| blocks | IR nodes | round | bare trace | " + " | ".join(STAGES)
            + " | render total | render / bare | peak RSS |")
    rows = [head, "|" + "---|" * (head.count("|") - 1)]
    for n, rs in runs.items():
        for run in rs:
            st, k = run["cpu" if cpu else "stages"], run["ir_nodes"]
            bare = run["bare_cpu" if cpu else "bare"]
            cells = [f"{st.get(s, 0):.2f} s ({st.get(s, 0) / k * 1e6:.0f} µs)" for s in STAGES]
            total = sum(st.values())
            rows.append(f"| {n} | {k} | {run['round']} | {bare:.2f} s "
                        f"({bare / k * 1e6:.0f} µs) | " + " | ".join(cells)
                        + f" | {total:.2f} s | {total / bare:.2f}x | "
                        f"{run['peak_kb'] / 1024:.0f} MB |")
    return "\n".join(rows)


#: issue 32's goals: render / bare trace at the largest size, each stage's per-node cost at
#: the largest size over that at the smallest, peak RSS
MAX_RATIO, MAX_GROWTH, MAX_PEAK_MB = 2.0, 1.2, 2048


def goals(runs: dict[int, list[dict]]) -> str:
    """Each size's median µs/IR node of the bare trace and of each stage (CPU time: single
    rounds on a shared machine move by tens of percent), each stage's growth from the
    smallest size to the largest, and whether the goals are met."""
    def per_node(run: dict, stage: str | None) -> float:
        value = run["bare_cpu"] if stage is None else run["cpu"].get(stage, 0.0)
        return value / run["ir_nodes"] * 1e6

    shown = [s for s in STAGES if s != "layout"]   # a picture of a few nodes: no per-node cost
    sizes = list(runs)
    medians = {n: {s: median(per_node(r, s) for r in runs[n]) for s in [None, *shown]}
               for n in sizes}
    ratios = {n: median(sum(r["cpu"].values()) / r["bare_cpu"] for r in runs[n]) for n in sizes}
    head = "| blocks | bare trace | " + " | ".join(shown) + " | render / bare | peak RSS |"
    rows = [head, "|" + "---|" * (head.count("|") - 1)]
    for n in sizes:
        rows.append(f"| {n} | " + " | ".join(f"{medians[n][s]:.1f} µs" for s in [None, *shown])
                    + f" | {ratios[n]:.2f}x | {max(r['peak_kb'] for r in runs[n]) / 1024:.0f} MB |")
    said = "\n".join(rows)
    largest = max(sizes)
    verdicts = [f"render / bare at {largest} blocks: {ratios[largest]:.2f}x "
                f"({'met' if ratios[largest] <= MAX_RATIO else 'NOT met'}: <= {MAX_RATIO}x)"]
    if len(sizes) > 1:
        smallest = min(sizes)
        for s in [None, *shown]:
            growth = medians[largest][s] / medians[smallest][s]
            verdicts.append(f"{s or 'bare trace'}: {growth:.2f}x the per-node cost at "
                            f"{smallest} blocks"
                            + ("" if s is None else
                               f" ({'met' if growth <= MAX_GROWTH else 'NOT met'}: "
                               f"<= {MAX_GROWTH}x)"))
    peak = max(r["peak_kb"] for rs in runs.values() for r in rs) / 1024
    verdicts.append(f"peak RSS {peak:.0f} MB ({'met' if peak <= MAX_PEAK_MB else 'NOT met'}: "
                    f"<= {MAX_PEAK_MB} MB)")
    return said + "\n\n" + "\n".join(f"- {v}" for v in verdicts)


if __name__ == "__main__":
    sys.exit(main())
