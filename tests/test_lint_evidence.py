"""A finding needs evidence (irviz.lint.evidence), without transformers: the arguments the
example inputs leave out, one finding per signature; source guesses the run contradicts; the
unconfirmed findings in an installed library; every TracerWarning accounted for."""
from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import torch
from click.testing import CliRunner

from irviz.cli import main
from irviz.frontends.inputs import ExampleInputs
from irviz.lint.evidence import signature_facts
from irviz.lint.rules.tracing import DefaultArgBaked, NonTensorInput
from irviz.lint.source import source_findings
from irviz.paths import is_installed_library_file


def lint(*args, cwd: Path):
    torch.manual_seed(0)
    old = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(main, ["lint", *map(str, args), "--format", "json"])
    finally:
        os.chdir(old)
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout), result.stderr


# -- arguments: one finding per signature ----------------------------------------------

class _Encoder(torch.nn.Module):
    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None,
                use_cache: bool = False, k: int = 3):
        return input_ids


def _params(inputs):
    facts = source_findings(_Encoder())
    return [(f.rule, f.detail, dict(getattr(f, "fields", ())))
            for f in signature_facts(facts, inputs, _Encoder())]


def test_only_the_arguments_the_inputs_leave_out_in_one_finding():
    ids = torch.zeros(2, 3, dtype=torch.long)
    [(rule, expr, fields)] = _params(ExampleInputs((), {"input_ids": ids,
                                                        "attention_mask": ids}))
    assert rule is DefaultArgBaked   # not also IRV123 for the flags: the same fact
    assert expr == ("arguments `token_type_ids`, `position_ids`, `use_cache`, `k` (4) "
                    "are not in the example inputs")
    assert fields == {"them": "them to their defaults"}
    [(rule, expr, _), (passed, _, _)] = _params(
        ExampleInputs((ids, ids, ids, ids, torch.tensor(True)), {}))
    assert expr == "argument `k` is not in the example inputs"  # positional inputs bind too
    assert passed is NonTensorInput  # use_cache: passed, and annotated as a bool


def test_a_non_tensor_argument_the_inputs_pass_is_irv123():
    ids = torch.zeros(2, 3, dtype=torch.long)
    got = _params(ExampleInputs((ids,), {"use_cache": torch.tensor(True),
                                         "k": torch.tensor(2)}))
    rules = [rule for rule, _, _ in got]
    assert rules == [DefaultArgBaked, NonTensorInput]
    assert "`use_cache: bool = False`" not in got[0][1]
    assert got[1][1] == "arguments `use_cache`, `k` (2) are not tensors"


def test_without_inputs_every_defaulted_argument_in_one_finding():
    [(rule, expr, fields)] = _params(None)
    assert rule is DefaultArgBaked and expr.startswith("arguments `attention_mask`") \
        and expr.endswith(", ... (5) have defaults")
    assert fields == {"them": "them to the values used while tracing"}


# -- installed libraries ------------------------------------------------------------------

LIBRARY = '''
    import torch


    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)
            self.calls = 0

        def forward(self, x):
            if x.dtype == torch.int64:  # metadata branch no float input takes
                x = x.float()
            if not self.training:  # training branch
                x = x * 1.0
            return self.lin(x)
'''
MODEL = '''
    import os
    import sys

    import torch

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "site-packages"))
    from fakelib import Block


    class _Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()

        def forward(self, x):
            if x.dim() == 3:  # the user's own metadata branch
                x = x.sum(0)
            return self.block(x)


    def eval_model():
        return _Model().eval()


    def train_model():
        return _Model()


    example_inputs = {"eval_model()": lambda: (torch.rand(3, 4),),
                      "train_model()": lambda: (torch.rand(3, 4),)}
'''


def _project(tmp_path: Path) -> Path:
    lib = tmp_path / "site-packages" / "fakelib"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text(textwrap.dedent(LIBRARY))
    model = tmp_path / "model.py"
    model.write_text(textwrap.dedent(MODEL))
    return model


def _codes(items, name):
    return sorted(f["code"] for f in items if f["path"].endswith(name))


def test_unconfirmed_findings_in_an_installed_library_are_left_out_and_counted(tmp_path):
    model = _project(tmp_path)
    assert is_installed_library_file(tmp_path / "site-packages" / "fakelib" / "__init__.py")
    assert not is_installed_library_file(model)
    items, stderr = lint(f"{model}:eval_model()", "--mode", "trace", cwd=tmp_path)
    assert _codes(items, "model.py") == ["IRV102"]      # the user's own: shown
    assert _codes(items, "__init__.py") == []           # the library's: left out...
    assert "2 unconfirmed source finding(s) in library code left out" in stderr  # ...said
    shown, _ = lint(f"{model}:eval_model()", "--mode", "trace", "--show-unconfirmed",
                    cwd=tmp_path)
    assert _codes(shown, "__init__.py") == ["IRV102", "IRV131"]
    (tmp_path / "pyproject.toml").write_text("[tool.irviz]\nshow-unconfirmed = true\n")
    configured, _ = lint(f"{model}:eval_model()", "--mode", "trace", cwd=tmp_path)
    assert _codes(configured, "__init__.py") == ["IRV102", "IRV131"]


def test_a_training_branch_traced_in_training_mode_is_confirmed(tmp_path):
    model = _project(tmp_path)
    items, _ = lint(f"{model}:train_model()", "--mode", "trace", cwd=tmp_path)
    assert _codes(items, "__init__.py") == ["IRV131"], [(f["path"], f["line"], f["code"], f["layers"], f["evidence"]) for f in items]


# -- every TracerWarning accounted for ------------------------------------------------------

CONSTANT = '''
    import torch


    class Model(torch.nn.Module):
        def forward(self, x):
            scale = torch.tensor([2.0])  # torch warns; constant data: no finding
            return x * scale


    example_inputs = {"Model": lambda: (torch.rand(3),)}
'''


def test_a_tracer_warning_no_finding_stands_for_is_named(tmp_path):
    model = tmp_path / "model.py"
    model.write_text(textwrap.dedent(CONSTANT))
    items, stderr = lint(model, cwd=tmp_path)
    line = next(i for i, text in enumerate(model.read_text().splitlines(), 1)
                if "torch.tensor([2.0])" in text)
    assert not [f for f in items if f["line"] == line]
    assert f"TracerWarning at model.py:{line} not reported as a finding" in stderr
