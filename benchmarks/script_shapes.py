"""Where a script-mode render with example inputs spends its time (issue 16, part 2).

    .venv/bin/python benchmarks/script_shapes.py                      # the test-suite detector
    eval "$(../shared/tools/torchvision-cpu/build.sh build/cudastub)"
    PYTHONPATH=build/corpus-site .venv/bin/python benchmarks/script_shapes.py  # + fasterrcnn

(Two checkouts side by side: ``benchmarks/script_render_ab.py``.)

Two models: ``tests/corpus/detection_style.py:make_detector()`` (in the test suite) and,
when torchvision imports, ``fasterrcnn_resnet50_fpn(weights=None, weights_backbone=None)``
in eval mode on ``[torch.rand(3, 320, 320)]`` (~10,700 IR nodes scripted; the model itself
resizes the image to 800x800). In ONE process, interleaved (a warm-up round, then
``--rounds``), for each model:

* ``script``: bare ``torch.jit.script`` (the floor the render is compared with);
* ``eager``: one plain forward under ``no_grad``; ``scripted run``: one run of the scripted
  module (the capture runs it once to check the example inputs);
* ``recorded run``: :func:`irviz.frontends.compiled_run.run_compiled`, the capture's one
  forward: an instrumented copy of the scripted module (copied, instrumented, run);
* irviz stage by stage: ``capture`` (``capture(target, "script", inputs)``: script +
  recorded run), ``graph+analyses`` (``pipeline.analysed_graph``), ``dot``
  (``Visualization.dot()``), ``layout`` (``engines.render(dot, "svg", "dot")``) and
  ``render``, their sum.

The warm-up round is shown as "first": the cold figures a CLI process pays (TorchScript
compiles every module type once per process, and a scripted function's first runs profile
and optimize it; later ``torch.jit.script`` calls of the same model reuse both).

Medians (min-max spread), and the CPU load of other processes while it ran: on a shared
2-CPU machine the absolute figures move a lot; the ratios taken side by side move less.
Model construction is not timed.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, HostLoad, fmt_s  # noqa: E402

DETECTOR = "tests/corpus/detection_style.py:make_detector()"


def _detector():
    from irviz.frontends.inputs import resolve_inputs
    from irviz.frontends.loader import load

    [target] = load(str(ROOT / DETECTOR)).targets
    return target, resolve_inputs(target, None)


def _fasterrcnn():
    import torch
    import torchvision

    from irviz.frontends.inputs import resolve_inputs
    from irviz.frontends.loader import target_of

    torch.manual_seed(0)
    model = torchvision.models.detection.fasterrcnn_resnet50_fpn(
        weights=None, weights_backbone=None).eval()
    target = target_of(model)
    return target, resolve_inputs(target, ([torch.rand(3, 320, 320)],))


def _stages(target, inputs) -> dict:
    """One round of every stage on one model: name -> seconds."""
    import torch

    from irviz.analyses import pipeline
    from irviz.api import Visualization
    from irviz.frontends.capture import capture
    from irviz.frontends.compiled_run import run_compiled
    from irviz.render import engines

    t: dict[str, float] = {}
    cpu: dict[str, float] = {}

    def timed(name, fn):
        start, own = time.perf_counter(), time.process_time()
        out = fn()
        t[name], cpu[name] = time.perf_counter() - start, time.process_time() - own
        return out

    model = target.obj
    scripted = timed("script", lambda: torch.jit.script(model))
    with torch.no_grad():
        timed("eager", lambda: inputs.call(model))
        timed("scripted run", lambda: inputs.call(scripted))
    timed("recorded run", lambda: run_compiled(scripted, inputs))
    cap = timed("capture", lambda: capture(target, "script", inputs))
    G = timed("graph+analyses", lambda: pipeline.analysed_graph(cap))
    view = Visualization(cap, G)
    dot = timed("dot", view.dot)
    timed("layout", lambda: engines.render(dot, "svg", "dot"))
    for d in (t, cpu):
        d["render"] = sum(d[k] for k in ("capture", "graph+analyses", "dot", "layout"))
    return {"wall": t, "cpu": cpu, "ir nodes": G.number_of_nodes()}


def _fmt(values: list[float]) -> str:
    m = statistics.median(values)
    spread = (max(values) - min(values)) / 2 / m if m and len(values) > 1 else 0.0
    return f"{fmt_s(m)} ±{spread * 100:.0f}%"


def _table(runs: list[dict], first: dict) -> list[str]:
    """One model's stages: wall and CPU time, each next to the bare script's; and the
    warm-up round's wall time (what a CLI process pays: nothing compiled or run yet)."""
    names = list(runs[0]["wall"])
    lines = [f"  {'stage':16s} {'wall':>14s} {'÷ script':>9s} {'CPU':>14s} {'÷ script':>9s}"
             f" {'first (wall)':>13s}"]
    for name in names:
        row = f"  {name:16s}"
        for meter in ("wall", "cpu"):
            values = [run[meter][name] for run in runs]
            per_round = statistics.median(run[meter][name] / run[meter]["script"]
                                          for run in runs)
            row += f" {_fmt(values):>14s} {per_round:8.2f}x"
        lines.append(row + f" {fmt_s(first['wall'][name]):>13s}")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="measured rounds after a warm-up")
    ap.add_argument("--models", default="detector,fasterrcnn")
    ap.add_argument("--threads", type=int, help="torch intra-op threads (default: torch's)")
    args = ap.parse_args(argv)
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore")
    models = {}
    for key in args.models.split(","):
        try:
            models[key] = _detector() if key == "detector" else _fasterrcnn()
        except ImportError as exc:
            print(f"{key}: skipped ({exc})")
    rounds: dict[str, list[dict]] = {key: [] for key in models}
    first: dict[str, list[dict]] = {}
    with HostLoad() as load:
        for r in range(args.rounds + 1):
            for key, (target, inputs) in models.items():
                times = _stages(target, inputs)
                (rounds[key] if r else first.setdefault(key, [])).append(times)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} intra-op threads; "
          f"other processes' load while it ran: {load.value} CPUs; "
          f"{args.rounds} rounds after a warm-up; medians ± half the min-max range")
    for key, runs in rounds.items():
        if runs:
            print(f"\n{key} ({runs[0]['ir nodes']:,} IR nodes, scripted)")
            print("\n".join(_table(runs, first[key][0])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
