"""`irviz render` through click's runner: outputs, messages and exact exit codes."""
from __future__ import annotations

import json
import os
import textwrap
import zipfile

import pytest
import torch
from click.testing import CliRunner

from irviz.cli import main
from conftest import SAMPLES, requires_dot, shows_irviz_traceback


def run(*args, cwd=None):
    runner = CliRunner()
    torch.manual_seed(0)
    if cwd is not None:
        old = os.getcwd()
        os.chdir(cwd)
    try:
        return runner.invoke(main, ["render", *map(str, args)])
    finally:
        if cwd is not None:
            os.chdir(old)


def assert_user_error(result, *fragments):
    assert result.exit_code == 2, (result.exit_code, result.output, result.stderr)
    assert result.stderr.startswith("error: "), result.stderr
    assert not shows_irviz_traceback(result.stderr), "no irviz traceback for a user mistake"
    for fragment in fragments:
        assert fragment in result.stderr, (fragment, result.stderr)


def test_every_model_in_a_file_gets_its_svg(tmp_path):
    result = run(SAMPLES / "decision_gate.py", "-o", f"{tmp_path}/")
    assert result.exit_code == 0, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "decision_gate.MyCell.svg", "decision_gate.MyDecisionGate.svg"]
    assert (tmp_path / "decision_gate.MyCell.svg").read_bytes().lstrip().startswith(b"<?xml")
    assert "wrote" in result.stderr


def test_default_output_is_the_current_directory(tmp_path):
    result = run(SAMPLES / "my_cell.py:MyCell", cwd=tmp_path)
    assert result.exit_code == 0, result.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["my_cell.MyCell.svg"]


def test_trace_with_inputs_writes_the_file_and_reports_the_tracer_warning(tmp_path):
    out = tmp_path / "cell.svg"
    result = run(SAMPLES / "decision_gate.py:MyCell", "-o", out, "--mode", "trace",
                 "--inputs", "torch.rand(3, 4), torch.rand(3, 4)")
    assert result.exit_code == 0, result.stderr
    assert out.exists() and b"trace froze line 11" in out.read_bytes()
    assert "decision_gate.py:11: TracerWarning: Python control flow on tensor data" \
        in result.stderr
    assert "DeprecationWarning" not in result.stderr


def test_json_and_dot_go_to_stdout():
    result = run(SAMPLES / "rnn_loop.py:WrapRNN", "--format", "json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    kinds = {n["kind"] for n in data["nodes"]}
    assert "prim::Loop" in kinds and "prim::If" in kinds
    result = run(SAMPLES / "fork_basics.py:example", "--format", "dot")
    assert result.exit_code == 0 and result.stdout.startswith('digraph "example"')


def test_saved_archive(tmp_path):
    torch.manual_seed(0)
    import sys
    sys.path.insert(0, str(SAMPLES))
    try:
        from make_archive import main as make_archive
    finally:
        sys.path.remove(str(SAMPLES))
    archive = tmp_path / "wrapped_rnn.pt"
    make_archive(str(archive))
    result = run(archive, "-o", tmp_path / "rnn.svg")
    assert result.exit_code == 0, result.stderr
    assert b"prim::Loop" in (tmp_path / "rnn.svg").read_bytes()


def test_auto_mode_falls_back_to_trace_with_a_note(tmp_path):
    model = tmp_path / "unscriptable.py"
    model.write_text(textwrap.dedent("""
        import torch
        class Model(torch.nn.Module):
            def forward(self, x):
                return torch.relu(x) * len({1: 2})  # dict literal of ints: fine, but...
            def helper(self, *args):
                return args
        class Star(torch.nn.Module):
            def forward(self, *xs):
                return xs[0] + 1
        example_inputs = {"Star": lambda: (torch.rand(2),)}
    """))
    for mode in (("--mode", "auto"), ()):   # auto is the default
        result = run(f"{model}:Star", *mode, "--format", "dot")
        assert result.exit_code == 0, result.stderr
        notes = [line for line in result.stderr.splitlines() if "traced with" in line]
        assert notes == [f"note: {model}:Star: torch.jit.script failed (at {model}:9: "
                         "Compiled functions can't take variable number of arguments or use "
                         "keyword-only arguments with defaults); traced with the example "
                         "inputs instead"], result.stderr
        assert "(trace)" in result.stdout
    # asked for by name, script does not fall back
    result = run(f"{model}:Star", "--mode", "script")
    assert_user_error(result, "torch.jit.script failed on", "unscriptable.py", "--mode trace")


# -- bad input: exit 2, one clear message, no traceback, nothing written ------------------

@pytest.fixture
def outdir(tmp_path):
    d = tmp_path / "out"
    d.mkdir()
    return d


def _nothing_written(d):
    assert list(d.iterdir()) == [], list(d.iterdir())


def test_missing_file(outdir):
    assert_user_error(run("no/such/model.py", "-o", f"{outdir}/"), "no/such/model.py")
    _nothing_written(outdir)


def test_syntax_error_names_file_and_line(tmp_path, outdir):
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\ndef f(:\n    pass\n")
    assert_user_error(run(bad, "-o", f"{outdir}/"), "bad.py:2")
    _nothing_written(outdir)


def test_exception_while_importing_shows_the_users_traceback(tmp_path, outdir):
    bad = tmp_path / "boom.py"
    bad.write_text("import torch\nraise RuntimeError('no GPU here')\n")
    result = run(bad, "-o", f"{outdir}/")
    assert_user_error(result, "RuntimeError", "no GPU here", "Traceback from your code", "boom.py")
    _nothing_written(outdir)


def test_unknown_name_lists_candidates(outdir):
    result = run(f"{SAMPLES / 'decision_gate.py'}:MyCel", "-o", f"{outdir}/")
    assert_user_error(result, "MyCel", "MyCell", "MyDecisionGate")


def test_class_needing_arguments(outdir):
    result = run(f"{SAMPLES / 'rnn_loop.py'}:MyCell", "-o", f"{outdir}/")
    assert_user_error(result, "MyCell", "dg")
    _nothing_written(outdir)


def test_trace_without_inputs(tmp_path, outdir):
    model = tmp_path / "plain.py"
    model.write_text("import torch\nclass M(torch.nn.Module):\n"
                     "    def forward(self, x):\n        return x + 1\n")
    result = run(f"{model}:M", "--mode", "trace", "-o", f"{outdir}/")
    assert_user_error(result, "--mode trace needs example inputs", "--inputs")
    _nothing_written(outdir)


@pytest.mark.parametrize("expr,fragment", [
    ("torch.rand(3, ", "--inputs"),
    ("torch.rand(-1)", "--inputs"),
    ("'not a tensor'", "str"),
])
def test_bad_inputs_expression(expr, fragment, outdir):
    result = run(f"{SAMPLES / 'my_cell.py'}:MyCell", "--mode", "trace", "--inputs", expr,
                 "-o", f"{outdir}/")
    assert_user_error(result, fragment)
    _nothing_written(outdir)


@pytest.mark.parametrize("content", [b"", b"hello", b"PK\x03\x04truncated"])
def test_corrupt_archive(tmp_path, outdir, content):
    pt = tmp_path / "model.pt"
    pt.write_bytes(content)
    assert_user_error(run(pt, "-o", f"{outdir}/"), "model.pt", "TorchScript")
    _nothing_written(outdir)


def test_plain_torch_save_is_not_an_archive(tmp_path, outdir):
    pt = tmp_path / "weights.pt"
    torch.save({"w": torch.ones(2)}, pt)
    assert_user_error(run(pt, "-o", f"{outdir}/"), "weights.pt", "torch.jit.save")
    _nothing_written(outdir)


def test_unwritable_output_path(tmp_path):
    result = run(f"{SAMPLES / 'my_cell.py'}:MyCell", "-o", tmp_path / "missing" / "x.svg")
    assert_user_error(result, "missing", "does not exist")
    assert not (tmp_path / "missing").exists()


def test_one_file_for_many_models_is_refused(tmp_path):
    result = run(SAMPLES / "decision_gate.py", "-o", tmp_path / "x.svg")
    assert_user_error(result, "MyDecisionGate", "MyCell", "directory")
    assert not (tmp_path / "x.svg").exists()


def test_no_usable_graphviz_engine(monkeypatch, outdir):
    monkeypatch.setenv("IRVIZ_DOT", str(outdir / "no-dot-here"))
    result = run(f"{SAMPLES / 'my_cell.py'}:MyCell", "--engine", "dot", "-o", f"{outdir}/")
    assert_user_error(result, "--engine")
    _nothing_written(outdir)


def test_embedded_engine_renders_without_the_binary(monkeypatch, outdir):
    monkeypatch.setenv("IRVIZ_DOT", str(outdir / "no-dot-here"))
    result = run(f"{SAMPLES / 'my_cell.py'}:MyCell", "-o", f"{outdir}/")
    assert result.exit_code == 0, result.stderr
    assert (outdir / "my_cell.MyCell.svg").read_bytes().lstrip().startswith(b"<?xml")


@requires_dot
def test_o_picks_png_or_pdf_from_the_extension_and_refuses_an_unknown_one(tmp_path):
    for suffix, magic in (("png", b"\x89PNG"), ("pdf", b"%PDF")):
        out = tmp_path / f"cell.{suffix}"
        result = run(SAMPLES / "decision_gate.py:MyCell", "-o", out, "--engine", "dot")
        assert result.exit_code == 0, result.stderr
        assert out.read_bytes().startswith(magic)
    for args, fragment in ((["-o", tmp_path / "cell.jpg"], "does not write .jpg"),
                           (["-o", tmp_path / "cell.png", "--engine", "wasm"],
                            "--engine wasm does not write png"),
                           (["-o", tmp_path / "cell.pdf", "--engine", "pure"],
                            "--engine pure does not write pdf"),
                           (["-o", tmp_path / "x.png", "--format", "dot"],
                            "ends in .png but --format is dot")):
        assert_user_error(run(SAMPLES / "decision_gate.py:MyCell", *args), fragment)
    assert not (tmp_path / "cell.jpg").exists() and not (tmp_path / "x.png").exists()


def test_export_mode_says_torch_export_unrolled_the_loop(tmp_path):
    """A Python loop is unrolled by torch.export as by the trace: the note and the rolled
    node say who did it."""
    model = tmp_path / "loopm.py"
    model.write_text(textwrap.dedent("""
        import torch
        class Loop(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(4, 4)
            def forward(self, x):
                for _ in range(12):
                    x = torch.relu(self.fc(x))
                return x
        example_inputs = {"Loop": lambda: (torch.rand(2, 4),)}
    """))
    said = {}
    for mode, who in (("export", "torch.export"), ("trace", "the trace")):
        result = run(f"{model}:Loop", "--mode", mode, "--format", "dot")
        assert result.exit_code == 0, result.stderr
        said[mode] = result.stderr + result.stdout
        assert f"{who} unrolled 1 loop: the middle iterations are rolled up" in result.stderr
        assert f"loop unrolled by {who}" in result.stdout
    assert "the trace" not in said["export"] and "traced graph" not in said["export"]
