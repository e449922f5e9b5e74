"""Condition coverage (issue 42): a finding resting on a Python decision is held only when
a variant drove that decision the other way; undecided in the user's code is a warning.
Real torch.jit.trace, real CLI.

tests/lint_models/pitfalls/ holds one tracing pitfall per file, each with a
`# expect: error|warning` comment on the line lint must flag: every one must exit 1 with
that severity there, an error naming its counterexample."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import lint_cli

from irviz.frontends.decisions import DecisionRecorder, decision_at

HERE = Path(__file__).resolve().parent
PITFALLS = sorted((HERE / "lint_models" / "pitfalls").glob("p*.py"))
EXPECT = re.compile(r"#\s*expect:\s*(error|warning)")


lint = lint_cli


def _expected(path: Path) -> tuple[int, str]:
    [(line, severity)] = [(n, m.group(1)) for n, text in
                          enumerate(path.read_text().splitlines(), 1)
                          if (m := EXPECT.search(text))]
    return line, severity


def test_the_corpus_has_twenty_pitfalls():
    assert len(PITFALLS) >= 20


@pytest.mark.parametrize("path", PITFALLS, ids=lambda p: p.stem)
def test_each_pitfall_fails_the_run_at_its_line(path):
    line, severity = _expected(path)
    result = lint(path, "--format", "json")
    assert result.exit_code == 1, result.stdout + result.stderr
    items = json.loads(result.stdout)
    here = [f for f in items if f["line"] == line and f["severity"] == severity]
    assert here, [(f["line"], f["code"], f["severity"], f["evidence"]) for f in items]
    if severity == "error":
        proof = here[0]["evidence"]
        assert proof["verdict"] == "counterexample" and proof["variant"], proof
        text = lint(path, "--no-hints").stdout
        assert f"    counterexample: {proof['summary']}" in text, text


@pytest.mark.parametrize("name", ["pitfalls/ok_decisions.py", "ok_dynamic_patterns.py",
                                  "runtime/ok_runtime_patterns.py"])
def test_correct_dynamic_code_passes(name):
    result = lint(HERE / "lint_models" / name)
    assert result.exit_code == 0, result.stdout + result.stderr


def test_held_says_the_decision_took_both_sides():
    result = lint(HERE / "lint_models" / "pitfalls" / "ok_decisions.py:EmptyBatch", "--show-info",
                  "--format", "json")
    [f] = json.loads(result.stdout)
    assert f["severity"] == "info" and f["evidence"]["verdict"] == "held"
    assert re.fullmatch(r"the if took both sides on \d+ variants", f["evidence"]["summary"])


UNDECIDED = """import torch


class Huge(torch.nn.Module):
    def forward(self, x):
        if x.abs().sum() > 1e9:
            return x * 0
        return x * 2


example_inputs = {"Huge": lambda: (torch.rand(2, 2),)}
"""


def test_a_decision_no_variant_drove_is_a_warning_in_user_code(tmp_path):
    (tmp_path / "model.py").write_text(UNDECIDED)
    result = lint("model.py", "--no-hints", cwd=tmp_path)
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "model.py:6:12: IRV101 " in result.stdout
    assert ("    undecided: the if took the same side on every variant: no example took "
            "the other side: pass --inputs whose values do") in result.stdout


def test_a_library_decision_no_variant_drove_stays_info(tmp_path):
    lib = tmp_path / "site-packages" / "hugelib"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text(UNDECIDED.replace('example_inputs = {"Huge": lambda: '
                                                      '(torch.rand(2, 2),)}', ""))
    (tmp_path / "model.py").write_text(
        "import sys, pathlib, torch\n"
        "sys.path.insert(0, str(pathlib.Path(__file__).parent / 'site-packages'))\n"
        "from hugelib import Huge\n\n\n"
        "def make():\n    return Huge()\n\n\n"
        "example_inputs = {'make': lambda: (torch.rand(2, 2),)}\n")
    result = lint("model.py:make()", "--format", "json", "--show-info",
                  "--inputs", "torch.rand(2, 2)", cwd=tmp_path)
    items = json.loads(result.stdout)
    assert result.exit_code == 0, result.stdout + result.stderr
    [f] = [f for f in items if f["code"] == "IRV101"]
    assert f["severity"] == "info" and f["evidence"]["verdict"] == "undecided", f


def test_machine_decided_branch_is_certain_and_names_the_machine():
    path = HERE / "lint_models" / "pitfalls" / "p16_is_cuda.py"
    [f] = json.loads(lint(path, "--format", "json").stdout)
    assert f["severity"] == "warning" and f["evidence"]["verdict"] == "certain"
    assert "CUDA" in f["evidence"]["summary"]


def test_one_root_cause_one_finding():
    """The iteration over the batch and the shape it baked share one counterexample: one
    finding, on the loop, with the other as a related location."""
    path = HERE / "lint_models" / "pitfalls" / "p11_iterate_rows.py"
    items = json.loads(lint(path, "--format", "json").stdout)
    assert [f["code"] for f in items] == ["IRV104"], items
    [related] = items[0]["related"]
    assert related["line"] == 9 and related["message"].startswith("IRV151 ")


def test_the_simplest_counterexample_is_reported():
    """A state counterexample (the same inputs again) beats every changed input."""
    path = HERE / "lint_models" / "pitfalls" / "p07_toggle_state.py"
    [f] = [f for f in json.loads(lint(path, "--format", "json").stdout) if f["line"] == 11]
    assert f["evidence"]["variant"] == "a second call on the example inputs"


def test_the_deciding_if_gets_the_counterexample_not_the_constant_inner_one():
    path = HERE / "lint_models" / "pitfalls" / "p21_outer_decides.py"
    items = json.loads(lint(path, "--format", "json").stdout)
    assert {(f["line"], f["severity"]) for f in items} == {(12, "error")}, items


def test_the_recorder_reads_sides_trip_counts_and_values(tmp_path):
    src = tmp_path / "decide.py"
    src.write_text("def f(x, n):\n"
                   "    if x > 0:\n"
                   "        x = -x\n"
                   "    for _ in range(n):\n"
                   "        x += 1\n"
                   "    k = int(n * 2)\n"
                   "    return x + k\n")
    namespace: dict = {}
    exec(compile(src.read_text(), str(src), "exec"), namespace)
    decisions = [decision_at(str(src), line) for line in (2, 4, 6)]
    assert [d.kind for d in decisions] == ["if", "for", "value"]
    taken = []
    for args in ((1, 3), (-1, 0)):
        with DecisionRecorder(decisions) as recorder:
            namespace["f"](*args)
        taken.append({line: d.describe(recorder.taken()[(d.path, d.line)])
                      for line, d in zip((2, 4, 6), decisions)})
    assert taken == [{2: "true", 4: "3 iterations", 6: "int(n * 2)=6"},
                     {2: "false", 4: "0 iterations", 6: "int(n * 2)=0"}]


@pytest.mark.parametrize("statement, kind", [
    ("if x.is_cuda:", "machine"),
    ("if torch.cuda.is_available():", "machine"),
    # torchvision's batched_nms: the number of boxes decides too, so a variant can flip it
    ('if boxes.numel() > (4000 if boxes.device.type == "cpu" else 100_000):', "size"),
    ("if x.dim() == 2 and x.is_cuda:", "rank"),
])
def test_the_machine_decides_alone_only_when_nothing_else_is_read(statement, kind):
    from irviz.lint.rules.tracing import reads

    assert reads(statement, "value") == kind
