"""A scripted detector in torchvision's style (tests/corpus/detection_style.py), the way a
user brings one: it scripts, traces, renders, and lint names exactly its two pitfalls.

Each finding below carries its verdict: ``pitfall`` (the trace is wrong for other inputs)
or ``info`` (true, harmless here). What must not appear: findings on the feature-pyramid
dict's string keys (not tensor data), on the loop over the pyramid levels (a fixed count of
modules), or on the scripted-only branches.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from irviz.workspace import Workspace

MODEL = Path(__file__).resolve().parent / "corpus" / "detection_style.py"
SPEC = f"{MODEL}:make_detector()"


def _line(marker: str) -> int:
    return next(i for i, text in enumerate(MODEL.read_text().splitlines(), 1) if marker in text)


#: (code, start of the line) -> verdict
EXPECTED = {
    ("IRV101", "if images.shape[-1] % 16 != 0:"): "pitfall",  # the padding the example needed
    ("IRV101", "k = min(self.detections, best.shape[1])"): "pitfall",  # the candidate count
    ("IRV102", "if images.dim() != 4:"): "info",  # a validation that raises: the trace drops it
    ("IRV131", "if self.training:"): "info",  # raises in training: the model is traced in eval
}


def test_lint_names_the_pitfalls_and_nothing_wrong(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "irviz", "lint", SPEC, "--format", "json"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    items = json.loads(proc.stdout)
    found = {(f["code"], f["line"]) for f in items}
    expected = {(code, _line(marker)) for code, marker in EXPECTED}
    assert found == expected, (sorted(found), sorted(expected))
    assert sum(v == "pitfall" for v in EXPECTED.values()) == 2
    # the pitfalls are errors with an input that shows them; the rest is info
    for f in items:
        verdict = EXPECTED[next(k for k in EXPECTED if (k[0], _line(k[1])) ==
                               (f["code"], f["line"]))]
        if verdict == "pitfall":
            assert f["severity"] == "error", f
            assert f["evidence"]["verdict"] == "counterexample", f["evidence"]
        else:
            assert f["severity"] == "info", f


def test_it_scripts_and_traces_and_the_trace_loses_the_branches():
    torch.manual_seed(0)
    ws = Workspace()
    [target] = ws.targets(SPEC)
    script = ws.graph(ws.capture(target, "script"))
    trace = ws.graph(ws.capture(target, "trace"))
    ifs = [d for _, d in script.nodes(data=True) if d["kind"] == "prim::If"]
    loops = [d for _, d in script.nodes(data=True) if d["kind"] == "prim::Loop"]
    assert len(ifs) >= 4 and len(loops) >= 4  # validation, padding, training; levels, keys
    assert not any(d["kind"] in ("prim::If", "prim::Loop") for _, d in trace.nodes(data=True))
    # the scripted module calls are drawn as the model's hierarchy in both
    for G in (script, trace):
        modules = {info.get("module") for info in G.graph["blocks"].values()}
        assert {"backbone", "fpn", "head"} <= modules
    # torch warned at both pitfalls, at the model's lines; torch._assert's own warning
    # (raised inside torch, about the frozen RGB check) is located at the user's call
    warned = {(w.lineno, w.origin is None) for w in ws.capture(target, "trace").warnings
              if w.category == "TracerWarning" and w.filename == str(MODEL)}
    assert warned == {(_line("if images.shape[-1] % 16 != 0:"), True),
                      (_line("k = min(self.detections, best.shape[1])"), True),
                      (_line("torch._assert(images.shape[1] == 3"), False)}
