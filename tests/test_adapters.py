"""Capture adapters: keyword inputs and dict/ModelOutput-like outputs, traced for real."""
from __future__ import annotations

import collections
import dataclasses
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Optional

import pytest
import torch

from irviz import api
from irviz.errors import CaptureError, InputsError
from irviz.frontends.adapters import CallAdapter, flatten_output
from irviz.frontends.capture import capture
from irviz.frontends.inputs import ExampleInputs, resolve_inputs
from irviz.frontends.loader import load, target_of
from irviz.frontends.retrace import perturbed_inputs
from irviz.ir.model import demangle

Pair = collections.namedtuple("Pair", "low high")


class _Cache:
    """Not a tensor: a stand-in for a library's cache object."""


@dataclasses.dataclass
class Output:
    hidden: torch.Tensor
    pooled: torch.Tensor | None
    cache: _Cache | None


class DictOut(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x, mask=None):
        h = self.lin(x)
        if mask is not None:
            h = h * mask
        return {"hidden": h, "pooled": h.mean(1), "extra": [h.relu(), h.sigmoid()]}


class DataclassOut(torch.nn.Module):
    def forward(self, x):
        return Output(hidden=x + 1, pooled=None, cache=_Cache())


class NamedTupleOut(torch.nn.Module):
    def forward(self, x):
        return Pair(x.min(1).values, x.max(1).values)


class TensorOut(torch.nn.Module):
    def forward(self, x, y):
        return x + y, (x * y, x - y)


def _names(G) -> list[str]:
    return [G.nodes[n]["label"] for n in G.graph["inputs"]]


def test_flatten_output_names_every_tensor_leaf_and_drops_the_rest():
    x = torch.rand(2)
    out, leaves = flatten_output({"a": x, "b": [x, None], "c": Output(x, None, _Cache())})
    assert len(out) == 3 and all(t is x for t in out)
    assert leaves.names == ["a", "b.0", "c.hidden"]
    assert [n for n, _ in leaves.dropped] == ["b.1", "c.pooled", "c.cache"]
    assert leaves.flattened and leaves.containers == ["dict", "list", "Output"]


def test_flatten_output_leaves_what_a_trace_takes_alone():
    x = torch.rand(2)
    for value in (x, (x, x), (x, (x, x))):
        out, leaves = flatten_output(value)
        assert out is value and not leaves.flattened and not leaves.dropped


def test_a_dict_output_is_traced_as_its_named_tensors():
    model = DictOut().eval()
    cap = capture(target_of(model), "trace", ExampleInputs((torch.rand(2, 4),)))
    G = api.build(cap)
    assert G.nodes["out"]["output_names"] == ["hidden", "pooled", "extra.0", "extra.1"]
    assert any("dict/list output is traced as its tensors: hidden, pooled, extra.0, extra.1"
               in n for n in cap.notes), cap.notes
    out = cap.run()
    assert isinstance(out, tuple) and len(out) == 4
    expected = model(torch.rand(2, 4))  # the user's model is untouched: still a dict
    assert isinstance(expected, dict)


def test_keyword_inputs_become_the_graphs_named_inputs():
    model = DictOut().eval()
    x, mask = torch.rand(2, 4), torch.ones(2, 4)
    cap = capture(target_of(model), "trace", ExampleInputs((), {"x": x, "mask": mask}))
    G = api.build(cap)
    assert _names(G) == ["x", "mask"]
    assert any("keyword inputs x, mask" in n for n in cap.notes)
    # the mask took part in the trace: it multiplies the hidden state
    assert any(G.nodes[n]["kind"] == "aten::mul" for n in G)
    torch.testing.assert_close(cap.run()[0], model(x, mask=mask)["hidden"])


def test_positional_and_keyword_inputs_together():
    model = DictOut().eval()
    x, mask = torch.rand(2, 4), torch.zeros(2, 4)
    cap = capture(target_of(model), "trace", ExampleInputs((x,), {"mask": mask}))
    assert _names(api.build(cap)) == ["x", "mask"]
    assert torch.count_nonzero(cap.run()[0]) == 0


def test_dataclass_output_drops_none_and_cache_objects_and_says_so():
    cap = capture(target_of(DataclassOut()), "trace", ExampleInputs((torch.rand(3),)))
    note = next(n for n in cap.notes if "output is traced" in n)
    assert "Output output is traced as its tensors: hidden" in note
    assert "left out (not tensors): pooled (NoneType), cache (_Cache)" in note
    assert isinstance(cap.run(), torch.Tensor)  # a single leaf is returned as itself


def test_named_tuple_output_keeps_its_field_names():
    cap = capture(target_of(NamedTupleOut()), "trace", ExampleInputs((torch.rand(2, 3),)))
    assert api.build(cap).nodes["out"]["output_names"] == ["low", "high"]


def test_a_model_that_needs_no_adapting_gets_no_note_and_the_same_graph():
    model = TensorOut()
    inputs = (torch.rand(2), torch.rand(2))
    cap = capture(target_of(model), "trace", ExampleInputs(inputs))
    assert not [n for n in cap.notes if "traced as" in n or "keyword" in n]
    plain = torch.jit.trace(model, inputs)
    assert demangle(str(cap.scripted.graph)) == demangle(str(plain.graph))
    assert "output_names" not in api.build(cap).nodes["out"]


def test_the_users_model_object_is_never_changed():
    model = DictOut().eval()
    before = (type(model), dict(vars(model)), list(model._forward_hooks),
              list(model._forward_pre_hooks))
    adapter = CallAdapter(model, ExampleInputs((), {"x": torch.rand(1, 4)}))
    torch.jit.trace(adapter.traceable, adapter.flat, check_trace=False)
    assert type(model) is DictOut and "forward" not in vars(model)
    assert (type(model), dict(vars(model)), list(model._forward_hooks),
            list(model._forward_pre_hooks)) == before
    # the stand-in shares the model's submodules and looks like it
    assert adapter.traceable.lin is model.lin
    assert type(adapter.traceable).__name__ == "DictOut"


def test_a_function_with_a_dict_output():
    def pairs(a, b):
        return {"sum": a + b, "diff": a - b}

    cap = capture(target_of(pairs), "trace", ExampleInputs((), {"a": torch.rand(2),
                                                               "b": torch.rand(2)}))
    G = api.build(cap)
    assert _names(G) == ["a", "b"] and G.nodes["out"]["output_names"] == ["sum", "diff"]


def test_script_mode_takes_keyword_inputs_too():
    class Gate(torch.nn.Module):
        def forward(self, x, scale: float = 2.0, bias: Optional[torch.Tensor] = None):
            if bias is not None:
                x = x + bias
            return x * scale

    bias = torch.rand(3)
    cap = capture(target_of(Gate()), "script", ExampleInputs((torch.rand(3),), {"bias": bias}))
    assert cap.eager is not None and not cap.eager.error
    examples = cap.graph_input_examples()
    assert examples[0].shape == (3,) and examples[1] is None and examples[2] is bias


# -------------------------------------------------------------------- inputs syntax

MODEL_FILE = """
    import torch

    class Masked(torch.nn.Module):
        def forward(self, x, mask=None, bias=None):
            if mask is not None:
                x = x * mask
            return {"out": x, "total": x.sum()}

    example_inputs = {"Masked": lambda: dict(x=torch.rand(2, 5), mask=torch.ones(2, 5))}
"""


@pytest.fixture
def masked(tmp_path: Path) -> Path:
    path = tmp_path / "masked.py"
    path.write_text(textwrap.dedent(MODEL_FILE))
    return path


def test_example_inputs_may_be_keywords(masked: Path):
    [target] = load(f"{masked}:Masked").targets
    inputs = resolve_inputs(target)
    assert inputs.args == () and list(inputs.kwargs) == ["x", "mask"]
    assert inputs.passed(target.obj.forward) == {"x", "mask"}


@pytest.mark.parametrize("expr, args, keys", [
    ("dict(x=torch.rand(2, 5), bias=torch.rand(5))", 0, ["x", "bias"]),
    ("(torch.rand(2, 5),), {'bias': torch.rand(5)}", 1, ["bias"]),
    ("({'x': torch.rand(2, 5)}, )", 1, []),  # a dict given positionally
])
def test_inputs_expression_forms(masked: Path, expr, args, keys):
    [target] = load(f"{masked}:Masked").targets
    inputs = resolve_inputs(target, expr)
    assert len(inputs.args) == args and list(inputs.kwargs) == keys


def test_unknown_keyword_is_an_input_error_naming_the_arguments(masked: Path):
    [target] = load(f"{masked}:Masked").targets
    with pytest.raises(InputsError) as info:
        resolve_inputs(target, "dict(x=torch.rand(2), maks=torch.rand(2))")
    assert info.value.message == "--inputs: Masked's forward() has no argument 'maks'"
    assert info.value.hint == "its arguments are: x, mask, bias"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "irviz", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_cli_render_with_keyword_inputs_names_inputs_and_outputs(masked: Path, tmp_path):
    out = tmp_path / "m.json"
    proc = _cli("render", f"{masked}:Masked", "--mode", "trace", "--inputs",
                "dict(x=torch.rand(2, 5), mask=torch.ones(2, 5))", "--format", "json",
                "-o", str(out),
                cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "keyword inputs x, mask" in proc.stderr
    assert "dict output is traced as its tensors: out, total" in proc.stderr
    data = json.loads(out.read_text())
    nodes = {n["id"]: n for n in data["nodes"]}
    assert [nodes[i]["label"] for i in data["graph"]["inputs"]] == ["x", "mask"]
    assert nodes["out"]["output_names"] == ["out", "total"]


def test_cli_lint_traces_a_dict_output_and_still_says_a_plain_trace_refuses_it(
        masked: Path, tmp_path):
    proc = _cli("lint", f"{masked}:Masked", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    findings = json.loads(proc.stdout)
    codes = {f["code"] for f in findings}
    assert "IRV002" not in codes, findings  # irviz's trace went through (adapted)...
    assert "IRV141" in codes, findings      # ...but the user's own torch.jit.trace would not


# -------------------------------------------------------------------- failures

LIBRARY = """
    import torch

    class Encoder(torch.nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                x = x + 1
            return x.view(-1, 7)
"""

USER = """
    import torch
    from mylib import Encoder

    class Wrapper(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = Encoder()

        def forward(self, x):
            return self.enc(x) * 2

    example_inputs = {"Wrapper": (torch.rand(2, 3),)}
"""


def test_a_failed_trace_names_the_library_line_the_users_call_and_keeps_warnings(tmp_path):
    (tmp_path / "mylib.py").write_text(textwrap.dedent(LIBRARY))
    (tmp_path / "user.py").write_text(textwrap.dedent(USER))
    sys.path.insert(0, str(tmp_path))
    try:
        [target] = load(f"{tmp_path / 'user.py'}:Wrapper").targets
        with pytest.raises(CaptureError) as info:
            capture(target, "trace", resolve_inputs(target))
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("mylib", None)
    message = info.value.message
    assert "mylib.py:8" in message and "(called from " in message and "user.py:11" in message
    [warning] = [w for w in info.value.warnings if w.category == "TracerWarning"]
    assert warning.filename.endswith("mylib.py") and warning.lineno == 6
    assert warning.called_from is not None and warning.called_from[1] == 11


# -------------------------------------------------------------------- dynamic dims

def test_dynamic_dims_grow_every_input_of_the_same_length():
    class Text(torch.nn.Module):
        def forward(self, input_ids, attention_mask, pixel_values):
            return input_ids

    inputs = ExampleInputs((), {"input_ids": torch.zeros(2, 16, dtype=torch.long),
                                "attention_mask": torch.ones(2, 16, dtype=torch.long),
                                "pixel_values": torch.rand(2, 3, 8, 8)})
    new, change = perturbed_inputs(Text(), inputs, {"input_ids": [1]})
    assert new.kwargs["input_ids"].shape == (2, 17)
    assert new.kwargs["attention_mask"].shape == (2, 17)
    assert new.kwargs["pixel_values"].shape == (2, 3, 8, 8)
    assert change == "input_ids: (2, 16) -> (2, 17); attention_mask: (2, 16) -> (2, 17)"


def test_a_grown_input_keeps_its_own_values():
    """The re-trace changes the shape, not the data: a branch on the values (the seed
    MyCell's ``if x.sum() > 0`` on a linear layer's output) must not flip and pass for a
    shape baked into the trace."""
    samples = Path(__file__).resolve().parent.parent / "samples"
    [cell] = load(str(samples / "decision_gate.py:MyCell")).targets
    x, h = torch.randn(3, 4), torch.randn(3, 4)
    new, change = perturbed_inputs(cell.obj, ExampleInputs((x, h), {}), {})
    assert change == "x: (3, 4) -> (4, 4); h: (3, 4) -> (4, 4)"
    for old, grown in zip((x, h), new.args):
        assert torch.equal(grown[:3], old) and torch.equal(grown[3], old[2])
    empty, _ = perturbed_inputs(cell.obj, ExampleInputs((torch.rand(0, 4),), {}), {})
    assert empty.args[0].shape == (1, 4)
