"""What recording the shapes of compiled code costs (issue 30, part 1).

    .venv/bin/python benchmarks/compiled_shapes.py [--rounds 7] [--blocks 400]

For each model, in ONE process and interleaved (a warm-up round, then ``--rounds``):

* ``plain``: one run of the compiled model under ``no_grad`` (what the capture did before:
  a run to check the example inputs);
* ``recorded``: one run of irviz's instrumented copy (:mod:`irviz.frontends.compiled_run`),
  the records collected into per-value shapes;
* ``instrument``: the one-off cost of copying, instrumenting and compiling the copy.

The first run of each is shown apart ("first"): TorchScript's profiling executor profiles
and optimizes a function on its first runs, and a CLI render pays exactly one run.

Models: the seed's traced ``WrapRNN`` saved and loaded as an archive (a loop of 10 over a
cell with an ``if``), the seed's scripted ``LSTMEnsemble`` archive (forks, LSTMs), and a
generated scripted stack of ``--blocks`` Linear-LayerNorm-ReLU residual blocks (its IR node
count, as irviz builds it, is printed). Goal: recorded run <= 3x the plain run.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, HostLoad, fmt_s  # noqa: E402


def _seed_archives(folder: Path):
    import torch

    sys.path.insert(0, str(ROOT / "samples"))
    from lstm_ensemble import LSTMEnsemble
    from rnn_loop import WrapRNN

    torch.manual_seed(0)
    rnn = folder / "wrapped_rnn.pt"
    torch.jit.trace(WrapRNN(), (torch.rand(10, 3, 4),)).save(str(rnn))
    ensemble = folder / "lstm_ensemble.pt"
    torch.jit.script(LSTMEnsemble()).save(str(ensemble))
    return [("WrapRNN archive (traced)", rnn, (torch.rand(10, 3, 4),)),
            ("LSTMEnsemble archive (scripted, forks)", ensemble, (torch.rand(5, 2, 16),))]


def _stack(blocks: int, folder: Path):
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(16, 16)
            self.norm = nn.LayerNorm(16)

        def forward(self, x):
            return x + torch.relu(self.norm(self.linear(x)))

    model = nn.Sequential(*[Block() for _ in range(blocks)]).eval()
    path = folder / "stack.pt"
    torch.jit.script(model).save(str(path))
    return (f"scripted stack of {blocks} blocks", path, (torch.rand(8, 16),))


def _ir_nodes(path: Path, inputs) -> int:
    from irviz.api import visualize

    return visualize(str(path), inputs=inputs)[0].graph.number_of_nodes()


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--blocks", type=int, default=400)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    import torch

    from irviz.frontends.archives import load_archive
    from irviz.frontends.compiled_run import instrument

    with HostLoad() as load, tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        models = _seed_archives(folder) + [_stack(args.blocks, folder)]
        rows = []
        for name, path, inputs in models:
            [target] = load_archive(path).targets
            module = target.obj
            instrumented = instrument(module, target.compilation_unit)
            nodes = _ir_nodes(path, inputs)

            def plain():
                with torch.no_grad():
                    module(*inputs)

            def recorded():
                run = instrumented.run(list(inputs))
                assert run.error is None, run.error

            first_plain, first_recorded = _timed(plain), _timed(recorded)
            times = {"plain": [], "recorded": [], "instrument": []}
            for _ in range(args.rounds):
                times["plain"].append(_timed(plain))
                times["recorded"].append(_timed(recorded))
                times["instrument"].append(
                    _timed(lambda: instrument(module, target.compilation_unit)))
            med = {k: statistics.median(v) for k, v in times.items()}
            rows.append((name, nodes, len(instrumented.slots), first_plain, first_recorded,
                         med))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} intra-op threads, "
          f"{args.rounds} rounds after a warm-up, medians; other processes kept "
          f"{load.value} CPUs busy meanwhile")
    print()
    print("| model | IR nodes | recorded values | plain run (first) | recorded run (first) "
          "| recorded ÷ plain (warm) | instrument (one-off) |")
    print("|---|---|---|---|---|---|---|")
    for name, nodes, slots, first_plain, first_recorded, med in rows:
        print(f"| {name} | {nodes} | {slots} | {fmt_s(med['plain'])} ({fmt_s(first_plain)}) "
              f"| {fmt_s(med['recorded'])} ({fmt_s(first_recorded)}) "
              f"| {med['recorded'] / med['plain']:.2f}x | {fmt_s(med['instrument'])} |")


if __name__ == "__main__":
    main()
