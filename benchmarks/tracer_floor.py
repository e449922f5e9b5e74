"""torch's tracer alone against torchview's whole run: the floor under issue 16's first target.

Issue 16 asks for irviz in-process <= torchview's expanded view on ResNet-18, BERT-base and
GPT-2 while drawing the TorchScript IR. Drawing the IR needs torch's tracer; torchview runs
the model once with hooks and draws what they saw. This times, interleaved in one process
(round 0 is a warm-up), on each model:

* ``tracer``: ``torch.jit._get_trace_graph`` alone - the bare tracer, no irviz code, no
  TracedModule (the route irviz's capture takes);
* ``irviz capture``: irviz's trace capture (the tracer plus scope names and warnings);
* ``irviz``: the whole in-process render (capture, graph, analyses, DOT, ``dot`` layout);
* ``torchview``: ``draw_graph(depth=inf, expand_nested=True)`` plus ``dot -Tsvg`` of its DOT;
* ``eager``: one forward under ``torch.no_grad()``, what any tool must at least spend.

    .venv/bin/python benchmarks/tracer_floor.py [--models resnet18,bert,gpt2] [--rounds 5]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

SPECS = {"resnet18": "benchmarks/models.py:resnet18()", "bert": "benchmarks/models.py:bert()",
         "gpt2": "benchmarks/models.py:gpt2()"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="resnet18,bert,gpt2")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()

    import torch
    from common import Call
    from harness import run_irviz, run_torchview, analysis_steps

    from irviz.frontends.capture import capture
    from irviz.frontends.inputs import resolve_inputs
    from irviz.frontends.loader import load

    steps = analysis_steps()
    for key in args.models.split(","):
        [target] = load(str(ROOT / SPECS[key])).targets
        inputs = resolve_inputs(target, None)
        call = Call.of(inputs)
        model = target.obj.eval()
        flat = tuple(call.args)

        def tracer():
            torch.jit._get_trace_graph(model, flat, strict=False)

        def eager():
            with torch.no_grad():
                model(*call.args, **call.kwargs)

        tools = {"eager": eager, "tracer": tracer,
                 "irviz capture": lambda: capture(target, "trace", inputs),
                 "irviz": lambda: run_irviz(target, inputs, "trace", steps, wasm=False),
                 "torchview": lambda: run_torchview(model, call, True)}
        times: dict[str, list[float]] = {k: [] for k in tools}
        for r in range(args.rounds + 1):
            for name, fn in tools.items():
                t = time.perf_counter()
                fn()
                if r:
                    times[name].append(time.perf_counter() - t)
        med = {k: statistics.median(v) for k, v in times.items()}
        tv = med["torchview"]
        print(f"{key}: " + ", ".join(f"{k} {v * 1e3:.0f} ms ({v / tv:.2f}x torchview)"
                                     for k, v in med.items()), flush=True)


if __name__ == "__main__":
    main()
