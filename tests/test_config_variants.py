"""``variants`` in ``[tool.irviz]``: the inputs a user gives the verification, beside the
variants lint makes, so that a finding no generated variant could decide gets decided
(issue 42). Parsed and checked like every other key; used by a real lint run."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from conftest import lint_cli

from irviz.config import load_config, variants_for
from irviz.errors import UsageError

#: a branch no generated variant takes: its condition needs values far beyond the
#: example's range and the aimed normal draws (at most scale 100)
CLIPPED = '''\
import torch


class Clipped(torch.nn.Module):
    def forward(self, x):
        if x.abs().max() > 10000:
            return x / 10000
        return x * 2


example_inputs = {"Clipped": lambda: (torch.rand(2, 4),)}
'''


def _project(tmp_path: Path, toml: str) -> Path:
    root = tmp_path / "proj"
    root.mkdir(exist_ok=True)
    (root / ".git").mkdir(exist_ok=True)
    (root / "pyproject.toml").write_text(textwrap.dedent(toml))
    return root


def test_a_list_is_for_every_target_a_table_by_glob(tmp_path):
    root = _project(tmp_path, '[tool.irviz]\nvariants = ["torch.rand(3)", "torch.rand(4)"]\n')
    config = load_config(root)
    assert variants_for(config, "model.py:Net") == ["torch.rand(3)", "torch.rand(4)"]
    root = _project(tmp_path, '''\
        [tool.irviz.variants]
        "model.py:Net" = ["torch.rand(3)"]
        "*:Other" = ["torch.rand(5)"]
        ''')
    config = load_config(root)
    assert variants_for(config, "src/model.py:Net") == ["torch.rand(3)"]
    assert variants_for(config, "src/model.py:Other") == ["torch.rand(5)"]
    assert variants_for(config, "src/model.py:Third") == []


@pytest.mark.parametrize("line, message", [
    ('variants = "torch.rand(3)"',
     "`variants` in [tool.irviz] of {path} must be a list of --inputs expressions (strings), "
     'or a table of "target glob" = [expressions], got a string: \'torch.rand(3)\''),
    ("variants = [3]",
     "`variants` in [tool.irviz] of {path} must be a list of --inputs expressions (strings), "
     'or a table of "target glob" = [expressions], got a list: [3]'),
    ('variants = { "m.py:Net" = "torch.rand(3)" }',
     '`variants."m.py:Net"` in [tool.irviz] of {path} must be a list of --inputs '
     "expressions (strings), got a string: 'torch.rand(3)'"),
    ('variants = ["torch.rand(3"]',
     "`variants` in [tool.irviz] of {path}: entry 1 ('torch.rand(3') is not a Python "
     "expression: '(' was never closed"),
])
def test_a_wrong_value_names_the_key_and_the_file(tmp_path, line, message):
    root = _project(tmp_path, f"[tool.irviz]\n{line}\n")
    with pytest.raises(UsageError) as info:
        load_config(root)
    assert info.value.message == message.format(path=(root / "pyproject.toml").resolve())


def _clipped_finding(root: Path) -> dict:
    result = lint_cli("model.py", "--format", "json", "--no-cache", cwd=root)
    assert result.exit_code == 1, result.stdout + result.stderr
    [finding] = [f for f in json.loads(result.stdout) if f["line"] == 6]
    return finding


def test_a_configured_variant_decides_an_undecided_finding(tmp_path):
    root = _project(tmp_path, "[tool.irviz]\nverify = 16\n")
    (root / "model.py").write_text(CLIPPED)
    undecided = _clipped_finding(root)
    assert undecided["evidence"]["verdict"] == "undecided", undecided
    assert "`variants` in [tool.irviz]" in undecided["evidence"]["summary"]
    assert undecided["severity"] == "warning"

    (root / "pyproject.toml").write_text(
        '[tool.irviz]\nvariants = ["torch.full((2, 4), 20000.0)"]\n')
    decided = _clipped_finding(root)
    evidence = decided["evidence"]
    assert evidence["verdict"] == "counterexample", decided
    assert evidence["variant"] == "the configured input torch.full((2, 4), 20000.0)"
    assert decided["severity"] == "error"


def test_a_configured_variant_given_by_name_is_laid_out_as_the_example(tmp_path):
    root = _project(tmp_path, '[tool.irviz]\nvariants = ["{\'x\': torch.full((2, 4), '
                              '20000.0)}"]\n')
    (root / "model.py").write_text(CLIPPED)
    assert _clipped_finding(root)["evidence"]["verdict"] == "counterexample"


def test_a_configured_variant_that_does_not_evaluate_is_the_users_error(tmp_path):
    root = _project(tmp_path, '[tool.irviz]\nvariants = ["torch.rand(2, 4) + nope"]\n')
    (root / "model.py").write_text(CLIPPED)
    result = lint_cli("model.py", "--no-cache", cwd=root)
    assert result.exit_code == 2, result.stdout + result.stderr
    assert ("`variants` in [tool.irviz] of pyproject.toml: 'torch.rand(2, 4) + nope' for "
            "model.py:Clipped: evaluating it raised NameError: name 'nope' is not defined"
            ) in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
