"""How long `irviz diff` takes on BERT-size graphs (irviz's own work, not the capture).

    .venv/bin/python benchmarks/diff.py            # ~1 min on 2 CPUs
    .venv/bin/python benchmarks/diff.py --layers 2 --repeats 3   # quicker

Two ``transformers`` BertModels with random weights (seeded), bert-base's shape but
``--layers`` encoder layers (default 12, bert-base itself: ~1,500 IR nodes traced), identical except that
the right one's ``hidden_act`` is ``relu`` instead of ``gelu`` (one activation changed in
every layer), both traced on the same 1×128 ids through one Workspace. Then, ``--repeats``
times each, interleaved: the matcher (``match_graphs``) on right vs left and on left vs
itself, the text and JSON of the diff, and the union graph plus its DOT (what the SVG
picture costs before Graphviz's layout). Prints the medians and checks that the diff found
exactly the changed activations (one per layer) and nothing else. The capture and graph
build are printed for scale; they are the same work `irviz render` does.
"""
from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def bert(layers: int, act: str):
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    return BertModel(BertConfig(torchscript=True, return_dict=False, hidden_act=act,
                                num_hidden_layers=layers)).eval()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    import torch

    from irviz.analyses.graph_match import match_graphs, union_graph
    from irviz.render.dot import RenderOptions, build_dot
    from irviz.report.diff import Side, to_json, to_text
    from irviz.workspace import Workspace

    ids = torch.randint(0, 1000, (1, 128), generator=torch.Generator().manual_seed(0))
    ws = Workspace(inputs=(ids,))
    started = time.perf_counter()
    left = ws.targets(bert(args.layers, "gelu"))[0]
    right = ws.targets(bert(args.layers, "relu"))[0]
    built = time.perf_counter() - started
    graphs = []
    for target in (left, right):
        t0 = time.perf_counter()
        cap = ws.capture(target, "trace")
        t1 = time.perf_counter()
        G = ws.graph(cap)
        graphs.append((G, t1 - t0, time.perf_counter() - t1))
    (L, cap_l, graph_l), (R, cap_r, graph_r) = graphs
    visible = sum(1 for _, d in L.nodes(data=True) if not d.get("hidden"))
    print(f"BERT ({args.layers} layers, bert-base width), traced on 1×128 ids: "
          f"{L.number_of_nodes()} IR nodes ({visible} not hidden) left, "
          f"{R.number_of_nodes()} right")
    print(f"  models built {built:.2f} s; capture {cap_l:.2f} s + {cap_r:.2f} s; graph and "
          f"analyses {graph_l:.2f} s + {graph_r:.2f} s (the same as irviz render)")

    sides = (Side("bert(gelu)", "BertModel", "trace", L.number_of_nodes()),
             Side("bert(relu)", "BertModel", "trace", R.number_of_nodes()))
    times: dict[str, list[float]] = {k: [] for k in (
        "match (different)", "match (itself)", "text + json", "union graph + DOT")}
    gc.collect()
    gc.freeze()
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        diff = match_graphs(L, R)
        t1 = time.perf_counter()
        same = match_graphs(L, L)
        t2 = time.perf_counter()
        to_text(diff, *sides)
        to_json(diff, *sides)
        t3 = time.perf_counter()
        build_dot(union_graph(diff, "bert"), RenderOptions())
        t4 = time.perf_counter()
        for key, value in zip(times, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
            times[key].append(value)
    for key, values in times.items():
        print(f"  {key:20} {statistics.median(values) * 1000:7.1f} ms  "
              f"(min {min(values) * 1000:.1f}, max {max(values) * 1000:.1f}, "
              f"n={len(values)})")
    work = statistics.median(times["match (different)"]) + statistics.median(
        times["text + json"])
    print(f"  irviz diff's own work (match + text + json): {work * 1000:.0f} ms "
          f"-> {'under' if work < 1 else 'OVER'} a second")
    counts = diff.counts()
    kinds = sorted({(c.kind, c.right_kind) for c in diff.changed})
    print(f"  found: {counts} changed kinds {kinds}")
    ok = (len(diff.changed) == args.layers and not diff.added and not diff.removed
          and kinds == [("aten::gelu", "aten::relu")] and same.equal)
    print("  check: " + ("exactly one changed activation per layer, and BERT equals itself"
                         if ok else "UNEXPECTED diff"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
