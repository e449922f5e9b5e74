"""How much a fork/wait hand-off between two busy threads costs here (issue 13's open cell).

BiForkLSTMEnsemble at C = 64 forks one ~2.5 ms LSTM per member while the caller runs the
other, four times per call; it measures up to 3 ms slower per call than irviz's simulation
predicts. This probe isolates the pattern without LSTMs: a scripted chain of ``--pairs``
fork/wait pairs, each side a busy loop of ``n`` tanh steps, against the same work run
serially, at the given inter-op pool size (intra-op 1). It prints the speed-up and the time
per hand-off over the ideal (serial / 2), for a few task sizes; run it twice per pool size
to see the run-to-run spread.

    .venv/bin/python benchmarks/handoff.py --inter-op 2 [--pairs 4] [--rounds 15]
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

from irviz.measure.handoff_probe import probe_functions


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--inter-op", type=int, required=True)
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    torch.set_num_interop_threads(args.inter_op)
    torch.set_num_threads(1)
    _, forked, serial = probe_functions()
    x = torch.rand(64, 256)
    k = args.pairs
    for n in (50, 200, 800):
        for _ in range(3):
            forked(x, n, k)
            serial(x, n, k)
        f, s = [], []
        for _ in range(args.rounds):   # interleaved
            t = time.perf_counter()
            forked(x, n, k)
            f.append(time.perf_counter() - t)
            t = time.perf_counter()
            serial(x, n, k)
            s.append(time.perf_counter() - t)
        fm, sm = statistics.median(f), statistics.median(s)
        print(f"inter-op {args.inter_op}, task {sm / (2 * k) * 1e3:.1f} ms: serial "
              f"{sm * 1e3:.1f} ms, forked {fm * 1e3:.1f} ms, speed-up {sm / fm:.2f}, "
              f"{(fm - sm / 2) / k * 1e3:.2f} ms per hand-off over the ideal")


if __name__ == "__main__":
    main()
