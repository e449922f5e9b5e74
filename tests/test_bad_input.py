"""The bad-input table (tests/bad_inputs.py): exit 2, one clear message, nothing written."""
from __future__ import annotations

from pathlib import Path

import pytest

from bad_inputs import CASES, DOC, run_case
from conftest import shows_irviz_traceback


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_bad_input(case, tmp_path):
    code, err = run_case(case, tmp_path)
    assert code == 2, err
    first = err.splitlines()[0] if err else ""
    assert first.startswith("error: "), err
    assert case.expect in err.split("\nhint:")[0], err
    assert "hint: " in err, "every message says what to do"
    assert not shows_irviz_traceback(err), "no irviz traceback for a user mistake"
    if case.output:
        out = Path(case.output) if case.output.startswith("/") else tmp_path / case.output
        assert not out.exists()
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_the_documented_table_is_current(tmp_path):
    from bad_inputs import write_doc

    fresh = tmp_path / "bad-input.md"
    write_doc(fresh)
    assert DOC.exists() and DOC.read_text() == fresh.read_text(), (
        "docs/bad-input.md is stale: run `make bad-input-doc`")


def test_torch_outside_the_supported_range_is_refused(monkeypatch):
    from irviz.compat import check_torch
    from irviz.errors import UsageError

    assert check_torch("2.13.0+cpu") == "2.13.0+cpu"
    for version in ("2.15.0", "3.0.1", "2.0.1"):
        with pytest.raises(UsageError) as err:
            check_torch(version)
        assert version in err.value.message and "IRVIZ_ALLOW_ANY_TORCH" in err.value.hint
    monkeypatch.setenv("IRVIZ_ALLOW_ANY_TORCH", "1")
    assert check_torch("2.16.0") == "2.16.0"


def test_a_torch_that_refuses_torchscript_gets_an_explanation():
    from irviz.frontends.capture import _torchscript_removed

    # the wording of the planned error (pytorch/pytorch#189705), and torch 2.13's warning
    assert _torchscript_removed(
        "torch.jit.script is deprecated and TorchScript is no longer supported; please use "
        "torch.compile or torch.export. Set TORCH_2_14_ONLY_UNSAFE_SILENCE_TORCHSCRIPT_ERROR "
        "to silence this error")
    assert not _torchscript_removed("Expected a value of type 'Tensor' for argument 'x'")
