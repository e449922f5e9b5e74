"""Where ``irviz lint`` spends its time, per layer and per model (issue 42: lint at most 2x
a process that only builds and traces).

One process lints the corpus as ``irviz lint CORPUS --no-cache --format json --exit-zero``
does, with every layer of :data:`irviz.lint.layers.STEPS` timed (CPU seconds of the
process, all threads, and wall seconds), and, inside the layers, the model runs that cost:
the script capture and the trace (the workspace's ``capture (...)`` stages), the scripted
capture's eager Python run, the verification's forwards and the second traces that locate
a counterexample. Loading the models (importing and building them) is the rest.

Usage::

    python benchmarks/lint_layers.py [CORPUS] [--markdown]

``--markdown`` prints the table as Markdown (for ``benchmarks/RESULTS-lint.md``).
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = "tests/corpus/transformers_models.py"

#: (model, part) -> [cpu, wall]
TIMES: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
_current = ["?"]


@contextlib.contextmanager
def timed(part: str):
    cpu, wall = time.process_time(), time.perf_counter()
    try:
        yield
    finally:
        t = TIMES[(_current[0], part)]
        t[0] += time.process_time() - cpu
        t[1] += time.perf_counter() - wall


def _wrap(owner, name: str, part: str) -> None:
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        with timed(part):
            return original(*args, **kwargs)
    setattr(owner, name, wrapper)


def instrument() -> None:
    """Time every layer, and the model runs inside them."""
    from irviz.frontends import capture, eager_run, verification
    from irviz.lint import runner
    from irviz.lint.layers import verify as verify_layer
    from irviz.lint.layers import retrace as retrace_layer

    steps = runner._steps

    def timed_steps(options):
        out = []
        for layer in steps(options):
            def run(ctx, _run=layer.run, _name=layer.name):
                _current[0] = ctx.target.spec.split(":")[-1]
                with timed(f"layer {_name}"):
                    _run(ctx)
            out.append(type(layer)(layer.name, run, layer.needs, layer.runs_model))
        return tuple(out)
    runner._steps = timed_steps
    _wrap(capture, "run_eagerly", "  eager Python run (scripted capture)")
    _wrap(capture, "_script", "  torch.jit.script")
    _wrap(capture, "run_compiled", "  compiled run (script's shapes)")
    _wrap(capture, "_trace", "  torch.jit.trace")
    _wrap(verification, "_run_model", "  verify: model's Python forwards")
    _wrap(verification, "_run_trace", "  verify: trace forwards")
    _wrap(verify_layer, "retrace_on", "  verify: second traces (locating)")
    _wrap(verify_layer, "lines_run", "  verify: lines run (no second trace)")
    _wrap(retrace_layer, "retrace", "  retrace: second trace")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", nargs="?", default=CORPUS)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    instrument()
    from irviz.cli import main as irviz_main

    cpu, wall = time.process_time(), time.perf_counter()
    with contextlib.redirect_stdout(sys.stderr):
        try:
            irviz_main(["lint", args.corpus, "--no-cache", "--format", "json", "--exit-zero"],
                       standalone_mode=False)
        except SystemExit:
            pass
    total_cpu, total_wall = time.process_time() - cpu, time.perf_counter() - wall
    parts = sorted({p for _, p in TIMES}, key=lambda p: (p.strip().startswith("verify")
                                                         and not p.startswith("layer"), p))
    models = list(dict.fromkeys(m for m, _ in TIMES))
    by_part = {p: sum(TIMES[(m, p)][0] for m in models) for p in parts}
    layer_cpu = sum(v for p, v in by_part.items() if p.startswith("layer"))
    rows = [("| part | CPU s | share of lint CPU |", "|---|---|---|")]
    lines = []
    for p in sorted(parts, key=lambda p: -by_part[p] if p.startswith("layer") else 0):
        if p.startswith("layer"):
            lines.append((p, by_part[p]))
    for p in parts:
        if not p.startswith("layer"):
            lines.append((p, by_part[p]))
    lines.append(("loading, gate, output (the rest)", total_cpu - layer_cpu))
    lines.append(("**lint, whole process**", total_cpu))
    out = list(rows[0]) + [f"| {p.replace('  ', '&nbsp;&nbsp;') if args.markdown else p} | "
                           f"{v:.1f} | {100 * v / total_cpu:.0f}% |" for p, v in lines]
    print("\n".join(out))
    print(f"\nwall {total_wall:.1f} s, CPU {total_cpu:.1f} s")
    print("\n| model | capture | retrace | verify | of which second traces |\n|---|---|---|---|---|")
    for m in models:
        print(f"| `{m}` | {TIMES[(m, 'layer capture')][0]:.2f} | "
              f"{TIMES[(m, 'layer retrace')][0]:.2f} | {TIMES[(m, 'layer verify')][0]:.2f} | "
              f"{TIMES[(m, '  verify: second traces (locating)')][0]:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
