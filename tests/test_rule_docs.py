"""Every lint rule is registered, coded in its family's band and documented in full.

Like ruff's ``check_docs_formatted.py``: a rule without a section, an example that does
not parse, or a message whose fields changed fails here, not in a user's terminal. The
table below is the contract with the checkers (they format the messages with exactly
these fields) and keeps a rule from silently disappearing.
"""
from __future__ import annotations

import ast
import re
import string

import pytest

import irviz.lint.rules  # noqa: F401  (registers every rule)
from irviz.lint.proof import EVIDENCE_TITLE
from irviz.lint.registry import REGISTRY, REQUIRED_SECTIONS, sections

#: code -> (name, severity, default, message fields)
EXPECTED = {
    "IRV001": ("unclassified-tracer-warning", "warning", True, {"text"}),
    "IRV002": ("trace-failed", "error", True, {"text"}),
    "IRV101": ("tensor-to-python-bool", "error", True, {"expr"}),
    "IRV102": ("metadata-branch-baked", "warning", True, {"expr"}),
    "IRV103": ("loop-unrolled-on-shape", "warning", True, {"expr"}),
    "IRV104": ("tensor-iteration", "warning", True, {"expr"}),
    "IRV105": ("len-of-tensor", "warning", True, {"expr"}),
    "IRV106": ("tensor-to-python-number", "error", True, {"expr"}),
    "IRV107": ("numpy-in-trace", "error", True, {"expr"}),
    "IRV108": ("tensor-constructor-constant", "warning", True, {"expr"}),
    "IRV109": ("resize-in-trace", "warning", True, {"expr"}),
    "IRV120": ("global-tensor-captured", "warning", True, {"expr"}),
    "IRV121": ("input-device-baked", "warning", True, {"expr", "device"}),
    "IRV122": ("default-arg-baked", "warning", True, {"expr", "them"}),
    "IRV123": ("non-tensor-input", "warning", True, {"expr", "them"}),
    "IRV124": ("container-input", "warning", True, {"expr", "what", "fixed"}),
    "IRV130": ("traced-in-training-mode", "error", True, {"expr", "who"}),
    "IRV131": ("training-flag-branch", "warning", True, {"expr"}),
    "IRV132": ("random-op-in-trace", "info", True, {"expr"}),
    "IRV133": ("python-side-effect-in-forward", "warning", True, {"expr"}),
    "IRV134": ("output-independent-of-input", "warning", True, {"index"}),
    "IRV140": ("list-output", "warning", True, {"expr"}),
    "IRV141": ("dict-or-non-tensor-output", "error", True, {"expr"}),
    "IRV150": ("trace-script-divergence", "warning", True, {"kind", "expr"}),
    "IRV151": ("shape-specialized-trace", "error", True, {"detail"}),
    "IRV152": ("trace-diverges-from-model", "error", True, {"expr"}),
    "IRV201": ("wait-immediately-after-fork", "warning", True, {"callee"}),
    "IRV202": ("fork-never-waited", "error", True, {"expr"}),
    "IRV203": ("fork-wait-same-iteration", "warning", True, {"callee"}),
    "IRV204": ("fork-single-interop-thread", "info", True, set()),
    "IRV205": ("fork-tiny-task", "info", False, {"callee", "cost", "overhead"}),
    "IRV206": ("fork-under-trace", "info", False, {"callee"}),
    "IRV301": ("not-scriptable", "warning", True, {"text"}),
    "IRV303": ("traced-module-inside-script", "warning", True, {"expr"}),
    "IRV304": ("jit-ignore-reachable", "warning", True, {"expr"}),
    "IRV305": ("jit-unused-reachable", "warning", True, {"expr"}),
    "IRV404": ("library-tracer-warning", "info", False, {"origin", "text"}),
    "IRV500": ("export-failed", "error", True, {"text"}),
    "IRV501": ("export-data-dependent-branch", "error", True, {"text"}),
    "IRV502": ("export-unrolled-loop", "warning", True, {"expr", "detail"}),
    "IRV503": ("export-dynamic-dim-static", "warning", True, {"dim", "detail"}),
    "IRV504": ("export-fork-serial", "warning", True, {"callee", "detail"}),
    "IRV505": ("torchscript-converter-unsupported", "warning", True, {"construct", "reason"}),
}

#: the module each family band lives in
BANDS = {"passthrough": ("IRV0",), "tracing": ("IRV1",), "fork_wait": ("IRV2",),
         "scripting": ("IRV3", "IRV4"), "export": ("IRV5",)}

RULES = REGISTRY.all()
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def ids(cls) -> str:
    return cls.code


def test_the_registered_rules_are_exactly_the_catalog():
    assert {cls.code: cls.name for cls in RULES} == {
        code: spec[0] for code, spec in EXPECTED.items()}


def test_codes_and_names_are_unique():
    assert len({cls.code for cls in RULES}) == len(RULES)
    assert len({cls.name for cls in RULES}) == len(RULES)


@pytest.mark.parametrize("cls", RULES, ids=ids)
def test_code_is_in_its_modules_band(cls):
    module = cls.__module__.rsplit(".", 1)[-1]
    assert cls.__module__ == f"irviz.lint.rules.{module}"
    assert cls.code.startswith(BANDS[module]), (cls.code, module)


@pytest.mark.parametrize("cls", RULES, ids=ids)
def test_name_is_kebab_case_and_the_class_is_its_camel_case(cls):
    assert re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", cls.name)
    camel = "".join(part.capitalize() for part in cls.name.split("-"))
    assert cls.__name__ == camel


@pytest.mark.parametrize("cls", RULES, ids=ids)
def test_severity_and_default_match_the_catalog(cls):
    _, severity, default, _ = EXPECTED[cls.code]
    assert (cls.severity, cls.default) == (severity, default)
    if cls.code.startswith("IRV4"):
        assert cls.default is False


def test_only_scalar_attribute_baked_is_in_preview():
    assert {cls.code for cls in RULES if cls.status == "preview"} == set()


@pytest.mark.parametrize("cls", RULES, ids=ids)
def test_message_fields_are_the_ones_the_checkers_pass(cls):
    fields = {field for _, field, _, _ in string.Formatter().parse(cls.message)
              if field is not None}
    assert fields == EXPECTED[cls.code][3]
    # every field is named (no positional "{}") and formatting with them works
    filled = cls.message.format(**{field: "X" for field in fields})
    assert "{" not in filled and "}" not in filled


@pytest.mark.parametrize("cls", RULES, ids=ids)
def test_hint_is_one_line(cls):
    assert cls.hint.strip() == cls.hint and cls.hint
    assert "\n" not in cls.hint and len(cls.hint) <= 110
    assert not list(f for _, f, _, _ in string.Formatter().parse(cls.hint) if f is not None)


@pytest.mark.parametrize("cls", RULES, ids=ids)
def test_every_section_is_present_and_not_empty(cls):
    found = sections(cls)
    for title in REQUIRED_SECTIONS:
        assert found.get(title, "").strip(), f"{cls.code}: `## {title}` missing or empty"
    assert list(found)[:5] == ["What it does", "Why is this bad?", "Example",
                               "Use instead", "Known problems"]
    assert set(found) <= set(REQUIRED_SECTIONS) | {"References", EVIDENCE_TITLE}
    # the last section is generated from the rule's proof and decision: every verdict the
    # rule's findings can have, with an example
    assert list(found)[-1] == EVIDENCE_TITLE
    proven = found[EVIDENCE_TITLE]
    if cls.severity != "info":
        verdicts = ("certain",) if cls.proof == "certain" else (
            "counterexample", "held", "undecided")
        assert all(f"**{v}**" in proven and re.search(rf"^ *{v}( on)?: ", proven, re.M)
                   for v in verdicts), proven
    # "What it does" is one paragraph: it is the summary shown in tables and SARIF
    assert "\n\n" not in found["What it does"]


@pytest.mark.parametrize("cls", RULES, ids=ids)
@pytest.mark.parametrize("title", ["Example", "Use instead"])
def test_example_and_fix_hold_python_that_parses(cls, title):
    blocks = FENCE.findall(sections(cls)[title])
    assert blocks, f"{cls.code}: `## {title}` has no ```python block"
    for block in blocks:
        ast.parse(block)


@pytest.mark.parametrize("cls", RULES, ids=ids)
def test_docs_link_only_to_the_pytorch_stable_docs(cls):
    doc = cls.__doc__ or ""
    for url in re.findall(r"https?://[^\s)>\]]+", doc):
        assert url.startswith("https://pytorch.org/docs/stable/"), (cls.code, url)
