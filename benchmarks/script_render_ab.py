"""Script-mode render with example inputs, two checkouts side by side (issue 44, part 4).

    git worktree add ../base main        # or any checkout of the commit before a change
    eval "$(../shared/tools/torchvision-cpu/build.sh build/cudastub)"
    PYTHONPATH=build/corpus-site .venv/bin/python benchmarks/script_render_ab.py \\
        --before ../base --rounds 3

Each measurement is a fresh child process (``python -c``) with ``PYTHONPATH`` at one
checkout (``--before``; ``--after`` defaults to this one), so both import their own irviz
beside the same torch. In one invocation the two alternate, model by model and round by
round (the order flips every round), so the machine's load falls on both alike. A child
builds the model (not timed), then times ``visualize(model, mode="script", inputs=...)``
and the DOT writer (wall and CPU time: on a shared machine the CPU time moves less): once cold (what a CLI render pays: TorchScript compiles the model and
profiles its first runs) and twice warm (the best of them is shown). Layout is left out:
both checkouts hand the same Graphviz a picture of the same size.

Models: the seed's ``LSTMEnsemble`` (forks, LSTMs), ``tests/corpus/detection_style.py``'s
detector, timm's ``vit_tiny_patch16_224`` at ``img_size=64`` (a scriptable transformer
encoder; ``transformers``' BERT does not script: ``BertConfig.__init__`` has no source
TorchScript can read) and, with torchvision importable, ``fasterrcnn_resnet50_fpn`` on a
320x320 image.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, HostLoad, fmt_s  # noqa: E402

_CHILD = r'''
import json, sys, time, warnings
warnings.simplefilter("ignore")
import torch
sys.path.insert(0, {root!r})
from irviz.api import visualize
from irviz.frontends.inputs import resolve_inputs
from irviz.frontends.loader import load

def model(key):
    torch.manual_seed(0)
    if key == "lstm_ensemble":
        [t] = load({root!r} + "/samples/lstm_ensemble.py:LSTMEnsemble").targets
        return t.obj, resolve_inputs(t, None).args
    if key == "detector":
        [t] = load({root!r} + "/tests/corpus/detection_style.py:make_detector()").targets
        return t.obj, resolve_inputs(t, None).args
    if key == "vit_tiny":
        import timm
        from timm.layers import set_layer_config
        with set_layer_config(scriptable=True):
            m = timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=64)
        return m.eval(), (torch.rand(1, 3, 64, 64),)
    if key == "fasterrcnn":
        import torchvision
        m = torchvision.models.detection.fasterrcnn_resnet50_fpn(
            weights=None, weights_backbone=None).eval()
        return m, ([torch.rand(3, 320, 320)],)

obj, inputs = model({key!r})
times, cpu = [], []
for _ in range(3):
    start, own = time.perf_counter(), time.process_time()
    [view] = visualize(obj, mode="script", inputs=tuple(inputs))
    view.dot()
    times.append(time.perf_counter() - start)
    cpu.append(time.process_time() - own)
print(json.dumps({{"cold": times[0], "warm": min(times[1:]),
                   "cold cpu": cpu[0], "warm cpu": min(cpu[1:]),
                   "nodes": view.graph.number_of_nodes(),
                   "shaped": sum(1 for _, d in view.graph.nodes(data=True)
                                 if d["kind"].startswith("aten::")
                                 for o in d["outputs"] if o.get("shape") is not None)}}))
'''


def _child(checkout: Path, key: str) -> dict:
    env = dict(os.environ)
    given = [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join([str(checkout), *given])   # the child runs elsewhere
    code = _CHILD.format(root=str(checkout), key=key)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=1800, cwd=str(checkout))
    if done.returncode:
        raise RuntimeError(f"{key} at {checkout}: {done.stderr.strip()[-800:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", type=Path, required=True, help="the checkout before")
    ap.add_argument("--after", type=Path, default=ROOT, help="the checkout after (this one)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--models", default="lstm_ensemble,detector,vit_tiny,fasterrcnn")
    args = ap.parse_args(argv)
    sides = {"before": args.before.resolve(), "after": args.after.resolve()}
    keys = args.models.split(",")
    runs = {key: {"before": [], "after": []} for key in keys}
    with HostLoad() as load:
        for r in range(args.rounds):
            for key in keys:
                order = ("before", "after") if r % 2 == 0 else ("after", "before")
                for side in order:
                    try:
                        runs[key][side].append(_child(sides[side], key))
                    except RuntimeError as exc:
                        print(f"skipped: {exc}", file=sys.stderr)
                        break
    print(f"{args.rounds} rounds, before/after alternating (order flipped each round); "
          f"other processes' load while it ran: {load.value} CPUs; medians (min-max)")
    print()
    print("| model | IR nodes | aten outputs with a shape (before → after) | cold render before "
          "| after | after ÷ before | warm render before | after | after ÷ before "
          "| CPU after ÷ before (cold, warm) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for key in keys:
        before, after = runs[key]["before"], runs[key]["after"]
        if not before or not after:
            continue

        def cell(rows, meter):
            values = [row[meter] for row in rows]
            return (f"{fmt_s(statistics.median(values))} "
                    f"({fmt_s(min(values))}-{fmt_s(max(values))})")

        def ratio(meter):
            pairs = [a[meter] / b[meter] for a, b in zip(after, before)]
            return f"{statistics.median(pairs):.2f}x"

        print(f"| {key} | {after[0]['nodes']:,} | {before[0]['shaped']:,} → "
              f"{after[0]['shaped']:,} | {cell(before, 'cold')} | {cell(after, 'cold')} "
              f"| {ratio('cold')} | {cell(before, 'warm')} | {cell(after, 'warm')} "
              f"| {ratio('warm')} | {ratio('cold cpu')}, {ratio('warm cpu')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
