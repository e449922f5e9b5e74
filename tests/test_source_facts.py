"""The source (AST) layer of ``irviz lint``: irviz.lint.source.

Every fixture in tests/lint_models marks the lines a ruff-style tool must report
with ``# expect: IRVnnn`` comments; the findings of ``Model()`` must match them
exactly (the ``ok_*`` files expect nothing). Codes this layer never produces
(IRV002, IRV150, IRV301, ...: the runtime layers' business) may appear in the
comments too and are left out of the comparison.
"""
from __future__ import annotations

import importlib.util
import io
import logging
import re
import sys
import types
from pathlib import Path
from typing import NamedTuple, Optional

import pytest
import torch

from irviz.lint.registry import REGISTRY
from irviz.lint.rules.tracing import TensorToPythonBool
from irviz.lint.source import RULES, SourceFinding, source_findings

ROOT = Path(__file__).resolve().parent.parent
LINT_MODELS = Path(__file__).resolve().parent / "lint_models"
FIXTURES = sorted(LINT_MODELS.glob("*.py"))
_EXPECT = re.compile(r"#\s*expect:\s*(.+?)\s*$")
_THIS = Path(__file__).read_text(encoding="utf-8").splitlines()
AST_CODES = {rule.code for rule in RULES}


def load_module(path: Path):
    name = f"irviz_lint_models_{path.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def expected_codes(path: Path) -> set[tuple[int, str]]:
    out = set()
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = _EXPECT.search(line)
        if m:
            out.update((lineno, code) for code in re.split(r"[,\s]+", m.group(1)) if code)
    return out


def codes(facts) -> set[tuple[int, str]]:
    return {(f.line, f.rule.code) for f in facts}


def marker_line(marker: str) -> int:
    """1-based line of this test file carrying ``# marker: <marker>``."""
    hits = [i for i, line in enumerate(_THIS, 1) if line.rstrip().endswith(f"# marker: {marker}")]
    assert len(hits) == 1, marker
    return hits[0]


def test_fixture_set_covers_every_rule():
    prefixes = {p.name[:6].upper() for p in FIXTURES if p.name.startswith("irv")}
    assert prefixes == AST_CODES
    assert {"ok_dynamic_patterns.py", "ok_forks.py"} <= {p.name for p in FIXTURES}
    assert len(set(RULES)) == len(RULES)
    assert all(REGISTRY.get(rule.code) is rule for rule in RULES)


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_fixture_expectations(path):
    module = load_module(path)
    facts = source_findings(module.Model())
    expected = {(line, code) for line, code in expected_codes(path) if code in AST_CODES}
    if path.name.startswith("irv"):
        assert expected, f"{path.name} has no '# expect:' comment"
        code = path.name[:6].upper()
        assert any(c == code for _, c in expected), f"{path.name} never expects {code}"
    got = codes(facts)
    assert got == expected, (
        f"missing {sorted(expected - got)}, extra {sorted(got - expected)}\n"
        + "\n".join(map(str, facts)))
    assert all(Path(f.path).resolve() == path.resolve() for f in facts)
    assert "Model" in module.example_inputs


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_facts_are_sorted_unique_and_stable(path):
    module = load_module(path)
    first = source_findings(module.Model())
    again = source_findings(module.Model())
    assert first == again
    assert len(set(first)) == len(first)
    assert first == sorted(first, key=lambda f: (f.path, f.line, f.column, f.rule.code,
                                                  f.end_line, f.end_column, f.detail,
                                                  f.function))
    for f in first:
        assert f.rule in RULES
        assert 1 <= f.line <= f.end_line and f.column >= 1 and f.end_column >= 1
        assert 0 < len(f.detail) <= 80


# --------------------------------------------------------------------------- seed sample
def test_decision_gate_sample():
    module = load_module(ROOT / "samples" / "decision_gate.py")
    facts = source_findings(module.MyCell())
    assert [(f.rule.code, f.line, f.function) for f in facts] == [
        ("IRV101", 11, "MyDecisionGate.forward")]
    fact = facts[0]
    assert Path(fact.path).name == "decision_gate.py"
    # "        if x.sum() > 0:" -> the test expression spans columns 12..23
    assert (fact.column, fact.end_line, fact.end_column) == (12, 11, 23)
    assert fact.detail == "x.sum() > 0"


# --------------------------------------------------------------------------- columns
class _Columns(torch.nn.Module):
    def forward(self, x):
        if "ü" != "u" and x.max().item() > 0:  # marker: unicode
            x = x + 1
        return x


def test_columns_count_characters_not_bytes():
    line = marker_line("unicode")
    text = _THIS[line - 1]
    (fact,) = source_findings(_Columns())
    assert (fact.rule.code, fact.line) == ("IRV106", line)
    start = text.index("x.max().item()")
    assert fact.column == start + 1
    assert fact.end_column == start + len("x.max().item()") + 1
    assert fact.detail == "x.max().item()"


def test_columns_of_parameters_and_loops():
    path = LINT_MODELS / "irv122_default_arg.py"
    lines = path.read_text(encoding="utf-8").splitlines()
    (fact,) = source_findings(load_module(path).Model())
    text = lines[fact.line - 1]
    assert text.lstrip().startswith("def forward")
    assert fact.column == text.index("bias:") + 1
    assert fact.end_column == text.index("None") + len("None") + 1
    assert fact.detail == "bias: Optional[torch.Tensor] = None"

    path = LINT_MODELS / "irv103_shape_loop.py"
    lines = path.read_text(encoding="utf-8").splitlines()
    loop = source_findings(load_module(path).Model())[0]
    text = lines[loop.line - 1]
    assert loop.detail == "for i in range(x.size(0))"
    assert loop.column == text.index("for ") + 1
    assert loop.end_column == text.index(":") + 1


# --------------------------------------------------------------------------- traversal
class _Gate(torch.nn.Module):
    def forward(self, x):
        if x.mean() > 0:  # marker: submodule-branch
            return x
        return -x


class _Traversal(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = _Gate()
        self.blocks = torch.nn.ModuleList([_Gate(), _Gate()])
        self.lstm = torch.nn.LSTM(4, 4)
        self.linear = torch.nn.Linear(4, 4)

    def helper(self, x, n: int):
        for _ in range(n):  # marker: helper-loop
            x = x * 2
        return x

    def unused_helper(self, x):
        return x.item()  # never called from forward: not reported

    def forward(self, x):
        out, _ = self.lstm(x)
        out = self.helper(self.linear(out), out.size(0))
        for block in self.blocks:
            out = block(out)
        return self.gate(out)


def test_helper_and_submodule_traversal():
    facts = source_findings(_Traversal())
    found = {(f.rule.code, f.line, f.function) for f in facts}
    assert found == {
        ("IRV103", marker_line("helper-loop"), "_Traversal.helper"),
        ("IRV101", marker_line("submodule-branch"), "_Gate.forward"),
    }
    # the gate is reached three times (self.gate and both ModuleList members) but
    # reported once
    assert len(facts) == 2


class _Indexed(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([_Gate()])

    def forward(self, x):
        return self.blocks[0](x)


class _Forked(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = _Gate()

    def forward(self, x):
        fut = torch.jit.fork(self.gate, x)
        y = x * 2
        return torch.jit.wait(fut) + y


class _Sequential(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(4, 4), _Gate())

    def forward(self, x):
        return self.body(x)


@pytest.mark.parametrize("model", [_Indexed, _Forked, _Sequential])
def test_submodules_reached_by_index_fork_and_library_container(model):
    facts = source_findings(model())
    assert [(f.rule.code, f.line, f.function) for f in facts] == [
        ("IRV101", marker_line("submodule-branch"), "_Gate.forward")]


def test_library_submodules_are_not_traversed():
    facts = source_findings(_Traversal())
    this = Path(__file__).resolve()
    assert all(Path(f.path).resolve() == this for f in facts)
    assert not any("LSTM" in f.function or "Linear" in f.function for f in facts)
    assert source_findings(torch.nn.LSTM(4, 4)) == []
    assert source_findings(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())) == []


class _Ignored(torch.nn.Module):
    @torch.jit.ignore
    def debug(self, x):
        print(x.tolist())  # inside an ignored method: not read
        return x

    def forward(self, x):
        return self.debug(x)  # marker: ignored-call


def test_ignored_methods_are_reported_at_the_call_not_entered():
    facts = source_findings(_Ignored())
    assert [(f.rule.code, f.line) for f in facts] == [
        ("IRV304", marker_line("ignored-call"))]


# --------------------------------------------------------------------------- script/trace
def test_scripted_module_reads_the_original_source():
    module = load_module(ROOT / "samples" / "decision_gate.py")
    scripted = torch.jit.script(module.MyCell())
    assert codes(source_findings(scripted)) == {(11, "IRV101")}


@pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning")
def test_script_module_without_source_gives_nothing():
    module = load_module(ROOT / "samples" / "decision_gate.py")
    buffer = io.BytesIO()
    torch.jit.save(torch.jit.script(module.MyCell()), buffer)
    buffer.seek(0)
    loaded = torch.jit.load(buffer)
    assert source_findings(loaded) == []
    traced = torch.jit.trace(module.MyDecisionGate(), (torch.rand(3, 4),), check_trace=False)
    assert source_findings(traced) == []


def test_script_function_and_plain_function():
    module = load_module(Path(__file__).resolve().parent / "models" / "fork_patterns.py")
    scripted = torch.jit.script(module.dynamic_loop)
    assert [(f.rule.code, f.function) for f in source_findings(scripted)] == [
        ("IRV103", "dynamic_loop")]
    assert [f.rule.code for f in source_findings(module.same_iteration)] == [
        "IRV201", "IRV203"]
    assert source_findings(module.in_list) == []
    assert source_findings(module.ForkModule()) == []  # two forks waited together overlap


# --------------------------------------------------------------------------- no execution
class _Explosive(torch.nn.Module):
    @property
    def factor(self):
        raise AssertionError("source_findings must not run model code")

    def forward(self, x):
        return x * self.factor


def test_model_code_is_never_run():
    assert source_findings(_Explosive()) == []


# --------------------------------------------------------------------------- more cases
_LOG = logging.getLogger("irviz-test-source-facts")


class _Mixed(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.history = []

    def forward(self, x, k: int = 2):  # marker: mixed-params
        assert x.min() >= 0  # marker: assert
        y = x if not bool(x.any()) else -x  # marker: ternary
        while x.norm() > 10:  # marker: while-data
            x = x / 2
        if x.ndim == 2 and len(x.shape) == 2:  # marker: metadata
            x = x + 1
        values = x.tolist()  # marker: tolist
        self.history.append(len(values))  # marker: append
        _LOG.info("shape %s", x.shape)  # marker: logger
        return x + y * k


def test_more_branch_and_side_effect_cases():
    got = {(f.line, f.rule.code) for f in source_findings(_Mixed())}
    assert got == {
        (marker_line("mixed-params"), "IRV122"), (marker_line("mixed-params"), "IRV123"),
        (marker_line("assert"), "IRV101"),
        (marker_line("ternary"), "IRV101"),
        (marker_line("while-data"), "IRV101"),
        (marker_line("metadata"), "IRV102"),
        (marker_line("tolist"), "IRV106"),
        (marker_line("append"), "IRV133"),
        (marker_line("logger"), "IRV133"),
    }


# --------------------------------------------------------------------------- annotations
class _Cache:
    def __init__(self):
        self.length = 0

    def seq_len(self):
        return self.length


class _Pair(NamedTuple):
    value: torch.Tensor


class _Images:
    """A record built from tensors, as torchvision's ImageList."""

    def __init__(self, tensors: torch.Tensor, sizes: list):
        self.tensors, self.sizes = tensors, sizes


class _Annotated(torch.nn.Module):
    def forward(self, x, cache: Optional[_Cache] = None, flag: bool = False, n: int = 0,
                pair: Optional[_Pair] = None, images: Optional[_Images] = None):
        if cache.seq_len() > 0:  # an object of the model's code, not a tensor
            x = x + 1
        if flag or n > 3:  # the caller passes tensors, the annotation says otherwise
            x = x + 1
        rows: int = x.shape[0]
        if rows > 2:  # marker: annotated-size
            x = x * 2
        if pair.value.sum() > 0:  # marker: namedtuple-field
            x = x * 2
        if images.tensors.sum() > 0:  # marker: record-of-tensors
            x = x * 2
        return x


class _CallsAnnotated(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = _Annotated()

    def forward(self, x, cache: Optional[_Cache] = None):  # marker: cache-param
        t = x.sum()
        if cache is not None and cache.seq_len() > 0:  # not a tensor here either
            x = x + 1
        return self.inner(x, cache, t, t, x, x)


class _KeyLookup(torch.nn.Module):
    def forward(self, x, outputs: dict):
        if "masks" in outputs:  # a key of a dict of tensors: no tensor compared
            x = x + outputs["masks"]
        if x in outputs.values():  # marker: tensor-membership
            x = x + 1
        return x


def test_a_string_key_lookup_compares_no_tensor():
    got = {(f.line, f.rule.code) for f in source_findings(_KeyLookup())}
    assert got == {(marker_line("tensor-membership"), "IRV101")}


def test_annotated_non_tensor_values_carry_no_tensor_taint():
    """``Optional[SomeCache]``, ``bool``, ``int``: what the annotation says is not a tensor
    is not tensor data, whatever a flow-insensitive guess says the caller passes; sizes stay
    sizes, and a NamedTuple may hold tensors."""
    got = {(f.line, f.rule.code) for f in source_findings(_CallsAnnotated())}
    assert got == {(marker_line("cache-param"), "IRV122"),
                   (marker_line("annotated-size"), "IRV101"),
                   (marker_line("namedtuple-field"), "IRV101"),
                   (marker_line("record-of-tensors"), "IRV101")}


def test_source_finding_is_a_frozen_dataclass():
    fact = SourceFinding(TensorToPythonBool, "m.py", 1, 2, 1, 5, "x>0", "M.forward")
    with pytest.raises(Exception):
        fact.line = 3  # type: ignore[misc]
    assert list(SourceFinding.__dataclass_fields__) == [
        "rule", "path", "line", "column", "end_line", "end_column", "detail", "function",
        "evidence"]
    assert list(fact.evidence_lines()) == [1]  # its own lines unless it names others


# --------------------------------------------------------------------------- non-tensor values
class _KVCache:
    """A key/value cache as transformers has them: a plain class holding tensors."""

    def __init__(self):
        self.is_updated = {}

    def update(self, key, value, index):
        return key, value


class _Narrowed(torch.nn.Module):
    def forward(self, x, cache=None):  # marker: narrowed-params
        updated = False
        if isinstance(cache, _KVCache):  # a type test: no tensor metadata
            updated = cache.is_updated.get(0)  # here cache is a _KVCache, not a tensor
            key, value = cache.update(x, x, 0)  # a cache's update: no tensor iteration
            x = key + value
        if updated:  # narrowed above: a Python value
            x = x + 1
        if x.sum() > 0 and updated:  # marker: narrowed-data
            x = x + 1
        if isinstance(cache, torch.Tensor):  # the Python type: the same for every tensor
            x = x + 1
        return x


def test_isinstance_is_no_metadata_and_narrows_to_a_non_tensor_class():
    """``isinstance(cache, SomeCache)`` and ``isinstance(n, torch.Tensor)`` test a Python
    type, which a traced graph's tensors all share: no IRV102. In the body of ``if
    isinstance(cache, SomeCache):`` the name holds that class, so what is read from it is no
    tensor data (no IRV101 on ``if updated:``, no IRV104 on ``k, v = cache.update(...)``)."""
    got = {(f.line, f.rule.code) for f in source_findings(_Narrowed())}
    assert got == {(marker_line("narrowed-params"), "IRV122"),
                   (marker_line("narrowed-data"), "IRV101")}


def _helper(x):
    return x


class _UnknownReceiver(torch.nn.Module):
    def forward(self, x):
        out = _helper(x)  # some value built from tensors, structure unknown
        a, b = out.update(x)  # no tensor has `update`: not a tensor being iterated
        c, d = out.sum(0)  # marker: tensor-method-unpacked
        return a + b + c + d


def test_a_method_no_tensor_has_is_not_a_tensor_result():
    got = {(f.line, f.rule.code) for f in source_findings(_UnknownReceiver())}
    assert got == {(marker_line("tensor-method-unpacked"), "IRV104")}


#: a decorator of another module (transformers' ``deprecate_kwarg``): functools.wraps
_DECORATORS = types.ModuleType("irviz_test_decorators")
exec("import functools\n"
     "def deprecated(fn):\n"
     "    @functools.wraps(fn)\n"
     "    def wrapper(*args, **kwargs):\n"
     "        return fn(*args, **kwargs)\n"
     "    return wrapper\n", _DECORATORS.__dict__)


class _DecoratedAttention(torch.nn.Module):
    @_DECORATORS.deprecated
    def forward(self, x, cache: Optional[_KVCache] = None, flag: bool = False):
        if cache and flag:  # annotated as no tensor: the names resolve in this module
            x = x + 1
        return x


class _CallsDecorated(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = _DecoratedAttention()

    def forward(self, x):
        t = x.sum()
        return self.attn(x, t, t)  # a flow-insensitive guess: tensors passed


def test_a_decorated_functions_annotations_resolve_in_its_own_module():
    """transformers decorates forward (``@deprecate_kwarg``): ``Cache`` in its annotations
    is a name of the model's module, not of the decorator's."""
    assert source_findings(_CallsDecorated()) == []


class _MisannotatedBlock(torch.nn.Module):
    def forward(self, x) -> torch.Tensor:  # says a tensor, returns a pair (as Swin's layers)
        return x, x


class _UnpacksBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.block = _MisannotatedBlock()

    def forward(self, x):
        y, weights = self.block(x)  # a pair unpacked, not a tensor iterated
        return y + weights


def test_a_return_annotation_a_returned_tuple_contradicts_is_not_believed():
    assert source_findings(_UnpacksBlock()) == []
