"""The loader table: every spec form, every load error, and example inputs."""
from __future__ import annotations

import sys
import textwrap
import uuid
import warnings
import zipfile
from pathlib import Path

import pytest
import torch

from irviz.errors import InputsError, ModelLoadError
from irviz.frontends.inputs import ExampleInputs, resolve_inputs
from irviz.frontends.loader import USER_TRACEBACK_HEADER, LoadResult, Target, load

SAMPLES = Path(__file__).resolve().parent.parent / "samples"

MODELS = '''\
import torch
from torch.nn import Linear            # imported: never a target
from collections import OrderedDict    # imported: never a target


class Cell(torch.nn.Module):
    def forward(self, x, h):
        return torch.tanh(x + h)


class NeedsArgs(torch.nn.Module):
    def __init__(self, width, depth=2):
        super().__init__()
        self.width = width

    def forward(self, x):
        return x * self.width


class _Private(torch.nn.Module):
    def forward(self, x):
        return x


def double(x):
    return x * 2


def helper(x):
    return x + 1


@torch.jit.script
def scripted_fn(x):
    return x - 1


cell = Cell()
scripted_cell = torch.jit.script(Cell())


def make_model():
    return NeedsArgs(3)


def make_sized(width, tag="a"):
    m = NeedsArgs(width)
    m.tag = tag
    return m


def make_number():
    return 42


def make_boom():
    raise RuntimeError("factory exploded")


def batch():
    return torch.ones(2, 2), torch.zeros(2, 2)


example_inputs = {
    "Cell": lambda: (torch.rand(3, 4), torch.rand(3, 4)),
    "double": (torch.rand(2),),
    "make_model": torch.rand(5),
}
'''


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def models(tmp_path: Path) -> Path:
    return write(tmp_path / "models.py", MODELS)


def summary(result: LoadResult) -> list[tuple[str, str]]:
    return [(t.name, t.kind) for t in result.targets]


# --------------------------------------------------------------------------- spec forms


def test_file_form_finds_every_model_in_definition_order(models: Path) -> None:
    result = load(str(models))
    assert summary(result) == [
        ("Cell", "module"),
        ("double", "function"),          # a key of example_inputs
        ("scripted_fn", "script_function"),
        ("cell", "module"),
        ("scripted_cell", "script_module"),
        ("make_model()", "module"),       # a key of example_inputs taking no arguments: a factory
    ]
    assert [name for name, _ in result.skipped] == ["NeedsArgs"]
    reason = result.skipped[0][1]
    assert "needs arguments" in reason and "NeedsArgs(width, depth=2)" in reason
    assert "\n" not in reason
    assert result.targets[-1].obj.width == 3
    for t in result.targets:
        assert t.spec == f"{models}:{t.name}"
        assert t.source_file == models
        assert t.user_module is not None and t.user_module.__file__ == str(models)
    assert isinstance(result.targets[0].obj, torch.nn.Module)
    # imported names, helpers not named in example_inputs, private classes: not targets
    names = [t.name for t in result.targets]
    for absent in ("Linear", "OrderedDict", "helper", "_Private", "make_sized", "batch"):
        assert absent not in names


@pytest.mark.parametrize("suffix, name, kind, check", [
    (":Cell", "Cell", "module", lambda o: type(o).__name__ == "Cell"),
    (":cell", "cell", "module", lambda o: type(o).__name__ == "Cell"),
    (":scripted_cell", "scripted_cell", "script_module",
     lambda o: isinstance(o, torch.jit.ScriptModule)),
    (":scripted_fn", "scripted_fn", "script_function",
     lambda o: isinstance(o, torch.jit.ScriptFunction)),
    (":double", "double", "function", lambda o: o(3) == 6),
    (":helper", "helper", "function", lambda o: o(3) == 4),   # named: allowed
    (":_Private", "_Private", "module", lambda o: type(o).__name__ == "_Private"),
    (":make_model()", "make_model()", "module", lambda o: o.width == 3),
    (":make_sized(3, tag='a')", "make_sized(3, tag='a')", "module",
     lambda o: (o.width, o.tag) == (3, "a")),
    (":make_sized( 7 ,tag = 'b' )", "make_sized(7, tag='b')", "module",
     lambda o: (o.width, o.tag) == (7, "b")),
    (":NeedsArgs(4)", "NeedsArgs(4)", "module", lambda o: o.width == 4),
])
def test_file_name_forms(models: Path, suffix: str, name: str, kind: str, check) -> None:
    result = load(f"{models}{suffix}")
    assert summary(result) == [(name, kind)]
    assert result.skipped == []
    target = result.targets[0]
    assert target.spec == f"{models}:{name}"
    assert target.source_file == models
    assert target.user_module is not None
    assert check(target.obj)


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    name = f"irviz_testpkg_{uuid.uuid4().hex[:8]}"
    write(tmp_path / name / "__init__.py", "")
    write(tmp_path / name / "layers.py", """\
        import torch

        class Scale(torch.nn.Module):
            def forward(self, x):
                return x * 2
        """)
    write(tmp_path / name / "net.py", """\
        import torch
        from .layers import Scale

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = Scale()

            def forward(self, x):
                return self.scale(x) + 1

        def build(k=1):
            return Net()

        example_inputs = {"Net": lambda: torch.rand(2)}
        """)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[mod]


@pytest.mark.parametrize("suffix, expected", [
    (":Net", [("Net", "module")]),
    (":build()", [("build()", "module")]),
    (":build(k=2)", [("build(k=2)", "module")]),
    ("", [("Net", "module")]),          # Scale is imported into net: not a target
])
def test_module_forms(package: str, suffix: str, expected) -> None:
    result = load(f"{package}.net{suffix}")
    assert summary(result) == expected
    target = result.targets[0]
    assert target.spec == f"{package}.net:{expected[0][0]}"
    assert target.user_module is sys.modules[f"{package}.net"]
    assert target.source_file is not None and target.source_file.name == "net.py"
    assert type(target.obj).__name__ == "Net"


def test_file_inside_package_imports_with_relative_imports(package: str, tmp_path: Path) -> None:
    result = load(str(tmp_path / package / "net.py"))
    assert summary(result) == [("Net", "module")]
    assert result.targets[0].user_module.__name__ == f"{package}.net"


def test_archive(tmp_path: Path, models: Path) -> None:
    scripted = load(f"{models}:scripted_cell").targets[0].obj
    archive = tmp_path / "cell.pt"
    torch.jit.save(scripted, str(archive))
    result = load(str(archive))
    assert summary(result) == [("cell", "archive")]
    target = result.targets[0]
    assert isinstance(target.obj, torch.jit.ScriptModule)
    assert target.spec == str(archive)
    assert target.user_module is None
    assert target.source_file == archive
    x = torch.rand(2)
    assert torch.equal(target.obj(x, x), torch.tanh(x + x))


def test_archive_without_py_extension_and_any_suffix(tmp_path: Path, models: Path) -> None:
    scripted = load(f"{models}:scripted_cell").targets[0].obj
    archive = tmp_path / "exported_model"
    scripted.save(str(archive))
    assert summary(load(str(archive))) == [("exported_model", "archive")]


# --------------------------------------------------------------------------- the samples


def test_sample_decision_gate() -> None:
    result = load(str(SAMPLES / "decision_gate.py"))
    assert [t.name for t in result.targets] == ["MyDecisionGate", "MyCell"]
    assert result.skipped == []


def test_sample_fork_basics() -> None:
    result = load(str(SAMPLES / "fork_basics.py"))
    assert summary(result) == [("example", "function"), ("example_loop", "function")]


def test_sample_rnn_loop() -> None:
    result = load(str(SAMPLES / "rnn_loop.py"))
    assert [t.name for t in result.targets] == ["MyDecisionGate", "MyRNNLoop", "WrapRNN"]
    assert [name for name, _ in result.skipped] == ["MyCell"]
    assert "MyCell(dg)" in result.skipped[0][1]


def test_sample_lstm_ensemble() -> None:
    result = load(str(SAMPLES / "lstm_ensemble.py"))
    assert [t.name for t in result.targets] == [
        "BidirectionalRecurrentLSTM", "ForkedBidirectionalRecurrentLSTM",
        "SerialLSTMEnsemble", "BiForkLSTMEnsemble", "LSTMEnsemble"]


def test_sample_my_cell() -> None:
    result = load(str(SAMPLES / "my_cell.py"))
    assert [t.name for t in result.targets] == ["MyCell", "MyLinearCell"]


# --------------------------------------------------------------------------- importing


def test_same_file_twice_is_imported_afresh(tmp_path: Path) -> None:
    f = write(tmp_path / "again.py", """\
        import torch
        class A(torch.nn.Module):
            def forward(self, x):
                return x
        """)
    first = load(str(f))
    assert [t.name for t in first.targets] == ["A"]
    write(f, """\
        import torch
        class B(torch.nn.Module):
            def forward(self, x):
                return x
        """)
    second = load(str(f))
    assert [t.name for t in second.targets] == ["B"]
    assert second.targets[0].user_module is not first.targets[0].user_module


def test_sys_path_is_restored(models: Path) -> None:
    before = list(sys.path)
    load(str(models))
    assert sys.path == before
    with pytest.raises(ModelLoadError):
        load(f"{models}:nothing_here")
    assert sys.path == before


def test_sibling_import_works(tmp_path: Path) -> None:
    sib = f"sib_{uuid.uuid4().hex[:8]}"
    write(tmp_path / f"{sib}.py", "import torch\nclass Gate(torch.nn.Module):\n"
                                  "    def forward(self, x):\n        return x\n")
    f = write(tmp_path / "uses_sibling.py", f"""\
        import torch
        from {sib} import Gate

        class Outer(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.gate = Gate()

            def forward(self, x):
                return self.gate(x)
        """)
    try:
        assert [t.name for t in load(str(f)).targets] == ["Outer"]
    finally:
        sys.modules.pop(sib, None)


def test_stdlib_named_file_does_not_shadow_the_stdlib(tmp_path: Path) -> None:
    import json
    f = write(tmp_path / "json.py", """\
        import torch
        class J(torch.nn.Module):
            def forward(self, x):
                return x
        """)
    result = load(str(f))
    assert [t.name for t in result.targets] == ["J"]
    assert sys.modules["json"] is json
    assert result.targets[0].user_module.__name__ != "json"


def test_torch_deprecation_warnings_are_silenced(tmp_path: Path) -> None:
    f = write(tmp_path / "scripts_at_import.py", """\
        import torch
        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = torch.jit.trace(torch.nn.Linear(2, 2), torch.rand(1, 2))
            def forward(self, x):
                return self.inner(x)
        m = torch.jit.script(M())
        """)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = load(str(f))
    assert [t.name for t in result.targets] == ["M", "m"]
    torchy = [w for w in caught
              if issubclass(w.category, (DeprecationWarning, FutureWarning))]
    assert torchy == []


# --------------------------------------------------------------------------- load errors


def load_error(spec: str) -> ModelLoadError:
    with pytest.raises(ModelLoadError) as info:
        load(spec)
    return info.value


def test_missing_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "models.py", MODELS)
    err = load_error("modles.py")
    assert err.message == f"no such file: modles.py (looked in {tmp_path})"
    assert err.hint == "did you mean models.py?"


def test_missing_file_without_extension_suggests_py(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "sub" / "net.py", MODELS)
    err = load_error("sub/net")
    assert err.message.startswith("no such file: sub/net")
    assert err.hint == "did you mean sub/net.py?"


def test_missing_archive(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    err = load_error("model.pt")
    assert err.message == f"no such file: model.pt (looked in {tmp_path})"


def test_directory(tmp_path: Path) -> None:
    write(tmp_path / "a.py", "")
    err = load_error(str(tmp_path))
    assert err.message == f"{tmp_path} is a directory, not a model file"
    assert "a.py" in err.hint


def test_syntax_error(tmp_path: Path) -> None:
    f = write(tmp_path / "broken.py", "import torch\n\ndef f(x:\n    return x\n")
    err = load_error(str(f))
    assert err.message.startswith(f"{f}:3:")
    assert "syntax error" in err.message
    assert "def f(x:" in err.detail and "^" in err.detail


def test_syntax_error_in_imported_sibling(tmp_path: Path) -> None:
    sib = f"badsib_{uuid.uuid4().hex[:8]}"
    write(tmp_path / f"{sib}.py", "x = (\n")
    f = write(tmp_path / "imports_bad.py", f"import {sib}\n")
    err = load_error(str(f))
    assert err.message.startswith(f"importing {f} failed: syntax error at ")
    assert f"{sib}.py:1" in err.message


def test_exception_while_importing(tmp_path: Path) -> None:
    f = write(tmp_path / "raises.py", """\
        import torch

        def setup():
            raise ValueError("bad config value")

        setup()
        """)
    err = load_error(str(f))
    assert err.message == f"importing {f} raised ValueError: bad config value"
    assert err.detail.startswith(USER_TRACEBACK_HEADER)
    assert f'File "{f}", line 6' in err.detail      # the module-level call
    assert f'File "{f}", line 4, in setup' in err.detail
    assert "ValueError: bad config value" in err.detail
    # irviz and importlib frames are trimmed
    assert "irviz" not in err.detail.replace(str(tmp_path), "")
    assert "importlib" not in err.detail
    assert "Traceback (most recent call last)" not in err.detail


def test_import_error_inside_module_is_user_code_not_module_not_found(tmp_path: Path) -> None:
    f = write(tmp_path / "needs_dep.py", "import torch\nimport no_such_dependency_xyz\n")
    err = load_error(str(f))
    assert err.message == (f"importing {f} raised ModuleNotFoundError: "
                           "No module named 'no_such_dependency_xyz'")
    assert f'File "{f}", line 2' in err.detail


def test_module_not_found() -> None:
    err = load_error("no_such_pkg_xyz.models:Net")
    assert err.message == "no module named 'no_such_pkg_xyz' (from 'no_such_pkg_xyz.models:Net')"


def test_module_raising_inside(package: str, tmp_path: Path) -> None:
    write(tmp_path / package / "bad.py", "import does_not_exist_qq\n")
    err = load_error(f"{package}.bad:X")
    assert err.message == (f"importing {package}.bad raised ModuleNotFoundError: "
                           "No module named 'does_not_exist_qq'")
    assert "bad.py\", line 1" in err.detail


def test_unknown_name(models: Path) -> None:
    err = load_error(f"{models}:Cel")
    assert err.message == f"{models} has no attribute 'Cel'"
    assert err.detail.splitlines() == [
        "models it defines: Cell, NeedsArgs, double, scripted_fn, cell, scripted_cell, make_model",
        "other public callables: helper, make_sized, make_number, make_boom, batch",
    ]
    assert err.hint == f"did you mean 'Cell'? ({models}:Cell)"


def test_unknown_name_without_close_match(models: Path) -> None:
    err = load_error(f"{models}:zzzzzz")
    assert err.hint.startswith(f"pick one of the names above, e.g. {models}:Cell")


def test_class_needing_args_by_name(models: Path) -> None:
    err = load_error(f"{models}:NeedsArgs")
    assert err.message == ("cannot create NeedsArgs without arguments: "
                           "its constructor is NeedsArgs(width, depth=2)")
    assert f"{models}:make_model()" in err.hint and "factory" in err.hint


RAISING = """\
import torch

class Good(torch.nn.Module):
    def forward(self, x):
        return x

class Exploding(torch.nn.Module):
    def __init__(self):
        super().__init__()
        raise RuntimeError("no GPU here")

    def forward(self, x):
        return x
"""


def test_constructor_raising_in_file_form_is_skipped(tmp_path: Path) -> None:
    f = write(tmp_path / "exploding.py", RAISING)
    result = load(str(f))
    assert [t.name for t in result.targets] == ["Good"]
    assert result.skipped == [("Exploding", "its constructor raised RuntimeError: no GPU here")]


def test_constructor_raising_by_name(tmp_path: Path) -> None:
    f = write(tmp_path / "exploding.py", RAISING)
    err = load_error(f"{f}:Exploding")
    assert err.message == f"creating {f}:Exploding raised RuntimeError: no GPU here"
    assert err.detail.startswith(USER_TRACEBACK_HEADER)
    assert f'File "{f}", line 10, in __init__' in err.detail


def test_no_models(tmp_path: Path) -> None:
    f = write(tmp_path / "empty_models.py", "import torch\nX = 1\n")
    err = load_error(str(f))
    assert err.message == f"{f} defines no models"
    assert f"{f}:NAME" in err.hint


def test_no_loadable_models_lists_the_skipped(tmp_path: Path) -> None:
    f = write(tmp_path / "only_args.py", """\
        import torch
        class Only(torch.nn.Module):
            def __init__(self, n):
                super().__init__()
            def forward(self, x):
                return x
        """)
    err = load_error(str(f))
    assert err.message == f"{f} defines no models irviz can load by itself"
    assert "Only: its constructor needs arguments: Only(n)" in err.detail


def test_factory_returning_non_module(models: Path) -> None:
    err = load_error(f"{models}:make_number()")
    assert err.message == f"{models}:make_number() returned int, not a model"


def test_factory_raising(models: Path) -> None:
    err = load_error(f"{models}:make_boom()")
    assert err.message == f"calling {models}:make_boom() raised RuntimeError: factory exploded"
    assert "in make_boom" in err.detail


@pytest.mark.parametrize("suffix, message", [
    (":make_sized(width)", "the arguments of make_sized() in '{spec}' must be Python literals"),
    (":make_sized(*xs)", "the arguments of make_sized() in '{spec}' must be Python literals"),
    (":a.b", "cannot parse 'a.b' in '{spec}': expected NAME or NAME(args)"),
    (":make_sized(", "cannot parse 'make_sized(' in '{spec}': expected NAME or NAME(args)"),
    (":", "nothing after ':' in '{spec}'"),
    (":batch", None),  # a plain function is fine by name
    (":OrderedDict", "{models}:OrderedDict is a class, but not a torch.nn.Module subclass"),
])
def test_bad_name_syntax(models: Path, suffix: str, message) -> None:
    spec = f"{models}{suffix}"
    if message is None:
        assert summary(load(spec)) == [("batch", "function")]
        return
    err = load_error(spec)
    assert err.message == message.format(spec=spec, models=models)


def test_attribute_that_is_not_a_model(tmp_path: Path) -> None:
    f = write(tmp_path / "consts.py", "import torch\nWIDTH = 3\nT = torch.ones(1)\n")
    assert load_error(f"{f}:WIDTH").message == f"{f}:WIDTH is a int, not a model"
    assert load_error(f"{f}:T").message == f"{f}:T is a Tensor, not a model"
    assert load_error(f"{f}:WIDTH()").message == f"{f}:WIDTH is a int, not callable"


# --------------------------------------------------------------------------- bad archives


def _make_bad_archive(kind: str, path: Path, models: Path) -> None:
    if kind == "pickle":
        torch.save({"weight": torch.ones(2)}, str(path))
    elif kind == "pickled_module":
        torch.save(torch.nn.Linear(2, 2), str(path))
    elif kind == "legacy":
        torch.save({"weight": torch.ones(2)}, str(path), _use_new_zipfile_serialization=False)
    elif kind == "truncated":
        good = path.with_name("good.pt")
        torch.jit.save(load(f"{models}:scripted_cell").targets[0].obj, str(good))
        data = good.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "text":
        path.write_text("this is not a model\n")
    elif kind == "other_zip":
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr("readme.txt", "hi")


@pytest.mark.parametrize("kind, diagnosis", [
    ("pickle", "it looks like a torch.save() checkpoint (weights or a pickled module)"),
    ("pickled_module", "it looks like a torch.save() checkpoint (weights or a pickled module)"),
    ("legacy", "it looks like a pickle (a legacy torch.save() file), not a zip archive"),
    ("truncated", "the zip archive is truncated or corrupted"),
    ("empty", "the file is empty"),
    ("text", "it is not a zip archive"),
    ("other_zip", "the zip archive holds no TorchScript code"),
])
def test_bad_archives(tmp_path: Path, models: Path, kind: str, diagnosis: str) -> None:
    path = tmp_path / f"{kind}.pt"
    _make_bad_archive(kind, path, models)
    err = load_error(str(path))
    assert err.message == f"{path} is not a TorchScript archive: {diagnosis}"
    assert err.detail.startswith("torch.jit.load said: ")
    assert "\n" not in err.detail
    assert "torch.jit.save()" in err.hint and "ScriptModule.save()" in err.hint


def test_archive_with_name_part(tmp_path: Path, models: Path) -> None:
    archive = tmp_path / "m.pt"
    torch.jit.save(load(f"{models}:scripted_cell").targets[0].obj, str(archive))
    err = load_error(f"{archive}:forward")
    assert err.message == f"{archive} is a TorchScript archive; it takes no ':forward' part"


# --------------------------------------------------------------------------- inputs


def one(spec: str) -> Target:
    result = load(spec)
    assert len(result.targets) == 1
    return result.targets[0]


def shapes(inputs) -> list:
    assert not inputs.kwargs
    return [tuple(t.shape) for t in inputs.args]


@pytest.mark.parametrize("expr, expected", [
    ("torch.rand(3, 4)", [(3, 4)]),
    ("torch.rand(3, 4), torch.rand(2)", [(3, 4), (2,)]),
    ("[torch.rand(1)]", [(1,)]),
    ("batch()", [(2, 2), (2, 2)]),          # the user module's globals are in scope
    ("  torch.ones(1)  ", [(1,)]),
])
def test_inputs_expression(models: Path, expr: str, expected) -> None:
    inputs = resolve_inputs(one(f"{models}:Cell"), expr)
    assert isinstance(inputs, ExampleInputs)
    assert shapes(inputs) == expected


def test_inputs_expression_nested(models: Path) -> None:
    inputs = resolve_inputs(one(f"{models}:Cell"),
                            "torch.rand(1), (torch.rand(2), [torch.rand(3)], {'k': torch.rand(4)})")
    # Cell takes (x, h): two positional inputs, the second a nest holding a dict
    assert len(inputs.args) == 2 and isinstance(inputs.args[1][2], dict) and not inputs.kwargs


@pytest.mark.parametrize("expr, message", [
    ("3", "--inputs gave int, but irviz needs a tensor, a tuple of tensors or a dict of them by argument name"),
    ("None", "--inputs gave None, but irviz needs a tensor, a tuple of tensors or a dict of them by argument name"),
    ("torch.rand(2), 3", "element [1] of --inputs is int, not a tensor"),
    ("torch.rand(2), (torch.rand(1), 'x')", "element [1][1] of --inputs is str, not a tensor"),
    ("{'a': torch.rand(1)}", "--inputs: Cell's forward() has no argument 'a'"),
    ("{'x': torch.rand(1), 'h': 3}", "element ['h'] of --inputs is int, not a tensor"),
    ("(torch.rand(1),), {'x': torch.rand(1)}",
     "--inputs do not fit Cell's forward(): multiple values for argument 'x'"),
    ("torch.rand(3, 4", "--inputs is not a valid Python expression: '(' was never closed"),
    ("torch.rand(3,, 4)", "--inputs is not a valid Python expression: invalid syntax"),
    ("1 / 0", "evaluating --inputs raised ZeroDivisionError: division by zero"),
    ("nope(3)", "evaluating --inputs raised NameError: name 'nope' is not defined"),
])
def test_inputs_expression_errors(models: Path, expr: str, message: str) -> None:
    with pytest.raises(InputsError) as info:
        resolve_inputs(one(f"{models}:Cell"), expr)
    err = info.value
    assert err.message == message
    if "not a valid" in message:
        assert expr in err.detail and "^" in err.detail
    if "gave" in message:
        assert 'torch.rand(3, 4), torch.rand(3, 4)' in err.hint


def test_inputs_syntax_error_caret_position(models: Path) -> None:
    with pytest.raises(InputsError) as info:
        resolve_inputs(one(f"{models}:Cell"), "torch.rand(3,, 4)")
    line, caret = info.value.detail.splitlines()
    assert line.strip() == "torch.rand(3,, 4)"
    assert caret.index("^") == line.index(",,") + 1


@pytest.mark.parametrize("suffix, expected", [
    (":Cell", [(3, 4), (3, 4)]),       # dict value: zero-argument callable
    (":double", [(2,)]),               # dict value: tuple
    (":make_model()", [(5,)]),         # factory: key without "()"; value: a tensor
    (":cell", None),                   # no entry: None, not an error
    (":scripted_fn", None),
])
def test_inputs_convention_dict(models: Path, suffix: str, expected) -> None:
    inputs = resolve_inputs(one(f"{models}{suffix}"), None)
    assert (None if inputs is None else shapes(inputs)) == expected


def test_inputs_convention_dict_key_with_parentheses_wins(tmp_path: Path) -> None:
    f = write(tmp_path / "fact.py", """\
        import torch
        def make():
            return torch.nn.ReLU()
        example_inputs = {"make()": (torch.rand(1),), "make": (torch.rand(2),)}
        """)
    assert shapes(resolve_inputs(one(f"{f}:make()"), None)) == [(1,)]


def test_file_form_calls_factories_named_with_parentheses(tmp_path: Path) -> None:
    f = write(tmp_path / "fact2.py", """\
        import torch
        def make():
            return torch.nn.ReLU()
        example_inputs = {"make()": (torch.rand(1),), "ghost": torch.rand(1)}
        """)
    result = load(str(f))
    assert summary(result) == [("make()", "module")]
    assert result.skipped == [("ghost", f"named in example_inputs, but {f} defines no 'ghost'")]


def test_inputs_convention_function(tmp_path: Path) -> None:
    f = write(tmp_path / "fn_conv.py", """\
        import torch
        class A(torch.nn.Module):
            def forward(self, x):
                return x
        class B(torch.nn.Module):
            def forward(self, x, y):
                return x + y
        class C(torch.nn.Module):
            def forward(self, x):
                return x
        def example_inputs(name):
            if name == "A":
                return torch.rand(1)
            if name == "B":
                return [torch.rand(2), torch.rand(2)]
            return None
        """)
    targets = {t.name: t for t in load(str(f)).targets}
    assert list(targets) == ["A", "B", "C"]
    assert shapes(resolve_inputs(targets["A"], None)) == [(1,)]
    assert shapes(resolve_inputs(targets["B"], None)) == [(2,), (2,)]
    assert resolve_inputs(targets["C"], None) is None


def test_inputs_convention_zero_argument_function(tmp_path: Path) -> None:
    f = write(tmp_path / "fn0.py", """\
        import torch
        class A(torch.nn.Module):
            def forward(self, x):
                return x
        def example_inputs():
            return (torch.rand(7),)
        """)
    assert shapes(resolve_inputs(one(str(f)), None)) == [(7,)]


def test_inputs_samples() -> None:
    targets = {t.name: t for t in load(str(SAMPLES / "my_cell.py")).targets}
    assert shapes(resolve_inputs(targets["MyCell"], None)) == [(3, 4), (3, 4)]
    targets = {t.name: t for t in load(str(SAMPLES / "fork_basics.py")).targets}
    assert shapes(resolve_inputs(targets["example_loop"], None)) == [(1,)]


def test_inputs_missing_convention(tmp_path: Path) -> None:
    f = write(tmp_path / "noconv.py", """\
        import torch
        class A(torch.nn.Module):
            def forward(self, x):
                return x
        """)
    assert resolve_inputs(one(str(f)), None) is None


@pytest.mark.parametrize("body, message", [
    ('example_inputs = {"A": 3}',
     "example_inputs['A'] in {f} gave int, but irviz needs a tensor, a tuple of tensors or a dict of them by argument name"),
    ('example_inputs = {"A": lambda: (torch.rand(1), "s")}',
     "element [1] of example_inputs['A'] in {f} is str, not a tensor"),
    ('example_inputs = {"A": lambda: 1 / 0}',
     "example_inputs['A']() in {f} raised ZeroDivisionError: division by zero"),
    ("def example_inputs(name):\n    raise KeyError(name)",
     "example_inputs('A') in {f} raised KeyError: 'A'"),
    ("def example_inputs(name):\n    return 5",
     "example_inputs('A') in {f} gave int, but irviz needs a tensor, a tuple of tensors or a dict of them by argument name"),
    ("example_inputs = [torch.rand(1)]",
     "example_inputs in {f} is list; it must be a dict from model name to inputs "
     "or a function example_inputs(name)"),
])
def test_inputs_convention_errors(tmp_path: Path, body: str, message: str) -> None:
    f = write(tmp_path / "badconv.py",
              "import torch\nclass A(torch.nn.Module):\n    def forward(self, x):\n"
              "        return x\n" + body + "\n")
    with pytest.raises(InputsError) as info:
        resolve_inputs(one(f"{f}:A"), None)
    assert info.value.message == message.format(f=f)
    if "raised" in message:
        assert info.value.detail.startswith(USER_TRACEBACK_HEADER)
        assert str(f) in info.value.detail


def test_inputs_archive(tmp_path: Path, models: Path) -> None:
    archive = tmp_path / "cell.pt"
    torch.jit.save(load(f"{models}:scripted_cell").targets[0].obj, str(archive))
    target = one(str(archive))
    assert resolve_inputs(target, None) is None
    assert shapes(resolve_inputs(target, "torch.rand(2), torch.rand(2)")) == [(2,), (2,)]


def test_a_torchscript_interface_is_no_model(tmp_path: Path) -> None:
    path = tmp_path / f"iface_{uuid.uuid4().hex[:8]}.py"
    path.write_text(textwrap.dedent("""
        import torch

        @torch.jit.interface
        class Cell(torch.nn.Module):
            def forward(self, x: torch.Tensor) -> torch.Tensor:
                pass

        class Doubler(torch.nn.Module):
            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return x * 2

        class Holder(torch.nn.Module):
            cell: Cell

            def __init__(self):
                super().__init__()
                self.cell = Doubler()

            def forward(self, x):
                return self.cell.forward(x) + 1
    """))
    result = load(str(path))   # scripting Cell again failed: "class already defined"
    assert [t.name for t in result.targets] == ["Doubler", "Holder"]
    assert [(n, "interface" in why) for n, why in result.skipped] == [("Cell", True)]
    with pytest.raises(ModelLoadError, match="TorchScript interface"):
        load(f"{path}:Cell")


def test_a_script_module_object_is_located_by_the_class_it_was_scripted_from() -> None:
    from irviz.frontends.loader import target_of
    target = target_of(torch.jit.script(torch.nn.LSTM(4, 8)))
    # not torch/jit/_script.py, where every RecursiveScriptModule's class lives
    assert target.spec == "rnn.py:LSTM" and target.source_file.name == "rnn.py"
    traced = target_of(torch.jit.trace(torch.nn.Linear(2, 3), torch.rand(1, 2)))
    assert traced.spec == "linear.py:Linear"
