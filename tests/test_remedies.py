"""Verified remedies (issue 46): for each finding a counterexample proves, the fix irviz
found and checked, or "no verified remedy" with each candidate's failure. Real
torch.jit.trace/script, real CLI.

tests/lint_models/remedies/ marks each finding's line with ``# remedy: KIND [MODULE]`` (or
``# remedy: none``); the pitfall corpus's mode and argument findings get theirs too. A
remedy is also checked here without irviz's verification: applied, traced, and run on the
counterexample against the model's Python."""
from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest
import torch
from conftest import lint_cli

from irviz.frontends.records import Remedy, Target
from irviz.frontends.remedies import applied

HERE = Path(__file__).resolve().parent
MODELS = sorted((HERE / "lint_models" / "remedies").glob("r*.py"))
MARK = re.compile(r"#\s*remedy:\s*([\w-]+)\s*(\S*)")


def _marked(path: Path) -> tuple[int, str, str]:
    [(line, kind, module)] = [(n, m.group(1), m.group(2)) for n, text in
                              enumerate(path.read_text().splitlines(), 1)
                              if (m := MARK.search(text))]
    return line, kind, module


def _findings(path, *args) -> list[dict]:
    result = lint_cli(path, "--format", "json", *args)
    assert result.exit_code == 1, result.stdout + result.stderr
    return json.loads(result.stdout)


def _proven_at(items: list[dict], line: int) -> dict:
    [item] = [f for f in items if f["line"] == line and f["evidence"]
              and f["evidence"]["verdict"] == "counterexample"]
    return item


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_each_marked_finding_gets_its_remedy(path):
    line, kind, module = _marked(path)
    found = _proven_at(_findings(path), line)
    if kind == "none":
        assert found["remedy"] is None
        assert found["remedy_tried"], found
    else:
        remedy = found["remedy"]
        assert remedy is not None, found["remedy_tried"]
        assert remedy["kind"] == kind
        assert remedy["verified_on"] >= 2   # the example and the counterexample at least
        if module:
            assert remedy["module"] == module


def test_a_submodule_scripted_is_the_tutorials_move():
    found = _proven_at(_findings(HERE.parent / "samples" / "decision_gate.py"), 11)
    assert found["target"] == "MyCell"
    assert found["remedy"]["code"] == "model.dg = torch.jit.script(model.dg)"
    text = lint_cli(HERE.parent / "samples" / "decision_gate.py", "--no-hints").stdout
    assert re.search(r"\n    remedy for MyCell \(verified on \d+ inputs, counterexample included\): "
                     r"model\.dg = torch\.jit\.script\(model\.dg\)\n", text), text


def test_no_verified_remedy_says_which_candidates_failed_and_why():
    path = HERE / "lint_models" / "remedies" / "r03_no_compile.py"
    found = _proven_at(_findings(path), _marked(path)[0])
    tried = {a["code"]: a["why"] for a in found["remedy_tried"]}
    assert list(tried) == ["model.gate = torch.jit.script(model.gate)",
                           "model = torch.jit.script(model)"]
    assert all(why.startswith("does not compile: ") for why in tried.values()), tried
    # the compiler's own words, not the "Can't redefine method" of a class compiled twice
    assert not any("redefine" in why for why in tried.values()), tried
    text = lint_cli(path, "--no-hints").stdout
    assert "    no verified remedy: `model.gate = torch.jit.script(model.gate)`: does not " \
           "compile: " in text, text
    assert "    remedy for" not in text


def test_a_candidate_that_compiles_but_does_not_fix_is_not_shown():
    """Scripting keeps the state flip in TorchScript's copy of the module, out of step with
    the model's Python: its outputs still differ, so it is a failed candidate, not a
    remedy."""
    path = HERE / "lint_models" / "pitfalls" / "p07_toggle_state.py"
    [found] = [f for f in _findings(path) if f["evidence"]["verdict"] == "counterexample"]
    assert found["remedy"] is None
    [(code, why)] = [(a["code"], a["why"]) for a in found["remedy_tried"]]
    assert code == "model = torch.jit.script(model)"
    assert why.startswith("outputs still differ on "), why


@pytest.mark.parametrize("name, kind, code", [
    ("p04_training_flag.py", "eval", "model.eval()  # before torch.jit.trace"),
    ("p05_optional_bias.py", "pass-argument",
     "pass `bias` in the example inputs: torch.jit.trace(model, (x, bias))"),
])
def test_mode_and_argument_findings_get_their_own_remedy(name, kind, code):
    found = [f for f in _findings(HERE / "lint_models" / "pitfalls" / name)
             if f["evidence"]["verdict"] == "counterexample"]
    assert [(f["remedy"]["kind"], f["remedy"]["code"]) for f in found] == [(kind, code)]


def test_the_script_if_tracing_remedy_is_a_source_edit_in_sarif():
    path = HERE / "lint_models" / "remedies" / "r02_free_function.py"
    found = _proven_at(_findings(path), _marked(path)[0])
    edit = found["remedy"]["edit"]
    assert (edit["line"], edit["old"], edit["new"]) == (
        6, "def clip_sign(x):", "@torch.jit.script_if_tracing\ndef clip_sign(x):")
    sarif = json.loads(lint_cli(path, "--format", "sarif").stdout)
    [result] = [r for r in sarif["runs"][0]["results"] if "fixes" in r]
    [change] = result["fixes"][0]["artifactChanges"]
    assert change["artifactLocation"]["uri"].endswith("r02_free_function.py")
    assert change["replacements"] == [{
        "deletedRegion": {"startLine": 6, "startColumn": 1, "endLine": 7, "endColumn": 1},
        "insertedContent": {"text": "@torch.jit.script_if_tracing\ndef clip_sign(x):\n"}}]


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(f"irviz_remedy_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return getattr(module, name)(), module


@pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning")
@pytest.mark.parametrize("path, name, remedy", [
    (HERE / "lint_models" / "remedies" / "r01_gate_submodule.py", "Cell",
     Remedy("script-submodule", "", 0, module="gate")),
    (HERE / "lint_models" / "remedies" / "r02_free_function.py", "Head",
     Remedy("script-if-tracing", "", 0, function="irviz_remedy_r02_free_function:clip_sign")),
])
def test_an_applied_remedy_traces_what_the_model_computes(path, name, remedy):
    """Without irviz's verification: the remedy applied, a plain torch.jit.trace on a
    positive example gives the model's outputs on a negative input; without it, not."""
    torch.manual_seed(0)
    model, _module = _load(path, name)
    example = torch.full((3, model.lin.in_features), 3.0)
    other = -5 * example
    with torch.no_grad():
        plain = torch.jit.trace(model, (example,), check_trace=False)
        assert not torch.allclose(plain(other), model(other))
        kinds = [type(m) for m in model.modules()]
        with applied(Target(name, model, "module", name, path, None), [remedy]):
            fixed = torch.jit.trace(model, (example,), check_trace=False)
        assert [type(m) for m in model.modules()] == kinds   # taken off again
        torch.testing.assert_close(fixed(other), model(other))
        torch.testing.assert_close(fixed(example), model(example))
