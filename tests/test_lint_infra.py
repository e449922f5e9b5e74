"""The lint infrastructure: rule registry and selection, rule docs, noqa, config, formatters.

Rules here live in a private Registry, never in the global REGISTRY.
"""
from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from irviz.config import Config, find_config, load_config, per_file_ignored
from irviz.errors import UsageError
from irviz.lint.diagnostic import LAYERS, SEVERITIES, Diagnostic
from irviz.lint.proof import EVIDENCE_TITLE
from irviz.lint.registry import (REGISTRY, REQUIRED_SECTIONS, Registry, Rule, rule_json,
                                 rule_rst, rule_text, sections, summary, write_rule_docs)
from irviz.lint.suppress import filter_suppressed, is_suppressed, suppressed_by
from irviz.report.formatters import (FORMATTERS, format_github, format_json, format_sarif,
                                     format_text)

ROOT = Path(__file__).resolve().parent.parent

# ---------------------------------------------------------------------------
# a private registry with five small rules

registry = Registry()


@registry.register
class TensorToPythonBool(Rule):
    """## What it does
    Checks for Python `if` on tensor data in a traced `forward`.

    The trace keeps one branch.

    ## Why is this bad?
    `torch.jit.trace` records the branch taken for the example inputs only.

    ## Example
    ```python
    def forward(self, x):
        if x.sum() > 0:
            return x
        return -x
    ```

    ## Use instead
    Keep the condition a tensor:

    ```python
    def forward(self, x):
        return torch.where(x.sum() > 0, x, -x)
    ```

    ## Known problems
    A condition on a size that never changes is reported too.

    ## References
    - [torch.jit.trace](https://pytorch.org/docs/stable/generated/torch.jit.trace.html)
    """

    code = "IRV101"
    name = "tensor-to-python-bool"
    message = "`if` on tensor data `{expr}` is frozen by torch.jit.trace"
    hint = "use torch.where or script the branch"


def make_rule(code: str, name: str, doc: str | None = None, **attrs) -> type[Rule]:
    """A rule class with a complete docstring (or ``doc``)."""
    if doc is None:
        doc = "\n\n".join(f"## {title}\nSomething about {title.lower()}."
                          for title in REQUIRED_SECTIONS)
    body = {"__doc__": doc, "code": code, "name": name, "message": f"{name} at {{where}}",
            "hint": f"fix {name}", **attrs}
    return type(name.title().replace("-", ""), (Rule,), body)


registry.register(make_rule("IRV102", "metadata-branch-baked"))
registry.register(make_rule("IRV110", "inplace-on-aliased-input"))
registry.register(make_rule("IRV201", "wait-immediately-after-fork", severity="error"))
registry.register(make_rule("IRV401", "scalar-attribute-baked", severity="info",
                            default=False))

ALL5 = {"IRV101", "IRV102", "IRV110", "IRV201", "IRV401"}
DEFAULT = ALL5 - {"IRV401"}


def test_private_rules_stay_out_of_the_global_registry():
    private = set(registry.all())
    assert not private & set(REGISTRY.all())  # the real rules may be loaded, these never
    assert [r.code for r in registry.all()] == sorted(ALL5)


@pytest.mark.parametrize("select, ignore, extend, expected", [
    (None, None, None, DEFAULT),                                   # default: IRV4 off
    (["IRV1"], None, None, {"IRV101", "IRV102", "IRV110"}),         # select replaces
    (["IRV10"], None, None, {"IRV101", "IRV102"}),
    (["irv1"], None, None, {"IRV101", "IRV102", "IRV110"}),         # any case
    (["ALL"], None, None, ALL5),                                    # ALL includes IRV4
    (["IRV"], None, None, ALL5),
    ([], None, None, set()),
    (None, None, ["IRV401"], ALL5),                                 # extend an off rule
    (["IRV2"], None, ["IRV4"], {"IRV201", "IRV401"}),
    (["IRV2"], None, ["IRV101"], {"IRV101", "IRV201"}),
    (None, ["IRV1"], None, {"IRV201"}),                             # ignore
    (None, ["IRV101"], None, {"IRV102", "IRV110", "IRV201"}),
    (None, ["ALL"], None, set()),
    (["IRV101"], ["IRV1"], None, {"IRV101"}),                       # longer select wins
    (["IRV10"], ["IRV1"], None, {"IRV101", "IRV102"}),
    (["IRV1"], ["IRV101"], None, {"IRV102", "IRV110"}),             # longer ignore wins
    (["IRV1"], ["IRV10"], None, {"IRV110"}),
    (["IRV101"], ["IRV101"], None, set()),                          # equal: ignore wins
    (["ALL"], ["ALL"], None, set()),
    (["ALL"], ["IRV4"], None, DEFAULT),
    (None, ["IRV1"], ["IRV101"], {"IRV101", "IRV201"}),             # extend beats shorter ignore
    (None, ["IRV101"], ["IRV1"], {"IRV102", "IRV110", "IRV201"}),
    (None, ["ALL"], ["IRV2"], {"IRV201"}),
    (["IRV101,IRV201"], None, None, {"IRV101", "IRV201"}),          # as typed on the CLI
    (["IRV101, IRV110 IRV2"], None, None, {"IRV101", "IRV110", "IRV201"}),
    ("IRV2", None, None, {"IRV201"}),                               # one string, not chars
])
def test_selection(select, ignore, extend, expected):
    assert registry.selected(select, ignore, extend) == expected


@pytest.mark.parametrize("kwargs, option, value", [
    ({"select": ["IRV9"]}, "--select", "IRV9"),
    ({"ignore": ["IRV1", "IRV999"]}, "--ignore", "IRV999"),
    ({"extend_select": ["E501"]}, "--extend-select", "E501"),
    ({"select": [""]}, "--select", ""),
])
def test_unknown_selector_names_the_option(kwargs, option, value):
    with pytest.raises(UsageError) as info:
        registry.selected(**kwargs)
    assert info.value.message == f"{option}: {value!r} matches no rule code or prefix"
    assert "irviz rule --all" in info.value.hint


def test_unknown_selector_from_config_names_the_key_and_suggests():
    with pytest.raises(UsageError) as info:
        registry.selected(extend_select=["IRV101X"], where="pyproject.toml")
    assert info.value.message == ("`extend-select` in pyproject.toml: 'IRV101X' matches "
                                  "no rule code or prefix")
    assert info.value.hint == "did you mean IRV101? list every rule with `irviz rule --all`"


def test_get_by_code_or_name():
    assert registry.get("IRV101") is TensorToPythonBool
    assert registry.get("irv101") is TensorToPythonBool
    assert registry.get("tensor-to-python-bool") is TensorToPythonBool
    with pytest.raises(UsageError) as info:
        registry.get("tensor-to-python-boo")
    assert info.value.message == "unknown rule 'tensor-to-python-boo'"
    assert info.value.hint == ("did you mean IRV101 (tensor-to-python-bool)? "
                               "list every rule with `irviz rule --all`")
    with pytest.raises(UsageError, match="unknown rule 'IRV999'"):
        registry.get("IRV999")


# ---------------------------------------------------------------------------
# registration validation

def _doc_without(title: str, empty: bool = False) -> str:
    parts = []
    for t in REQUIRED_SECTIONS:
        if t != title:
            parts.append(f"## {t}\nText.")
        elif empty:
            parts.append(f"## {t}\n")
    return "\n\n".join(parts)


@pytest.mark.parametrize("cls, error", [
    (make_rule("IRV1", "short-code"), "ShortCode: code 'IRV1' is not of the form"),
    (make_rule("TOR101", "other-prefix"), "code 'TOR101' is not of the form"),
    (make_rule("irv105", "lower-code"), "code 'irv105' is not of the form"),
    (make_rule("IRV101", "again"), "IRV101: code already used by TensorToPythonBool"),
    (make_rule("IRV105", "tensor-to-python-bool"),
     "IRV105: name 'tensor-to-python-bool' already used by IRV101"),
    (make_rule("IRV105", "TensorToBool"), "IRV105: name 'TensorToBool' is not kebab-case"),
    (make_rule("IRV105", "tensor_to_bool"), "name 'tensor_to_bool' is not kebab-case"),
    (make_rule("IRV105", "bad-severity", severity="fatal"),
     "IRV105: severity 'fatal' is not one of error, warning, info"),
    (make_rule("IRV105", "bad-status", status="beta"), "IRV105: status 'beta'"),
    (make_rule("IRV105", "no-hint", hint=""), "IRV105: the rule has no hint"),
    (make_rule("IRV105", "bad-template", message="a {dict"),
     "IRV105: the message 'a {dict' is not a valid str.format template"),
    *[(make_rule("IRV105", "missing-section", doc=_doc_without(t)),
       f"IRV105: the docstring has no `## {t}` section") for t in REQUIRED_SECTIONS],
    (make_rule("IRV105", "empty-section", doc=_doc_without("Example", empty=True)),
     "IRV105: the `## Example` section of the docstring is empty"),
    (make_rule("IRV105", "no-doc", doc=None), None),
])
def test_registration_is_validated(cls, error):
    private = Registry()
    private.register(TensorToPythonBool)
    if error is None:  # the control: a complete rule registers
        assert private.register(cls) is cls
        return
    with pytest.raises(ValueError) as info:
        private.register(cls)
    assert error in str(info.value)
    assert len(private) == 1


# ---------------------------------------------------------------------------
# findings

def test_diagnostic_is_created_by_the_rule():
    d = TensorToPythonBool.diagnostic(path="m.py", line=3, column=9, end_line=3,
                                      end_column=20, target="MyCell",
                                      layers=["trace", "ast"], expr="x.sum() > 0")
    assert d == Diagnostic(code="IRV101", name="tensor-to-python-bool",
                           message="`if` on tensor data `x.sum() > 0` is frozen by "
                                   "torch.jit.trace",
                           severity="warning", path="m.py", line=3, column=9,
                           end_line=3, end_column=20, target="MyCell",
                           layers=("trace", "ast"),
                           hint="use torch.where or script the branch")
    assert hash(d)  # frozen, layers a tuple
    assert list(d.to_dict()) == ["code", "name", "message", "severity", "path", "line",
                                 "column", "end_line", "end_column", "target", "layers",
                                 "hint", "related", "evidence", "remedy", "remedy_tried"]
    assert d.to_dict()["layers"] == ["trace", "ast"]
    assert d.sort_key() == ("m.py", 3, 9, "IRV101")
    with pytest.raises(TypeError, match="needs the field 'expr'"):
        TensorToPythonBool.diagnostic(path="m.py", line=1)


def test_diagnostic_rejects_unknown_severity_and_layer():
    assert SEVERITIES == ("error", "warning", "info")
    assert "script-vs-trace" in LAYERS
    with pytest.raises(ValueError, match="severity 'fatal'"):
        Diagnostic("IRV101", "n", "m", "fatal", "a.py", 1, 1)
    with pytest.raises(ValueError, match="unknown detection layer"):
        Diagnostic("IRV101", "n", "m", "error", "a.py", 1, 1, layers=("T",))


def test_diagnostics_sort_by_path_line_column_code():
    make = lambda path, line, col, code: Diagnostic(code, "n", "m", "info", path, line, col)
    diags = [make("b.py", 1, 1, "IRV101"), make("a.py", 9, 1, "IRV101"),
             make("a.py", 2, 5, "IRV201"), make("a.py", 2, 5, "IRV102")]
    assert [(d.path, d.line, d.code) for d in sorted(diags, key=Diagnostic.sort_key)] == [
        ("a.py", 2, "IRV102"), ("a.py", 2, "IRV201"), ("a.py", 9, "IRV101"),
        ("b.py", 1, "IRV101")]


# ---------------------------------------------------------------------------
# rule documentation

def test_sections_are_parsed_and_dedented():
    found = sections(TensorToPythonBool)
    # the last one is generated from the rule's proof and decision (irviz.lint.proof)
    assert list(found) == [*REQUIRED_SECTIONS, "References", EVIDENCE_TITLE]
    assert found["What it does"] == ("Checks for Python `if` on tensor data in a traced "
                                     "`forward`.\n\nThe trace keeps one branch.")
    assert found["Example"] == ("```python\ndef forward(self, x):\n    if x.sum() > 0:\n"
                                "        return x\n    return -x\n```")
    assert summary(TensorToPythonBool) == ("Checks for Python `if` on tensor data in a "
                                           "traced `forward`.")


def test_rule_text():
    text = rule_text(TensorToPythonBool)
    assert text.startswith(
        "IRV101 tensor-to-python-bool (warning, stable, on by default)\n\n"
        "Message: `if` on tensor data `{expr}` is frozen by torch.jit.trace\n"
        "Hint: use torch.where or script the branch\n\n"
        "What it does\n------------\n")
    assert ("Example\n-------\n    def forward(self, x):\n        if x.sum() > 0:\n"
            in text)
    assert "```" not in text
    assert rule_text(registry.get("IRV401")).startswith(
        "IRV401 scalar-attribute-baked (info, stable, off by default)\n")


def test_rule_json():
    data = rule_json(TensorToPythonBool)
    assert list(data) == ["code", "name", "severity", "status", "default", "message",
                          "hint", "sections"]
    assert data["code"] == "IRV101" and data["default"] is True
    assert list(data["sections"]) == [*REQUIRED_SECTIONS, "References", EVIDENCE_TITLE]
    assert json.loads(json.dumps(data)) == data


def test_rule_rst():
    rst = rule_rst(TensorToPythonBool)
    assert rst.startswith(".. _IRV101:\n\nIRV101: tensor-to-python-bool\n"
                          "=============================\n\n:Code: IRV101\n")
    assert ":Severity: warning\n" in rst
    assert ("Example\n-------\n\n.. code-block:: python\n\n   def forward(self, x):\n"
            "       if x.sum() > 0:\n" in rst)
    assert "```" not in rst
    assert "Checks for Python ``if`` on tensor data in a traced ``forward``." in rst
    assert ("- `torch.jit.trace <https://pytorch.org/docs/stable/generated/"
            "torch.jit.trace.html>`__") in rst


def test_rule_rst_is_valid_restructuredtext():
    docutils_core = pytest.importorskip("docutils.core")
    for cls in registry.all():
        docutils_core.publish_doctree(
            rule_rst(cls), settings_overrides={"report_level": 2, "halt_level": 2})


def test_write_rule_docs(tmp_path):
    written = write_rule_docs(tmp_path / "rules", registry)
    assert [p.name for p in written] == [f"{c}.rst" for c in sorted(ALL5)] + ["index.rst"]
    assert all(p.is_file() for p in written)
    assert (tmp_path / "rules" / "IRV101.rst").read_text() == rule_rst(TensorToPythonBool)
    index = (tmp_path / "rules" / "index.rst").read_text()
    assert ".. toctree::" in index and "\n   IRV401\n" in index
    assert ("   * - :ref:`IRV101 <IRV101>`\n     - tensor-to-python-bool\n"
            "     - warning\n     - Checks for Python ``if`` on tensor data in a traced "
            "``forward``.\n") in index


# ---------------------------------------------------------------------------
# noqa

NOQA_SOURCE = '''\
x = 1  # noqa
x = 2  # noqa: IRV101
x = 3  # noqa: IRV1
x = 4  # noqa: E501
x = 5  # NOQA:irv101
x = 6  # noqa: E501, IRV201 IRV102
x = 7
x = 8  # noqa:E501,W291
y = f(1,  # noqa: IRV101
      2)
s = "# noqa"
x = 12  # noqa: IRV101 the size is fixed here
x = 13  # noqa:
'''


def _diag(path, line, code="IRV101"):
    return Diagnostic(code, "name", "message", "warning", str(path), line, 1)


@pytest.mark.parametrize("line, code, suppressed", [
    (1, "IRV101", True), (1, "IRV201", True),          # bare: everything
    (2, "IRV101", True), (2, "IRV102", False),         # one code
    (3, "IRV102", True), (3, "IRV201", False),         # a prefix
    (4, "IRV101", False),                              # another tool's code only
    (5, "IRV101", True),                               # lowercase, no space
    (6, "IRV201", True), (6, "IRV102", True), (6, "IRV101", False),  # several codes
    (7, "IRV101", False),                              # no comment
    (8, "IRV101", False),                              # other tools' codes only
    (9, "IRV101", True), (10, "IRV101", True),         # a statement over two lines
    (11, "IRV101", False),                             # "# noqa" inside a string
    (12, "IRV101", True), (12, "IRV102", False),       # codes, then an explanation
    (13, "IRV101", True),                              # "# noqa:" without codes: bare
])
def test_noqa(tmp_path, line, code, suppressed):
    path = tmp_path / "model.py"
    path.write_text(NOQA_SOURCE)
    assert is_suppressed(_diag(path, line, code)) is suppressed


def test_suppressed_by(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(NOQA_SOURCE)
    assert suppressed_by(str(path), 1) is True
    assert suppressed_by(str(path), 2) == {"IRV101"}
    assert suppressed_by(str(path), 4) == {"E501"}
    assert suppressed_by(str(path), 6) == {"E501", "IRV201", "IRV102"}
    assert suppressed_by(str(path), 7) == set()
    assert suppressed_by(str(tmp_path / "missing.py"), 1) == set()


@pytest.mark.parametrize("header, code, suppressed", [
    ("# irviz: noqa", "IRV101", True),
    ("# irviz: noqa", "IRV401", True),
    ("# irviz: noqa: IRV103", "IRV103", True),
    ("# irviz: noqa: IRV103", "IRV101", False),
    ("# IRVIZ: NOQA: irv1, IRV2", "IRV201", True),
    ("# irviz: noqa: IRV2", "IRV101", False),
])
def test_file_level_noqa(tmp_path, header, code, suppressed):
    path = tmp_path / "model.py"
    path.write_text(f"{header}\nimport torch\n\n\nx = torch.ones(3)\n")
    assert is_suppressed(_diag(path, 5, code)) is suppressed


def test_noqa_follows_edits_of_the_file(tmp_path):
    path = tmp_path / "model.py"
    path.write_text("x = 1\n")
    assert not is_suppressed(_diag(path, 1))
    path.write_text("x = 1  # noqa: IRV101\n")
    assert is_suppressed(_diag(path, 1))


def test_noqa_in_a_file_that_does_not_tokenize(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text('s = """unterminated  # noqa: IRV101\nx = (1  # noqa\n')
    assert is_suppressed(_diag(path, 2))


def test_filter_suppressed_logs_why(tmp_path, caplog):
    path = tmp_path / "model.py"
    path.write_text(NOQA_SOURCE)
    diags = [_diag(path, 1), _diag(path, 4), _diag(path, 7), _diag(path, 2, "IRV102"),
             _diag(path, 3, "IRV110")]
    with caplog.at_level("DEBUG", logger="irviz.lint"):
        kept, dropped = filter_suppressed(diags)
    assert kept == [diags[1], diags[2], diags[3]]
    assert dropped == 2
    assert f"{path}:1: IRV101 suppressed by `# noqa`" in caplog.text
    assert f"{path}:3: IRV110 suppressed by `# noqa: IRV1`" in caplog.text
    assert f"{path}:4: IRV101 kept: the noqa comments list only E501" in caplog.text


# ---------------------------------------------------------------------------
# config

def _project(tmp_path, toml: str, where: str = "proj") -> Path:
    root = tmp_path / where
    root.mkdir(parents=True, exist_ok=True)
    (root / ".git").mkdir(exist_ok=True)
    (root / "pyproject.toml").write_text(textwrap.dedent(toml))
    return root


def test_config_is_found_walking_up(tmp_path):
    root = _project(tmp_path, """\
        [tool.irviz]
        select = ["IRV1", "IRV2"]
        ignore = ["IRV121"]
        extend-select = ["IRV401"]
        per-file-ignores = { "tests/*" = ["IRV133"] }
        exclude = ["build/*"]
        dynamic-dims = ["x:0"]
        mode = "trace"
        format = "sarif"
        engine = "wasm"
        depth = 2
        """)
    inner = root / "src" / "pkg"
    inner.mkdir(parents=True)
    # a pyproject.toml without [tool.irviz] on the way is passed over
    (root / "src" / "pyproject.toml").write_text("[tool.black]\nline-length = 99\n")
    assert find_config(inner) == (root / "pyproject.toml").resolve()
    config = load_config(inner)
    assert config == Config(select=["IRV1", "IRV2"], ignore=["IRV121"],
                            extend_select=["IRV401"],
                            per_file_ignores={"tests/*": ["IRV133"]}, exclude=["build/*"],
                            dynamic_dims=["x:0"], mode="trace", format="sarif",
                            engine="wasm", depth=2,
                            source=(root / "pyproject.toml").resolve())
    (inner / "model.py").write_text("x = 1\n")  # a file to start from
    assert find_config(inner / "model.py") == (root / "pyproject.toml").resolve()


def test_config_search_stops_at_the_git_root(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.irviz]\nselect = ["IRV1"]\n')
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "sub").mkdir()
    assert find_config(repo / "sub") is None
    assert load_config(repo / "sub") == Config()
    # without the .git directory the search goes on up
    (repo / ".git").rmdir()
    assert find_config(repo / "sub") == (tmp_path / "pyproject.toml").resolve()


def test_explicit_config_path_wins(tmp_path):
    root = _project(tmp_path, '[tool.irviz]\nselect = ["IRV1"]\n')
    other = tmp_path / "other.toml"
    other.write_text('[tool.irviz]\nselect = ["IRV2"]\n')
    assert load_config(root, path=other).select == ["IRV2"]
    assert load_config(root, path=other).source == other
    empty = tmp_path / "empty.toml"
    empty.write_text("[tool.black]\n")
    with pytest.raises(UsageError, match="has no \\[tool.irviz\\] table"):
        load_config(root, path=empty)
    with pytest.raises(UsageError, match="does not exist"):
        load_config(root, path=tmp_path / "nope.toml")


def test_unknown_key_names_file_key_and_valid_keys(tmp_path):
    root = _project(tmp_path, '[tool.irviz]\nselcet = ["IRV1"]\n')
    with pytest.raises(UsageError) as info:
        load_config(root)
    path = (root / "pyproject.toml").resolve()
    assert info.value.format() == (
        f"error: unknown key `selcet` in [tool.irviz] of {path}\n"
        "hint: did you mean `select`? valid keys: depth, dynamic-dims, engine, exclude, "
        "extend-select, format, ignore, mode, per-file-ignores, select, show-info, "
        "show-unconfirmed, variants, verify")


def test_snake_case_key_suggests_kebab_case(tmp_path):
    root = _project(tmp_path, '[tool.irviz]\nextend_select = ["IRV4"]\n')
    with pytest.raises(UsageError) as info:
        load_config(root)
    assert info.value.hint.startswith("did you mean `extend-select`?")


@pytest.mark.parametrize("line, message", [
    ('select = "IRV1"', "`select` in [tool.irviz] of {path} must be a list of rule codes "
                        "or prefixes, got a string: 'IRV1'"),
    ("ignore = [101]", "`ignore` in [tool.irviz] of {path} must be a list of rule codes "
                       "or prefixes, got a list: [101]"),
    ('depth = "2"', "`depth` in [tool.irviz] of {path} must be a non-negative integer, "
                    "got a string: '2'"),
    ("depth = true", "`depth` in [tool.irviz] of {path} must be a non-negative integer, "
                     "got a boolean: True"),
    ('mode = "fast"', "`mode` in [tool.irviz] of {path} must be one of script, trace, "
                      "auto, export, got a string: 'fast'"),
    ('format = "xml"', "`format` in [tool.irviz] of {path} must be one of text, json, "
                       "sarif, github, got a string: 'xml'"),
    ('per-file-ignores = ["IRV1"]', "`per-file-ignores` in [tool.irviz] of {path} must "
                                    "be a table of glob = [codes], got a list: ['IRV1']"),
    ('per-file-ignores = { "t/*" = "IRV1" }',
     '`per-file-ignores."t/*"` in [tool.irviz] of {path} must be a list of rule codes or '
     "prefixes, got a string: 'IRV1'"),
])
def test_wrong_type_names_key_expected_and_got(tmp_path, line, message):
    root = _project(tmp_path, f"[tool.irviz]\n{line}\n")
    with pytest.raises(UsageError) as info:
        load_config(root)
    assert info.value.message == message.format(path=(root / "pyproject.toml").resolve())


def test_invalid_toml_is_a_usage_error(tmp_path):
    root = _project(tmp_path, "[tool.irviz\nselect = \n")
    with pytest.raises(UsageError, match="pyproject.toml is not valid TOML"):
        load_config(root)


def test_per_file_ignores(tmp_path):
    root = _project(tmp_path, """\
        [tool.irviz.per-file-ignores]
        "tests/*" = ["IRV1"]
        "conftest.py" = ["irv2"]
        "**/gen_*.py" = ["IRV4"]
        """)
    config = load_config(root)
    assert per_file_ignored(config, str(root / "tests" / "test_a.py")) == {"IRV1"}
    assert per_file_ignored(config, str(root / "tests" / "deep" / "test_b.py")) == {"IRV1"}
    assert per_file_ignored(config, str(root / "sub" / "conftest.py")) == {"IRV2"}
    assert per_file_ignored(config, str(root / "gen_x.py")) == {"IRV4"}
    assert per_file_ignored(config, str(root / "a" / "gen_y.py")) == {"IRV4"}
    assert per_file_ignored(config, str(root / "model.py")) == set()
    assert per_file_ignored(Config(), "tests/test_a.py") == set()


def test_per_file_ignores_relative_path(tmp_path, monkeypatch):
    root = _project(tmp_path, '[tool.irviz]\nper-file-ignores = { "tests/*" = ["IRV1"] }\n')
    monkeypatch.chdir(root)
    assert per_file_ignored(load_config(), "tests/test_a.py") == {"IRV1"}


# ---------------------------------------------------------------------------
# formatters

D1 = TensorToPythonBool.diagnostic(path="samples/a.py", line=3, column=9, end_line=3,
                                   end_column=20, target="MyCell", layers=("trace",),
                                   expr="x.sum() > 0")
D2 = registry.get("IRV201").diagnostic(path="samples/b.py", line=7, column=1,
                                       where="line 7")


def test_format_text():
    assert format_text([D1, D2]) == (
        "samples/a.py:3:9: IRV101 `if` on tensor data `x.sum() > 0` is frozen by "
        "torch.jit.trace\n"
        "    hint: use torch.where or script the branch\n"
        "samples/b.py:7:1: IRV201 wait-immediately-after-fork at line 7\n"
        "    hint: fix wait-immediately-after-fork\n")
    assert format_text([D1, D2], show_hints=False) == (
        "samples/a.py:3:9: IRV101 `if` on tensor data `x.sum() > 0` is frozen by "
        "torch.jit.trace\n"
        "samples/b.py:7:1: IRV201 wait-immediately-after-fork at line 7\n")
    assert format_text([]) == ""


def test_format_json_round_trip():
    out = format_json([D1, D2])
    assert out.endswith("]\n") and out.startswith("[\n  {\n")
    data = json.loads(out)
    assert data == [D1.to_dict(), D2.to_dict()]
    assert [Diagnostic(**{**d, "layers": tuple(d["layers"])}) for d in data] == [D1, D2]
    assert format_json([]) == "[]\n"


def test_format_github_escapes_data_and_properties():
    d = Diagnostic("IRV101", "tensor-to-python-bool", "100% of\nruns: frozen, really",
                   "warning", "we:ird/a,b.py", 3, 9, end_line=4, end_column=2)
    info = Diagnostic("IRV401", "scalar-attribute-baked", "m", "info", "c.py", 1, 1)
    error = Diagnostic("IRV201", "wait-immediately-after-fork", "m\r", "error", "c.py", 2, 5)
    assert format_github([d, info, error]) == (
        "::warning file=we%3Aird/a%2Cb.py,line=3,col=9,endLine=4,endColumn=2,"
        "title=IRV101 tensor-to-python-bool::100%25 of%0Aruns: frozen, really\n"
        "::notice file=c.py,line=1,col=1,title=IRV401 scalar-attribute-baked::m\n"
        "::error file=c.py,line=2,col=5,title=IRV201 wait-immediately-after-fork::m%0D\n")


def test_formatters_share_one_signature():
    rules = registry.all()
    for name, formatter in FORMATTERS.items():
        out = formatter([D1, D2], rules=rules, tool_version="9.9")
        assert isinstance(out, str) and out, name
    assert set(FORMATTERS) == {"text", "json", "sarif", "github"}


def _sarif_case(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "my model.py").write_text(
        "import torch\n\n\ndef f(x):\n    if x.sum() > 0:\n        return x\n")
    diags = [
        TensorToPythonBool.diagnostic(path="models/my model.py", line=5, column=8,
                                      end_line=5, end_column=19, target="F",
                                      layers=("trace", "ast"), expr="x.sum() > 0"),
        registry.get("IRV201").diagnostic(path=str(tmp_path / "models" / "my model.py"),
                                          line=4, column=1, where="f"),
        registry.get("IRV401").diagnostic(path="models/my model.py", line=6, column=9,
                                          where="g"),
        Diagnostic("IRV001", "unclassified-tracer-warning", "torch warned", "warning",
                   "models/my model.py", 1, 1),  # its rule class is not passed
        TensorToPythonBool.diagnostic(path="models/my model.py", line=5, column=8,
                                      expr="x.sum() > 0"),
    ]
    return diags


def test_format_sarif_structure(tmp_path, monkeypatch):
    diags = _sarif_case(tmp_path, monkeypatch)
    log = json.loads(format_sarif(diags, rules=registry.all(), tool_version="1.2.3"))
    assert log["$schema"] == "https://json.schemastore.org/sarif-2.1.0.json"
    assert log["version"] == "2.1.0"
    assert len(log["runs"]) == 1
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "irviz" and driver["version"] == "1.2.3"
    assert driver["informationUri"].startswith("https://")
    # only the rules that appear, each once
    assert [r["id"] for r in driver["rules"]] == ["IRV101", "IRV201", "IRV401", "IRV001"]
    rule101 = driver["rules"][0]
    assert set(rule101) == {"id", "name", "shortDescription", "fullDescription", "help",
                            "defaultConfiguration", "properties"}
    assert rule101["name"] == "tensor-to-python-bool"
    assert rule101["shortDescription"]["text"] == summary(TensorToPythonBool)
    assert rule101["help"]["markdown"].startswith("# tensor-to-python-bool (IRV101)\n")
    assert "## Why is this bad?" in rule101["help"]["markdown"]
    assert rule101["properties"]["tags"] == ["torchscript", "tracing"]
    assert rule101["properties"]["precision"] == "high"
    assert [r["defaultConfiguration"]["level"] for r in driver["rules"]] == [
        "warning", "error", "note", "warning"]
    results = run["results"]
    assert [r["level"] for r in results] == ["warning", "error", "note", "warning",
                                             "warning"]
    for result in results:
        assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
        assert set(result) >= {"ruleId", "ruleIndex", "level", "message", "locations",
                               "partialFingerprints"}
    first = results[0]
    assert first["message"]["text"] == ("`if` on tensor data `x.sum() > 0` is frozen by "
                                        "torch.jit.trace\nhint: use torch.where or script "
                                        "the branch")
    location = first["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "models/my%20model.py",
                                            "uriBaseId": "%SRCROOT%"}
    assert location["region"] == {"startLine": 5, "startColumn": 8, "endLine": 5,
                                  "endColumn": 19}
    assert first["properties"] == {"target": "F", "layers": ["trace", "ast"]}
    # an absolute path inside the working directory becomes relative too
    assert results[1]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == \
        "models/my%20model.py"
    assert results[1]["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 4, "startColumn": 1}
    root = run["originalUriBaseIds"]["%SRCROOT%"]["uri"]
    assert root.startswith("file://") and root.endswith("/")
    # fingerprints: identical findings on one line get distinct, counted fingerprints
    fp = [r["partialFingerprints"]["irviz/v1"] for r in results]
    assert len(set(fp)) == len(fp)
    assert fp[0].endswith(":1") and fp[4].endswith(":2") and fp[0][:-2] == fp[4][:-2]


def test_sarif_rule_descriptions_fit_github_limits():
    long = make_rule("IRV105", "long-doc", doc="\n\n".join(
        f"## {t}\n" + "word " * 400 for t in REQUIRED_SECTIONS))
    d = long.diagnostic(path="a.py", line=1, where="x")
    rule = json.loads(format_sarif([d], rules=[long]))["runs"][0]["tool"]["driver"]["rules"][0]
    assert len(rule["shortDescription"]["text"]) == 1024
    assert len(rule["fullDescription"]["text"]) == 1024
    assert rule["fullDescription"]["text"].endswith("\u2026")


def test_sarif_fingerprints_survive_line_shifts(tmp_path, monkeypatch):
    diags = _sarif_case(tmp_path, monkeypatch)
    before = json.loads(format_sarif(diags[:1], rules=registry.all()))
    path = tmp_path / "models" / "my model.py"
    path.write_text("# a new first line\n" + path.read_text())
    shifted = TensorToPythonBool.diagnostic(path="models/my model.py", line=6, column=8,
                                            expr="x.sum() > 0")
    after = json.loads(format_sarif([shifted], rules=registry.all()))
    assert (before["runs"][0]["results"][0]["partialFingerprints"]
            == after["runs"][0]["results"][0]["partialFingerprints"])
    assert json.loads(format_sarif([]))["runs"][0]["results"] == []


def _sarif_schema() -> Path | None:
    """The official SARIF 2.1.0 schema (OASIS), when a copy is at hand: the file named by
    IRVIZ_SARIF_SCHEMA, or the one kept in the shared reference folder beside the repo."""
    candidates = [os.environ.get("IRVIZ_SARIF_SCHEMA"),
                  Path(__file__).resolve().parent / "data" / "sarif-schema-2.1.0.json",
                  ROOT.parent / "shared" / "reference" / "sarif-schema-2.1.0.json"]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def test_format_sarif_validates_against_the_official_schema(tmp_path, monkeypatch):
    jsonschema = pytest.importorskip("jsonschema")
    schema_path = _sarif_schema()
    if schema_path is None:
        pytest.skip("no copy of the SARIF 2.1.0 JSON schema (set IRVIZ_SARIF_SCHEMA)")
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    diags = _sarif_case(tmp_path, monkeypatch)
    log = json.loads(format_sarif(diags, rules=registry.all(), tool_version="0.1.0"))
    validator = jsonschema.Draft4Validator(schema,
                                           format_checker=jsonschema.FormatChecker())
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)
