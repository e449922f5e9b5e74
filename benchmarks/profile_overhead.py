"""What `render --profile` costs (issue 31).

    .venv/bin/python benchmarks/profile_overhead.py [--rounds 5]

Two measurements, each side by side in one run:

* **per forward**, in this process, interleaved: one plain run of the scripted model under
  ``no_grad`` against one run under ``torch.profiler.profile(with_stack=True,
  with_modules=True, profile_memory=True)`` (what the profiling child does; the profiler started and stopped
  around each run, its trace not exported);
* **whole command**: ``irviz render --format json`` against ``irviz render --format json
  --profile --profile-runs 5`` (real CLI processes, alternated), and the share of aten time
  ``--profile`` matched to nodes.

Models: the seed's scripted LSTMEnsemble (forks), the seed's WrapRNN, and a small
ResNet-like conv net (tests/test_optimized.py's, written here to a temporary file).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, HostLoad, fmt_s  # noqa: E402

RESNETISH = '''
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(16)
        self.conv = nn.Conv2d(16, 16, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = torch.relu(self.bn(self.stem(x)))
        x = torch.relu(x + self.bn2(self.conv(x)))
        return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(x, 1), 1))
'''


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _per_forward(model, inputs, rounds: int) -> tuple[float, float]:
    import torch
    from torch.profiler import ProfilerActivity, profile

    def plain():
        with torch.no_grad():
            model(*inputs)

    def profiled():
        with torch.no_grad(), profile(activities=[ProfilerActivity.CPU], with_stack=True,
                                      with_modules=True, profile_memory=True):
            model(*inputs)

    for _ in range(3):
        plain()
    profiled()
    a, b = [], []
    for _ in range(rounds):
        a.append(_timed(plain))
        b.append(_timed(profiled))
    return statistics.median(a), statistics.median(b)


def _cli(spec: str, inputs: str, profile: bool, out: Path) -> tuple[float, float | None]:
    argv = [sys.executable, "-m", "irviz.cli", "render", spec, "--inputs", inputs,
            "--format", "json", "-o", str(out), "-q"]
    if profile:
        argv += ["--profile", "--profile-runs", "5"]
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.strip()[-300:]}")
    coverage = json.loads(out.read_text())["graph"].get("irviz.profile_coverage")
    return wall, coverage


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    import torch

    sys.path.insert(0, str(ROOT / "samples"))
    from lstm_ensemble import LSTMEnsemble
    from rnn_loop import WrapRNN

    with HostLoad() as load, tempfile.TemporaryDirectory() as tmp:
        net_file = Path(tmp) / "resnetish.py"
        net_file.write_text(RESNETISH)
        sys.path.insert(0, tmp)
        from resnetish import Net

        torch.manual_seed(0)
        models = [
            ("LSTMEnsemble (scripted, forks)", torch.jit.script(LSTMEnsemble()),
             (torch.rand(5, 2, 16),), "samples/lstm_ensemble.py:LSTMEnsemble",
             "torch.rand(5, 2, 16)"),
            ("WrapRNN (scripted)", torch.jit.script(WrapRNN()), (torch.rand(10, 3, 4),),
             "samples/rnn_loop.py:WrapRNN", "torch.rand(10, 3, 4)"),
            ("ResNet-like (scripted)", torch.jit.script(Net().eval()),
             (torch.rand(2, 3, 32, 32),), f"{net_file}:Net", "torch.rand(2, 3, 32, 32)"),
        ]
        rows = []
        for name, model, inputs, spec, expression in models:
            plain, profiled = _per_forward(model, inputs, args.rounds)
            walls = {False: [], True: []}
            coverage = None
            for _ in range(max(args.rounds // 2, 2)):
                for profile in (False, True):
                    wall, cov = _cli(spec, expression, profile, Path(tmp) / "g.json")
                    walls[profile].append(wall)
                    coverage = cov if profile else coverage
            rows.append((name, plain, profiled, statistics.median(walls[False]),
                         statistics.median(walls[True]), coverage))
    print(f"torch {torch.__version__}, {args.rounds} rounds, medians; other processes kept "
          f"{load.value} CPUs busy meanwhile\n")
    print("| model | forward | forward, profiled | ratio | `render --format json` | "
          "`+ --profile` (5 runs) | aten time matched |")
    print("|---|---|---|---|---|---|---|")
    for name, plain, profiled, render, render_p, coverage in rows:
        print(f"| {name} | {fmt_s(plain)} | {fmt_s(profiled)} | {profiled / plain:.1f}x | "
              f"{fmt_s(render)} | {fmt_s(render_p)} | "
              f"{'–' if coverage is None else f'{coverage:.0%}'} |")


if __name__ == "__main__":
    main()
