"""``irviz lint --fix`` / ``--diff`` through the real CLI on copies of models: the verified
remedies that edit the user's source are written only after the edited file, linted
again, shows the counterexample gone; nothing else is ever written."""
from __future__ import annotations

import json
import textwrap

from conftest import SAMPLES, lint_cli

#: the pitfall of tests/lint_models/pitfalls/p03_value_rescale.py, with the branch in a
#: module-level function forward calls
FREE_FUNCTION = textwrap.dedent('''\
    """Rescales only inputs outside [0, 1], in a free function: the example never is."""
    import torch


    def rescale(x):
        if x.abs().max() > 1:
            x = x / x.abs().max()
        return x * 3


    def shift(x):
        return x + 1


    class Rescale(torch.nn.Module):
        def forward(self, x):
            return shift(rescale(x))


    example_inputs = {"Rescale": lambda: (torch.rand(8, 8),)}
    ''')

#: p04_training_flag.py's model, made by a factory that returns it in training mode
TRAINING_FACTORY = textwrap.dedent('''\
    """Noise only in training; the factory returns the model as constructed."""
    import torch


    class Jitter(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 3)

        def forward(self, x):
            y = self.lin(x)
            if self.training:
                y = y * 0.9
            return y


    def make_model():
        model = Jitter()
        return model  # the one the deployment traces


    example_inputs = {"make_model()": lambda: (torch.rand(2, 3),)}
    ''')


def _files(folder) -> list[str]:
    """Every file below ``folder`` (the lint cache aside)."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                  if p.is_file() and ".irviz_cache" not in p.parts)


def test_fix_decorates_the_free_function_and_the_model_then_lints_clean(tmp_path):
    model = tmp_path / "rescale.py"
    model.write_text(FREE_FUNCTION)
    assert lint_cli("--no-cache", model).exit_code == 1   # the finding is there first

    result = lint_cli("--fix", "--no-cache", model, cwd=tmp_path)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert "Fixed 1 finding (0 remaining)." in result.stderr
    assert model.read_text() == FREE_FUNCTION.replace(
        "\ndef rescale(x):", "\n@torch.jit.script_if_tracing\ndef rescale(x):")
    assert _files(tmp_path) == ["rescale.py"]   # no edited copy left beside it

    again = lint_cli("--no-cache", model, cwd=tmp_path)
    assert again.exit_code == 0, again.stdout
    assert "All checks passed for 1 model" in again.stderr


def test_the_findings_left_are_shown_where_the_edit_moved_them_and_fail_the_run(tmp_path):
    model = tmp_path / "rescale.py"
    model.write_text(FREE_FUNCTION + textwrap.dedent('''\


        class Gate(torch.nn.Module):
            def forward(self, x):
                if x.sum() > 0:
                    return x
                return -x


        example_inputs["Gate"] = lambda: (torch.rand(3, 4),)
        '''))
    gate_line = model.read_text().splitlines().index("        if x.sum() > 0:") + 1
    result = lint_cli("--fix", "--no-cache", "rescale.py", cwd=tmp_path)
    assert result.exit_code == 1, (result.stdout, result.stderr)   # one finding is left
    assert "Fixed 1 finding (1 remaining)." in result.stderr
    assert "not applied: rescale.py:" in result.stderr   # Gate's remedy scripts the model
    assert result.stdout.startswith(f"rescale.py:{gate_line + 1}:12: IRV101 ")
    assert model.read_text().splitlines()[gate_line] == "        if x.sum() > 0:"


def test_fix_keeps_the_files_line_endings(tmp_path):
    model = tmp_path / "rescale.py"
    model.write_bytes(FREE_FUNCTION.replace("\n", "\r\n").encode())
    result = lint_cli("--fix", "--no-cache", model, cwd=tmp_path)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert b"\r\n@torch.jit.script_if_tracing\r\ndef rescale(x):\r\n" in model.read_bytes()
    assert b"\n" not in model.read_bytes().replace(b"\r\n", b"")


def test_diff_prints_the_verified_edit_and_writes_nothing(tmp_path):
    model = tmp_path / "rescale.py"
    model.write_text(FREE_FUNCTION)
    result = lint_cli("--diff", "--no-cache", "rescale.py", cwd=tmp_path)
    assert result.exit_code == 1, result.stderr   # there would be changes (ruff's code)
    assert result.stdout.splitlines() == [
        "--- rescale.py", "+++ rescale.py", "@@ -2,6 +2,7 @@", " import torch", " ", " ",
        "+@torch.jit.script_if_tracing", " def rescale(x):", "     if x.abs().max() > 1:",
        "         x = x / x.abs().max()"]
    assert "Would fix 1 finding (0 remaining)." in result.stderr
    assert model.read_text() == FREE_FUNCTION
    assert _files(tmp_path) == ["rescale.py"]


def test_fix_puts_eval_in_the_factory_of_a_training_mode_model(tmp_path):
    model = tmp_path / "jitter.py"
    model.write_text(TRAINING_FACTORY)
    result = lint_cli("--fix", "--no-cache", "jitter.py:make_model()", cwd=tmp_path)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert "Fixed 1 finding (0 remaining)." in result.stderr
    assert model.read_text() == TRAINING_FACTORY.replace(
        "    return model  #", "    return model.eval()  #")
    again = lint_cli("--no-cache", "jitter.py:make_model()", cwd=tmp_path)
    assert again.exit_code == 0, again.stdout


def test_a_class_without_factory_and_a_scripted_submodule_are_printed_not_applied(tmp_path):
    """Eval mode for a class the loader constructs, and scripting ``MyCell.dg``, belong
    to the deployment code: printed, never written."""
    jitter = tmp_path / "jitter.py"
    jitter.write_text(TRAINING_FACTORY.replace('"make_model()"', '"Jitter"'))
    gate = tmp_path / "decision_gate.py"
    gate.write_bytes((SAMPLES / "decision_gate.py").read_bytes())
    before = {p: p.read_bytes() for p in (jitter, gate)}
    result = lint_cli("--fix", "--no-cache", "jitter.py:Jitter", "decision_gate.py:MyCell",
                      cwd=tmp_path)
    assert result.exit_code == 1, result.stderr
    assert "not applied: jitter.py:12: IRV131 model.eval()  # before torch.jit.trace " \
           "(deployment code)" in result.stderr
    assert "not applied: decision_gate.py:11: IRV101 model.dg = torch.jit.script(model.dg) " \
           "(deployment code)" in result.stderr
    assert "Fixed 0 findings (2 remaining)." in result.stderr
    assert "IRV131" in result.stdout and "IRV101" in result.stdout   # still reported
    assert {p: p.read_bytes() for p in before} == before


def test_a_finding_in_an_installed_library_is_never_edited(tmp_path):
    library = tmp_path / "site-packages" / "irviz_fix_testlib"
    library.mkdir(parents=True)
    (library / "__init__.py").write_text(FREE_FUNCTION.split("\n\nclass ")[0] + "\n")
    model = tmp_path / "uses_lib.py"
    model.write_text(textwrap.dedent('''\
        import sys
        from pathlib import Path

        import torch

        sys.path.insert(0, str(Path(__file__).parent / "site-packages"))
        from irviz_fix_testlib import rescale  # noqa: E402


        class Rescale(torch.nn.Module):
            def forward(self, x):
                return rescale(x) + 1


        example_inputs = {"Rescale": lambda: (torch.rand(8, 8),)}
        '''))
    before = (library / "__init__.py").read_bytes()
    shown = lint_cli("--no-cache", "--format", "json", "uses_lib.py", cwd=tmp_path)
    [finding] = json.loads(shown.stdout)
    assert finding["remedy"]["edit"]["path"].endswith("__init__.py")  # an edit exists

    result = lint_cli("--fix", "--no-cache", "uses_lib.py", cwd=tmp_path)
    assert result.exit_code == 1, result.stderr
    assert "(in an installed library: site-packages/irviz_fix_testlib/__init__.py)" in result.stderr
    assert "Fixed 0 findings (1 remaining)." in result.stderr
    assert (library / "__init__.py").read_bytes() == before
    assert not list(tmp_path.rglob("_irviz_fix_*"))


def test_an_edit_that_does_not_verify_leaves_the_file_byte_identical(tmp_path):
    """The real finding with its edit swapped for a plausible wrong one (the decorator
    on ``shift``, which holds no branch): the edited copy, linted again, still has the
    counterexample, so nothing is written. An interrupt during the verification leaves
    no copy behind either."""
    from dataclasses import replace

    import pytest

    from irviz.config import Config
    from irviz.frontends.records import SourceEdit
    from irviz.lint.diagnostic import Diagnostic
    from irviz.lint.fix import TEMP_PREFIX, fix
    from irviz.lint.gate import Gate
    from irviz.lint.session import LintSession
    from irviz.workspace import Workspace

    model = tmp_path / "rescale.py"
    model.write_bytes(FREE_FUNCTION.encode())
    shown = lint_cli("--no-cache", "--format", "json", model)
    [finding] = [Diagnostic(**d) for d in json.loads(shown.stdout)]
    line = FREE_FUNCTION.splitlines().index("def shift(x):") + 1
    wrong = SourceEdit(str(model), line, "def shift(x):",
                       "@torch.jit.script_if_tracing\ndef shift(x):")
    finding = replace(finding, remedy=replace(finding.remedy, edit=wrong))
    copies = []

    def relint(specs):
        copies.extend(p.name for p in tmp_path.glob(TEMP_PREFIX + "*"))
        return LintSession(Workspace(config=Config())).run(specs, Gate.from_config(Config()))

    result = fix([finding], relint)
    assert [f.fixed for f in result.files] == []
    [skipped] = result.skipped
    assert skipped.why.startswith("the edited file still has the counterexample: x drawn")
    assert copies and copies[0].startswith(TEMP_PREFIX + "rescale_")   # beside it, linted
    assert model.read_bytes() == FREE_FUNCTION.encode()
    assert _files(tmp_path) == ["rescale.py"]

    def interrupted(specs):
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        fix([replace(finding, remedy=replace(finding.remedy, edit=wrong))], interrupted)
    assert model.read_bytes() == FREE_FUNCTION.encode()
    assert _files(tmp_path) == ["rescale.py"]


def test_fix_refuses_no_exec(tmp_path):
    model = tmp_path / "rescale.py"
    model.write_text(FREE_FUNCTION)
    result = lint_cli("--fix", "--no-exec", model)
    assert result.exit_code == 2
    assert result.stderr.startswith("error: --fix/--diff cannot be combined with --no-exec")
    assert model.read_text() == FREE_FUNCTION
