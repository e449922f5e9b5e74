"""Trace capture with and without the TracedModule (issue 16): side by side in one process.

For each model, after a warm-up, ``--rounds`` interleaved rounds of: the capture alone
(``irviz.frontends.capture.capture(..., "trace")``) by the TracedModule route and by the
trace-graph route, then the whole in-process render (harness.run_irviz: capture, graph,
analyses, DOT, dot layout) by each. The TracedModule route is what trace mode does for a
model holding TorchScript; here it is forced by declaring every model unsupported.

    .venv/bin/python benchmarks/trace_capture.py [--rounds 5] [--models bert,gpt2,resnet18]
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
from harness import analysis_steps, run_irviz  # noqa: E402

from irviz.frontends import trace_graph  # noqa: E402
from irviz.frontends.capture import capture  # noqa: E402
from irviz.frontends.inputs import resolve_inputs  # noqa: E402
from irviz.frontends.loader import load  # noqa: E402

MODELS = {
    "bert": ("benchmarks/models.py:bert()", "token_ids()"),
    "gpt2": ("benchmarks/models.py:gpt2()", "token_ids()"),
    "resnet18": ("benchmarks/models.py:resnet18()", "torch.rand(1, 3, 224, 224)"),
}


@contextlib.contextmanager
def traced_module_route():
    """Every model counts as holding TorchScript: trace mode makes the TracedModule."""
    supported = trace_graph.supported
    trace_graph.supported = lambda obj: False
    try:
        yield
    finally:
        trace_graph.supported = supported


def timed(fn) -> tuple[float, float]:
    """Wall and CPU seconds (CPU: what the process used, steadier on a shared machine)."""
    gc.collect()
    start, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - start, time.process_time() - cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--threads", type=int, default=1,
                    help="torch's intra-op threads (the model's own compute is the same "
                         "for both routes; one thread keeps it from dominating the noise)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    steps = analysis_steps()
    for key in args.models.split(","):
        spec, expr = MODELS[key]
        [target] = load(spec).targets
        inputs = resolve_inputs(target, expr)
        routes = {"traced module": traced_module_route, "trace graph": contextlib.nullcontext}

        def cap_only(route):
            with routes[route]():
                cap = capture(target, "trace", inputs)
            assert (cap.trace_graph is None) == (route == "traced module")

        def render(route):
            with routes[route]():
                run_irviz(target, inputs, "trace", steps, wasm=False)

        times: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for rnd in range(args.rounds + 1):  # round 0: warm-up, not counted
            for what, fn in (("capture", cap_only), ("render", render)):
                for route in routes:
                    t = timed(lambda: fn(route))
                    if rnd:
                        times.setdefault((what, route), []).append(t)
        for what in ("capture", "render"):
            for clock, i in (("wall", 0), ("cpu", 1)):
                old = statistics.median(t[i] for t in times[(what, "traced module")])
                new = statistics.median(t[i] for t in times[(what, "trace graph")])
                print(f"{key:9} {what:8} {clock:4} traced module {old * 1e3:7.0f} ms   "
                      f"trace graph {new * 1e3:7.0f} ms   new/old {new / old:.2f}   "
                      f"(median of {args.rounds})", flush=True)


if __name__ == "__main__":
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        main()
