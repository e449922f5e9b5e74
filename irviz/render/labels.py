"""The words of a picture: node labels, folded constants, tooltips and the title.

Kept apart from the decisions (:mod:`.plan`) and from the DOT syntax (:mod:`.dot`) so
the text a reader sees can change without touching either. :class:`Labels` reads the
graph, the facts analyses wrote on it and a :class:`~.plan.DrawPlan`; it returns label
values (:class:`~.escape.HtmlLabel` markup or plain strings, every piece of model text
escaped) and tooltips, never DOT statements. Colours come from :mod:`.style`.
"""
from __future__ import annotations

import math
import os
import re
from typing import NamedTuple

import networkx as nx

from ..analyses.fork_wait import WAITS, region, waits
from ..analyses.graph_match import DIFF, DIFF_SUMMARY
from ..analyses.memory import BYTES
from ..analyses.parallelism import critical_nodes
from ..analyses.unrolled_loops import unroller
from ..ir.model import (CHOICE_BODIES, CONSTANT_KINDS, LOOP_KINDS, TASK_KINDS, format_shape,
                        returned_shape)
from ..frontends import records
from ..location import short_location, source_line
from .profile_overlay import ProfileOverlay, fmt_bytes, fmt_us
from .escape import HtmlLabel, dot_html, truncate
from .plan import (DrawPlan, RenderOptions, call_method, call_name, call_numbers, call_type,
                   nodes_by_call)
from .style import (DIFF_LEGEND, DIFF_NODE, LEGEND, LEGEND_DETAIL, LEGEND_FINDINGS,
                    LEGEND_NOTES, NODE_STYLE, node_category,
                    SPACE_EM, TEXT_COLOR, bold_extra_em)

__all__ = ["Labels", "Text", "MAX_FOLDED", "TOOLTIP_LINE", "TOOLTIP_LINES", "evidence_line",
           "remedy_line",
           "is_alarm", "note_color", "tooltip"]

#: folded constants shown in a label before "..."
MAX_FOLDED = 3
#: longest line of a tooltip, and most lines (the full text is in the JSON data)
TOOLTIP_LINE = 200
TOOLTIP_LINES = 40

_h = dot_html     # text inside an HTML-like label

#: what a call marked "trace froze" means (its tooltip's last line about it)
_FROZEN_HINT = ("the trace recorded the branch this call's input took; "
                "another input may need the other")
#: what a BatchNorm call traced in training mode means (``irviz.training``)
_TRAINING_HINT = ("traced in training mode, it normalises by each batch's statistics and "
                  "updates its running ones on every call; model.eval() before tracing "
                  "records the inference behaviour")


def _truncate(text: str, width: int = 48) -> str:
    return truncate(str(text), width)


def _bold(text: str, size: float = 11.0) -> str:
    """``text`` in bold, followed by blank space as wide as bold adds to it, so text drawn
    in bold fits a box Graphviz sized with regular metrics (see :func:`.style.bold_extra_em`).
    The space is a run of spaces at a point size no larger than the text's own."""
    bold = f"<B>{_h(text)}</B>"
    extra = bold_extra_em(text) * size          # points
    if extra <= 0:
        return bold
    spaces = -(-extra // (SPACE_EM * size))       # ceil: keeps the pad's size <= size
    points = math.ceil(extra / (SPACE_EM * spaces) * 10) / 10
    return f'{bold}<FONT POINT-SIZE="{points:g}">{" " * int(spaces)}</FONT>'


def _font(color: str, text: str) -> str:
    """A small line of a label in one of the style table's text colours."""
    return f'<FONT POINT-SIZE="9" COLOR="{TEXT_COLOR[color]}">{text}</FONT>'


def tooltip(lines: list[str]) -> str:
    """A tooltip: each line cut to :data:`TOOLTIP_LINE` characters, at most
    :data:`TOOLTIP_LINES` lines."""
    lines = [_truncate(line, TOOLTIP_LINE) for line in lines]
    if len(lines) > TOOLTIP_LINES:
        lines = lines[:TOOLTIP_LINES - 1] + [f"... {len(lines) - TOOLTIP_LINES + 1} more lines"]
    return "\n".join(lines)


#: finding severities drawn as alarms (red); ``info`` is drawn as a note
ALARMS = ("error", "warning")

#: what makes a note under the title a warning (red) rather than information
_WARNING_NOTE = re.compile(r"^⚠|\b(?:failed|raised)\b")


def node_facts(data: dict) -> dict:
    """What one IR node is, said once for the SVG tooltip and the viewer panel (each only
    formats it): kind, label, outputs (``name: type [shape]``), the location it points at
    (the user's line, else the op's), scope and the scope's class."""
    outputs = []
    for out in data.get("outputs", []):
        shape = format_shape(out)
        name = f"{out['name']}: " if out.get("name") else ""
        outputs.append(f"{name}{out.get('type')}" + (f" [{shape}]" if shape else ""))
    return {"kind": data["kind"], "label": data.get("label"), "outputs": outputs,
            "location": data.get("user_source") or data.get("source"),
            "scope": data.get("scope") or "", "scope_class": data.get("scope_class")}


def is_alarm(finding: dict) -> bool:
    """A lint finding (``Diagnostic.to_dict()``) drawn in the warning colour: an error or a
    warning, which a counterexample, a certainty or an undecided decision in the user's
    code settles; ``info`` findings (held, or undecided where nothing ran) are notes. A record without a severity is a warning."""
    return (finding.get("severity") or "warning") in ALARMS


def evidence_line(finding: dict) -> str | None:
    """The finding's evidence in one line, as ``irviz lint`` prints it (``counterexample:
    x negated: the trace returns another value than the model``, ``held on: x negated,
    batch 2``); None when the finding has no evidence (the key missing, or None)."""
    evidence = finding.get("evidence")
    if not isinstance(evidence, dict) or not evidence.get("verdict"):
        return None
    verdict, summary = str(evidence["verdict"]), evidence.get("summary")
    if not summary:
        return verdict
    if verdict == "held" and not evidence.get("reason"):
        return f"held on: {summary}"
    return f"{verdict}: {summary}"


def remedy_line(finding: dict) -> str | None:
    """The finding's remedy in one line, as ``irviz lint`` prints it (``remedy (verified
    on 9 inputs, counterexample included): model.dg = torch.jit.script(model.dg)``, or
    ``no verified remedy: ...``); None when no search ran."""
    return records.remedy_line(finding.get("remedy"), finding.get("remedy_tried"),
                              finding.get("target"))


def note_color(note: str) -> str:
    """The :data:`.style.TEXT_COLOR` of a note under the title: ``warning`` for what went
    wrong or may be wrong (``⚠ TracerWarning ...``, ``scripting failed``, ``running the
    model raised``), ``note`` for what the picture did or how it reads (the budget, a dict
    output traced as its tensors)."""
    return "warning" if _WARNING_NOTE.search(note) else "note"


def _strip_keyword(code: str | None, keyword: str) -> str | None:
    if not code:
        return None
    code = code.strip()
    if code.startswith(keyword + " "):
        code = code[len(keyword) + 1:]
    return code.rstrip(":")


class Text(NamedTuple):
    """What a drawn thing says: its label and its tooltip."""

    label: str
    tooltip: str


class Labels:
    """Labels and tooltips of what ``plan`` draws of ``G``."""

    def __init__(self, G: nx.DiGraph, plan: DrawPlan, options: RenderOptions):
        self.G = G
        self.plan = plan
        self.opt = options
        self.blocks: dict[str, dict] = G.graph["blocks"]
        self.rep = plan.representative
        self.root_dir = options.source_root or (
            os.path.dirname(G.graph["source_file"]) if G.graph.get("source_file") else None)
        self._inside: dict[str, list[str]] | None = None
        self._short: dict[str | None, str | None] = {}
        self._numbers: dict[str, tuple[int, int]] | None = None
        #: some call container has an ``irviz.frozen`` line (:meth:`_frozen_inside`)
        self._froze: bool | None = None
        #: measured op times (``render --profile``), when the graph has them
        self.profile = ProfileOverlay(G)

    def _call_number(self, cid: str) -> tuple[int, int] | None:
        """``(k, n)``: the call is the k-th of n calls of its module (:func:`.call_numbers`)."""
        if self._numbers is None:
            self._numbers = call_numbers(self.G)
        return self._numbers.get(cid)

    def _call_line(self, cid: str) -> str | None:
        """``call 2 of 3 of gate.forward()`` (a tooltip's line), for a module called more
        than once."""
        number = self._call_number(cid)
        if number is None:
            return None
        info = self.blocks[cid]
        return (f"call {number[0]} of {number[1]} of "
                f"{info['module']}.{call_method(self.G, info) or 'forward'}()")

    def _loc(self, location: str | None) -> str | None:
        """``location`` as the picture shows it (once per location: a relpath each)."""
        if location not in self._short:
            self._short[location] = short_location(location, self.root_dir)
        return self._short[location]

    # -- lint badges -------------------------------------------------------------
    def _badge_rows(self, drawn: str) -> list[str]:
        """``⚠ IRV101`` in red for errors and warnings, ``ℹ IRV102`` in the neutral colour
        for info findings; ``✓ N checks``."""
        findings = self.plan.badges.get(drawn, ())
        alarms = sorted({f["code"] for f in findings if is_alarm(f)})
        notes = sorted({f["code"] for f in findings if not is_alarm(f)} - set(alarms))
        rows = [_font("warning", _bold("⚠ " + " ".join(alarms), 9))] if alarms else []
        if notes:
            rows.append(_font("info", _bold("ℹ " + " ".join(notes), 9)))
        checks = self.plan.check_badges.get(drawn, ())
        if checks:
            rows.append(_font("detail", f"✓ {len(checks)} check{'s' if len(checks) > 1 else ''}"))
        return rows

    def _badge_tooltip(self, drawn: str) -> list[str]:
        lines = []
        for f in self.plan.badges.get(drawn, ()):
            lines.append(f"{f['code']} {f['name']} ({f.get('severity') or 'warning'}): "
                         f"{f['message']}")
            lines += [f"  {line}" for line in (evidence_line(f), remedy_line(f)) if line]
        checks = self.plan.check_badges.get(drawn, ())
        if checks:
            lines.append("checked before it (folded; --show-checks draws them):")
            lines += [f"  {text}" for text in checks]
        return lines

    # -- what a trace froze --------------------------------------------------------
    def _frozen_inside(self, members, stop: str | None) -> list[str]:
        """What a trace froze in the calls a box, roll or rolled loop stands for: the
        ``irviz.frozen`` line of every call container around one of ``members`` below
        ``stop`` (the container the drawn node sits in); a call nested deeper than the
        ones drawn says its path (``⚠ trace froze line 8: if x.sum() > 0: (in
        encoder.gate)``). In program order, each once."""
        if self._froze is None:   # most traces froze nothing: no roll's members walked
            self._froze = any(info.get("irviz.frozen") for info in self.blocks.values())
        if not self._froze:
            return []
        seen: set[str] = set()
        out: list[str] = []
        for block in dict.fromkeys(map(self.plan.block_of.__getitem__, members)):
            chain = []
            while block is not None and block != stop and block not in seen:
                seen.add(block)
                chain.append(block)
                block = self.blocks[block]["parent"]
            for cid in reversed(chain):   # outermost first
                info = self.blocks[cid]
                text = info.get("irviz.frozen")
                if text:
                    path = call_name(info) if info["parent"] != stop else None
                    line = f"{text} (in {path})" if path else text
                    if line not in out:
                        out.append(line)
        return out

    def _frozen_rows(self, frozen: list[str]) -> list[str]:
        """The marker lines of a box or roll node: the first thing frozen, and how many more."""
        if not frozen:
            return []
        more = f" (+{len(frozen) - 1} more)" if len(frozen) > 1 else ""
        return [_font("warning", _h(_truncate(frozen[0], 60) + more))]

    # -- folded constants --------------------------------------------------------
    def const_text(self, node: str) -> str:
        """How a folded node reads in its consumer's label (``size=[x.size(0), 12]``)."""
        data = self.G.nodes[node]
        if "irviz.shape_expr" in data:
            return data["irviz.shape_expr"]
        if data["kind"] in CONSTANT_KINDS and not (data["outputs"] and data["outputs"][0].get(
                "shape")):
            return data["label"]
        if data["kind"] in ("prim::GetAttr", *CONSTANT_KINDS):  # a parameter, a frozen weight
            shape = format_shape(data["outputs"][0]) if data["outputs"] else None
            if shape and data["label"].startswith("tensor("):   # unnamed (a saved frozen
                return shape   # archive's, a pass's): its shape once, not tensor(8×3): 8×3
            return f"{data['label']}: {shape}" if shape else data["label"]
        if data["kind"] in ("prim::ListConstruct", "prim::TupleConstruct"):
            items = [self.const_text(p[0]) for p in data["inputs"] if p]
            bracket = "[]" if data["kind"] == "prim::ListConstruct" else "()"
            return bracket[0] + ", ".join(items) + bracket[1]
        return data["label"]

    def folded(self, node: str) -> list[str]:
        """``name=value`` for each input folded into this node's label."""
        data = self.G.nodes[node]
        names = data.get("arg_names") or []
        out = []
        for i, producers in enumerate(data["inputs"]):
            if len(producers) != 1 or producers[0] not in self.G:
                continue
            producer = producers[0]
            if self.rep[producer] is not None:
                continue
            value = self.const_text(producer)
            if value == "None":
                continue
            name = names[i] if i < len(names) else None
            out.append(f"{name}={value}" if name else value)
        return out

    # -- operations --------------------------------------------------------------
    def op(self, node: str) -> Text:
        """An IR node: its kind or code, shapes, folded arguments, lint badges."""
        return Text(self._op_label(node), self._op_tooltip(node))

    def _op_label(self, node: str) -> HtmlLabel:
        data = self.G.nodes[node]
        kind = data["kind"]
        title = data["label"]
        rows = []
        if kind == "prim::If":
            title = "if " + _truncate(_strip_keyword(data.get("code"), "if") or "…", 36)
        elif kind == "prim::Loop":
            trip = data.get("trip_count")
            title = "loop"
            count = data["inputs"][0] if data["inputs"] else []
            if len(count) == 1 and count[0] in self.G and self.rep[count[0]] is None:
                trip = self.const_text(count[0])   # e.g. xs.size(0), folded
            if trip is not None:
                rows.append(f"trip count: {trip}")
        elif kind in ("prim::fork", "prim::awaitable"):
            title = "fork" if kind == "prim::fork" else "awaitable"
            callee = self._task_call(node)
            if callee:
                rows.append(f"→ {callee}")
        elif kind == "prim::Return" and data.get("output_names"):
            rows.append(_truncate(", ".join(data["output_names"]), 56))
        diff = data.get(DIFF)
        if diff and diff.get("what"):   # irviz diff: relu → gelu, dim: 1 → 2
            if diff.get("right_kind") not in (None, kind):
                title = diff["label"]
            rows += [w for w in diff["what"] if "::" not in w]
        timed = self.profile.row(node)
        shapes = [format_shape(o) for o in data["outputs"]]
        shapes = [s for s in shapes if s]
        if shapes:
            rows.append(_truncate(", ".join(shapes), 40))
        elif kind == "prim::Param" and data["outputs"]:
            # a class input by its name: PackedSequence, not __torch__.torch.nn.utils.rnn.…
            rows.append(re.sub(r"__torch__\.(?:\w+\.)*(\w+)", r"\1",
                               data["outputs"][0]["type"]))
        elif data["outputs"] and data["outputs"][0].get("type") in ("SymInt", "SymBool"):
            rows.append(f"= {data['outputs'][0].get('name')}")   # torch.export: a symbol
        if data.get("guards"):   # torch.export: ranges and runtime asserts on its symbols
            rows.append(_truncate("guard: " + "; ".join(data["guards"]), 56))
        folded = self.folded(node) if kind not in LOOP_KINDS else []
        if folded:
            more = "…" if len(folded) > MAX_FOLDED else ""
            rows.append(_truncate(", ".join(folded[:MAX_FOLDED]) + more, 44))
        cells = [_bold(_truncate(title, 60))]
        if timed:   # render --profile: one of the slowest nodes
            cells.append(_font("detail", _bold(_h(timed), 9.0)))
        cells += [_font("detail", _h(_truncate(r, 60))) for r in rows if r]
        cells += self._badge_rows(node)
        return HtmlLabel("<" + "<BR/>".join(cells) + ">")

    def _task_call(self, fork: str) -> str | None:
        """The call a fork's task makes, named as its call cluster is (``models.0``,
        ``foo()``, ``models.0.step`` for a method other than forward; ``models.0.cell_f``,
        not torch's ``forward__0``, the overload it made of ``nn.LSTM.forward``); None when
        the task calls nothing (traced). The call is the fork region's
        (:mod:`irviz.analyses.fork_wait`); its ``callee`` names it in the report's words
        (``models.0.forward``), the picture in its clusters' words."""
        found = region(self.G.nodes[fork])
        if found is None or found.call is None:
            return None
        info = self.blocks[found.call]
        if info["kind"] == "function":
            return info["label"]
        method = call_method(self.G, info)
        suffix = f".{method}" if method not in (None, "forward") else ""
        return info["label"].split(":")[0] + suffix

    def _op_tooltip(self, node: str) -> str:
        data = self.G.nodes[node]
        facts = node_facts(data)
        lines = [facts["kind"]]
        diff = data.get(DIFF)
        if diff:
            sides = ", ".join(f"{k} {diff[k]}" for k in ("left", "right") if diff.get(k))
            lines.append(f"diff: {diff['status']} ({sides})")
            lines += [f"  {w}" for w in diff.get("what", ())]
        loc = facts["location"]
        if loc:
            lines.append(f"source: {self._loc(loc)}")
            text = source_line(loc)
            if text:
                lines.append(f"  {_truncate(text, 80)}")
        if data.get("source") and data.get("user_source") != data.get("source"):
            lines.append(f"op defined at: {self._loc(data['source'])}")
        lines.append(f"scope: {facts['scope'] or '<root>'} ({facts['scope_class']})")
        lines += [f"out{i}: {text}" for i, text in enumerate(facts["outputs"])]
        folded = self.folded(node)
        if folded:
            lines.append("args: " + ", ".join(folded))
        lines += [f"guard: {g}" for g in data.get("guards", ())]
        if data.get(BYTES):   # what its outputs allocate (irviz.analyses.memory)
            lines.append(f"allocates: {fmt_bytes(data[BYTES])}")
        lines += self.profile.tooltip(node)
        lines += self._badge_tooltip(node)
        if WAITS in data:
            lines.append("waited by: " + (", ".join(self._loc(self.G.nodes[w].get("source"))
                                                  or w for w in waits(data)) or "never waited"))
        return tooltip(lines)

    # -- module calls ------------------------------------------------------------
    def _ops_row(self, ops: int, shown: list[str], call: str | None = None) -> str:
        """``7 ops → 2×8 float32``: how many ops, and what the call returns (``?`` when
        the picture has shapes but not this one's: never another call's guess)."""
        shape = returned_shape(self.G, call) if call is not None else None
        if shape is None:
            last_out = self.G.nodes[shown[-1]]["outputs"] if shown else []
            shape = format_shape(last_out[0]) if last_out else None
        return _font("detail", f'{ops} op{"s" if ops != 1 else ""}'
                     + (f" → {_h(shape)}" if shape else ""))

    def box(self, cid: str) -> Text:
        """A call drawn as one box: its label, op count and what it returns."""
        info = self.blocks[cid]
        box = f"box:{cid}"
        shown = [n for n in self.plan.members.get(box, ()) if n not in self.plan.folded]
        ops = len(shown)
        frozen = self._frozen_inside(self.plan.members.get(box, ()), info["parent"])
        title = _bold(_truncate(info['label'], 60))
        method = call_method(self.G, info)
        if method not in (None, "forward") and info["kind"] == "method":
            # self.check_forward_args(...) in nn.LSTM: which method, as an open call says
            title += f" <FONT POINT-SIZE=\"9\">.{_h(_truncate(method, 40))}()</FONT>"
        rows = [title, self._ops_row(ops, shown, cid)]
        rows += self._frozen_rows(frozen)
        _, measured = self.profile.fill_of(self.plan.members.get(box, ()))
        if measured:   # render --profile: what the call's ops took
            rows.append(_font("detail", _h(f"{fmt_us(measured)} "
                                           f"({measured / self.profile.total:.0%})")))
        training = info.get("irviz.training")
        if training:   # a BatchNorm traced in training mode
            rows.append(_font("warning", _h(training)))
        label = HtmlLabel("<" + "<BR/>".join(rows + self._badge_rows(box)) + ">")
        lines = [f"{info['kind']} call: {info['label']}",
                 f"type: {info.get('qualified_type')}"]
        if self._call_line(cid):
            lines.append(self._call_line(cid))
        if info.get("user_source"):
            lines.append(f"called at: {self._loc(info['user_source'])}")
        lines.append(f"collapsed: {ops} operations inside")
        lines += frozen + ([_FROZEN_HINT] if frozen else [])
        lines += [training, _TRAINING_HINT] if training else []
        lines += self._badge_tooltip(box)
        return Text(label, tooltip(lines))

    def roll(self, rid: str) -> Text:
        """The calls between the first and the last of a rolled run, as one node: their
        paths, how many, what the last one returns."""
        if rid in self.plan.loops:
            return self._loop_roll(rid)
        calls = self.plan.rolls[rid]
        first, last = self.blocks[calls[0]], self.blocks[calls[-1]]
        middle = [self.blocks[c] for c in calls[1:-1]]
        if self._inside is None:
            self._inside = self.plan.call_nodes or nodes_by_call(self.G)
        members = self.plan.members.get(rid, ())
        ops = len(members) - len(self.plan.folded.intersection(members))
        shown = [n for n in self._inside[calls[-2]] if n not in self.plan.folded]
        kind = call_type(first)
        names = [call_name(info) for info in middle]
        head = f"{names[0]} … {names[-1]}"
        numbers = [self._call_number(c) for c in calls[1:-1]]
        same = call_name(first)
        if len(set(names)) == 1 and all(numbers):   # one module called again and again
            head = f"{names[0]} calls {numbers[0][0]}–{numbers[-1][0]} of {numbers[0][1]}"
            if self._call_number(calls[0]):
                same = f"call {self._call_number(calls[0])[0]}"
        frozen = self._frozen_inside(members, first["parent"])
        rows = [_bold(_truncate(head, 60)),
                _font("detail", _h(_truncate(f"{kind} × {len(names)} (same as {same})", 60))),
                self._ops_row(ops, shown, calls[-2])] + self._frozen_rows(frozen)
        label = HtmlLabel("<" + "<BR/>".join(rows + self._badge_rows(rid)) + ">")
        ends = (self._call_number(calls[0]), self._call_number(calls[-1]))
        between = (f"{call_name(first)} and {call_name(last)}"
                   if not (head.startswith(f"{names[0]} calls ") and all(ends))
                   else f"call {ends[0][0]} and call {ends[1][0]}")
        lines = [f"{len(names)} repeated calls of {kind} rolled up "
                 f"(type: {first.get('qualified_type') or first['label']})",
                 f"between {between}, drawn before and after",
                 f"{ops} operations inside, {ops // max(len(names), 1)} per call"]
        if middle[0].get("user_source"):
            lines.append(f"called at: {self._loc(middle[0]['user_source'])}")
        if head.startswith(f"{names[0]} calls "):
            lines.append(f"calls {numbers[0][0]}–{numbers[-1][0]} of {numbers[0][1]} of "
                         f"{names[0]}.{call_method(self.G, first) or 'forward'}()")
        else:
            line = "calls:"
            for name in names:  # the paths, a line at a time
                if len(line) + len(name) > 120:
                    lines.append(line)
                    line = " "
                line += f" {name}"
            lines.append(line)
        lines += frozen + ([_FROZEN_HINT] if frozen else [])
        lines += self._badge_tooltip(rid)
        return Text(label, tooltip(lines))

    def call_cluster(self, cid: str) -> Text:
        """The frame of a call drawn open: its label, method, and what a trace froze."""
        info = self.blocks[cid]
        where = self._loc(info.get("user_source"))
        label = "<" + _bold(_truncate(info['label'], 80))
        other = (info.get(DIFF) or {}).get("right_label")
        if other:   # irviz diff: the right side calls another class here
            label += " → " + _bold(_truncate(other.rsplit(': ', 1)[-1], 60))
        method = call_method(self.G, info)
        if method not in (None, "forward") and info["kind"] == "method":
            label += f" <FONT POINT-SIZE=\"9\">.{_h(_truncate(method, 40))}()</FONT>"
        number = self._call_number(cid)
        if number:
            label += f' <FONT POINT-SIZE="9">· call {number[0]} of {number[1]}</FONT>'
        frozen = info.get("irviz.frozen")
        lines = [f"{info['label']}" + (f" (called at {where})" if where else "")]
        if number:
            lines.append(self._call_line(cid))
        if frozen:
            label += (f'<BR/><FONT COLOR="{TEXT_COLOR["warning"]}" POINT-SIZE="9">'
                      f'{_h(_truncate(frozen, 140))}</FONT>')
            lines += [frozen, _FROZEN_HINT]
        training = info.get("irviz.training")
        if training:   # a BatchNorm traced in training mode, drawn open
            label += (f'<BR/><FONT COLOR="{TEXT_COLOR["warning"]}" POINT-SIZE="9">'
                      f'{_h(training)}</FONT>')
            lines += [training, _TRAINING_HINT]
        return Text(HtmlLabel(label + ">"), tooltip(lines))

    def empty_call(self, cid: str) -> Text:
        """What an open call that ran no operation says (a traced module that only
        returned its input)."""
        info = self.blocks[cid]
        return Text("no operations recorded",
                    tooltip([f"{info['label']}: the call ran no operations "
                             f"(it returned its input or a constant)"]))

    # -- control flow ------------------------------------------------------------
    def control_frame(self, node: str) -> Text:
        """The frame around an ``If``/``Loop``/``fork`` node and its blocks: its code."""
        data = self.G.nodes[node]
        where = self._loc(data.get("user_source") or data.get("source"))
        code = data.get("code") or {
            "prim::fork": "torch.jit.fork (traced: no source line)",
            "prim::awaitable": "torch.jit._awaitable",
            "higher_order::cond": "torch.cond", "higher_order::while_loop": "while_loop",
            "higher_order::scan": "scan", "higher_order::map": "map",
        }.get(data["kind"], data["kind"])
        if where and not data.get("code") and data["kind"].startswith("higher_order::"):
            where = f"in the body called at {where}"   # torch kept only the outer op's line
        label = "<" + _bold(_truncate(code, 60))
        if where:
            label += f' <FONT POINT-SIZE="9">{_h(_truncate(where, 60))}</FONT>'
        return Text(HtmlLabel(label + ">"), tooltip([f"{data['kind']} at {where}"]))

    def block(self, cid: str) -> Text:
        """The frame of one block of a control node (``then``, ``loop body``, a task)."""
        info = self.blocks[cid]
        text = info["label"]
        if info["kind"] in TASK_KINDS:
            text = "forked task (runs in parallel until its wait)"
            measured = self.profile.task_line(info.get("owner"))
            if measured:   # render --profile: what the trace's threads showed
                return Text(f"forked task: {measured}", f"{text}; measured: {measured}")
        return Text(text, text)

    def empty_block(self, cid: str) -> Text:
        info = self.blocks[cid]
        text = "passes its input through" if info["kind"] in CHOICE_BODIES else "empty"
        return Text(text, tooltip([f"{info['label']}: no operations"]))

    # -- edges -------------------------------------------------------------------
    def _loop_roll(self, rid: str) -> Text:
        """The iterations between the first and the last of a loop the trace unrolled, as
        one node: how many, from which lines, what the last rolled one computes."""
        loop = self.plan.loops[rid]
        by = unroller(self.G)
        trips = len(loop["iterations"])
        rolled = trips - 2
        shown = [n for n in self.plan.members.get(rid, ()) if n not in self.plan.folded]
        ops = len(shown)
        frozen = self._frozen_inside(self.plan.members.get(rid, ()), loop["block"])
        rows = [_bold(f'× {rolled} iterations'),
                _font("detail", _h(_truncate(f"loop unrolled by {by}: {loop['lines']}",
                                             60))),
                self._ops_row(ops, shown)] + self._frozen_rows(frozen)
        label = HtmlLabel("<" + "<BR/>".join(rows + self._badge_rows(rid)) + ">")
        lines = [f"iterations 2–{trips - 1} of {trips} of a Python loop {by} unrolled "
                 f"({loop['lines']}), rolled up",
                 "the first and the last iteration are drawn before and after",
                 f"{ops} operations inside, {ops // max(rolled, 1)} per iteration",
                 f"the {'exported' if by == 'torch.export' else 'traced'} graph runs every "
                 "iteration; the trip count is baked in"]
        lines += frozen + ([_FROZEN_HINT] if frozen else [])
        lines += self._badge_tooltip(rid)
        return Text(label, tooltip(lines))

    def edge_tooltip(self, data: dict) -> str:
        """An edge's value: its type and shape."""
        shape = format_shape(data)
        return tooltip([(data.get("type") or "") + (f" [{shape}]" if shape else "")])

    def ghost(self, drawn: str) -> Text:
        """A value drawn again beside a far consumer: the name of what it repeats."""
        if drawn.startswith("box:"):
            name = self.blocks[drawn[4:]]["label"]
        elif drawn in self.plan.loops:
            loop = self.plan.loops[drawn]
            name = f"× {len(loop['iterations']) - 2} iterations ({loop['lines']})"
        elif drawn.startswith("roll:"):
            calls = self.plan.rolls[drawn]
            name = (f"{call_name(self.blocks[calls[1]])} … "
                    f"{call_name(self.blocks[calls[-2]])}")
        else:
            name = self.G.nodes[drawn]["label"]
        return Text(f"↺ {_truncate(name, 48)}",
                    f"same value as {drawn} (drawn again to avoid a long edge)")

    # -- the title ---------------------------------------------------------------
    def graph_tooltip(self) -> str:
        return tooltip([self.G.graph.get("name") or "irviz"])

    def _legend_facts(self) -> set[str]:
        """What the legend explains because this picture draws it: the categories of the
        nodes drawn (``fork`` for a fork or a wait; not those inside a box), ``module``
        when a module call is a box, ``critical`` for a critical path, and the rows always
        shown (inputs, outputs, operations)."""
        has = {"input", "output", "op"}
        if self.plan.boxes:
            has.add("module")
        drawn, nodes = self.plan.representative, self.G.nodes
        if any(drawn.get(node) is not None for node in critical_nodes(self.G)):
            has.add("critical")
        for r in self.plan.position:   # the drawn ids: the nodes drawn as themselves
            if drawn.get(r) == r:
                category = node_category(nodes[r].get("kind", ""))
                has.add("fork" if category == "wait" else category)
        return has

    def title(self) -> HtmlLabel:
        """Title, notes (the caller's, the plan's, findings with no node) and legend."""
        G = self.G
        title = self.opt.title or f"{G.graph.get('name')} · {G.graph.get('root_class')}"
        has = self._legend_facts()
        legend = [(c, t) for c, t in LEGEND if c in has or DIFF_SUMMARY in G.graph]
        span = len(legend)
        rows = [f'<TR><TD ALIGN="LEFT" COLSPAN="{span}">{_bold(_truncate(title, 140))}'
                f' <FONT COLOR="{TEXT_COLOR["mode"]}">({_h(G.graph.get("mode"))})</FONT>'
                '</TD></TR>']
        notes = [(note, note_color(note)) for note in (*self.opt.notes, *self.plan.notes)]
        for f in self.plan.unplaced_findings:
            alarm = is_alarm(f)
            evidence = evidence_line(f)
            notes.append((f"{'⚠' if alarm else 'ℹ'} {f['code']} "
                          f"{os.path.basename(str(f['path']))}:{f['line']}: {f['message']}"
                          + (f" ({evidence})" if evidence else ""),
                          "warning" if alarm else "info"))
            remedy = remedy_line(f)
            if remedy:   # the fix, on a line of its own: what the reader acts on
                notes.append((f"   ↳ {remedy}", "info"))
        for note, color in notes:
            rows.append(f'<TR><TD ALIGN="LEFT" COLSPAN="{span}">'
                        f'<FONT COLOR="{TEXT_COLOR[color]}">{_h(_truncate(note, 180))}'
                        '</FONT></TD></TR>')
        cells = []
        for category, text in legend:
            style = NODE_STYLE[category]
            cells.append(f'<TD BGCOLOR="{style["fillcolor"]}" COLOR="{style["color"]}">'
                         f'<FONT POINT-SIZE="9">{_h(text)}</FONT></TD>')
        rows.append("<TR>" + "".join(cells) + "</TR>")
        if DIFF_SUMMARY in G.graph:   # irviz diff: what the colours mean instead
            cells = []
            for status, text in DIFF_LEGEND:
                style = DIFF_NODE[status]
                cells.append(f'<TD BGCOLOR="{style["fillcolor"]}" COLOR="{style["color"]}">'
                             f'<FONT POINT-SIZE="9" COLOR="{style["fontcolor"]}">{_h(text)}'
                             '</FONT></TD>')
            rows[-1] = ("<TR>" + "".join(cells)
                        + f'<TD COLSPAN="{span - len(cells)}" BORDER="0"></TD></TR>')
            counts = G.graph[DIFF_SUMMARY]
            rows.append(f'<TR><TD ALIGN="LEFT" COLSPAN="{span}">' + _font("detail", _h(
                f"{counts['removed']} removed, {counts['added']} added, "
                f"{counts['changed']} changed, {counts['same']} unchanged · unchanged "
                "module calls are drawn as boxes · hover for both sides' ids")) + "</TD></TR>")
        else:
            rows.append(f'<TR><TD ALIGN="LEFT" COLSPAN="{span}">'
                        + "".join(_font(color, _h(text)) for color, text, needs
                                  in LEGEND_NOTES if needs in has)
                        + _font("detail", _h(" · ".join(text for text, needs in LEGEND_DETAIL
                                                        if needs is None or needs in has)))
                        + "</TD></TR>")
            if self.profile.active:   # render --profile: the time ramp and its range
                cells, lines = self.profile.legend()
                ramp = "".join(f'<TD BGCOLOR="{colour}"><FONT POINT-SIZE="9">{_h(text)}'
                               '</FONT></TD>' for colour, text in cells)
                rows.append('<TR><TD COLSPAN="{0}" BORDER="0"><TABLE BORDER="0" '
                            'CELLBORDER="1" CELLSPACING="0" CELLPADDING="2"><TR>{1}</TR>'
                            '</TABLE></TD></TR>'.format(span, ramp))
                rows += [f'<TR><TD ALIGN="LEFT" COLSPAN="{span}">'
                         + _font("detail", _h(_truncate(line, 200))) + "</TD></TR>"
                         for line in lines]
            if self.plan.badges or self.plan.unplaced_findings:   # what the badges mean
                rows.append(f'<TR><TD ALIGN="LEFT" COLSPAN="{span}">'
                            + "".join(_font(color, _h(text)) for color, text in LEGEND_FINDINGS)
                            + "</TD></TR>")
        return HtmlLabel('<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="2" CELLPADDING="3">'
                         + "".join(rows) + "</TABLE>>")
