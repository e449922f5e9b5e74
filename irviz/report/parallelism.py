"""The parallelism report: facts from the analyses -> JSON, Markdown and HTML.

Only reads what :mod:`irviz.analyses.fork_wait`, ``cost`` and ``parallelism``
annotated on each graph (and, with ``--measure``, what
:mod:`irviz.measure` measured: a :class:`~irviz.measure.result.MeasureResult`,
written as its ``to_dict`` without the Chrome trace). The JSON layout is versioned by
:data:`SCHEMA_VERSION`; see docs/report.md for the fields.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import networkx as nx

from ..analyses import fork_wait as fw, parallelism as par
from ..analyses.cost import cost_model, cost_of
from ..paths import display_path
from .. import __version__
from ..location import Location, short_location
from ..render.escape import display, json_dumps, xml_text

if TYPE_CHECKING:
    from ..measure.result import MeasureResult

#: 2: ``predicted_speedup`` is the simulated schedule's (was min(work/span, P));
#: ``predictions``, ``prediction_basis``, ``deploy``; measured rows carry
#: ``predicted_speedup`` (calibrated) and ``static_predicted_speedup``
#: 3: a timed sample is ``calls_per_sample`` calls back to back, so ``runs``/``min_s``/``max_s``
#: are per-call means of samples (were single calls); ``min_sample_s``, ``calls_per_sample``;
#: ``pair_s`` is sampled in the same rounds as the model
SCHEMA_VERSION = 3


def _site(location: str | None) -> dict | None:
    """``{"path", "line", "column"}`` (path relative to the working directory when inside it)."""
    if not location:
        return None
    path, line, col = Location.parse(location)
    return {"path": display_path(path), "line": line, "column": col}


def _where(G: nx.DiGraph, node: str) -> str | None:
    data = G.nodes[node]
    return data.get("user_source") or data.get("source")


def _container_site(G: nx.DiGraph, cid: str | None) -> dict | None:
    if cid is None:
        return None
    owner = G.graph["blocks"][cid]["owner"]
    data = G.nodes[owner]
    return {"code": data.get("code"), "site": _site(_where(G, owner)), "id": owner}


def target_report(view, measured: MeasureResult | None = None) -> dict:
    """The report of one visualized model (see the module doc for the layout).

    ``measured`` is written without its profile's Chrome trace (that goes to its own
    file, ``--trace-out``)."""
    G = view.graph
    whole = par.facts(G)
    forks = []
    for node, data in G.nodes(data=True):
        region = fw.region(data)
        if region is None:
            continue
        costs = par.task_costs(data)
        reached = fw.waits(data)
        forks.append({
            "id": node, "callee": region.callee,
            "fork_site": _site(_where(G, node)),
            "wait_sites": [_site(_where(G, w)) for w in reached],
            "waits": list(reached),
            "instances": region.instances,
            "loop": _container_site(G, region.loop),
            "branch": _container_site(G, region.branch),
            "nested_in": region.nested_in,
            "task_cost": costs.task_cost, "overlap_cost": costs.overlap_cost,
            "overlap_ops": len(region.overlap),
        })
    unpaired = fw.unpaired(G)
    model = cost_model(G)
    return {
        "name": view.name, "title": view.title(), "mode": G.graph["mode"],
        "cost_unit": whole.unit, "cost_basis": model.basis if model else None,
        "forks": forks,
        "unpaired": [{"id": n, "kind": kind, "site": _site(_where(G, n))}
                     for kind, ids in (("fork", unpaired.forks), ("wait", unpaired.waits))
                     for n in ids],
        "work": whole.work, "span": whole.span, "parallelism": whole.parallelism,
        "predicted_speedup": whole.predicted_speedup, "limit": whole.limit,
        "predicted_speedup_intraop1": whole.predicted_speedup_intraop1,
        "prediction_basis": whole.prediction_basis,
        "predictions": [{"intra_op": p.intra_op, "inter_op": p.inter_op,
                         "predicted_speedup": p.predicted_speedup,
                         "forked_time": round(p.forked_time, 3)} for p in whole.predictions],
        "interop_threads": whole.interop_threads, "cpu_count": whole.cpu_count,
        "caller_works": whole.caller_works, "intraop_threads": whole.intraop_threads,
        "width": whole.width, "dynamic_trip_counts": whole.dynamic_trip_counts,
        "critical_path": [{"id": n, "kind": G.nodes[n]["kind"], "site": _site(_where(G, n)),
                           "cost": cost_of(G.nodes[n])}
                          for n in whole.critical_path],
        "measured": None if measured is None else measured.to_dict(trace=False),
        "hazards": [{"code": h.code, "message": h.message, "node": h.node,
                     "site": _site(h.source)} for h in par.hazards(G)],
        "profile": profile_section(view, measured),
    }


#: how many of the slowest ops the report lists
TOP_OPS = 10


def profile_section(view, measured: MeasureResult | None = None) -> dict | None:
    """Where the time went, when the graph was profiled (``report --measure``): the
    slowest ops with their estimate, the estimate's error per op kind, the measured
    critical path, allocations, and the prediction replayed with the measured op times
    beside the static one and the measured speed-up."""
    from ..analyses import op_times
    from ..analyses.memory import memory_facts
    from ..analyses.profile_times import (COVERAGE, MEASURED_SPAN, MEMORY, RUN_US, RUNS,
                                          UNMATCHED, task_time_of)

    G = view.graph
    if G.graph.get(COVERAGE) is None:
        return None
    plan = getattr(view, "plan", None)
    drawn_in = {n: d for d, ns in (getattr(plan, "members", None) or {}).items() for n in ns}
    top = []
    for t in op_times.op_times(G)[:TOP_OPS]:
        data = G.nodes[t.node]
        top.append({"id": t.node, "drawn": drawn_in.get(t.node, t.node), "kind": t.kind,
                    "site": _site(_where(G, t.node)), "module": data.get("scope") or "",
                    "measured_us": t.measured_us, "estimated_us": t.estimated_us,
                    "calls": t.calls})
    whole = par.facts(G)
    replay = None
    if whole is not None:
        found = op_times.measured_prediction(G, whole.intraop_threads, whole.interop_threads,
                                             whole.cpu_count)
        replay = found.speedup if found is not None else None
    best = None
    if measured is not None:
        ok = [s for s in measured.settings if not s.error and s.speedup]
        now = [s for s in ok if (s.intra_op, s.inter_op) ==
               (whole.intraop_threads, whole.interop_threads)] if whole else []
        best = (now or [None])[0]
    return {
        "runs": G.graph.get(RUNS), "coverage": G.graph.get(COVERAGE),
        "unmatched": G.graph.get(UNMATCHED) or [], "run_us": G.graph.get(RUN_US),
        "measured_span_us": G.graph.get(MEASURED_SPAN),
        "top": top,
        "kinds": [vars(k) for k in op_times.kind_errors(G)],
        "tasks": [{"id": n, "site": _site(_where(G, n)), **task_time_of(d)}
                  for n, d in G.nodes(data=True) if task_time_of(d)],
        "memory": {"estimated": memory_facts(G), "measured": G.graph.get(MEMORY)},
        "prediction": {"static": whole.predicted_speedup if whole else None,
                       "with_measured_op_times": replay,
                       "measured": best.speedup if best is not None else None,
                       "setting": [whole.intraop_threads, whole.interop_threads]
                       if whole else None},
    }


def _pick(options: list[tuple]) -> tuple:
    """The fastest option; an earlier one (the current setting first, forked before serial)
    within 3 % of it wins: such a difference is noise, not a reason to change settings."""
    best = min(o[0] for o in options)
    return next(o for o in options if o[0] <= best * 1.03)


def deploy_sentence(t: dict) -> str | None:
    """The thread setting to deploy with, one sentence: from the measured times, else from
    the calibrated predictions, else from the static ones."""
    if not t["forks"]:
        return None
    m = t.get("measured")
    rows = [s for s in (m or {}).get("settings", []) if not s.get("error")
            and s.get("serial")]
    if m and rows and any(s.get("forked") for s in rows):
        options = [(s["forked"]["median_s"], "forked", s) for s in rows if s.get("forked")]
        options += [(s["serial"]["median_s"], "serial", s) for s in rows]
        best_s, which, s = _pick(options)
        where = f"intra-op {s['intra_op']} and inter-op {s['inter_op']} threads"
        if which == "serial":
            return (f"Deploy the serial version with {where}: it was fastest "
                    f"({best_s * 1000:.1f} ms; no forked setting beat it).")
        pred = s.get("predicted_speedup")
        return (f"Deploy with {where}: the forked model was fastest there "
                f"({best_s * 1000:.1f} ms, {s['speedup']:.2f}× over its serial baseline"
                + (f", predicted {pred:.2f}×" if pred else "") + ").")
    if m and rows:
        options = [(s["predicted_forked_s"], "forked", s) for s in rows
                   if s.get("predicted_forked_s")]
        options += [(s["serial"]["median_s"], "serial", s) for s in rows]
        best_s, which, s = _pick(options)
        where = f"intra-op {s['intra_op']} and inter-op {s['inter_op']} threads"
        if which == "serial":
            return (f"Deploy the serial version with {where}: predicted fastest "
                    f"({best_s * 1000:.1f} ms measured; calibrated, --measure to confirm).")
        return (f"Deploy with {where}: predicted fastest ({best_s * 1000:.1f} ms, "
                f"{s['predicted_speedup']:.2f}× over the serial baseline there; calibrated "
                "on this machine, --measure to confirm).")
    preds = [p for p in t.get("predictions", []) if p.get("forked_time")
             and p.get("predicted_speedup")]
    if not preds:
        return None
    # the serial model at each setting is an option too: never advise a predicted slowdown
    options = [(p["forked_time"], "forked", p) for p in preds]
    options += [(p["forked_time"] * p["predicted_speedup"], "serial", p) for p in preds]
    _, which, p = _pick(options)
    if which == "serial" or p["predicted_speedup"] <= 1.0:
        best = max(preds, key=lambda q: q["predicted_speedup"])
        return ("The forks do not pay at this size: no thread setting is predicted to beat "
                f"the serial model (best {best['predicted_speedup']:.2f}× at intra-op "
                f"{best['intra_op']} and inter-op {best['inter_op']} threads; static estimate, "
                "--measure to check on this machine).")
    return (f"Deploy with intra-op {p['intra_op']} and inter-op {p['inter_op']} threads: "
            f"predicted fastest ({p['predicted_speedup']:.2f}× over the serial model there; "
            "static estimate, --calibrate for one from this machine).")


def export_section(view, scripted=None, script_error: str | None = None) -> dict | None:
    """For an exported program: its dataflow bound and, beside it, what the TorchScript
    model's forks were predicted to give (``scripted``: its analysed graph)."""
    if view.graph.graph.get("mode") != "export":
        return None
    bound = par.dataflow_bound(view.graph)
    out = {"work": bound.work, "span": bound.span, "parallelism": bound.parallelism,
           "torchscript": None, "torchscript_error": script_error}
    if scripted is not None:
        facts = par.facts(scripted)
        forks = [n for n, d in scripted.nodes(data=True) if fw.region(d) is not None]
        out["torchscript"] = {"forks": len(forks), "work": facts.work, "span": facts.span,
                              "predicted_speedup": facts.predicted_speedup,
                              "cost_unit": facts.unit}
    return out


def build_report(views, measured: dict[str, MeasureResult] | None = None,
                 scripted: dict[str, tuple] | None = None) -> dict:
    """The whole report: one entry per model; ``measured``: the results of
    :func:`irviz.measure.measure` keyed by model name; ``scripted``: for exported
    programs, ``(graph or None, error or None)`` of the model scripted, by model name."""
    measured = measured or {}
    scripted = scripted or {}
    targets = [target_report(v, measured.get(v.name)) for v in views]
    for view, t in zip(views, targets):
        if view.graph.graph.get("mode") == "export":
            t["export"] = export_section(view, *scripted.get(view.name, (None, None)))
    for t in targets:
        t["deploy"] = deploy_sentence(t)
    return {"irviz_version": __version__, "schema_version": SCHEMA_VERSION,
            "targets": targets}


def to_json(report: dict) -> str:
    return json_dumps(report, indent=1) + "\n"


# -- tables shared by Markdown and HTML ------------------------------------------------
#
# Cells and notes are plain text with two marks, code and bold, that each format renders
# (and escapes) its own way. Text from the model goes in through _plain/_code/_bold,
# whose display() turns every control character into "?", so it cannot hold a mark.

_CODE, _BOLD = "\x0e", "\x0f"
_MARKED = re.compile(f"({_CODE}[^{_CODE}]*{_CODE}|{_BOLD}[^{_BOLD}]*{_BOLD})")


def _plain(text: object) -> str:
    return display(text)


def _code(text: object) -> str:
    return _CODE + display(text) + _CODE


def _bold(text: object) -> str:
    return _BOLD + display(text) + _BOLD


def _segments(text: str):
    """``(mark, text)`` pieces of a cell: mark is _CODE, _BOLD or "" (plain)."""
    for i, part in enumerate(_MARKED.split(text)):
        if i % 2:
            yield part[0], display(part[1:-1])
        elif part:
            yield "", display(part.replace(_CODE, "").replace(_BOLD, ""))


#: Markdown punctuation that could start a link, an HTML tag, emphasis, a code span,
#: an entity or a table cell; "_" only where it is not inside a word
_MD_SPECIAL = re.compile(r"[\\`*\[\]<>|&~]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")


def _md(text: str) -> str:
    """A cell or note as Markdown: model text shows literally, never as markup."""
    out = []
    for mark, part in _segments(text):
        if mark == _CODE:
            # a code span shows its text literally; its fence is longer than any run of
            # backticks inside, and GFM tables still need "|" escaped there
            fence = "`" * (max((len(r) for r in re.findall("`+", part)), default=0) + 1)
            pad = " " if part.startswith("`") or part.endswith("`") else ""
            out.append(f"{fence}{pad}{part.replace('|', chr(92) + '|')}{pad}{fence}")
        else:
            escaped = _MD_SPECIAL.sub(lambda m: "\\" + m.group(), part)
            out.append(f"**{escaped}**" if mark == _BOLD else escaped)
    return "".join(out)


def _html(text: str) -> str:
    """A cell or note as HTML, every piece escaped."""
    tags = {_CODE: "code", _BOLD: "strong"}
    return "".join(f"<{tags[mark]}>{xml_text(part)}</{tags[mark]}>" if mark else xml_text(part)
                   for mark, part in _segments(text))

@dataclass
class Table:
    title: str
    headers: list[str]
    rows: list[list[str]]
    note: str | None = None
    #: per row, the id of the drawn node its first cell links to in the HTML page's graph
    links: list[str | None] | None = None


def _fmt_site(site: dict | None) -> str:
    if not site:
        return "—"
    return _plain(f"{os.path.basename(site['path'])}:{site['line']}")


def _cost(value: float, unit: str) -> str:
    if unit == "us":
        return f"{value / 1000:.2f} ms" if value >= 1000 else f"{value:.1f} µs"
    return f"{value:g} ops"


def _export_table(e: dict, unit: str) -> Table:
    rows = [["torch.export's interpreter", "one op after another", "1.00×"],
             ["a parallel executor (independent branches)",
              f"work {_cost(e['work'], unit)}, span {_cost(e['span'], unit)}",
              f"at most {e['parallelism']:.2f}×"]]
    ts = e.get("torchscript")
    if ts and ts["forks"]:
        rows.append(["the TorchScript model (scripted)",
                     f"{ts['forks']} {_code('torch.jit.fork')} region(s); work "
                     f"{_cost(ts['work'], ts['cost_unit'])}, "
                     f"span {_cost(ts['span'], ts['cost_unit'])}",
                     f"{ts['predicted_speedup']:.2f}× predicted"])
    note = None
    if ts and ts["forks"]:
        note = (f"The exported program runs the TorchScript model's {ts['forks']} fork "
                f"region(s) serially: the {ts['predicted_speedup']:.2f}× its forks were "
                "predicted to give is lost (" + _code("irviz lint --mode export")
                + ": IRV504).")
    elif ts is not None:
        note = "The TorchScript model has no torch.jit.fork: export loses no parallelism."
    elif e.get("torchscript_error"):
        note = ("The model does not script, so there is no fork to compare: "
                + _plain(e["torchscript_error"]))
    return Table("Exported program", ["runs on", "what it has", "speed-up over serial"],
                 rows, note=note)


def _handoff_costs(measured: dict) -> str:
    """``0.41 ms at (1, 2), 0.12 ms at (1, 4)``: the hand-off cost the calibration charged
    per setting ("" when no setting ran the hand-off probe)."""
    said = [f"{s['handoff_wake_us'] / 1000:.2f} ms at ({s['intra_op']}, {s['inter_op']})"
            for s in measured.get("settings", [])
            if s.get("handoff_wake_us") is not None and not s.get("error")]
    return ", ".join(said)


def _pool_speeds(measured: dict) -> str:
    """``; the ops on pool threads at ...: 3.00× the caller's at (2, 2), 1.08× at (1, 2)``:
    the settings whose pool pair ran faster than the caller ("" when none did)."""
    faster = [s for s in measured.get("settings", [])
              if s.get("pool_speed") not in (None, 1.0) and not s.get("error")]
    whose = [" the caller's"] + [""] * (len(faster) - 1)
    said = [f"{s['pool_speed']:.2f}×{w} at ({s['intra_op']}, {s['inter_op']})"
            for s, w in zip(faster, whose)]
    return ("; the ops on pool threads at the speed two copies of the serial baseline "
            f"forked at once ran there: {', '.join(said)}") if said else ""


def _tables(t: dict) -> list[Table]:
    unit = t["cost_unit"]
    tables = [Table(
        "Summary",
        ["work (serial)", "span (critical path)", "parallelism work/span",
         "predicted speed-up", "thread limit", "max tasks in flight"],
        [[_cost(t["work"], unit), _cost(t["span"], unit), f"{t['parallelism']:.2f}×",
          _bold(f"{t['predicted_speedup']:.2f}×"),
          f"{t['limit']:g} (inter-op {t['interop_threads']}"
          + (" + the caller" if t.get("caller_works") else "")
          + f"; CPUs {t['cpu_count']} / intra-op {t.get('intraop_threads', 1)})",
          str(t["width"])]],
        note=f"Cost model: {_plain(t['cost_basis'])}. "
        + ("The predicted speed-up plays the tasks out on the inter-op pool, the caller "
           "and the CPUs, each op on the intra-op threads its size can use (elements "
           "against torch's grain size of 32768); work/span and the thread limit are bounds."
           if t.get("prediction_basis", "simulated") == "simulated" else
           "The predicted speed-up is min(work/span, thread limit): the schedule could not "
           "be simulated.")
        + (f" With one intra-op thread (torch.set_num_threads(1)) the prediction is "
           f"{t['predicted_speedup_intraop1']:.2f}×."
           if t["predicted_speedup_intraop1"] != t["predicted_speedup"] else "") + (
            " Some loops have a dynamic trip count (counted once)."
            if t["dynamic_trip_counts"] else ""))]
    if t.get("export"):
        tables.append(_export_table(t["export"], unit))
    if t["forks"] and t.get("predictions") and not t.get("measured"):
        tables.append(Table(
            "Predicted per thread setting (static)",
            ["intra-op threads", "inter-op threads", "predicted speed-up"],
            [[str(p["intra_op"]), str(p["inter_op"]), f"{p['predicted_speedup']:.2f}×"]
             for p in t["predictions"]],
            note=(_bold(t["deploy"]) if t.get("deploy") else None)))
    if t["forks"]:
        rows = []
        for i, f in enumerate(t["forks"], 1):
            waits = ", ".join(_fmt_site(s) for s in f["wait_sites"]) or _bold("never waited")
            loop = (_code(f["loop"]["code"]) if f["loop"] and f["loop"]["code"] else
                    ("loop" if f["loop"] else "—"))
            rows.append([str(i), _fmt_site(f["fork_site"]), _code(f["callee"]), waits,
                         "dynamic" if f["instances"] is None else str(f["instances"]), loop,
                         _plain(f["nested_in"] or "—"), _cost(f["task_cost"], unit),
                         _cost(f["overlap_cost"], unit)])
        tables.append(Table(f"Forks ({len(t['forks'])})",
                            ["#", "fork site", "callee", "waited at", "instances", "in loop",
                             "nested in", "task cost", "overlap (parent work beside it)"],
                            rows))
    else:
        tables.append(Table("Forks (0)", ["result"],
                            [[f"no {_code('torch.jit.fork')} in this model"]]))
    if t["unpaired"]:
        tables.append(Table("Unpaired", ["kind", "id", "site"],
                            [[u["kind"], _plain(u["id"]), _fmt_site(u["site"])]
                             for u in t["unpaired"]]))
    if t["hazards"]:
        tables.append(Table("Hazards", ["hazard", "site", "what it means"],
                            [[_code(h["code"]), _fmt_site(h["site"]), _plain(h["message"])]
                             for h in t["hazards"]]))
    heavy = sorted(t["critical_path"], key=lambda c: -c["cost"])[:8]
    tables.append(Table(
        "Critical path (its most expensive steps)", ["op", "site", "cost"],
        [[_code(c["kind"]), _fmt_site(c["site"]), _cost(c["cost"], unit)] for c in heavy],
        note=f"{len(t['critical_path'])} nodes on the path."))
    if t.get("profile"):
        tables += _profile_tables(t["profile"], unit)
    m = t.get("measured")
    if m:
        rows = []
        calibrating = m.get("kind") == "calibrate"

        def pred(v):
            return f"{v:.2f}×" if v else "—"

        for s in m.get("settings", []):
            if s.get("error") or not s.get("serial") or (
                    not calibrating and not s.get("speedup")):
                why = s.get("error") or m.get("baseline_error") or "no serial baseline"
                rows.append([str(s.get("intra_op")), str(s.get("inter_op")), "—", "—",
                             _plain(f"failed: {why}"), "—", pred(
                                 s.get("static_predicted_speedup"))])
                continue
            rows.append([str(s["intra_op"]), str(s["inter_op"]),
                         f"{s['serial']['median_s'] * 1000:.2f} ms",
                         "not run (--calibrate)" if calibrating else
                         f"{s['forked']['median_s'] * 1000:.2f} ms",
                         "—" if calibrating else f"{s['speedup']:.2f}×",
                         pred(s.get("predicted_speedup")),
                         pred(s.get("static_predicted_speedup"))])
        ok = [s for s in m.get("settings", []) if not s.get("error") and s.get("speedup")]
        note = (f"Serial baseline: {_plain(m.get('baseline'))}. "
                f"Outputs match: {m.get('outputs_match')}. "
                "Calibrated = the tasks scheduled with op times and cores from the serial "
                "baseline's wall and CPU time in that setting, on the cores two copies of "
                "it got side by side, each start on a sleeping pool thread charged what a "
                "hand-off probe timed in the same rounds says"
                + (f" ({costs})" if (costs := _handoff_costs(m)) else
                   " (the trivial wake-up probe's time for a call this short)")
                + _pool_speeds(m) + "; static = from op sizes alone.")
        if t.get("deploy"):
            note = _bold(t["deploy"]) + " " + note
        if ok:
            best = max(ok, key=lambda s: s["speedup"])
            fastest = min(ok, key=lambda s: s["forked"]["median_s"])
            note += (f" Best speed-up {best['speedup']:.2f}× (intra-op {best['intra_op']}, "
                     f"inter-op {best['inter_op']}) vs statically predicted "
                     f"{t['predicted_speedup']:.2f}×; fastest forked run with intra-op "
                     f"{fastest['intra_op']} / inter-op {fastest['inter_op']} threads.")
            if best["speedup"] < 1.05:
                note += (" No setting made the forked model faster at these sizes: the tasks "
                         "are too small for the fork overhead, or the cores are busy; deploy "
                         "the serial version or give each task more work.")
        tables.append(Table("Calibrated (serial baseline timed)" if calibrating else "Measured",
                            ["intra-op threads", "inter-op threads", "serial median",
                             "forked median", "speed-up", "predicted (calibrated)",
                             "predicted (static)"], rows, note=note))
    return tables


def _bytes(n: int | None) -> str:
    if n is None:
        return "—"
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def _profile_tables(p: dict, unit: str) -> list[Table]:
    """``report --measure``'s profile: the slowest ops, the estimate's error per op kind."""
    def ratio(measured, estimated):
        return f"{measured / estimated:.2f}×" if estimated else "—"

    rows, links = [], []
    for i, op in enumerate(p["top"], 1):
        rows.append([str(i), _code(op["kind"]), _fmt_site(op["site"]),
                     _plain(op["module"] or "—"), _cost(op["measured_us"], "us"),
                     _cost(op["estimated_us"], "us") if op["estimated_us"] else "—",
                     ratio(op["measured_us"], op["estimated_us"])])
        links.append(op["drawn"])
    unmatched = ", ".join(f"{u['name']} {_cost(u['total_us'], 'us')}" for u in p["unmatched"][:3])
    note = (f"Median of {p['runs']} profiled runs (torch.profiler, in a child process); "
            f"{(p['coverage'] or 0):.0%} of the profiled aten time matched to nodes"
            + (f" (not matched: {unmatched})" if unmatched else "") + ".")
    if p.get("run_us"):
        note += f" One run took {_cost(p['run_us'], 'us')}"
        if p.get("measured_span_us") is not None:
            note += (f"; its critical path by measured op times is "
                     f"{_cost(p['measured_span_us'], 'us')}")
        note += "."
    mem = p.get("memory") or {}
    est, got = mem.get("estimated") or {}, mem.get("measured") or {}
    if est.get("peak_bytes") or got.get("peak_bytes"):
        note += (f" Activation memory: estimated peak {_bytes(est.get('peak_bytes'))} "
                 "from shapes in program order, measured peak "
                 f"{_bytes(got.get('peak_bytes'))} (allocations above the inputs).")
    tables = [Table("Where the time goes (measured)",
                    ["#", "op", "site", "module", "measured per run", "estimated",
                     "measured / estimated"], rows, note=note, links=links)]
    if p["kinds"] and unit == "us":
        pr = p.get("prediction") or {}
        note = ("measured / estimated over the kind's total; typical error: the median over "
                "its nodes of how many times off the estimate was.")
        if pr.get("with_measured_op_times") is not None and pr.get("static") is not None:
            note += (f" Fed into the schedule, the measured op times predict "
                     f"{pr['with_measured_op_times']:.2f}× at (intra-op {pr['setting'][0]}, "
                     f"inter-op {pr['setting'][1]}) where the estimates predict "
                     f"{pr['static']:.2f}×"
                     + (f"; measured: {pr['measured']:.2f}×" if pr.get("measured") else "")
                     + ".")
        tables.append(Table(
            "Cost model against the measurement, per op kind",
            ["op kind", "nodes", "measured", "estimated", "measured / estimated",
             "typical error"],
            [[_code(k["kind"]), str(k["nodes"]), _cost(k["measured_us"], "us"),
              _cost(k["estimated_us"], "us"), f"{k['ratio']:.2f}×",
              f"{2 ** k['log2_error']:.1f}×"] for k in p["kinds"][:15]],
            note=note))
    return tables


def to_markdown(report: dict) -> str:
    out = ["# Parallelism report", ""]
    for t in report["targets"]:
        out += [f"## {_md(_plain(t['title']))} ({_md(_plain(t['mode']))})", ""]
        for table in _tables(t):
            out += [f"### {_md(table.title)}", ""]
            out.append("| " + " | ".join(_md(h) for h in table.headers) + " |")
            out.append("|" + "---|" * len(table.headers))
            for row in table.rows:
                out.append("| " + " | ".join(_md(c) for c in row) + " |")
            if table.note:
                out += ["", _md(table.note)]
            out.append("")
    return "\n".join(out).rstrip() + "\n"


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,sans-serif;margin:2rem;color:#222}
table{border-collapse:collapse;margin:.5rem 0 1rem}td,th{border:1px solid #ccd;padding:.25rem .5rem;
text-align:left;font-size:.9rem}th{background:#f2f4f8}code{background:#f4f4f4;padding:0 .2rem}
.figure{overflow:auto;max-width:100%;border:1px solid #dde;padding:.5rem}.figure svg{max-width:none}
@media (prefers-color-scheme: dark){body{background:#1e1e1e;color:#ddd}th{background:#2a2f3a}
td,th{border-color:#445}code{background:#333}.figure{background:#fff}}
"""


def to_html(report: dict, figures: dict[str, list[tuple[str, str]]] | None = None) -> str:
    """A self-contained page; ``figures`` maps a model name to (caption, inline SVG) pairs."""
    figures = figures or {}
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           "<title>irviz parallelism report</title>", f"<style>{_CSS}</style></head><body>",
           "<h1>Parallelism report</h1>"]
    for t in report["targets"]:
        out.append(f"<h2>{xml_text(t['title'])} ({xml_text(t['mode'])})</h2>")
        for table in _tables(t):
            out.append(f"<h3>{_html(table.title)}</h3><table><thead><tr>"
                       + "".join(f"<th>{_html(h)}</th>" for h in table.headers)
                       + "</tr></thead><tbody>")
            for i, row in enumerate(table.rows):
                cells = [_html(c) for c in row]
                link = table.links[i] if table.links else None
                if link and cells:   # to the node in the graph below (its SVG id)
                    cells[0] = f'<a href="#{xml_text("irviz:" + link)}">{cells[0]}</a>'
                out.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
            out.append("</tbody></table>")
            if table.note:
                out.append(f"<p>{_html(table.note)}</p>")
        for caption, svg in figures.get(t["name"], []):
            # svg: irviz's own drawing (Graphviz or timeline SVG, every text escaped there)
            out.append(f"<h3>{xml_text(caption)}</h3><div class=\"figure\">{svg}</div>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def strip_xml_prolog(svg: str) -> str:
    """An SVG document as an element that can be inlined into HTML."""
    start = svg.find("<svg")
    return svg[start:] if start >= 0 else svg


__all__ = ["build_report", "to_json", "to_markdown", "to_html", "strip_xml_prolog",
           "SCHEMA_VERSION", "short_location"]
