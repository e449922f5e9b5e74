"""The torchvision corpus: every model of torchvision drawn as a user would, and checked.

Not a test (torchvision is not a test dependency): a run over real models that says whether
the pictures are right, not only whether they are drawn. For each model (random weights,
nothing downloaded), scripted and traced:

* shapes: what irviz shows a module call returning equals what a forward hook records for
  that module on the same input (or is ``?``); the scripted and the traced picture agree;
* warnings: every warning torch raised is attributed to a file of the model's code
  (torchvision's own files here), never to torch, irviz or the CLI framework;
* size: nodes drawn (quantized models should draw about as many scripted as traced);
* layout: stages in program order (a later sibling call that uses an earlier one's result
  does not start above it).

Usage (``make corpus`` sets up torchvision beside the CPU torch first)::

    python benchmarks/torchvision_corpus.py [--models REGEX] [--png NAME ...] [--timeout S]

One child process per model (memory and time stay bounded); results go to
``build/corpus/results.jsonl`` and the summary to ``benchmarks/RESULTS-corpus.md``.
"""
from __future__ import annotations

import argparse
import inspect
import json
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = ROOT / "build" / "corpus"
SVG = "{http://www.w3.org/2000/svg}"
#: models too large for a 24 GB, 2-core machine in a reasonable time (weights alone > 2 GB)
TOO_BIG = {"vit_h_14", "regnet_y_128gf"}


# -- one model (child process) -------------------------------------------------------------

def build(name: str):
    """The model with random weights (no download) and example inputs for it."""
    import torch
    import torchvision

    builder = torchvision.models.get_model_builder(name)
    params = inspect.signature(builder).parameters
    kwargs = {"weights": None}
    if "weights_backbone" in params:
        kwargs["weights_backbone"] = None
    if name.startswith("quantized_"):
        kwargs["quantize"] = True
    torch.manual_seed(0)
    model = builder(**kwargs).eval()
    module = builder.__module__
    if ".detection." in module:
        inputs = ([torch.rand(3, 320, 320)],)
    elif ".optical_flow." in module:
        inputs = (torch.rand(1, 3, 128, 128), torch.rand(1, 3, 128, 128))
    elif ".video." in module:
        frames, side = (16, 224) if name.startswith(("mvit", "s3d")) else (8, 112)
        if name.startswith("swin3d"):
            frames, side = 8, 224
        inputs = (torch.rand(1, 3, frames, side, side),)
    elif "inception" in name:
        inputs = (torch.rand(1, 3, 299, 299),)
    else:
        inputs = (torch.rand(1, 3, 224, 224),)
    return model, inputs


def hook_shapes(model, inputs) -> dict[str, str | None]:
    """Module path -> the shape its forward returned (first tensor), as irviz writes
    shapes; None when the module ran more than once with different shapes."""
    import torch

    from irviz.ir.model import format_shape, tensor_info

    paths = {id(m): n for n, m in model.named_modules()}
    seen: dict[str, str | None] = {}

    def first_tensor(out):
        if isinstance(out, torch.Tensor):
            return out
        if isinstance(out, (tuple, list)):
            for o in out:
                found = first_tensor(o)
                if found is not None:
                    return found
        return None

    def hook(module, _args, out):
        path = paths.get(id(module))
        tensor = first_tensor(out)
        if path is None or tensor is None or not isinstance(out, torch.Tensor):
            return  # a module returning a tuple/dict: irviz's "returns" names a container
        text = format_shape(tensor_info(tensor))
        if path in seen and seen[path] != text:
            seen[path] = None
        else:
            seen.setdefault(path, text)

    handle = torch.nn.modules.module.register_module_forward_hook(hook)
    try:
        with torch.no_grad():
            model(*inputs)
    finally:
        handle.remove()
    return seen


def _last_op_shapes(G) -> dict[str, str | None]:
    """What an older irviz drew in each call's box: the shape of the last op inside it."""
    from irviz.ir.model import format_shape, is_folded

    blocks, last = G.graph["blocks"], {}
    for _node, data in G.nodes(data=True):
        if is_folded(data):
            continue
        b = data["block"]
        while b is not None:
            last[b] = data
            b = blocks[b]["parent"]
    return {cid: format_shape(d["outputs"][0])
            if d["outputs"] and d["outputs"][0].get("shape") is not None else None
            for cid, d in last.items()}


def drawn_shapes(G) -> dict[str, str]:
    """Module path -> the shape irviz shows that module's call returning (``?`` or a
    shape), for calls made once (a module called twice has two calls)."""
    try:
        from irviz.ir.model import returned_shape
    except ImportError:  # irviz before returned_shape: a box showed its last op's shape
        older = _last_op_shapes(G)

        def returned_shape(_G, cid):
            return older.get(cid)

    calls: dict[str, list[str | None]] = {}
    for cid, info in G.graph["blocks"].items():
        module = info.get("module")
        if info.get("kind") == "method" and module and info.get("method") == "forward":
            calls.setdefault(module, []).append(returned_shape(G, cid))
    return {m: shapes[0] for m, shapes in calls.items() if len(shapes) == 1 and shapes[0]}


def cluster_boxes(svg: bytes) -> tuple[dict[str, tuple[float, float, float, float]], float]:
    """``cluster id -> (x0, y0, x1, y1)`` of every drawn cluster, and the picture's height."""
    root = ET.fromstring(svg)
    height = float(re.sub(r"[a-z]+$", "", root.get("height", "0")))
    boxes = {}
    for g in root.iter(f"{SVG}g"):
        gid = g.get("id") or ""
        if "cluster" not in (g.get("class") or "") or not gid.startswith("irviz:cluster:"):
            continue
        for el in g.iter():
            if el.tag in (f"{SVG}path", f"{SVG}polygon"):
                text = el.get("d") or el.get("points") or ""
                nums = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", text)]
                xs, ys = nums[0::2], nums[1::2]
                if xs and ys:
                    boxes[gid.removeprefix("irviz:cluster:")] = (min(xs), min(ys), max(xs), max(ys))
                break
    return boxes, height


def order_violations(G, boxes) -> dict:
    """Consecutive sibling call clusters (same parent container, in program order) where
    the later one depends on the earlier (a data path between them): such a later stage
    must not start above the earlier one - with clusters stretched to the top rank, Faster
    R-CNN's roi_heads stood beside its backbone. Independent siblings (a residual block's
    downsample) are free to sit anywhere: dot ranks them by data, not program order."""
    blocks = G.graph["blocks"]
    order = list(G.nodes)
    position = {n: i for i, n in enumerate(order)}
    span: dict[str, list[int]] = {}   # container -> [first, last] program position inside
    for i, (_node, block) in enumerate(G.nodes(data="block")):
        b = block
        while b is not None:
            span.setdefault(b, [i, i])[1] = i
            b = blocks[b]["parent"]

    def uses(a: str, b: str) -> bool:
        """A path from a node of ``a`` to a node of ``b`` (nodes of a call are consecutive
        in program order and edges run forward, so the search stops past ``b``)."""
        (a0, a1), (b0, b1) = span[a], span[b]
        todo = [v for n in order[a0:a1 + 1] for v in G.successors(n) if a1 < position[v] <= b1]
        seen = set(todo)
        while todo:
            v = todo.pop()
            if position[v] >= b0:
                return True
            for w in G.successors(v):
                if w not in seen and position[w] <= b1:
                    seen.add(w)
                    todo.append(w)
        return False

    siblings: dict[str, list[str]] = {}
    for cid in boxes:
        if cid in blocks and blocks[cid].get("kind") in ("method", "function") and cid in span:
            siblings.setdefault(blocks[cid]["parent"], []).append(cid)
    pairs = bad = 0
    examples = []
    for kids in siblings.values():
        kids.sort(key=lambda c: span[c][0])
        for a, b in zip(kids, kids[1:]):
            if span[b][0] <= span[a][1] or not uses(a, b):
                continue
            pairs += 1
            if boxes[b][1] < boxes[a][1] - 10:  # b's top above a's top
                bad += 1
                if len(examples) < 3:
                    examples.append(f"{blocks[b]['label']} starts above {blocks[a]['label']}")
    return {"sibling_pairs": pairs, "out_of_order": bad, "order_examples": examples}


def model_code(path: str, allowed: tuple[str, ...]) -> bool:
    from irviz.paths import is_inside

    return any(is_inside(path, d) for d in allowed)


def one(name: str, png_dir: str | None) -> dict:
    import torch
    import torchvision

    from irviz.errors import IrvizError
    from irviz.workspace import Workspace

    torch.set_num_threads(1)
    started = time.perf_counter()
    model, inputs = build(name)
    hooks = hook_shapes(model, inputs)
    allowed = (os.path.dirname(torchvision.__file__),)
    result: dict = {"model": name, "family": type(model).__module__.split(".")[2]
                    if type(model).__module__.count(".") >= 2 else "classification"}
    graphs = {}
    for mode in ("script", "trace"):
        row: dict = {}
        t0 = time.perf_counter()
        ws = Workspace(inputs=inputs)
        try:
            [target] = ws.targets(model)
            view = ws.view(target, mode)
            G = view.graph
            drawing = view.drawing()
            svg = view.svg(engine="dot")
        except IrvizError as exc:
            row["error"] = exc.message[:200]
            result[mode] = row
            continue
        except Exception as exc:  # an irviz bug: say so, the run goes on
            row["error"] = f"irviz raised {type(exc).__name__}: {str(exc)[:200]}"
            result[mode] = row
            continue
        graphs[mode] = G
        shown = drawn_shapes(G)
        agree = unknown = 0
        wrong = []
        for module, text in shown.items():
            truth = hooks.get(module)
            if truth is None:
                continue
            if text == "?":
                unknown += 1
            elif text == truth:
                agree += 1
            else:
                wrong.append(f"{module}: drawn {text}, hook {truth}")
        bad_warnings = [f"{w.category} at {w.filename}:{w.lineno}" for w in view.capture.warnings
                        if not model_code(w.filename, allowed)]
        boxes, _height = cluster_boxes(svg)
        order = order_violations(G, boxes)
        row.update(
            ir_nodes=G.number_of_nodes(), drawn=drawing.drawn_nodes,
            shapes_checked=agree + unknown + len(wrong), shapes_agree=agree,
            shapes_unknown=unknown, shapes_wrong=len(wrong), wrong_examples=wrong[:3],
            warnings=len(view.capture.warnings), warnings_misplaced=len(bad_warnings),
            misplaced_examples=bad_warnings[:3],
            **order,
            svg_kb=len(svg) // 1024, seconds=round(time.perf_counter() - t0, 2))
        if png_dir:
            (Path(png_dir) / f"{name}.{mode}.svg").write_bytes(svg)
        result[mode] = row
    if "script" in graphs and "trace" in graphs:
        s, t = drawn_shapes(graphs["script"]), drawn_shapes(graphs["trace"])
        both = [m for m in s if m in t and "?" not in (s[m], t[m])]
        result["script_vs_trace"] = {
            "checked": len(both),
            "differ": [f"{m}: script {s[m]}, trace {t[m]}" for m in both if s[m] != t[m]][:5],
            "differ_count": sum(s[m] != t[m] for m in both)}
    result["seconds"] = round(time.perf_counter() - started, 2)
    return result


# -- the corpus (parent) -------------------------------------------------------------------

def model_names(pattern: str | None) -> list[str]:
    import torchvision

    names = [n for n in torchvision.models.list_models() if n not in TOO_BIG]
    quantized = torchvision.models.list_models(module=torchvision.models.quantization)
    names = sorted(set(names) | set(quantized))
    return [n for n in names if not pattern or re.search(pattern, n)]


def summarise(rows: list[dict]) -> str:
    def total(mode, key):
        return sum(r.get(mode, {}).get(key, 0) or 0 for r in rows)

    lines = ["# torchvision corpus", "",
             f"{len(rows)} torchvision models, random weights, "
             "`python benchmarks/torchvision_corpus.py` (see its docstring).", "",
             "| | script | trace |", "|---|---|---|"]
    for label, key in [("drawn", None), ("module shapes checked against hooks", "shapes_checked"),
                       ("... equal to the hook's", "shapes_agree"), ("... shown as ?", "shapes_unknown"),
                       ("... contradicting the hook", "shapes_wrong"), ("warnings", "warnings"),
                       ("... attributed outside the model's code", "warnings_misplaced"),
                       ("sibling stages (a later call using an earlier one's result)",
                        "sibling_pairs"),
                       ("... the later drawn starting above the earlier", "out_of_order")]:
        if key is None:
            cells = [str(sum(1 for r in rows if mode in r and "error" not in r[mode]))
                     for mode in ("script", "trace")]
        else:
            cells = [str(total(mode, key)) for mode in ("script", "trace")]
        lines.append(f"| {label} | {cells[0]} | {cells[1]} |")
    svt = [r["script_vs_trace"] for r in rows if "script_vs_trace" in r]
    lines += ["", f"Script vs trace, same module: {sum(s['checked'] for s in svt)} shapes "
              f"compared, {sum(s['differ_count'] for s in svt)} differ.", ""]
    quant = [r for r in rows if r["model"].startswith("quantized_")]
    if quant:
        lines += ["| quantized model | drawn (script) | drawn (trace) |", "|---|---|---|"]
        for r in quant:
            lines.append(f"| {r['model']} | {r.get('script', {}).get('drawn', '-')} | "
                         f"{r.get('trace', {}).get('drawn', '-')} |")
        lines.append("")
    problems = []
    for r in rows:
        for mode in ("script", "trace"):
            row = r.get(mode, {})
            for key in ("error", "wrong_examples", "misplaced_examples", "order_examples"):
                if row.get(key):
                    problems.append(f"- {r['model']} ({mode}) {key}: {row[key]}")
        if r.get("script_vs_trace", {}).get("differ"):
            problems.append(f"- {r['model']} script vs trace: {r['script_vs_trace']['differ']}")
        if r.get("failed"):
            problems.append(f"- {r['model']}: {r['failed']}")
    lines += ["## What did not hold", ""] + (problems or ["nothing"]) + [""]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", help="regular expression over model names")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per model")
    parser.add_argument("--png", nargs="*", default=[], help="models whose pictures to keep")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--keep", help=argparse.SUPPRESS)
    parser.add_argument("--results", default=str(HERE / "RESULTS-corpus.md"))
    parser.add_argument("--out", default=str(OUT), help="where results.jsonl and pictures go")
    parser.add_argument("--merge", nargs="*", help="summarise these results.jsonl files only")
    args = parser.parse_args(argv)
    if args.merge:  # runs split over several processes, summarised as one
        rows = [json.loads(line) for path in args.merge for line in open(path) if line.strip()]
        Path(args.results).write_text(summarise(rows), encoding="utf-8")
        return 0
    out = Path(args.out)
    if args.one:
        print(json.dumps(one(args.one, args.keep)))
        return 0
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    names = model_names(args.models)
    with open(out / "results.jsonl", "w") as log:
        for i, name in enumerate(names, 1):
            cmd = [sys.executable, __file__, "--one", name]
            if name in args.png:
                cmd += ["--keep", str(out)]
            t0 = time.perf_counter()
            try:
                done = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
                last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
                row = json.loads(last) if last.startswith("{") else {
                    "model": name, "failed": (done.stderr.strip().splitlines() or ["?"])[-1][:300]}
            except subprocess.TimeoutExpired:
                row = {"model": name, "failed": f"over {args.timeout:.0f} s"}
            rows.append(row)
            log.write(json.dumps(row) + "\n")
            log.flush()
            print(f"[{i}/{len(names)}] {name} {time.perf_counter() - t0:.0f}s "
                  + " ".join(f"{m}: {row[m].get('error') or (str(row[m]['drawn']) + ' drawn, ' + str(row[m]['shapes_wrong']) + ' wrong shapes, ' + str(row[m]['warnings_misplaced']) + ' misplaced, ' + str(row[m]['out_of_order']) + ' out of order')}"
                           for m in ("script", "trace") if m in row)
                  + (f" FAILED {row['failed']}" if "failed" in row else ""), flush=True)
    Path(args.results).write_text(summarise(rows), encoding="utf-8")
    print(f"summary in {os.path.relpath(args.results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
