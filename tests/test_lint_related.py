"""Findings inside a library the model calls into name the user's call (``related``), and
a failed trace keeps the warnings torch raised before it failed: real torch, the real CLI.

The "library" is a package written next to the model file (the loader puts the model's
folder on ``sys.path``), so its file is not the model's file, as transformers' would be.
"""
from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from irviz.cli import main
from irviz.lint.diagnostic import Diagnostic
from irviz.lint.gate import Gate
from irviz.report.formatters import format_github, format_json, format_sarif, format_text

SARIF_SCHEMA = Path(__file__).resolve().parent / "data" / "sarif-schema-2.1.0.json"

LIBRARY = '''
import torch


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x):
        if x.sum() > 0:  # torch warns here, inside the library
            x = x * 2
        return self.proj(x)


class Gated(torch.nn.Module):
    def forward(self, x):
        if self.training:  # only the source layer sees this one
            x = x + 1
        return x.relu()


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scales = [torch.nn.Parameter(torch.ones(4))]  # a list: not registered

    def forward(self, x):
        if x.mean() > 0:  # warned before the failure
            x = x * 2
        return x * self.scales[0]  # the trace stops: a parameter it cannot see
'''

WRAPPERS = '''
import torch

from extlib import Encoder, Gated


class Wrapper(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()
        self.gate = Gated()

    def forward(self, x):
        h = self.encoder(x)  # call 1
        return self.gate(h)  # call 2


class Other(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()

    def forward(self, x):
        y = x + 1
        return self.encoder(y)  # call 3


example_inputs = lambda name: (torch.rand(2, 4),)
'''

BROKEN = '''
import torch


class Broken(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scales = [torch.nn.Parameter(torch.ones(4))]  # a list: not registered

    def forward(self, x):
        if x.sum() > 0:  # the warning
            x = x * 2
        return x * self.scales[0]  # the failure


example_inputs = lambda name: (torch.rand(2, 4),)
'''

BROKEN_WRAPPER = '''
import torch

from extlib import Scaled


class BrokenWrapper(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Scaled()

    def forward(self, x):
        return self.inner(x) + 1  # the call


example_inputs = lambda name: (torch.rand(2, 4),)
'''


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    return path


@pytest.fixture
def project(tmp_path):
    _write(tmp_path, "extlib/__init__.py", LIBRARY)
    _write(tmp_path, "wrappers.py", WRAPPERS)
    _write(tmp_path, "broken.py", BROKEN)
    _write(tmp_path, "broken_wrapper.py", BROKEN_WRAPPER)
    sys.modules.pop("extlib", None)  # each test's own copy, not an earlier test's
    yield tmp_path
    sys.modules.pop("extlib", None)


def line_of(path: Path, marker: str) -> int:
    [number] = [n for n, text in enumerate(path.read_text().splitlines(), 1) if marker in text]
    return number


def invoke(*args, cwd: Path):
    torch.manual_seed(0)
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, [*map(str, args)])
    finally:
        os.chdir(old)


def lint_json(*args, cwd: Path) -> list[dict]:
    result = invoke("lint", *args, "--format", "json", cwd=cwd)
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


def at(items: list[dict], code: str, path: str, line: int) -> dict:
    found = [f for f in items if (f["code"], f["path"], f["line"]) == (code, path, line)]
    assert len(found) == 1, "\n".join(f"{f['path']}:{f['line']} {f['code']}" for f in items)
    return found[0]


def called_from(*lines, path="wrappers.py") -> list[dict]:
    return [{"path": path, "line": n, "message": "called from"} for n in lines]


# -- a finding inside a library names the user's call ------------------------------------------

def test_a_library_finding_names_the_users_call_in_json(project):
    lib, wrappers = project / "extlib" / "__init__.py", project / "wrappers.py"
    items = lint_json("wrappers.py", cwd=project)
    # the TracerWarning torch raised in the library (trace + ast), called from two models
    # of the file: the gate keeps one finding per line and both calls
    warned = at(items, "IRV101", "extlib/__init__.py", line_of(lib, "inside the library"))
    assert "trace" in warned["layers"]
    assert warned["related"] == called_from(line_of(wrappers, "call 1"),
                                            line_of(wrappers, "call 3"))
    # a finding only the source layer makes: the call from the trace's Python stack
    gated = at(items, "IRV131", "extlib/__init__.py", line_of(lib, "only the source layer"))
    assert gated["layers"] == ["ast"]
    assert gated["related"] == called_from(line_of(wrappers, "call 2"))
    # findings in the model's own file have nothing to relate
    assert all(f["related"] == [] for f in items if f["path"] == "wrappers.py")


def test_a_library_finding_names_the_users_call_in_text(project):
    lib, wrappers = project / "extlib" / "__init__.py", project / "wrappers.py"
    result = invoke("lint", "wrappers.py", cwd=project)
    assert result.exit_code == 1, result.stderr
    lines = result.stdout.splitlines()
    head = f"extlib/__init__.py:{line_of(lib, 'inside the library')}:12: IRV101 "
    [i] = [n for n, text in enumerate(lines) if text.startswith(head)]
    assert lines[i + 1] == f"    called from wrappers.py:{line_of(wrappers, 'call 1')}"
    assert lines[i + 2] == f"    called from wrappers.py:{line_of(wrappers, 'call 3')}"
    assert lines[i + 3].startswith("    counterexample: ")  # its proof, then what to do
    assert lines[i + 4].startswith(("    remedy for ", "    no verified remedy: "))
    assert lines[i + 5].startswith("    hint: ")
    no_hints = invoke("lint", "wrappers.py", "--no-hints", cwd=project).stdout.splitlines()
    [j] = [n for n, text in enumerate(no_hints) if text.startswith(head)]
    assert no_hints[j + 1].startswith("    called from wrappers.py:")


def test_a_library_finding_names_the_users_call_in_sarif(project):
    wrappers = project / "wrappers.py"
    result = invoke("lint", "wrappers.py", "--format", "sarif", cwd=project)
    assert result.exit_code == 1, result.stderr
    log = json.loads(result.stdout)
    results = log["runs"][0]["results"]
    lib = [r for r in results if r["ruleId"] == "IRV101" and r["locations"][0][
        "physicalLocation"]["artifactLocation"]["uri"] == "extlib/__init__.py"]
    assert len(lib) == 1
    related = lib[0]["relatedLocations"]
    assert related == [
        {"id": 1, "physicalLocation": {
            "artifactLocation": {"uri": "wrappers.py", "uriBaseId": "%SRCROOT%"},
            "region": {"startLine": line_of(wrappers, "call 1")}},
         "message": {"text": "called from"}},
        {"id": 2, "physicalLocation": {
            "artifactLocation": {"uri": "wrappers.py", "uriBaseId": "%SRCROOT%"},
            "region": {"startLine": line_of(wrappers, "call 3")}},
         "message": {"text": "called from"}}]
    assert f"\ncalled from wrappers.py:{line_of(wrappers, 'call 1')}\n" in \
        lib[0]["message"]["text"]
    assert not any("relatedLocations" in r for r in results
                   if r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                   == "wrappers.py")
    _validate_sarif(log)


def _validate_sarif(log: dict) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    errors = list(jsonschema.Draft4Validator(schema).iter_errors(log))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors[:5]]


# -- a failed trace keeps its warnings ---------------------------------------------------------

@pytest.mark.parametrize("mode", ["both", "trace"])
def test_a_failed_trace_reports_the_warnings_torch_raised_before(project, mode):
    broken = project / "broken.py"
    items = lint_json("broken.py", "--mode", mode, cwd=project)
    warned = at(items, "IRV101", "broken.py", line_of(broken, "the warning"))
    assert "trace" in warned["layers"]  # torch's warning, not only the source layer
    failed = at(items, "IRV002", "broken.py", line_of(broken, "the failure"))
    assert "Cannot insert a Tensor that requires grad" in failed["message"]


def test_a_trace_failing_inside_a_library_names_the_users_call(project):
    lib, wrapper = project / "extlib" / "__init__.py", project / "broken_wrapper.py"
    items = lint_json("broken_wrapper.py", "--mode", "trace", cwd=project)
    call = called_from(line_of(wrapper, "the call"), path="broken_wrapper.py")
    warned = at(items, "IRV101", "extlib/__init__.py", line_of(lib, "warned before the failure"))
    assert "trace" in warned["layers"] and warned["related"] == call
    failed = at(items, "IRV002", "extlib/__init__.py", line_of(lib, "the trace stops"))
    assert failed["related"] == call


def test_render_prints_the_warnings_of_a_failed_trace_before_the_error(project):
    broken = project / "broken.py"
    result = invoke("render", "broken.py", "--mode", "trace", "-o", "out.svg", cwd=project)
    assert result.exit_code == 2, result.stderr
    err = result.stderr
    # said in the words of the rule that knows it (IRV101), still a TracerWarning
    warning = f"broken.py:{line_of(broken, 'the warning')}: TracerWarning: Python control flow"
    assert warning in err and "error: torch.jit.trace failed" in err
    assert err.index(warning) < err.index("error: torch.jit.trace failed")
    assert "Traceback" not in err and not (project / "out.svg").exists()


def test_render_names_the_users_call_of_a_library_warning(project):
    wrapper = project / "broken_wrapper.py"
    result = invoke("render", "broken_wrapper.py", "--mode", "trace", "-o", "out.svg",
                    cwd=project)
    assert result.exit_code == 2, result.stderr
    assert f"(called from broken_wrapper.py:{line_of(wrapper, 'the call')}): TracerWarning" \
        in result.stderr


# -- the record, the gate and the formatters ----------------------------------------------------

def _diag(line=3, related=()):
    return Diagnostic("IRV101", "tensor-to-python-bool", "m", "error", "lib/a.py", line, 9,
                      target="M", layers=("trace",), hint="h", related=related)


def test_related_round_trips_through_json():
    d = _diag(related=[("m.py", 31, "called from")])
    assert d.related == (("m.py", 31, "called from"),) and hash(d)
    [data] = json.loads(format_json([d]))
    assert data["related"] == [{"path": "m.py", "line": 31, "message": "called from"}]
    assert Diagnostic(**{**data, "layers": tuple(data["layers"])}) == d
    assert json.loads(format_json([_diag()]))[0]["related"] == []
    with pytest.raises(ValueError, match="related location is"):
        _diag(related=[("m.py", "31", "called from")])


def test_the_gate_keeps_the_call_sites_of_every_model_sharing_a_line():
    first = _diag(related=[("m.py", 10, "called from")])
    second = _diag(related=[("m.py", 20, "called from"), ("m.py", 10, "called from")])
    none = _diag()
    [kept] = Gate.from_config().apply([none, first, second]).kept
    assert kept.related == (("m.py", 10, "called from"), ("m.py", 20, "called from"))


def test_formats_show_related_locations():
    d = _diag(related=[("m.py", 31, "called from")])
    assert format_text([d]) == ("lib/a.py:3:9: IRV101 m\n"
                                "    called from m.py:31\n"
                                "    hint: h\n")
    assert format_github([d]).endswith("::m%0Acalled from m.py:31\n")


def test_sphinx_lists_related_locations_under_the_finding():
    pytest.importorskip("docutils")
    from irviz.sphinxext import _findings_nodes

    d = _diag(related=[("models/m.py", 31, "called from")])
    _, items = _findings_nodes({"title": "M", "findings": [d.to_dict()]})
    assert items.astext().splitlines() == ["IRV101 (error) a.py:3: m", "", "called from m.py:31",
                                           "", "hint: h"]


@pytest.mark.slow
def test_transformers_classifier_findings_in_bert_name_its_call():
    """The corpus' Classifier (a head on transformers' BERT) and bert() itself: the warnings
    torch raises inside transformers are one finding each, with Classifier's call."""
    transformers = pytest.importorskip("transformers")
    root = Path(__file__).resolve().parent.parent
    corpus = root / "tests" / "corpus" / "transformers_models.py"
    items = lint_json(f"{corpus}:bert()", f"{corpus}:Classifier", "--select", "IRV1",
                      cwd=root)
    library = Path(transformers.__file__).resolve().parent
    inside = [f for f in items if "trace" in f["layers"]
              and Path(f["path"]).resolve().is_relative_to(library)]
    assert inside, items
    call = line_of(corpus, "out = self.encoder(input_ids=input_ids")
    for finding in inside:
        assert finding["related"] == called_from(call, path="tests/corpus/transformers_models.py")


ONE_USER = '''
import torch

from extlib import Encoder


class User{n}(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()

    def forward(self, x):
        return self.encoder(x) + {n}  # the call


example_inputs = {{"User{n}": lambda: (torch.rand(2, 4),)}}
'''


def test_shard_runs_merged_are_the_full_run(tmp_path):
    """Two model files reach one library line: a full run keeps one finding with both
    calls; each --shard run has its own, with one call; --merge of the shards' JSON gives
    the full run's records exactly (and SARIF from them)."""
    _write(tmp_path, "extlib/__init__.py", LIBRARY)
    for n in (1, 2):
        _write(tmp_path, f"user{n}.py", ONE_USER.format(n=n))
    sys.modules.pop("extlib", None)
    try:
        targets = ["user1.py", "user2.py", "--select", "IRV101", "--no-cache"]
        full = lint_json(*targets, cwd=tmp_path)
        shards = []
        for k in (1, 2):
            out = tmp_path / f"shard{k}.json"
            result = invoke("lint", *targets, "--shard", f"{k}/2", "--format", "json",
                            "-o", out, cwd=tmp_path)
            assert result.exit_code in (0, 1), result.stderr
            shards.append(out)
    finally:
        sys.modules.pop("extlib", None)
    shared = [f for f in full if f["path"] == "extlib/__init__.py"]
    assert len(shared) == 1 and len(shared[0]["related"]) == 2
    parts = [json.loads(p.read_text()) for p in shards]
    assert sum(f["path"] == "extlib/__init__.py" for part in parts for f in part) == 2
    merged = invoke("lint", "--merge", *shards, "--format", "json", cwd=tmp_path)
    assert merged.exit_code == (1 if any(f["severity"] != "info" for f in full) else 0)
    assert json.loads(merged.stdout) == full
    sarif = invoke("lint", "--merge", *shards, "--format", "sarif", cwd=tmp_path)
    assert len(json.loads(sarif.stdout)["runs"][0]["results"]) == len(full)


def test_merge_names_a_file_that_is_not_lint_output(tmp_path):
    bad = tmp_path / "notes.json"
    bad.write_text('{"a": 1}')
    result = invoke("lint", "--merge", bad, cwd=tmp_path)
    assert result.exit_code == 2 and "notes.json" in result.stderr
    assert "Traceback" not in result.stderr
