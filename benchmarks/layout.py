"""Graphviz layout time and picture width of irviz's default pictures (issue 16, part 3).

    .venv/bin/python benchmarks/layout.py                  # in-file DenseNet + the set
    .venv/bin/python benchmarks/layout.py --models dense,densenet121 --study --repeats 2
    .venv/bin/python benchmarks/layout.py --models bert,gpt2 --no-png

(``densenet121``/``densenet161`` are torchvision's, traced at 1x3x224x224 with random
weights; run with torchvision importable, as benchmarks/torchvision_corpus.py does, else
they are skipped.) ``dense`` is a DenseNet-style model defined here (4 dense blocks, every
layer reads ``torch.cat`` of every earlier output of its block), so the study runs anywhere.

For every model: irviz's default DOT (``Visualization.dot()``), its drawn nodes and edges,
the layout size and time the plan predicts (:class:`irviz.render.plan.Layout`), the
``dot`` binary's measured time (subprocess, ``--timeout`` s) and the picture's width and
height in pt from the SVG. With ``--study``, for the dense models: the DOT irviz drew before
the dense-graph rule (``raw``: the rule turned off) with each candidate Graphviz setting
added alone (``mclimit``, ``nslimit``/``nslimit1``, ``searchsize``, ``concentrate``,
``splines``, ``remincross``, ``newrank`` and ``ordering`` off) and the ghost variants (far
inputs of a consumer drawn as one merged ghost at spans 6/12/24, ghost edges with
``constraint=false``), then the combinations. Every variant runs in this one process,
interleaved (round r runs them in an order rotated by r); medians. ``--png`` renders the
raw baseline and the default of each dense model to PNG (``rsvg-convert -w 900``, and a
900 pt slice from the middle at full scale) under ``benchmarks/out/layout/`` to look at.

The fit of the predictor (``seconds = a * size ** b``) over every measured (size, time)
pair is printed; :data:`irviz.render.plan.LAYOUT_COEF`/``LAYOUT_EXP`` come from it.
Results: ``benchmarks/out/layout.json`` and ``.md``; benchmarks/RESULTS-layout.md holds the
tables of the runs the README quotes.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OUT, ROOT, command_line, facts_md, machine_facts  # noqa: E402

import torch  # noqa: E402
from torch import nn  # noqa: E402

PNG_DIR = OUT / "layout"
SET = {  # key -> (spec, mode): the seeds and issue 16's benchmark set
    "resnet18": ("benchmarks/models.py:resnet18()", "trace"),
    "resnet18_s": ("benchmarks/models.py:resnet18()", "script"),
    "bert": ("benchmarks/models.py:bert()", "trace"),
    "gpt2": ("benchmarks/models.py:gpt2()", "trace"),
    "densenet": ("benchmarks/models.py:densenet()", "trace"),
    "vit": ("benchmarks/models.py:vit()", "trace"),
    "bert_kw": ("benchmarks/models.py:bert_kw()", "trace"),
    "detector": ("benchmarks/models.py:detector()", "script"),
    "fasterrcnn": ("benchmarks/models.py:fasterrcnn()", "script"),
}
SEEDS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "samples").glob("*.py")
               if p.name != "make_archive.py")
DENSE = ("dense", "densenet121", "densenet161")


# -- a DenseNet-style model without torchvision ---------------------------------------------

class DenseLayer(nn.Module):
    def __init__(self, cin: int, growth: int):
        super().__init__()
        self.norm = nn.BatchNorm2d(cin)
        self.conv1 = nn.Conv2d(cin, 4 * growth, 1, bias=False)
        self.norm2 = nn.BatchNorm2d(4 * growth)
        self.conv2 = nn.Conv2d(4 * growth, growth, 3, padding=1, bias=False)

    def forward(self, features: list[torch.Tensor]) -> torch.Tensor:
        x = torch.cat(features, 1)
        x = self.conv1(torch.relu(self.norm(x)))
        return self.conv2(torch.relu(self.norm2(x)))


class DenseBlock(nn.Module):
    def __init__(self, layers: int, cin: int, growth: int):
        super().__init__()
        self.layers = nn.ModuleList(DenseLayer(cin + i * growth, growth) for i in range(layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = [x]
        for layer in self.layers:
            features.append(layer(features))
        return torch.cat(features, 1)


class DenseStyle(nn.Module):
    """4 dense blocks (6, 12, 24, 16 layers, as DenseNet-121) with transitions between."""

    def __init__(self, blocks=(6, 12, 24, 16), growth: int = 32, width: int = 64):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 7, 2, 3, bias=False),
                                  nn.BatchNorm2d(width), nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        stages = []
        for i, n in enumerate(blocks):
            stages.append(DenseBlock(n, width, growth))
            width += n * growth
            if i + 1 < len(blocks):
                stages.append(nn.Sequential(nn.BatchNorm2d(width), nn.ReLU(),
                                            nn.Conv2d(width, width // 2, 1, bias=False),
                                            nn.AvgPool2d(2)))
                width //= 2
        self.stages = nn.Sequential(*stages)
        self.head = nn.Linear(width, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stages(self.stem(x))
        return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


# -- drawing -------------------------------------------------------------------------------

def views(key: str) -> list:
    """irviz's views of model ``key`` (one per model in a seed file)."""
    import irviz.api as irviz

    if key == "dense":
        torch.manual_seed(0)
        return irviz.visualize(DenseStyle().eval(), mode="trace",
                               inputs=(torch.rand(1, 3, 224, 224),))
    if key in ("densenet121", "densenet161"):
        import torchvision

        model = getattr(torchvision.models, key)(weights=None).eval()
        return irviz.visualize(model, mode="trace", inputs=(torch.rand(1, 3, 224, 224),))
    if key in SET:
        spec, mode = SET[key]
        return irviz.visualize(spec, mode=mode)
    spec, _, mode = key.partition("@")
    return irviz.visualize(spec, mode=mode or "script")


def raw_dot(view, budget: bool = False) -> tuple[str, object]:
    """The DOT and plan irviz drew before issue 16's layout work: the dense-graph rule and
    (unless ``budget``) the layout budget turned off, the drawn-node budget as it was."""
    from irviz.render import plan

    saved = plan.DENSE_EDGES_PER_NODE, plan.LAYOUT_SIZE_PER_NODE
    plan.DENSE_EDGES_PER_NODE = math.inf
    if not budget:
        plan.LAYOUT_SIZE_PER_NODE = math.inf
    try:
        text = view.dot()
        return text, view.plan
    finally:
        plan.DENSE_EDGES_PER_NODE, plan.LAYOUT_SIZE_PER_NODE = saved


def dense_dot(view, span: int, attrs: tuple = ()) -> str:
    """The DOT with the dense-graph rule at ghost span ``span`` and settings ``attrs``."""
    from irviz.render import plan

    saved = plan.DENSE_EDGES_PER_NODE, plan.DENSE_GHOST_SPAN, plan.DENSE_GRAPH_ATTRS
    plan.DENSE_EDGES_PER_NODE, plan.DENSE_GHOST_SPAN, plan.DENSE_GRAPH_ATTRS = 0.0, span, attrs
    try:
        return view.dot()
    finally:
        plan.DENSE_EDGES_PER_NODE, plan.DENSE_GHOST_SPAN, plan.DENSE_GRAPH_ATTRS = saved


# -- DOT variants --------------------------------------------------------------------------

_GRAPH = re.compile(r'^(  graph \[)', re.M)
_GHOST_EDGE = re.compile(r'^(  "ghost:[^"]*" -> "[^"]*" \[.*)\];$', re.M)


def with_attrs(text: str, **attrs) -> str:
    """``text`` with graph attributes added in front of irviz's own."""
    added = ", ".join(f'{k}="{v}"' for k, v in attrs.items())
    return _GRAPH.sub(lambda m: m.group(1) + added + ", ", text, count=1)


def without(text: str, key: str) -> str:
    """``text`` without irviz's graph attribute ``key``."""
    return re.sub(rf'^(  graph \[.*?){key}="[^"]*", ', r"\1", text, count=1, flags=re.M)


def unconstrained_ghosts(text: str) -> str:
    return _GHOST_EDGE.sub(lambda m: m.group(1) + ', constraint="false"];', text)


def study_variants(view) -> dict[str, str]:
    """Variant name -> DOT: the raw DOT with each candidate alone, then combinations."""
    raw, _ = raw_dot(view)
    out = {"raw": raw}
    for v in (0.1, 0.3, 1):
        out[f"mclimit={v}"] = with_attrs(raw, mclimit=v)
    out["nslimit=2"] = with_attrs(raw, nslimit=2)
    out["nslimit1=2"] = with_attrs(raw, nslimit1=2)
    out["nslimit=nslimit1=2"] = with_attrs(raw, nslimit=2, nslimit1=2)
    out["searchsize=10"] = with_attrs(raw, searchsize=10)
    out["concentrate"] = with_attrs(raw, concentrate="true")
    for s in ("line", "polyline", "ortho"):
        out[f"splines={s}"] = with_attrs(raw, splines=s)
    out["remincross=false"] = with_attrs(raw, remincross="false")
    out["no newrank"] = without(raw, "newrank")
    out["no ordering"] = without(raw, "ordering")
    out["ghost edges constraint=false"] = unconstrained_ghosts(raw)
    for span in (6, 12, 24):
        out[f"merged ghosts, span {span}"] = dense_dot(view, span)
    from irviz.render.plan import DENSE_GHOST_SPAN

    merged = out[f"merged ghosts, span {DENSE_GHOST_SPAN}"]
    out["merged + mclimit=0.3"] = with_attrs(merged, mclimit=0.3)
    out["merged + concentrate"] = with_attrs(merged, concentrate="true")
    out["merged + splines=polyline"] = with_attrs(merged, splines="polyline")
    out["default (merged + nslimit=nslimit1=2)"] = view.dot()
    return out


# -- measuring -----------------------------------------------------------------------------

_SIZE = re.compile(rb'<svg width="([\d.]+)pt" height="([\d.]+)pt"')


def layout(text: str, timeout: float) -> dict:
    """``dot -Tsvg`` on ``text``: seconds (None on timeout), width and height in pt."""
    start = time.perf_counter()
    try:
        proc = subprocess.run(["dot", "-Tsvg"], input=text.encode(), capture_output=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"seconds": None, "timeout": timeout}
    seconds = time.perf_counter() - start
    size = _SIZE.search(proc.stdout[:4000])
    if proc.returncode or size is None:
        return {"seconds": None, "error": proc.stderr.decode(errors="replace")[-300:]}
    return {"seconds": round(seconds, 3), "width": float(size.group(1)),
            "height": float(size.group(2)), "svg": proc.stdout}


def interleaved(texts: dict[str, str], repeats: int, timeout: float) -> dict[str, dict]:
    """Each DOT laid out ``repeats`` times, round r in an order rotated by r; medians (a
    timeout counts as ``timeout`` seconds)."""
    names = list(texts)
    runs: dict[str, list[dict]] = {n: [] for n in names}
    for r in range(repeats):
        for name in names[r % len(names):] + names[:r % len(names)]:
            runs[name].append(layout(texts[name], timeout))
            print(f"  {name}: {runs[name][-1].get('seconds')} s", file=sys.stderr, flush=True)
    out = {}
    for name, got in runs.items():
        secs = [g["seconds"] if g["seconds"] is not None else timeout for g in got]
        last = got[-1]
        out[name] = {"seconds": statistics.median(secs), "runs": secs,
                     "timeouts": sum(g["seconds"] is None for g in got),
                     "width": last.get("width"), "height": last.get("height"),
                     "edges": texts[name].count(" -> "), "svg": last.get("svg")}
    return out


def png(svg: bytes, name: str) -> list[str]:
    """The whole picture 900 px wide, and a 900 pt slice from its middle at full scale."""
    PNG_DIR.mkdir(parents=True, exist_ok=True)
    whole, part = PNG_DIR / f"{name}.png", PNG_DIR / f"{name}.middle.png"
    m = re.search(rb'<svg width="([\d.]+)pt" height="([\d.]+)pt"\s+viewBox="[^"]*"', svg)
    w, h = float(m.group(1)), float(m.group(2))
    size = ["-w", "900"] if h * 900 / w < 32000 else ["-h", "32000"]   # librsvg's limit
    subprocess.run(["rsvg-convert", *size, "-o", str(whole)], input=svg, check=True)
    y, slice_h = h * 0.45, min(900.0, h)
    cut = svg.replace(m.group(0), f'<svg width="{min(w, 1800):.0f}pt" height="{slice_h:.0f}pt" '
                      f'viewBox="0 {y:.0f} {min(w, 1800):.0f} {slice_h:.0f}"'.encode(), 1)
    subprocess.run(["rsvg-convert", "-o", str(part)], input=cut, check=True)
    return [str(whole.relative_to(ROOT)), str(part.relative_to(ROOT))]


def fit(points: list[tuple[int, float]]) -> tuple[float, float] | None:
    """Least squares of log(seconds) on log(size): (a, b) of seconds = a * size ** b."""
    pts = [(math.log(s), math.log(t)) for s, t in points if s > 0 and t and t > 0.3]
    if len(pts) < 3:
        return None
    mx = statistics.fmean(x for x, _ in pts)
    my = statistics.fmean(y for _, y in pts)
    b = (sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts))
    return math.exp(my - b * mx), b


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=",".join(("dense", "densenet121", "densenet161",
                                                  *SET, *SEEDS)))
    ap.add_argument("--study", action="store_true", help="the settings study on dense models")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--no-png", action="store_true")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    facts = machine_facts()
    results: dict = {"command": command_line("benchmarks/layout.py", argv), "facts": facts,
                     "models": {}, "study": {}}
    points: list[tuple[int, float]] = []
    for key in args.models.split(","):
        try:
            got = views(key)
        except Exception as exc:  # noqa: BLE001 - a model that does not load is reported
            results["models"][key] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            print(f"{key}: {exc}", file=sys.stderr)
            continue
        for i, view in enumerate(got):
            name = key if len(got) == 1 else f"{key}#{i}"
            texts = {"default": view.dot()}
            L = view.plan.layout
            texts["raw"], raw_plan = raw_dot(view)
            budget_plan = None
            if texts["raw"] == texts["default"]:
                del texts["raw"]
            elif L.dense:   # what the layout budget alone would draw
                texts["budget only"], budget_plan = raw_dot(view, budget=True)
            timed = interleaved(texts, args.repeats, args.timeout)
            row = {"nodes": L.nodes, "edges": L.edges, "size": L.size, "dense": L.dense,
                   "predicted": L.seconds, "notes": list(view.plan.notes), "load":
                   os.getloadavg()}
            for variant, m in timed.items():
                row[variant] = {k: v for k, v in m.items() if k != "svg"}
            for variant, p in (("raw", raw_plan), ("budget only", budget_plan)):
                if variant in timed:
                    R = p.layout
                    row[variant].update(nodes=R.nodes, edges=R.edges, size=R.size,
                                        predicted=R.seconds)
                    if timed[variant]["timeouts"] == 0:
                        points.append((R.size, timed[variant]["seconds"]))
            points.append((L.size, timed["default"]["seconds"]))
            if L.dense and args.study:
                study = interleaved(study_variants(view), args.repeats, args.timeout)
                results["study"][name] = {k: {f: v for f, v in m.items() if f != "svg"}
                                          for k, m in study.items()}
                results["study"][name]["load"] = os.getloadavg()
            if L.dense and not args.no_png:
                row["png"] = {v: png(timed[v]["svg"], f"{name}.{v}")
                              for v in ("raw", "default") if timed[v]["svg"]}
            results["models"][name] = row
            print(f"{name}: {json.dumps({k: v for k, v in row.items() if k != 'notes'})}",
                  file=sys.stderr, flush=True)
    a_b = fit(points)
    results["fit"] = {"points": points, "a": a_b and a_b[0], "b": a_b and a_b[1]}
    md = report(results, facts)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "layout.json").write_text(json.dumps(results, indent=1, default=str))
    (OUT / "layout.md").write_text(md)
    print(md)
    return 0


def _s(v) -> str:
    return "—" if v is None else f"{v:.2f}"


def _before(m: dict | None) -> str:
    if not m:
        return "same"
    t = f"> {m['seconds']:.0f} (timeout)" if m["timeouts"] else _s(m["seconds"])
    width = f"{m['width']:.0f}" if m.get("width") else "—"
    return f"{m['nodes']}, {t}, {width}"


def report(results: dict, facts: dict) -> str:
    lines = [f"`{results['command']}`", "", facts_md(facts), "",
             "| model | drawn nodes | edges | dense | predicted s | dot s | width pt | "
             "height pt | before: nodes, dot s, width pt | layout budget alone | load |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, row in results["models"].items():
        if "error" in row:
            lines.append(f"| {name} | {row['error'][:80]} |||||||||")
            continue
        d = row["default"]
        lines.append(f"| {name} | {row['nodes']} | {row['edges']} | {'yes' if row['dense'] else ''}"
                     f" | {_s(row['predicted'])} | {_s(d['seconds'])} | {d['width']:.0f} | "
                     f"{d['height']:.0f} | {_before(row.get('raw'))} | "
                     f"{_before(row.get('budget only'))} | {row['load'][0]:.1f} |")
    for name, study in results["study"].items():
        lines += ["", f"Settings study, {name} (load {study['load'][0]:.1f}):", "",
                  "| variant | dot s | runs | width pt | DOT edges |", "|---|---|---|---|---|"]
        for variant, m in study.items():
            if variant == "load":
                continue
            t = f"> {m['seconds']:.0f} (timeout)" if m["timeouts"] else _s(m["seconds"])
            lines.append(f"| {variant} | {t} | {m['runs']} | "
                         f"{m['width'] if m['width'] else '—'} | {m['edges']} |")
    f = results["fit"]
    if f["a"]:
        lines += ["", f"Fit over {len(f['points'])} (size, seconds) pairs: seconds = "
                  f"{f['a']:.3g} * size ** {f['b']:.2f}"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
