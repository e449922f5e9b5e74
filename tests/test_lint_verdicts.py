"""The evidence ladder (issue 29): a finding is an error only with a counterexample input
or a certainty no input changes; the rest is info. Real torch.jit.trace, real CLI.

tests/models/verdicts.py holds, for each kind of variant input (shape, dtype, value,
mask), a branch it breaks and a branch it leaves alone, with the verdict lint must give on
each line in a `# verdict:` comment."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from irviz.cli import main

HERE = Path(__file__).resolve().parent
MODELS = HERE / "models" / "verdicts.py"
VERDICT = re.compile(r"#\s*verdict:\s*(\w+)(?:\s+(\w+))?")


def _verdicts() -> dict[str, tuple[int, str, str | None]]:
    """model name -> (line, verdict, kind) from the `# verdict:` comments."""
    out, model = {}, None
    for number, text in enumerate(MODELS.read_text().splitlines(), 1):
        m = re.match(r"class (\w+)\(", text)
        if m:
            model = m.group(1)
        v = VERDICT.search(text)
        if v:
            out[model] = (number, v.group(1), v.group(2))
    return out


@pytest.fixture(scope="module")
def findings():
    torch.manual_seed(0)
    result = CliRunner().invoke(main, ["lint", str(MODELS), "--format", "json"])
    assert result.exit_code in (0, 1, 2), result.stderr
    return json.loads(result.stdout), result


@pytest.mark.parametrize("model", sorted(_verdicts()))
def test_each_line_has_its_verdict(findings, model):
    items, _ = findings
    line, verdict, kind = _verdicts()[model]
    here = [f for f in items if f["target"] == model and f["line"] == line]
    assert here, (model, line, [(f["line"], f["code"], f["severity"]) for f in items
                                if f["target"] == model])
    evidence = [f["evidence"] for f in here]
    if verdict == "error":
        assert any(f["severity"] == "error" for f in here), here
        [proof] = {json.dumps(e, sort_keys=True) for e in evidence
                   if e and e["verdict"] == "counterexample"}
        proof = json.loads(proof)
        assert proof["variant"] and proof["difference"] and proof["summary"]
        kinds = {"shape": "->", "dtype": "float64", "value": "negated", "mask": "padded"}
        if kind == "value":
            assert "negated" in proof["variant"] or "resampled" in proof["variant"], proof
        else:
            assert kinds[kind] in proof["variant"], proof
    elif verdict == "info":
        assert all(f["severity"] == "info" for f in here), here
        assert all(e and e["verdict"] == "held" for e in evidence), evidence
        if kind == "validation":
            assert all("validation" in e["summary"] for e in evidence), evidence
        else:
            assert all(e["held_on"] for e in evidence), evidence
    else:
        assert any(f["severity"] in ("error", "warning") and f["evidence"]["verdict"] ==
                   "certain" for f in here), here


def test_info_never_fails_the_run_and_is_shown_on_request(tmp_path):
    spec = f"{MODELS}:BatchHarmless"
    result = CliRunner().invoke(main, ["lint", spec])
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "IRV101" not in result.stdout and "1 info not shown (--show-info)" in result.stderr
    result = CliRunner().invoke(main, ["lint", spec, "--show-info"])
    assert result.exit_code == 0 and "IRV101" in result.stdout
    assert "    held: the if took both sides on " in result.stdout


def test_a_counterexample_is_printed_under_its_finding():
    result = CliRunner().invoke(main, ["lint", f"{MODELS}:DtypeBranch"])
    assert result.exit_code == 1, result.stdout + result.stderr
    assert re.search(r"    counterexample: x float32 -> float64: the trace raises "
                     r"\"RuntimeError: .*\"; the model runs", result.stdout), result.stdout


def test_verify_zero_leaves_every_finding_undecided_and_info():
    result = CliRunner().invoke(main, ["lint", f"{MODELS}:SignGate", "--verify", "0",
                                       "--format", "json"])
    assert result.exit_code == 0, result.stderr
    items = json.loads(result.stdout)
    assert items and all(f["severity"] == "info" for f in items)
    assert {f["evidence"]["verdict"] for f in items} == {"undecided"}


def test_a_forward_that_raises_is_a_run_error_not_irv301():
    result = CliRunner().invoke(main, ["lint", f"{MODELS}:BadView", "--format", "json"])
    assert result.exit_code == 2, result.stdout + result.stderr
    assert "IRV301" not in result.stdout
    assert "compiles" in result.stderr and "verdicts.py:" in result.stderr


def test_a_model_that_does_not_script_is_reported_in_the_default_mode():
    result = CliRunner().invoke(main, ["lint", f"{MODELS}:KwargsForward", "--format", "json"])
    items = json.loads(result.stdout)
    assert [f["code"] for f in items] == ["IRV301"], items
    assert items[0]["severity"] == "warning" and result.exit_code == 1
