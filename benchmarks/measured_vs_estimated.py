"""The cost model and the memory estimate against a profile (issue 31).

    .venv/bin/python benchmarks/measured_vs_estimated.py [--runs 5]

For each model, what ``irviz report --measure`` and ``render --profile`` compute, through
the Workspace: the graph with every analysis, then ``Workspace.profile`` (the model run
``--runs`` times under torch.profiler in a child process, events matched to nodes).

* per op kind: measured time against the cost model's estimate, over the kind's total and
  as the median per node of how many times off it was
  (:func:`irviz.analyses.op_times.kind_errors`);
* the static peak of live activations (:mod:`irviz.analyses.memory`) against the peak
  the profiled runs allocated above their inputs (``profile_memory``);
* the share of profiled aten time matched to nodes.

Models: a small ResNet-like conv net (scripted), the seed's LSTMEnsemble (scripted,
forks), BERT and GPT-2 from the transformers corpus (traced, tiny configurations).
Output: Markdown on stdout (pasted into RESULTS-measured-vs-estimated.md).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, HostLoad, fmt_bytes  # noqa: E402
from profile_overhead import RESNETISH  # noqa: E402

CORPUS = ROOT / "tests" / "corpus" / "transformers_models.py"


def _models(folder: Path) -> list[tuple[str, str, str]]:
    resnet = folder / "resnetish.py"
    resnet.write_text(RESNETISH + "\nexample_inputs = {'Net': lambda: (torch.rand(2, 3, 32, 32),)}\n")
    return [("ResNet-like", f"{resnet}:Net", "script"),
            ("LSTMEnsemble", f"{ROOT / 'samples' / 'lstm_ensemble.py'}:LSTMEnsemble", "script"),
            ("BERT (tiny)", f"{CORPUS}:bert()", "trace"),
            ("GPT-2 (tiny)", f"{CORPUS}:gpt2()", "trace")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    warnings.simplefilter("ignore")

    from irviz.analyses.memory import memory_facts
    from irviz.analyses.op_times import kind_errors
    from irviz.analyses.profile_times import COVERAGE, MEMORY
    from irviz.workspace import Workspace

    rows, kinds = [], {}
    with HostLoad() as load, tempfile.TemporaryDirectory() as tmp:
        for name, spec, mode in _models(Path(tmp)):
            ws = Workspace()
            [target] = ws.targets(spec)
            view = ws.view(target, mode)
            result = ws.profile(target, mode, view.graph, runs=args.runs)
            if result.get("error"):
                print(f"{name}: not profiled: {result['error']}", file=sys.stderr)
                continue
            G = view.graph
            est = (memory_facts(G) or {}).get("peak_bytes")
            got = (G.graph.get(MEMORY) or {}).get("peak_bytes")
            rows.append((name, mode, G.graph.get(COVERAGE), est, got))
            kinds[name] = kind_errors(G)
    print(f"{args.runs} profiled runs per model after warm-up, medians; other processes "
          f"kept {load.value} CPUs busy meanwhile")
    print()
    print("| model | mode | aten time matched | estimated peak activations | measured peak "
          "| estimated ÷ measured |")
    print("|---|---|---|---|---|---|")
    for name, mode, coverage, est, got in rows:
        ratio = f"{est / got:.2f}" if est and got else "—"
        print(f"| {name} | {mode} | {coverage:.0%} | {fmt_bytes(est)} | {fmt_bytes(got)} "
              f"| {ratio} |")
    print()
    print("| model | op kind | nodes | measured | estimated | measured ÷ estimated "
          "| typical error per node |")
    print("|---|---|---|---|---|---|---|")
    for name, found in kinds.items():
        for k in found[:6]:
            print(f"| {name} | `{k.kind}` | {k.nodes} | {k.measured_us:.0f} µs "
                  f"| {k.estimated_us:.0f} µs | {k.ratio:.2f}x | {2 ** k.log2_error:.1f}x |")


if __name__ == "__main__":
    main()
