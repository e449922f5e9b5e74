"""irviz next to the tools users would pick instead, in one process run.

    make bench                                   # deps + this + scaling.py (~8 min on 2 CPUs)
    .venv/bin/python benchmarks/harness.py       # this part alone (~6 min before issue 16's
                                                 # set; 27 min with it on a loaded machine)
    .venv/bin/python benchmarks/harness.py --models cell,resnet18 --repeats 2 --no-processes
    # torchvision's Faster R-CNN row: only with torchvision importable (see `make corpus`)
    eval "$(../shared/tools/torchvision-cpu/build.sh build/cudastub)"
    PYTHONPATH=build/corpus-site .venv/bin/python benchmarks/harness.py

For every model (the seed samples, a ResNet-18-like CNN, transformers' BERT-base and
GPT-2 with random weights, and issue 16's set: a scripted detection-scale model, a
DenseNet-121-like CNN, ViT and BERT with keyword inputs, torchvision's Faster R-CNN where
torchvision imports), in ONE process and interleaved (round r runs every tool
once, in an order rotated by r; round 0 is a warm-up and is reported as "first"):

* irviz, stage by stage: capture (``irviz.frontends.capture.capture``), graph build
  (``irviz.ir.build.build_graph``), every analysis of ``irviz/analyses/pipeline.py``
  (read from ``analysed_graph``'s source, so a new analysis is timed too), DOT
  (``Visualization.dot()`` with the default ``RenderOptions``), layout + SVG with the
  ``dot`` binary (``irviz.render.engines.render``), and the wasm engine as an extra
  column (not in the total);
* the floor: ``torch.jit.trace(check_trace=False)`` / ``torch.jit.script`` alone;
* the anchors: torchview ``draw_graph`` (default, and ``depth=inf, expand_nested=True``)
  with its SVG, TensorBoard ``SummaryWriter.add_graph`` + ``close``, torchviz
  ``make_dot`` (forward + graph + SVG). A tool that is missing or fails is skipped for
  that model and its error is recorded.

Then, in fresh child processes: ``irviz render`` as a CLI process against a process that
only builds and traces (or scripts) the same model, interleaved, with the peak RSS of each
(its own ``VmHWM``), and one child per anchor tool and model for its peak RSS.

A model's keyword inputs reach each tool its own way: ``example_kwarg_inputs`` for the
floor's trace, ``draw_graph``'s keywords, positionally for ``add_graph``, ``**`` for
torchviz. Model construction is never timed. Medians over the repeats, "±" is half the min-max range
relative to the median. Raw results go to ``benchmarks/out/harness.json``; the tables are
written into ``benchmarks/RESULTS.md`` between the ``harness`` markers.
"""
from __future__ import annotations

import argparse
import gc
import json
import re
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (OUT, ROOT, Call, HostLoad, command_line, error_text,  # noqa: E402
                    facts_md, fmt_bytes, fmt_ratio, fmt_s, fmt_stat, load_spec, machine_facts,
                    med, ratio, run_process, scrub, summary, svg_facts, vm_hwm_kb, write_results)


@dataclass(frozen=True)
class Model:
    key: str
    spec: str
    modes: tuple[str, ...]
    repeats: int          # measured rounds (after one warm-up round)
    note: str
    wasm: bool = True     # the wasm layout column (off where it takes minutes)
    needs: str | None = None   # a module that must import (checked in a child process)


MODELS = [
    Model("cell", "samples/decision_gate.py:MyCell", ("script", "trace"), 5,
          "seed: MyCell with MyDecisionGate (data-dependent if)"),
    Model("rnnloop", "samples/rnn_loop.py:WrapRNN", ("script", "trace"), 5,
          "seed: WrapRNN (script holding trace holding script, a loop)"),
    Model("lstm_ens", "samples/lstm_ensemble.py:LSTMEnsemble", ("script", "trace"), 3,
          "seed: LSTMEnsemble, 4 forked bidirectional LSTMs"),
    Model("resnet18", "benchmarks/models.py:resnet18()", ("script", "trace"), 5,
          "ResNet-18-like CNN, 1x3x224x224"),
    Model("bert", "benchmarks/models.py:bert()", ("trace",), 3,
          "transformers BertModel, bert-base config, 1x128 ids"),
    Model("gpt2", "benchmarks/models.py:gpt2()", ("trace",), 3,
          "transformers GPT2Model, gpt2 config, 1x128 ids"),
    # issue 16's benchmark set
    Model("detector", "benchmarks/models.py:detector()", ("script",), 2,
          "scripted Mask R-CNN-like detector (ResNet-101 + FPN + RPN + RoI heads, "
          "torchvision's style, no torchvision), 1x3x120x120", wasm=False),
    Model("densenet", "benchmarks/models.py:densenet()", ("trace",), 2,
          "DenseNet-121-like (growth 32, blocks 6/12/24/16), 1x3x224x224", wasm=False),
    Model("vit", "benchmarks/models.py:vit()", ("trace",), 3,
          "transformers ViTModel, base config, pixel_values=1x3x224x224 (keyword)"),
    Model("bert_kw", "benchmarks/models.py:bert_kw()", ("trace",), 3,
          "transformers BertModel, default config (ModelOutput), keyword inputs "
          "input_ids + attention_mask + token_type_ids, 1x128"),
    Model("fasterrcnn", "benchmarks/models.py:fasterrcnn()", ("script",), 2,
          "torchvision fasterrcnn_resnet50_fpn scripted, random weights, one 3x320x320 image "
          "(only where torchvision imports)", wasm=False, needs="torchvision"),
]
ANCHORS = ("torchview", "torchview_full", "tensorboard", "torchviz")
TOOL_TITLES = {"torchview": "torchview (default)", "torchview_full": "torchview expanded",
               "tensorboard": "TensorBoard add_graph", "torchviz": "torchviz make_dot",
               "floor": "floor (jit alone)"}
PROCESS_TIMEOUT = 300.0
ANCHOR_DOT_TIMEOUT = 60.0   # an anchor's own Graphviz run (torchview's unrolled NMS loop)


def _now() -> float:
    return time.perf_counter()


# -- the tools ----------------------------------------------------------------------------

def run_floor(model, call: Call, mode: str) -> dict:
    """The bare jit a user would call: keyword inputs as ``example_kwarg_inputs``, and
    ``strict=False`` so that a dict output (a transformers ``ModelOutput``) traces."""
    import torch

    t = _now()
    if mode == "trace":
        torch.jit.trace(model, call.args or None, check_trace=False, strict=False,
                        example_kwarg_inputs=call.kwargs or None)
    else:
        torch.jit.script(model)
    return {"time": _now() - t}


def run_torchview(model, call: Call, full: bool) -> dict:
    """``draw_graph``: positional inputs as ``input_data``, keyword inputs as its extra
    keywords (or as ``input_data`` when there are only keywords: a dict is called with
    ``**``)."""
    from torchview import draw_graph

    kw = {"depth": float("inf"), "expand_nested": True} if full else {}
    data = call.args if call.args else call.kwargs
    extra = call.kwargs if call.args else {}
    t = _now()
    graph = draw_graph(model, input_data=data, **kw, **extra)
    t1 = _now()
    svg = _dot_svg(graph.visual_graph.source, "torchview")
    t2 = _now()
    return {"time": t2 - t, "stages": {"graph": t1 - t, "render": t2 - t1}, "svg": svg}


def _dot_svg(source: str, tool: str) -> bytes:
    """``dot -Tsvg`` on an anchor's DOT, as ``graphviz``'s ``pipe`` runs it, but with a
    time limit: a graph dot cannot lay out in minutes is that tool's failure here."""
    import subprocess

    try:
        return subprocess.run(["dot", "-Tsvg"], input=source.encode(), capture_output=True,
                              check=True, timeout=ANCHOR_DOT_TIMEOUT).stdout
    except subprocess.TimeoutExpired:
        lines = source.count("\n")
        raise TimeoutError(f"{tool}'s graph ({lines:,} DOT lines) not laid out by dot in "
                           f"{ANCHOR_DOT_TIMEOUT:.0f} s") from None


def _first_tensor(value):
    import torch

    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, dict):   # a ModelOutput too
        value = list(value.values())
    if isinstance(value, (tuple, list)):
        for item in value:
            found = _first_tensor(item)
            if found is not None:
                return found
    return None


def run_torchviz(model, call: Call) -> dict:
    import torch
    from torchviz import make_dot

    t = _now()
    with torch.enable_grad():
        out = _first_tensor(call(model))
    t1 = _now()
    if out is None or out.grad_fn is None:
        raise RuntimeError("the output has no autograd graph: torchviz has nothing to draw")
    dot = make_dot(out, params=dict(model.named_parameters()))
    t2 = _now()
    svg = _dot_svg(dot.source, "torchviz")
    t3 = _now()
    return {"time": t3 - t, "stages": {"forward": t1 - t, "graph": t2 - t1, "render": t3 - t2},
            "svg": svg}


def _positional(model, call: Call) -> tuple:
    """``call`` as positional inputs (``add_graph`` takes no keywords): keyword inputs that
    are ``forward``'s next parameters in order go by position."""
    import inspect

    if not call.kwargs:
        return call.args
    params = list(inspect.signature(model.forward).parameters)[len(call.args):]
    if params[:len(call.kwargs)] != list(call.kwargs):
        raise TypeError(f"keyword inputs {', '.join(call.kwargs)} are not forward's next "
                        "parameters: add_graph takes positional inputs only")
    return call.args + tuple(call.kwargs.values())


def run_tensorboard(model, call: Call) -> dict:
    """``add_graph`` (``use_strict_trace=False`` when a dict output needs it)."""
    import torch.utils.tensorboard.writer as tbw
    from torch.utils.tensorboard import SummaryWriter

    seen = {}
    original = tbw.graph

    def spy(*args, **kwargs):   # to count the GraphDef's nodes; costs nothing measurable
        seen["graph"] = result = original(*args, **kwargs)
        return result

    tbw.graph = spy
    try:
        with tempfile.TemporaryDirectory() as logdir:
            t = _now()
            writer = SummaryWriter(log_dir=logdir)
            writer.add_graph(model, _positional(model, call), use_strict_trace=not call.kwargs)
            writer.close()
            elapsed = _now() - t
            size = sum(p.stat().st_size for p in Path(logdir).rglob("*") if p.is_file())
    finally:
        tbw.graph = original
    return {"time": elapsed, "graphdef_nodes": len(seen["graph"][0].node), "event_bytes": size}


def analysis_steps() -> list:
    """The analyses ``irviz.analyses.pipeline`` runs, in order (timed one by one)."""
    from irviz.analyses import pipeline

    return list(pipeline.STEPS)


def run_irviz(target, inputs, mode: str, steps, wasm: bool = True) -> dict:
    from irviz.api import Visualization
    from irviz.frontends.capture import capture
    from irviz.analyses import pipeline
    from irviz.render import engines

    st = {}
    t = _now()
    cap = capture(target, mode, inputs)
    st["capture"] = _now() - t
    t = _now()
    G = pipeline.graph_of(cap)
    st["build"] = _now() - t
    for step in steps:
        t = _now()
        pipeline.run_step(step, G, cap)
        st[f"analysis:{step.name}"] = _now() - t
    view = Visualization(cap, G)
    t = _now()
    dot = view.dot()
    st["dot"] = _now() - t
    t = _now()
    svg = engines.render(dot, "svg", "dot")
    st["layout"] = _now() - t
    extra = {}
    if wasm:
        try:
            t = _now()
            with warnings.catch_warnings():   # "cannot draw HTML-like labels": known, by design
                warnings.filterwarnings("ignore", message="irviz: the WebAssembly")
                wsvg = engines.render(dot, "svg", "wasm")
            st["layout_wasm"] = _now() - t
            extra["wasm_nodes"] = svg_facts(wsvg)["nodes"]
        except Exception as exc:  # noqa: BLE001 - recorded, not fatal
            extra["wasm_error"] = error_text(exc)
    total = sum(v for k, v in st.items() if k != "layout_wasm")
    return {"time": total, "stages": st, "svg": svg, "dot": dot,
            "ir_nodes": G.number_of_nodes(), "ir_edges": G.number_of_edges(),
            "drawn_nodes_reported": getattr(view, "drawn_nodes", None),
            "render_notes": list(getattr(view, "render_notes", []) or []), **extra}


_CLUSTER = re.compile(r'^( *)subgraph "cluster_([^"]*)" \{\n *label=<(.*?)>;$', re.M)
_BOLD = re.compile(r"<B>(.*?)</B>")


def clusters(dot: str) -> dict:
    """The picture's clusters from irviz's DOT: the top-level ones in drawing order
    (``backbone: ResNetBody``, ``if pad_h > 0 ...``) and how many are module calls."""
    import html

    top, calls = [], 0
    for m in _CLUSTER.finditer(dot):
        indent, cid, label = m.groups()
        is_call = cid.endswith("/call")
        calls += is_call
        if len(indent) == 2:
            bold = _BOLD.search(label)
            text = html.unescape(re.sub(r"<[^>]+>", "", bold.group(1) if bold else label))
            top.append({"kind": "module" if is_call else "control", "label": text.strip()})
    return {"top_clusters": top, "module_clusters": calls}


def tool_runner(tool: str, model, call: Call, mode: str | None = None, target=None,
                steps=None, inputs=None, wasm: bool = True):
    """One tool's run; irviz gets ``inputs`` (irviz's ExampleInputs), the others ``call``."""
    if tool == "irviz":   # irviz records torch's warnings itself
        return run_irviz(target, inputs, mode, steps, wasm)
    with warnings.catch_warnings():   # TracerWarnings etc. of the other tools: not our topic
        warnings.simplefilter("ignore")
        return _other_tool(tool, model, call, mode)


def _other_tool(tool: str, model, call: Call, mode: str | None):
    if tool == "floor":
        return run_floor(model, call, mode)
    if tool == "torchview":
        return run_torchview(model, call, full=False)
    if tool == "torchview_full":
        return run_torchview(model, call, full=True)
    if tool == "torchviz":
        return run_torchviz(model, call)
    if tool == "tensorboard":
        return run_tensorboard(model, call)
    raise ValueError(tool)


# -- in-process, interleaved ----------------------------------------------------------------

def bench_model(m: Model, repeats: int | None, steps, wasm: bool, anchors: tuple) -> dict:
    """Every tool on one model, interleaved rounds; round 0 is the warm-up."""
    import torch
    from irviz.frontends.inputs import resolve_inputs
    from irviz.frontends.loader import load

    t = _now()
    [target] = load(m.spec).targets
    inputs = resolve_inputs(target, None)
    call = Call.of(inputs)
    build_time = _now() - t
    model = target.obj
    n_params = sum(p.numel() for p in model.parameters())
    tools = [f"irviz:{mode}" for mode in m.modes] + [f"floor:{mode}" for mode in m.modes] \
        + list(anchors)
    times: dict[str, list[float]] = {k: [] for k in tools}
    stages: dict[str, dict[str, list[float]]] = {k: {} for k in tools}
    last: dict[str, dict] = {}
    errors: dict[str, str] = {}
    rounds = 1 + (repeats or m.repeats)
    with HostLoad() as load_meter:
        for r in range(rounds):
            order = tools[r % len(tools):] + tools[: r % len(tools)]
            for key in order:
                if key in errors:
                    continue
                tool, _, mode = key.partition(":")
                gc.collect()
                try:
                    res = tool_runner(tool, model, call, mode or None, target, steps, inputs,
                                      wasm and m.wasm)
                except Exception as exc:  # noqa: BLE001 - the tool failed on this model
                    errors[key] = error_text(exc)
                    continue
                times[key].append(res["time"])
                for name, value in res.get("stages", {}).items():
                    stages[key].setdefault(name, []).append(value)
                last[key] = res
    out = {"key": m.key, "spec": m.spec, "note": m.note, "params": n_params,
           "model_build_s": build_time, "rounds": rounds, "other_load_cpus": load_meter.value,
           "torch_threads": torch.get_num_threads(), "tools": {}}
    OUT.mkdir(parents=True, exist_ok=True)
    for key in tools:
        entry: dict = {"error": errors.get(key)}
        if times[key]:
            entry["time"] = summary(times[key][1:], first=times[key][0])
            entry["stages"] = {n: summary(v[1:], first=v[0]) for n, v in stages[key].items()}
            res = last[key]
            entry.update(svg_facts(res.get("svg")))
            for k in ("ir_nodes", "ir_edges", "drawn_nodes_reported", "render_notes",
                      "graphdef_nodes", "event_bytes", "wasm_error", "wasm_nodes"):
                if k in res:
                    entry[k] = res[k]
            if res.get("svg") is not None:
                name = f"{m.key}.{key.replace(':', '.')}.svg"
                (OUT / "svg").mkdir(exist_ok=True)
                (OUT / "svg" / name).write_bytes(res["svg"])
                entry["svg_file"] = f"benchmarks/out/svg/{name}"
            if res.get("dot") is not None:
                entry["dot_bytes"] = len(res["dot"])
                entry.update(clusters(res["dot"]))
        out["tools"][key] = entry
    return out


def pictures(results: dict) -> None:
    """irviz's default view of each model as a PNG at 100 % (rsvg-convert): how big is it?"""
    import shutil
    import struct
    import subprocess

    rsvg = shutil.which("rsvg-convert")
    if not rsvg:
        results["png_note"] = "rsvg-convert not installed: no PNGs"
        return
    (OUT / "png").mkdir(parents=True, exist_ok=True)
    for m in results["models"]:
        key = next((k for k in m["tools"] if k.startswith("irviz:")), None)
        entry = m["tools"].get(key) or {}
        if not entry.get("svg_file"):
            continue
        png = OUT / "png" / (Path(entry["svg_file"]).stem + ".png")
        svg_file = ROOT / entry["svg_file"]
        size = re.search(r'<svg[^>]*?width="([\d.]+)pt" height="([\d.]+)pt"',
                         svg_file.read_text(errors="replace")[:4000])
        full_px = [round(float(v) * 96 / 72) for v in size.groups()] if size else None
        # librsvg draws at most 32767 px a side: a longer picture is drawn smaller
        zoom = min(1.0, 32000 / max(full_px)) if full_px else 1.0
        try:
            subprocess.run([rsvg, "-z", f"{zoom:.3f}", "-o", str(png), str(svg_file)],
                           check=True, timeout=120, capture_output=True)
            with open(png, "rb") as fh:
                w, h = struct.unpack(">II", fh.read(24)[16:24])
            entry["png"] = {"file": f"benchmarks/out/png/{png.name}",
                            "px": full_px or [w, h], "zoom": zoom}
        except (OSError, subprocess.SubprocessError, struct.error) as exc:
            entry["png"] = {"error": error_text(exc)}


# -- child processes ----------------------------------------------------------------------

def child_main(tool: str, spec: str, mode: str | None) -> None:
    """One tool on one freshly built model; prints one JSON line."""
    t = _now()
    import torch  # noqa: F401 - what every tool imports first
    model, call = load_spec(spec)
    built = _now() - t
    hwm_built = vm_hwm_kb()
    result: dict = {"build_s": built, "hwm_built_kb": hwm_built}
    try:
        t = _now()
        res = tool_runner(tool, model, call, mode)
        result.update(run_s=_now() - t, ok=True)
        result.update({k: v for k, v in svg_facts(res.get("svg")).items() if k != "svg_pt"})
    except Exception as exc:  # noqa: BLE001
        result.update(ok=False, error=error_text(exc))
    result["hwm_kb"] = vm_hwm_kb()
    print("BENCH-RESULT " + json.dumps(result))


def _child_json(proc: dict) -> dict | None:
    for line in reversed(proc["stdout"].splitlines()):
        if line.startswith("BENCH-RESULT "):
            return json.loads(line[len("BENCH-RESULT "):])
    return None


def _proc_error(proc: dict) -> str | None:
    if proc["timed_out"]:
        return f"timed out after {PROCESS_TIMEOUT:.0f} s"
    if proc["rc"] != 0:
        lines = [ln for ln in proc["stderr"].splitlines() if ln.strip()]
        return scrub(f"exit {proc['rc']}: " + (lines[-1] if lines else "no message"))[:300]
    return None


def _peak_kb(proc: dict, hwm_file: Path | None) -> int | None:
    """The child's own VmHWM: from its JSON line, or from the file peak_rss.py wrote."""
    if hwm_file is not None:
        try:
            return int(hwm_file.read_text().strip())
        except (OSError, ValueError):
            return None
    child = _child_json(proc) or {}
    return child.get("hwm_kb")


def bench_processes(models: list[Model], repeats: int, anchors: tuple, all_modes: bool,
                    jobs: int) -> dict:
    """Whole-process wall and peak RSS: irviz CLI vs build+trace only; anchors once each."""
    import os

    results: dict = {"pairs": {}, "anchors": {}}
    py = sys.executable
    me = str(Path(__file__).resolve())
    peak = str(Path(__file__).resolve().parent / "peak_rss.py")
    (OUT / "proc").mkdir(parents=True, exist_ok=True)
    hwm_file = OUT / "proc" / "hwm.txt"
    env = {**os.environ, "BENCH_HWM_FILE": str(hwm_file)}
    with HostLoad() as meter:
        for m in models:
            for mode in (m.modes if all_modes else m.modes[:1]):
                key = f"{m.key}:{mode}"
                svg = OUT / "proc" / f"{m.key}.{mode}.svg"
                cmds = {
                    "irviz": [py, peak, "irviz", "render", m.spec, "--mode", mode,
                              "-o", str(svg), "-q"],
                    "floor": [py, me, "--child", "floor", "--spec", m.spec, "--mode", mode],
                }
                runs: dict[str, list[tuple[float, int | None]]] = {"irviz": [], "floor": []}
                child_info: dict = {}
                errors: dict[str, str] = {}
                for r in range(repeats):
                    for who in (["irviz", "floor"] if r % 2 == 0 else ["floor", "irviz"]):
                        if who in errors:
                            continue
                        hwm_file.unlink(missing_ok=True)
                        proc = run_process(cmds[who], PROCESS_TIMEOUT, env=env)
                        err = _proc_error(proc)
                        if err:
                            errors[who] = err
                            continue
                        runs[who].append((proc["wall"],
                                          _peak_kb(proc, hwm_file if who == "irviz" else None)))
                        if who == "floor":
                            child_info = _child_json(proc) or {}
                entry = {}
                for who in ("irviz", "floor"):
                    entry[who] = {
                        "error": errors.get(who),
                        "wall": summary([w for w, _ in runs[who]]),
                        "peak_kb": summary([k for _, k in runs[who] if k is not None]),
                    }
                entry["floor"].update(build_s=child_info.get("build_s"),
                                      hwm_built_kb=child_info.get("hwm_built_kb"),
                                      run_s=child_info.get("run_s"))
                results["pairs"][key] = entry
                print(f"  process {key}: irviz {fmt_stat(entry['irviz']['wall'])} "
                      f"{_mb(med(entry['irviz']['peak_kb']))}, floor "
                      f"{fmt_stat(entry['floor']['wall'])} {_mb(med(entry['floor']['peak_kb']))}",
                      flush=True)
    results["pairs_other_load_cpus"] = meter.value
    from concurrent.futures import ThreadPoolExecutor

    def anchor_child(job):
        m, tool = job
        proc = run_process([py, me, "--child", tool, "--spec", m.spec], PROCESS_TIMEOUT)
        child = _child_json(proc) or {}
        return f"{m.key}:{tool}", {
            "wall": proc["wall"], "peak_kb": child.get("hwm_kb"),
            "hwm_built_kb": child.get("hwm_built_kb"),
            "build_s": child.get("build_s"), "run_s": child.get("run_s"),
            "error": child.get("error") or _proc_error(proc)}

    # Only their peak RSS is reported, so they may run side by side.
    with HostLoad() as meter, ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for key, entry in pool.map(anchor_child, [(m, t) for m in models for t in anchors]):
            results["anchors"][key] = entry
        print("  anchor processes: done", flush=True)
    results["anchors_other_load_cpus"] = meter.value
    return results


# -- report -------------------------------------------------------------------------------

def _stage_sum(entry: dict, names) -> float | None:
    st = entry.get("stages") or {}
    vals = [med(st.get(n)) for n in names]
    return sum(vals) if vals and None not in vals else None


def _analysis_names(entry: dict) -> list[str]:
    return [n for n in (entry.get("stages") or {}) if n.startswith("analysis:")]


def _own(entry: dict) -> float | None:
    """build + analyses + DOT (medians)."""
    return _stage_sum(entry, ["build", *_analysis_names(entry), "dot"])


def _mb(kb: float | None) -> str:
    return "–" if kb is None else f"{kb / 1024:.0f} MB"


def _pt(entry: dict) -> str:
    pt = entry.get("svg_pt")
    return f"{pt[0]:.0f} × {pt[1]:.0f}" if pt else "–"


def render_md(res: dict, cmd: str) -> str:
    models = res["models"]
    L: list[str] = []
    L += [f"Command: `{cmd}` (took {fmt_s(res['elapsed_s'])}).", "",
          facts_md(res["facts"], res.get("load_end")),
          f"- **Method:** one process; per model a warm-up round, then {{rounds}} interleaved "
          "rounds (each tool once per round, order rotated); medians, ± is half the "
          "min–max range relative to the median; *first* = the warm-up call. Model "
          "construction is not timed. torch threads: "
          f"{models[0]['torch_threads'] if models else '?'} (torch's default). CPU time "
          "other processes used meanwhile (in CPUs): "
          + ", ".join(f"{m['key']} {m['other_load_cpus']}" for m in models) + ".", ""]
    L[-2] = L[-2].replace("{rounds}", "/".join(sorted({str(m['rounds'] - 1) for m in models})))

    # headline
    L += ["### Side by side (in-process, median ±spread)", "",
          "irviz = capture + graph build + analyses + DOT + layout/SVG (dot binary). "
          "floor = `torch.jit.trace(check_trace=False)` / `torch.jit.script` alone. "
          "torchview/torchviz include their forward pass and SVG; TensorBoard is "
          "`add_graph` + `close` (it traces with `check_trace=True`).", "",
          "| model | mode | IR nodes | irviz | irviz first call | floor | irviz / floor "
          "| torchview (default) | torchview expanded | irviz / torchview expanded "
          "| TensorBoard add_graph | torchviz make_dot |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for m in models:
        tools = m["tools"]
        for i, mode in enumerate(k.split(":")[1] for k in tools if k.startswith("irviz:")):
            iv, fl = tools[f"irviz:{mode}"], tools[f"floor:{mode}"]
            anchors = [tools.get(a, {}) for a in ANCHORS]

            def cell(e):
                if not e:
                    return "–"
                return "fails¹" if e.get("error") else fmt_stat(e.get("time"))
            show = (lambda e: cell(e)) if i == 0 else (lambda e: "″")
            L.append(" | ".join([
                f"| {m['key']}", mode, str(iv.get("ir_nodes", "–")), cell(iv),
                fmt_s((iv.get("time") or {}).get("first")), cell(fl),
                fmt_ratio(ratio(med(iv.get("time")), med(fl.get("time")))),
                show(anchors[0]), show(anchors[1]),
                fmt_ratio(ratio(med(iv.get("time")), med(anchors[1].get("time"))))
                if anchors[1] and not anchors[1].get("error") else "–",
                show(anchors[2]), show(anchors[3])]) + " |")
    L += ["", "″ same model, same figure as the row above (the anchors do not script or trace).",
          ""]

    # irviz stages
    L += ["### irviz stage by stage (in-process medians; first call in parentheses)",
          "",
          "| model | mode | capture | build | analyses (each) | DOT | layout+SVG: dot | "
          "layout+SVG: wasm | build+analyses+DOT | capture ÷ (build+analyses+DOT) |",
          "|---|---|---|---|---|---|---|---|---|---|"]
    for m in models:
        for key, e in m["tools"].items():
            if not key.startswith("irviz:") or e.get("error"):
                continue
            st = e["stages"]
            each = " · ".join(f"{n.split(':', 1)[1].replace('annotate_', '')} "
                              f"{fmt_s(med(st[n]))}" for n in _analysis_names(e))
            own = _own(e)
            wasm = fmt_stat(st.get("layout_wasm")) if "layout_wasm" in st else \
                ("fails: " + e["wasm_error"] if e.get("wasm_error") else "–")
            first = sum(st[n]["first"] for n in _analysis_names(e))
            L.append(" | ".join([
                f"| {m['key']}", key.split(":")[1],
                f"{fmt_stat(st['capture'])} ({fmt_s(st['capture']['first'])})",
                fmt_stat(st["build"]),
                f"{fmt_s(_stage_sum(e, _analysis_names(e)))} ({each}); first call "
                f"{fmt_s(first)}",
                fmt_stat(st["dot"]), fmt_stat(st["layout"]), wasm, fmt_s(own),
                fmt_ratio(ratio(med(st["capture"]), own))]) + " |")
    L.append("")

    # pictures
    L += ["### What each tool draws (last SVG of the run)", "",
          "Nodes = `class=\"node\"` groups in the SVG (TensorBoard: GraphDef nodes, no "
          "picture). irviz's SVGs are in `benchmarks/out/svg/` after a run.", "",
          "| model | tool | drawn nodes | SVG size | SVG pt (w × h) | notes |",
          "|---|---|---|---|---|---|"]
    for m in models:
        for key, e in m["tools"].items():
            if key.startswith("floor"):
                continue
            title = "irviz " + key.split(":")[1] if key.startswith("irviz") else TOOL_TITLES[key]
            if e.get("error"):
                L.append(f"| {m['key']} | {title} | – | – | – | fails: `{e['error']}` |")
                continue
            notes = "; ".join(e.get("render_notes") or [])
            if key == "tensorboard":
                L.append(f"| {m['key']} | {title} | {e.get('graphdef_nodes')} | "
                         f"{fmt_bytes(e.get('event_bytes'))} event file | – | |")
                continue
            L.append(f"| {m['key']} | {title} | {e.get('nodes', '–')} | "
                     f"{fmt_bytes(e.get('svg_bytes'))} | {_pt(e)} | {notes} |")
    L.append("")

    pngs = [(m["key"], k.split(":")[1], e["png"]) for m in models
            for k, e in m["tools"].items() if k.startswith("irviz:") and e.get("png")]
    if pngs:
        L += ["irviz's default view as a PNG at 100 % zoom (`rsvg-convert -z 1`, 96 dpi; in "
              "`benchmarks/out/png/`); screens = PNG height ÷ 1080 px:", "",
              "| model | mode | PNG (w × h px) | screens tall |", "|---|---|---|---|"]
        for mk, mode, png in pngs:
            if "px" in png:
                w, h = png["px"]
                note = (f" (PNG file drawn at {png['zoom']:.0%}: librsvg's 32767 px limit)"
                        if png.get("zoom", 1.0) < 1.0 else "")
                L.append(f"| {mk} | {mode} | {w} × {h}{note} | {h / 1080:.1f} |")
            else:
                L.append(f"| {mk} | {mode} | fails: `{png.get('error')}` | |")
        L.append("")
    errors = [(m["key"], k, e["error"]) for m in models for k, e in m["tools"].items()
              if e.get("error")]
    if errors:
        L += ["¹ Failures (the tool is skipped for that model):", ""]
        L += [f"- {mk} / {TOOL_TITLES.get(k, k)}: `{err}`" for mk, k, err in errors]
        L.append("")

    proc = res.get("processes")
    if proc:
        L += ["### Whole process and peak memory (fresh child processes)", "",
              "irviz CLI = `python -m irviz render SPEC --mode MODE -o FILE -q` (import, load, "
              "build the model, capture, draw, write the SVG). floor = a process that "
              "imports torch, builds the same model and traces/scripts it, nothing else. "
              f"{proc.get('repeats')} runs each, alternating; peak RSS is the child's own "
              "`VmHWM` at exit (`benchmarks/peak_rss.py` wraps the CLI; `dot`'s own memory "
              "is not included). CPU time other processes used meanwhile: "
              f"{proc.get('pairs_other_load_cpus')} CPUs.", "",
              "| model | mode | irviz CLI wall | floor process wall (model build) | wall ratio "
              "| irviz CLI peak RSS | floor peak RSS (after build) | RSS ratio |",
              "|---|---|---|---|---|---|---|---|"]
        for key, e in proc["pairs"].items():
            mk, mode = key.split(":")
            iv, fl = e["irviz"], e["floor"]
            L.append(" | ".join([
                f"| {mk}", mode,
                f"fails: `{iv['error']}`" if iv.get("error") else fmt_stat(iv["wall"]),
                (f"fails: `{fl['error']}`" if fl.get("error") else
                 f"{fmt_stat(fl['wall'])} ({fmt_s(fl.get('build_s'))})"),
                fmt_ratio(ratio(med(iv["wall"]), med(fl["wall"]))),
                _mb(med(iv["peak_kb"])),
                f"{_mb(med(fl['peak_kb']))} ({_mb(fl.get('hwm_built_kb'))})",
                fmt_ratio(ratio(med(iv["peak_kb"]), med(fl["peak_kb"])))]) + " |")
        L += ["", "Anchor tools, one fresh process each (peak RSS; in parentheses the "
              "tool's first call in that process; these children run "
              f"{proc.get('jobs')} at a time, so their times are only indicative). CPU time "
              "other processes used meanwhile: "
              f"{proc.get('anchors_other_load_cpus')} CPUs.", "",
              "| model | floor | irviz CLI | " + " | ".join(TOOL_TITLES[a] for a in ANCHORS)
              + " |", "|---|---|---|" + "---|" * len(ANCHORS)]
        for m in models:
            modes = [k.split(":")[1] for k in m["tools"] if k.startswith("irviz:")]
            mode = next((md for md in modes if f"{m['key']}:{md}" in proc["pairs"]), modes[0])
            pair = proc["pairs"].get(f"{m['key']}:{mode}", {})
            cells = [f"| {m['key']} ({mode})", _mb(med(pair.get("floor", {}).get("peak_kb"))),
                     _mb(med(pair.get("irviz", {}).get("peak_kb")))]
            for a in ANCHORS:
                e = proc["anchors"].get(f"{m['key']}:{a}")
                if not e:
                    cells.append("–")
                elif e.get("error"):
                    cells.append("fails")
                else:
                    cells.append(f"{_mb(e['peak_kb'])} ({fmt_s(e.get('run_s'))})")
            L.append(" | ".join(cells) + " |")
        L.append("")

    L += issue16_md(res)
    L += ["### Targets", "", *targets_md(res), ""]
    return "\n".join(L)


HEAVY = 1000      # IR nodes from which (build+analyses+DOT) must be 10x faster than capture


def _irviz_rows(res: dict):
    for m in res["models"]:
        for key, e in m["tools"].items():
            if key.startswith("irviz:") and not e.get("error"):
                yield m, key.split(":", 1)[1], e


def _width_ok(e: dict) -> bool | None:
    pt = e.get("svg_pt")
    return None if not pt else pt[0] <= 4000


def issue16_md(res: dict) -> list[str]:
    """One row per model and mode with what issue 16's done-when lines ask."""
    L = ["### Issue 16: the done-when figures per model (in-process medians)", "",
         "irviz ÷ floor: the whole irviz run against the bare `torch.jit.trace`/`script` of "
         "the same model in the same process (≤ 2×). Layout: `dot` on the default picture "
         "(≤ 2 s). Picture: the default SVG's size in pt (width ≤ 4,000). own ÷ capture: "
         f"(build + analyses + DOT) ÷ capture, asked ≤ 0.10 from {HEAVY:,} IR nodes. Module "
         "clusters: dashed module-call clusters in the DOT. First clusters: the picture's "
         "top-level clusters in drawing order (*if*/*loop* frames in italics).", "",
         "| model | mode | IR nodes | irviz | floor | irviz ÷ floor | layout (dot) "
         "| picture w × h pt | own ÷ capture | module clusters | first clusters |",
         "|---|---|---|---|---|---|---|---|---|---|---|"]
    for m, mode, e in _irviz_rows(res):
        fl = m["tools"].get(f"floor:{mode}", {})
        st = e["stages"]
        own = ratio(_own(e), med(st["capture"]))
        first = ", ".join((f"`{c['label']}`" if c["kind"] == "module" else f"*{c['label']}*")
                          .replace("|", "\\|") for c in e.get("top_clusters", [])[:6])
        L.append(" | ".join([
            f"| {m['key']}", mode, str(e.get("ir_nodes", "–")), fmt_stat(e["time"]),
            "fails¹" if fl.get("error") else fmt_stat(fl.get("time")),
            fmt_ratio(ratio(med(e["time"]), med(fl.get("time")))),
            fmt_stat(st.get("layout")), _pt(e),
            fmt_ratio(own) if (e.get("ir_nodes") or 0) >= HEAVY else f"({fmt_ratio(own)})",
            str(e.get("module_clusters", "–")), first or "–"]) + " |")
    for key, why in (res.get("skipped_models") or {}).items():
        L.append(f"| {key} | – | skipped: {why} | | | | | | | | |")
    L += ["", "own ÷ capture in parentheses: fewer than "
          f"{HEAVY:,} IR nodes, not asked.", ""]
    return L


def issue16_targets(res: dict) -> list[str]:
    rows = []

    def yes(ok):
        return "**yes**" if ok else "**no**"

    models = {m["key"]: m for m in res["models"]}
    near = []
    for key in ("resnet18", "bert", "gpt2"):
        tools = models.get(key, {}).get("tools", {})
        tv = tools.get("torchview_full", {})
        for mode in ("trace", "script"):
            e = tools.get(f"irviz:{mode}")
            if e and not e.get("error") and tv and not tv.get("error"):
                r = ratio(med(e["time"]), med(tv.get("time")))
                near.append((f"{key} {mode}", med(e["time"]), med(tv.get("time")), r,
                             e.get("module_clusters", 0)))
    if near:
        ok = [n for n in near if n[3] is not None and n[3] <= 1 and n[4] > 0]
        rows.append("| irviz in-process ≤ torchview expanded on ResNet-18, BERT-base, GPT-2, "
                    "drawing module clusters | " + "; ".join(
                        f"{n} {fmt_s(a)} vs {fmt_s(b)} ({fmt_ratio(r)}, {c} clusters)"
                        for n, a, b, r, c in near)
                    + f" | {yes(len(ok) == len(near))} ({len(ok)} of {len(near)}) |")
    rows_all = list(_irviz_rows(res))
    floor = [(f"{m['key']} {mode}", ratio(med(e["time"]),
                                          med(m["tools"].get(f"floor:{mode}", {}).get("time"))))
             for m, mode, e in rows_all]
    floor = [(n, r) for n, r in floor if r is not None]
    if floor:
        ok = [n for n, r in floor if r <= 2]
        rows.append("| every benchmark model ≤ 2× its bare jit (same process) | "
                    + ", ".join(f"{n} {r:.2f}×" for n, r in floor)
                    + f" | {yes(len(ok) == len(floor))} ({len(ok)} of {len(floor)}) |")
    det = models.get("detector", {}).get("tools", {}).get("irviz:script")
    if det and not det.get("error"):
        pair = (res.get("processes") or {}).get("pairs", {}).get("detector:script", {})
        cli = med((pair.get("irviz") or {}).get("wall"))
        fig = (f"CLI process {fmt_s(cli)}" if cli is not None else "CLI process not run")
        fig += f"; in-process {fmt_s(med(det['time']))}, {det.get('ir_nodes')} IR nodes"
        t = cli if cli is not None else med(det["time"])
        rows.append(f"| detection-scale scripted model < 10 s end to end | {fig} "
                    f"| {yes(t < 10)} |")
    lay = [(f"{m['key']} {mode}", med(e["stages"].get("layout"))) for m, mode, e in rows_all]
    lay = [(n, t) for n, t in lay if t is not None]
    if lay:
        worst = max(lay, key=lambda x: x[1])
        over = [f"{n} {fmt_s(t)}" for n, t in lay if t > 2]
        rows.append(f"| no default picture takes > 2 s of layout | slowest: {worst[0]} "
                    f"{fmt_s(worst[1])}" + (f"; over 2 s: {', '.join(over)}" if over else "")
                    + f" | {yes(not over)} ({len(lay) - len(over)} of {len(lay)}) |")
    heavy = [(f"{m['key']} {mode}", ratio(med(e["stages"]["capture"]), _own(e)))
             for m, mode, e in rows_all if (e.get("ir_nodes") or 0) >= HEAVY]
    if heavy:
        ok = [n for n, r in heavy if r is not None and r >= 10]
        rows.append(f"| build + analyses + DOT ≥ 10× faster than capture (≥ {HEAVY:,} IR "
                    "nodes) | " + ", ".join(f"{n} {fmt_ratio(r)}" for n, r in heavy)
                    + f" | {yes(len(ok) == len(heavy))} ({len(ok)} of {len(heavy)}) |")
    wide = [(f"{m['key']} {mode}", e["svg_pt"]) for m, mode, e in rows_all if e.get("svg_pt")]
    if wide:
        over = [f"{n} {pt[0]:.0f} pt" for n, pt in wide if pt[0] > 4000]
        widest = max(wide, key=lambda x: x[1][0])
        rows.append(f"| default picture ≤ 4,000 pt wide | widest: {widest[0]} "
                    f"{widest[1][0]:.0f} pt" + (f"; over: {', '.join(over)}" if over else "")
                    + f" | {yes(not over)} ({len(wide) - len(over)} of {len(wide)}) |")
    if det and not det.get("error"):
        top = det.get("top_clusters", [])
        names = [c["label"].split(":", 1)[0] for c in top]
        mods = [c["label"].split(":", 1)[0] for c in top if c["kind"] == "module"]
        # torchvision's detectors (and ours) start with their image transform stage
        staged = names[1:] if names[:1] == ["transform"] else names
        stages = staged[:3] == ["backbone", "neck", "rpn"] or (
            staged[:2] == ["backbone", "neck"] and len(staged) > 2 and "head" in staged[2])
        rows.append("| detection model: top-level stages (transform, backbone, neck, heads) are "
                    f"its first clusters | first clusters: {', '.join(names[:6]) or 'none'}; "
                    f"module clusters in order: {', '.join(mods)} | {yes(stages)} |")
    return rows


def targets_md(res: dict) -> list[str]:
    models = {m["key"]: m for m in res["models"]}
    rows = ["| target | figure | met? |", "|---|---|---|", *issue16_targets(res)]

    def yes(ok):
        return "**yes**" if ok else "**no**"

    bert = models.get("bert", {}).get("tools", {})
    if "irviz:trace" in bert and not bert["irviz:trace"].get("error"):
        t = med(bert["irviz:trace"]["time"])
        tv = bert.get("torchview_full", {})
        tvt = med(tv.get("time")) if tv and not tv.get("error") else None
        rows.append(f"| BERT-base: irviz ≤ 1.5 s and below torchview expanded | irviz "
                    f"{fmt_s(t)}, torchview expanded {fmt_s(tvt)} | "
                    f"{yes(t <= 1.5 and (tvt is None or t < tvt))} |")
    rn = models.get("resnet18", {}).get("tools", {})
    for mode in ("trace", "script"):
        e = rn.get(f"irviz:{mode}")
        if e and not e.get("error"):
            t = med(e["time"])
            rows.append(f"| ResNet-18 ({mode}): irviz ≤ 0.2 s | {fmt_s(t)} | {yes(t <= 0.2)} |")
    fast = []
    for m in res["models"]:
        for k, e in m["tools"].items():
            if k.startswith("irviz:") and not e.get("error"):
                r = ratio(med(e["stages"]["capture"]), _own(e))
                fast.append((f"{m['key']} {k.split(':')[1]}", r))
    if fast:
        ok = [n for n, r in fast if r is not None and r >= 10]
        rows.append("| graph build + analyses + DOT ≥ 10× faster than capture | "
                    + ", ".join(f"{n} {r:.1f}×" for n, r in fast)
                    + f" | {yes(len(ok) == len(fast))} ({len(ok)} of {len(fast)}) |")
    sizes = [(m["key"], k, e.get("svg_bytes")) for m in res["models"]
             for k, e in m["tools"].items() if k.startswith("irviz:") and e.get("svg_bytes")]
    if sizes:
        big = max(sizes, key=lambda s: s[2])
        rows.append(f"| SVG < 5 MB | largest: {big[0]} {big[1].split(':')[1]} "
                    f"{fmt_bytes(big[2])} | {yes(big[2] < 5 * 1024 * 1024)} |")
    proc = res.get("processes")
    if proc:
        mem, wall = [], []
        for key, e in proc["pairs"].items():
            r = ratio(med(e["irviz"]["peak_kb"]), med(e["floor"]["peak_kb"]))
            w = ratio(med(e["irviz"]["wall"]), med(e["floor"]["wall"]))
            if r is not None:
                mem.append((key.replace(":", " "), r))
            if w is not None:
                wall.append((key.replace(":", " "), w))
        if mem:
            rows.append("| peak memory ≤ 1.5× tracing alone (irviz CLI vs floor process) | "
                        + ", ".join(f"{n} {r:.2f}×" for n, r in mem)
                        + f" | {yes(all(r <= 1.5 for _, r in mem))} |")
        if wall:
            rows.append("| whole process ≤ 1.25× build + trace | "
                        + ", ".join(f"{n} {r:.2f}×" for n, r in wall)
                        + f" | {yes(all(r <= 1.25 for _, r in wall))} "
                        f"({sum(r <= 1.25 for _, r in wall)} of {len(wall)}) |")
    rows.append("| 10k-IR-node default render < 10 s | see the scaling section | |")
    return rows


# -- main ---------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", help="comma-separated keys (default: all): "
                    + ", ".join(m.key for m in MODELS))
    ap.add_argument("--repeats", type=int, help="measured rounds per model (default: 3-5)")
    ap.add_argument("--process-repeats", type=int, default=3)
    ap.add_argument("--no-processes", action="store_true", help="skip the child-process part")
    ap.add_argument("--process-all-modes", action="store_true",
                    help="whole-process runs for every mode (default: each model's first)")
    ap.add_argument("--jobs", type=int, default=2,
                    help="anchor memory children run side by side (default: %(default)s)")
    ap.add_argument("--no-wasm", action="store_true", help="skip the wasm layout column")
    ap.add_argument("--no-write", action="store_true", help="do not touch RESULTS.md")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--spec", help=argparse.SUPPRESS)
    ap.add_argument("--mode", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child_main(args.child, args.spec, args.mode)
        return 0

    shown_argv = sys.argv[1:] if argv is None else argv
    cmd = command_line("benchmarks/harness.py", shown_argv)
    wanted = args.models.split(",") if args.models else None
    unknown = sorted(set(wanted or ()) - {m.key for m in MODELS})
    if unknown:
        ap.error(f"unknown model keys {', '.join(unknown)}; choose from "
                 + ", ".join(m.key for m in MODELS))
    models = [m for m in MODELS if wanted is None or m.key in wanted]
    skipped = {m.key: _cannot_import(m.needs) for m in models if m.needs}
    skipped = {k: why for k, why in skipped.items() if why}
    models = [m for m in models if m.key not in skipped]
    for key, why in skipped.items():
        print(f"{key}: skipped: {why}", flush=True)
    start = _now()
    facts = machine_facts()
    steps = analysis_steps()
    anchors = tuple(a for a in ANCHORS if _importable(a))
    missing = [a for a in ANCHORS if a not in anchors]
    results = {"facts": facts, "command": cmd, "models": [], "missing_tools": missing,
               "skipped_models": skipped,
               "analysis_steps": [s.name for s in steps]}
    if missing:
        print(f"note: not installed, skipped: {', '.join(missing)} (make bench-deps)")
    for m in models:
        t = _now()
        print(f"{m.key}: {m.note}", flush=True)
        entry = bench_model(m, args.repeats, steps, not args.no_wasm, anchors)
        results["models"].append(entry)
        for key, e in entry["tools"].items():
            shown = f"fails: {e['error']}" if e.get("error") else fmt_stat(e.get("time"))
            print(f"  {key:16} {shown}", flush=True)
        print(f"  ({fmt_s(_now() - t)})", flush=True)
        gc.collect()
    pictures(results)
    if not args.no_processes:
        print("child processes", flush=True)
        results["processes"] = bench_processes(models, args.process_repeats, anchors,
                                               args.process_all_modes, args.jobs)
        results["processes"]["repeats"] = args.process_repeats
        results["processes"]["jobs"] = args.jobs
    for m in results["models"]:
        for key, e in m["tools"].items():
            e.pop("dot", None)
    results["elapsed_s"] = _now() - start
    import os
    results["load_end"] = [round(v, 2) for v in os.getloadavg()]
    write_results("harness", results, render_md(results, cmd), write=not args.no_write)
    return 0


def _cannot_import(module: str) -> str | None:
    """Why ``module`` does not import here (in a child process: a torchvision that fails
    half-way breaks transformers in the process that tried), or None when it does."""
    import subprocess

    proc = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True,
                          text=True, timeout=PROCESS_TIMEOUT)
    if proc.returncode == 0:
        return None
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    last = lines[-1] if lines else f"exit {proc.returncode}"
    return scrub(f"`import {module}` fails: {last}")[:300]


def _importable(tool: str) -> bool:
    import importlib.util

    module = {"torchview": "torchview", "torchview_full": "torchview",
              "torchviz": "torchviz", "tensorboard": "tensorboard"}[tool]
    return importlib.util.find_spec(module) is not None


if __name__ == "__main__":
    sys.exit(main())
