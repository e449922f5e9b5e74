"""`irviz lint` end to end: the seeds, the fixtures, the interface (formats, noqa, config, exit codes)."""
from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from irviz.cli import main
from conftest import SAMPLES, lint_cli

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "lint_models"
EXPECT = re.compile(r"#\s*expect:\s*([A-Z0-9, ]+)")


run = lint_cli


def findings(*args, **kw) -> list[dict]:
    result = run(*args, "--format", "json", **kw)
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


def codes_by_line(items, name=None) -> set[tuple[int, str]]:
    return {(f["line"], f["code"]) for f in items
            if name is None or f["path"].endswith(name)}


# -- the seed samples ---------------------------------------------------------------

def test_traced_decision_gate_is_flagged_on_the_if_line():
    items = findings(SAMPLES / "decision_gate.py")
    [gate] = [f for f in items if f["code"] == "IRV101"]
    assert (gate["line"], gate["column"]) == (11, 12)
    assert set(gate["layers"]) >= {"ast", "trace"}
    assert gate["severity"] == "error" and "x.sum() > 0" in gate["message"]
    # with the input that shows it: the negated input takes the other branch
    assert gate["evidence"]["verdict"] == "counterexample", gate["evidence"]
    assert gate["evidence"]["difference"]


def test_rnn_loop_traced_cell_inside_the_scripted_loop():
    items = findings(SAMPLES / "rnn_loop.py")
    assert (38, "IRV303") in codes_by_line(items)  # `self.cell(xs[i], h)`
    assert (37, "IRV103") in codes_by_line(items)  # for i in range(xs.size(0))
    # the unrolled trip count: another sequence length breaks the trace
    [loop] = [f for f in items if (f["line"], f["code"]) == (37, "IRV103")]
    assert loop["severity"] == "error" and loop["evidence"]["verdict"] == "counterexample"
    assert "xs: dim 0 10 -> " in loop["evidence"]["variant"]


@pytest.mark.parametrize("sample", ["fork_basics.py", "lstm_ensemble.py"])
def test_fork_samples_have_no_fork_wait_findings(sample):
    result = run(SAMPLES / sample)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "All checks passed" in result.stderr


def test_a_wait_right_after_its_fork_is_flagged():
    items = findings(f"{HERE / 'models' / 'fork_patterns.py'}:immediate")
    assert codes_by_line(items) == {(26, "IRV201")}


def test_folder_lints_every_file():
    result = run(SAMPLES)
    assert result.exit_code == 1
    paths = {line.split(":")[0] for line in result.stdout.splitlines() if ": IRV" in line}
    assert {Path(p).name for p in paths} == {"decision_gate.py", "rnn_loop.py"}
    assert "make_archive.py: no models" in result.stderr


# -- fixtures: one pitfall per file, expectations in `# expect:` comments -----------

def _expected(path: Path) -> set[tuple[int, str]]:
    out = set()
    for number, text in enumerate(path.read_text().splitlines(), 1):
        m = EXPECT.search(text)
        if m:
            out |= {(number, c.strip()) for c in m.group(1).split(",") if c.strip()}
    return out


# runtime/: fixtures for the rules only the runtime layers detect (trace, script-vs-trace,
# retrace, ir); kept apart because test_source_facts.py treats every top-level file as a
# fixture of the source layer
@pytest.mark.parametrize("fixture", sorted(FIXTURES.glob("*.py")) + sorted(FIXTURES.glob("runtime/*.py")),
                         ids=lambda p: p.relative_to(FIXTURES).with_suffix("").as_posix())
def test_fixture(fixture, request):
    text = fixture.read_text()
    # extra CLI arguments from a comment line `# irviz-lint-args: --extend-select IRV205`,
    # so that off-by-default rules get fixtures too (default: none)
    args = re.search(r"^#\s*irviz-lint-args:(.*)$", text, re.MULTILINE)
    # `# irviz-lint-xfail: REASON`: the expectations are right and irviz is wrong (a known
    # bug); strict, so the fixture fails as soon as the bug is fixed and the line can go
    xfail = re.search(r"^#\s*irviz-lint-xfail:(.*)$", text, re.MULTILINE)
    if xfail:
        request.applymarker(pytest.mark.xfail(reason=xfail.group(1).strip(), strict=True))
    items = findings(fixture, *(args.group(1).split() if args else []))
    assert codes_by_line(items) == _expected(fixture), "\n".join(
        f"{f['line']}:{f['column']} {f['code']} [{','.join(f['layers'])}] {f['message']}"
        for f in items)


# -- interface ----------------------------------------------------------------------

def _model(tmp_path, body: str, name="model.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


GATE = """
    import torch
    class Gate(torch.nn.Module):
        def forward(self, x):
            if x.sum() > 0:{noqa}
                return x
            return -x
    example_inputs = {{"Gate": lambda: (torch.rand(3),)}}
"""


def test_text_output_exit_codes_and_no_exec(tmp_path):
    model = _model(tmp_path, GATE.format(noqa=""))
    result = run(model, cwd=tmp_path)
    assert result.exit_code == 1
    assert result.stdout.startswith("model.py:5:12: IRV101 ")
    assert "    hint: " in result.stdout
    assert run(model, "--exit-zero", cwd=tmp_path).exit_code == 0
    assert "    counterexample: x negated: " in result.stdout  # the proof under it
    # without running the model nothing proves it: info, which never fails the run
    result = run(model, "--no-exec", cwd=tmp_path)
    assert result.exit_code == 0 and "--no-exec" in result.stderr
    assert "1 info not shown (--show-info)" in result.stderr
    [f] = findings(model, "--no-exec")
    assert f["layers"] == ["ast"] and f["severity"] == "info"
    assert f["evidence"]["verdict"] == "undecided" and "--no-exec" in f["evidence"]["summary"]


def test_noqa_and_select_ignore(tmp_path):
    model = _model(tmp_path, GATE.format(noqa="  # noqa: IRV101"))
    result = run(model)
    assert result.exit_code == 0 and "1 suppressed by noqa" in result.stderr
    model = _model(tmp_path, GATE.format(noqa=""), "plain.py")
    assert run(model, "--ignore", "IRV1").exit_code == 0
    assert run(model, "--select", "IRV2").exit_code == 0
    assert run(model, "--select", "IRV10", "--ignore", "IRV1").exit_code == 1  # longer wins
    bad = run(model, "--select", "IRV9")
    assert bad.exit_code == 2 and "--select" in bad.stderr and "IRV9" in bad.stderr


def test_config_in_pyproject(tmp_path):
    _model(tmp_path, GATE.format(noqa=""))
    (tmp_path / "pyproject.toml").write_text('[tool.irviz]\nignore = ["IRV101"]\n')
    assert run(tmp_path / "model.py").exit_code == 0
    (tmp_path / "pyproject.toml").write_text('[tool.irviz]\nignor = ["IRV101"]\n')
    result = run(tmp_path / "model.py")
    assert result.exit_code == 2 and "ignor" in result.stderr and "pyproject.toml" in result.stderr


@pytest.mark.parametrize("fmt", ["json", "sarif", "github"])
def test_machine_formats(tmp_path, fmt):
    model = _model(tmp_path, GATE.format(noqa=""))
    result = run(model, "--format", fmt, cwd=tmp_path)
    assert result.exit_code == 1
    if fmt == "json":
        [f] = json.loads(result.stdout)
        assert {"code", "name", "message", "severity", "path", "line", "column", "end_line",
                "end_column", "target", "layers", "hint"} <= set(f)
    elif fmt == "sarif":
        data = json.loads(result.stdout)
        assert data["version"] == "2.1.0"
        [res] = data["runs"][0]["results"]
        assert res["ruleId"] == "IRV101" and res["level"] == "error"
    else:
        assert result.stdout.startswith("::error file=model.py,line=5,col=12")


def test_could_not_run_exits_2(tmp_path):
    result = run(tmp_path / "missing.py")
    assert result.exit_code == 2 and result.stderr.startswith("error: ")


def test_rule_command():
    result = CliRunner().invoke(main, ["rule", "IRV101"])
    assert result.exit_code == 0
    for section in ("What it does", "Why is this bad?", "Example", "Use instead",
                    "Known problems"):
        assert section in result.stdout
    result = CliRunner().invoke(main, ["rule", "IRV999"])
    assert result.exit_code == 2


def test_render_draws_findings_on_the_graph(tmp_path):
    out = tmp_path / "gate.svg"
    torch.manual_seed(0)
    result = CliRunner().invoke(main, ["render", f"{SAMPLES / 'decision_gate.py'}:MyCell",
                                       "--mode", "trace", "--lint", "-o", str(out),
                                       "--engine", "dot"])
    assert result.exit_code == 0, result.stderr
    svg = out.read_text()
    assert "IRV101" in svg and "decision_gate.py:11" in svg


# -- a finding needs the run: code the example inputs never ran is not evidence ------------

UNTAKEN = """
    import torch


    class Model(torch.nn.Module):
        def forward(self, x):
            if self.training:
                x = x * x.sum().item()  # never runs in eval mode
            return x * x.max().item()


    def eval_model():
        return Model().eval()
    {inputs}
"""
INPUTS = 'example_inputs = {"eval_model()": lambda: (torch.rand(3),)}'


def _line_of(path: Path, text: str) -> int:
    [line] = [i for i, s in enumerate(path.read_text().splitlines(), 1) if text in s]
    return line


@pytest.mark.parametrize("mode", ["both", "script"])
def test_a_pitfall_on_code_the_run_never_took_is_dropped(tmp_path, mode):
    model = _model(tmp_path, UNTAKEN.format(inputs=INPUTS))
    untaken, taken = _line_of(model, "never runs"), _line_of(model, "x.max().item()")
    result = run(f"{model}:eval_model()", "--mode", mode, "--format", "json")
    got = codes_by_line(json.loads(result.stdout))
    assert (untaken, "IRV106") not in got
    assert (taken, "IRV106") in got  # the same pitfall on a line that ran
    assert (untaken - 1, "IRV131") in got  # `if self.training:` itself ran
    assert "1 source finding(s) on code the example inputs never ran left out" in result.stderr


def test_without_a_run_source_findings_are_kept(tmp_path):
    """--no-exec, or no example inputs: nothing says what runs, so nothing is dropped."""
    model = _model(tmp_path, UNTAKEN.format(inputs=INPUTS))
    untaken = _line_of(model, "never runs")
    [kept] = [f for f in findings(f"{model}:eval_model()", "--no-exec") if f["line"] == untaken]
    assert (kept["code"], kept["layers"]) == ("IRV106", ["ast"])
    bare = _model(tmp_path, UNTAKEN.format(inputs=""), "no_inputs.py")
    assert (untaken, "IRV106") in codes_by_line(findings(f"{bare}:eval_model()"))


DECLARED = """
    import torch

    CALLS = 0


    class Model(torch.nn.Module):
        def forward(self, x, scale=2):
            global CALLS
            CALLS += 1
            return x * scale
    example_inputs = {"Model": lambda: (torch.rand(3),)}
"""


def test_a_declaration_ran_when_its_function_did(tmp_path):
    """``global`` and a parameter's default run no code of their own: the line recorder
    never sees their lines, yet the finding stands when ``forward`` ran."""
    model = _model(tmp_path, DECLARED)
    got = codes_by_line(findings(model))
    assert {(_line_of(model, "global CALLS"), "IRV133"),
            (_line_of(model, "scale=2"), "IRV122")} <= got


def test_code_a_trace_never_runs_has_no_tracing_findings_without_running():
    fixture = FIXTURES / "untraced_guards.py"
    items = findings(fixture, "--no-exec")
    assert codes_by_line(items) == {(line, code) for line, code in _expected(fixture)
                                    if code != "IRV150"}  # IRV150 needs both graphs


BERT = """
    import torch
    from transformers import BertConfig, BertModel

    def make_bert():
        config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2,
                            num_attention_heads=2, intermediate_size=64,
                            max_position_embeddings=64, torchscript=True, return_dict=False)
        return BertModel(config).eval()

    example_inputs = {"make_bert()": lambda: (torch.randint(0, 100, (2, 16)),)}
"""


def test_a_real_library_model_transformers_bert(tmp_path):
    """BERT from a small config with random weights (nothing downloaded)."""
    pytest.importorskip("transformers")
    model = _model(tmp_path, BERT, "bert_model.py")
    items = findings(f"{model}:make_bert()")
    by_code = {}
    for f in items:
        by_code.setdefault(f["code"], []).append(f)
    assert "IRV002" not in by_code
    # BERT does not script, inside transformers: said, as info (it deploys by tracing)
    assert all(f["severity"] == "info" for f in by_code.get("IRV301", []))
    # HF's attention turns a tensor into a Python bool while tracing: the classic warning
    assert any(f["path"].endswith("sdpa_attention.py") and "trace" in f["layers"]
               for f in by_code["IRV101"])
    # the optional forward arguments the trace fixes to None
    assert any("attention_mask" in f["message"] for f in by_code["IRV122"])


def test_rule_pages_in_docs_are_up_to_date(tmp_path):
    from irviz.lint import rules  # noqa: F401
    from irviz.lint.registry import write_rule_docs

    written = write_rule_docs(tmp_path)
    docs = HERE.parent / "docs" / "rules"
    for page in written:
        committed = docs / page.name
        assert committed.exists() and committed.read_text() == page.read_text(), (
            f"docs/rules/{page.name} is stale: run `make rule-docs`")
