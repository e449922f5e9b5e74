"""Deployment-optimized graphs: frozen modules and archives, optimize_for_inference, .ptl
files, and `irviz diff --right-optimize` naming what the optimization did."""
from __future__ import annotations

import json
import textwrap

import pytest
import torch
from click.testing import CliRunner

from irviz.api import visualize
from irviz.cli import main
from irviz.ir.model import CONSTANT_KINDS

NET = textwrap.dedent("""
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(c)
            self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(c)

        def forward(self, x):
            y = torch.relu(self.bn1(self.conv1(x)))
            return torch.relu(x + self.bn2(self.conv2(y)))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 8, 3, padding=1, bias=False)
            self.bn = nn.BatchNorm2d(8)
            self.layer1 = Block(8)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(8, 10)

        def forward(self, x):
            x = torch.relu(self.bn(self.stem(x)))
            x = self.layer1(x)
            return self.fc(torch.flatten(self.pool(x), 1))

    class NoNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3)

        def forward(self, x):
            return torch.relu(self.conv(x))

    class BasicBlock(nn.Module):   # torchvision's, smaller
        def __init__(self, cin, cout, stride=1):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                                nn.BatchNorm2d(cout))

        def forward(self, x):
            identity = x
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            if self.downsample is not None:
                identity = self.downsample(x)
            return self.relu(out + identity)

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 8, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(8)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            self.layer1 = nn.Sequential(BasicBlock(8, 8), BasicBlock(8, 8))
            self.layer2 = nn.Sequential(BasicBlock(8, 16, 2), BasicBlock(16, 16))
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(16, 10)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer2(self.layer1(x))
            return self.fc(torch.flatten(self.avgpool(x), 1))

    example_inputs = {"Net": lambda: (torch.rand(2, 3, 16, 16),),
                      "NoNorm": lambda: (torch.rand(2, 3, 16, 16),),
                      "ResNet": lambda: (torch.rand(2, 3, 32, 32),)}
""")


@pytest.fixture
def net_file(tmp_path):
    path = tmp_path / "resnetish.py"
    path.write_text(NET)
    return path


def _net(net_file):
    import importlib.util

    spec = importlib.util.spec_from_file_location("resnetish_for_test", net_file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.manual_seed(0)
    return module.Net().eval()


def _drawn(G):
    return {n: d for n, d in G.nodes(data=True) if not d.get("hidden")
            and d["kind"] not in ("prim::Param", "prim::Return")}


def _check_optimized(G, conv_kind):
    constants = [d for _, d in G.nodes(data=True) if d["kind"] in CONSTANT_KINDS]
    assert constants and all(d.get("hidden") for d in constants), "a constant drawn as an op"
    drawn = _drawn(G)
    convs = [d for d in drawn.values() if d["kind"] == conv_kind]
    assert len(convs) == 3
    assert all(d["outputs"][0]["shape"] == [2, 8, 16, 16] for d in convs)
    # every drawn tensor outside the size check's failing branch ran and has its shape
    missing = [n for n, d in drawn.items() if "/b1/" not in n
               for o in d["outputs"] if o["type"] == "Tensor" and o.get("shape") is None]
    assert not missing, missing
    return drawn


def test_a_frozen_model_and_its_archive_draw_with_shapes_and_folded_weights(net_file,
                                                                          tmp_path):
    frozen = torch.jit.freeze(torch.jit.script(_net(net_file)))
    x = torch.rand(2, 3, 16, 16)
    [view] = visualize(frozen, inputs=(x,))
    drawn = _check_optimized(view.graph, "aten::conv2d")
    dot = view.dot()
    assert "weight=stem.weight (bn folded): 8×3×3×3 float32" in dot
    path = tmp_path / "frozen.pt"
    frozen.save(str(path))
    [loaded] = visualize(str(path), inputs=(x,))
    assert sorted(d["kind"] for d in _drawn(loaded.graph).values()) == \
        sorted(d["kind"] for d in drawn.values())
    _check_optimized(loaded.graph, "aten::conv2d")
    # a saved frozen archive keeps no weight names (torch stores CONSTANTS.c0): the shape,
    # once, stands for the weight
    archive_dot = loaded.dot()
    assert "weight=8×3×3×3 float32" in archive_dot and "tensor(" not in archive_dot


def test_optimize_for_inference_draws_mkldnn_ops_by_name(net_file, tmp_path):
    optimized = torch.jit.optimize_for_inference(torch.jit.script(_net(net_file)))
    [view] = visualize(optimized, inputs=(torch.rand(2, 3, 16, 16),))
    G = view.graph
    _check_optimized(G, "prim::mkldnn_convolution")
    labels = {d["kind"]: d["label"] for d in _drawn(G).values()}
    assert labels["prim::mkldnn_convolution"] == "conv (mkldnn)"
    assert labels["aten::to_mkldnn"] == "to mkldnn layout"
    assert labels["aten::to_dense"] == "to dense layout"
    svg = tmp_path / "inference.svg"
    svg.write_bytes(view.svg())
    assert "ConstantMKLDNNTensor" not in svg.read_text()


def test_a_lite_interpreter_file_renders(net_file, tmp_path):
    path = tmp_path / "net.ptl"
    torch.jit.script(_net(net_file))._save_for_lite_interpreter(str(path))
    out = tmp_path / "net.json"
    result = CliRunner().invoke(main, ["render", str(path), "--inputs",
                                       "torch.rand(1, 3, 8, 8)", "--format", "json",
                                       "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    nodes = json.loads(out.read_text())["nodes"]
    fc = [n for n in nodes if n["kind"] == "aten::linear"]
    assert fc and fc[0]["outputs"][0]["shape"] == [1, 10]


def test_diff_right_optimize_names_each_folded_batch_norm(net_file):
    runner = CliRunner()
    result = runner.invoke(main, ["diff", f"{net_file}:Net", "--right-optimize", "freeze"])
    assert result.exit_code == 1, result.stderr
    out = result.stdout
    assert "batch norm folded (3):" in out
    for pair in ("stem + bn -> one conv2d", "layer1.conv1 + layer1.bn1 -> one conv2d",
                 "layer1.conv2 + layer1.bn2 -> one conv2d"):
        assert pair in out, out
    assert "BatchNorm2d" not in out.replace("layer1: Block", "")   # not listed again
    result = runner.invoke(main, ["diff", f"{net_file}:Net", "--right-optimize", "inference",
                                  "--format", "json"])
    assert result.exit_code == 1, result.stderr
    steps = json.loads(result.stdout)["optimization"]["steps"]
    kinds = [s["kind"] for s in steps]
    assert kinds.count("batch norm folded") == 3
    layout = [s["text"] for s in steps if s["kind"] == "layout"]
    assert "+ to mkldnn layout before stem (conv (mkldnn))" in layout
    # an inlined library op is named by the module it ran in, not by torch's source line
    assert "+ to dense layout after pool (adaptive_avg_pool2d)" in layout, layout
    assert not any("functional.py" in t for t in layout), layout
    assert "fc: linear -> matmul + add (the weight transposed once, ahead of time)" in \
        [s["text"] for s in steps]


def test_without_batch_norms_nothing_is_folded_and_the_model_is_untouched(net_file):
    import importlib.util

    result = CliRunner().invoke(main, ["diff", f"{net_file}:NoNorm", "--right-optimize",
                                       "freeze"])
    assert result.exit_code in (0, 1), result.stderr
    assert "batch norm folded" not in result.stdout
    from irviz.frontends.loader import target_of
    from irviz.frontends.optimize import optimized_pair

    spec = importlib.util.spec_from_file_location("resnetish_untouched", net_file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.Net()   # training mode, as constructed
    before = {k: v.clone() for k, v in model.state_dict().items()}
    optimized_pair(target_of(model), "freeze")
    assert model.training
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_mobile_without_xnnpack_is_a_clear_user_error(net_file):
    import torch.backends.xnnpack

    result = CliRunner().invoke(main, ["diff", f"{net_file}:Net", "--right-optimize", "mobile"])
    if torch.backends.xnnpack.enabled:
        assert result.exit_code == 1, result.stderr
        assert "conv2d (prepacked" in result.stdout
    else:
        assert result.exit_code == 2, result.output
        assert "built without XNNPACK" in result.stderr
        assert "Traceback" not in result.stderr


def test_the_freeze_picture_draws_inlined_calls_as_kept_not_removed(net_file, tmp_path):
    """Freezing inlines every module call: ``stem: Conv2d`` still runs (its weight now holds
    the batch norm, so it is changed), ``fc: Linear`` is the same, only the batch norms
    are removed."""
    import re

    out = tmp_path / "freeze.svg"
    result = CliRunner().invoke(main, ["diff", f"{net_file}:Net", "--right-optimize", "freeze",
                                       "--format", "svg", "-o", str(out)])
    assert result.exit_code == 1, result.stderr
    svg = out.read_text().replace("&#45;", "-")
    # one box per module call: its class names its diff status, its tooltip the call
    status = {name: cls for cls, name in re.findall(
        r'<g id="irviz:box:[^"]*" class="node irviz-module[^"]* irviz-diff-(\w+)[^"]*">\s*<title>[^<]*</title>\s*'
        r'<g id="a_irviz:box:[^"]*"><a xlink:title="method call: ([\w.]+): ', svg)}
    assert status["bn"] == status["layer1.bn1"] == status["layer1.bn2"] == "removed", status
    assert status["stem"] == status["layer1.conv1"] == status["layer1.conv2"] == "changed"
    assert status["fc"] == "same", status


def test_a_bytecode_only_lite_file_says_what_can_and_cannot_be_drawn(net_file, tmp_path):
    """A lite-interpreter zip without the TorchScript code beside its bytecode (what is left
    when a tool keeps only what the mobile runtime reads): it runs, it cannot be drawn."""
    import zipfile

    full = tmp_path / "full.ptl"
    torch.jit.script(_net(net_file))._save_for_lite_interpreter(str(full))
    path = tmp_path / "bytecode_only.ptl"
    with zipfile.ZipFile(full) as zin, zipfile.ZipFile(path, "w") as zout:
        for info in zin.infolist():
            if "/code/" not in info.filename and not info.filename.endswith("/constants.pkl"):
                zout.writestr(info, zin.read(info))
    from torch.jit.mobile import _load_for_lite_interpreter

    assert _load_for_lite_interpreter(str(path))(torch.rand(1, 3, 8, 8)).shape == (1, 10)
    out = tmp_path / "bytecode_only.svg"
    result = CliRunner().invoke(main, ["render", str(path), "--inputs", "torch.rand(1, 3, 8, 8)",
                                       "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert "holds only lite-interpreter bytecode" in result.stderr
    assert "cannot be drawn" in result.stderr and "aten::conv2d" in result.stderr
    assert "_save_for_lite_interpreter" in result.stderr   # the way to a drawable file
    assert "Traceback" not in result.stderr and not out.exists()


def test_a_flatbuffer_lite_file_renders(net_file, tmp_path):
    path = tmp_path / "net_flatbuffer.ptl"
    torch.jit.script(_net(net_file))._save_for_lite_interpreter(str(path), _use_flatbuffer=True)
    [view] = visualize(str(path), inputs=(torch.rand(1, 3, 8, 8),))
    fc = [d for d in view.graph.nodes.values() if d["kind"] == "aten::linear"]
    assert fc and fc[0]["outputs"][0]["shape"] == [1, 10]


QUANTIZED = textwrap.dedent("""
    import torch
    from torch import nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(16, 32)
            self.fc2 = nn.Linear(32, 4)

        def forward(self, x):
            return self.fc2(torch.relu(self.fc1(x)))

    def frozen_quantized():
        model = torch.ao.quantization.quantize_dynamic(MLP().eval(), {nn.Linear},
                                                       dtype=torch.qint8)
        return torch.jit.freeze(torch.jit.script(model))

    example_inputs = {"frozen_quantized": lambda: (torch.rand(2, 16),)}
""")


def test_a_frozen_packed_object_folds_by_its_name_not_its_address(tmp_path):
    """Freezing a dynamically quantized model folds its packed weights into constant
    objects (as optimize_for_mobile folds XNNPACK op contexts): hidden, and read as the
    attribute they were, never ``<torch.ScriptObject object at 0x...>``."""
    from irviz.ir.model import object_constant_label

    path = tmp_path / "quantized.py"
    path.write_text(QUANTIZED)
    out = tmp_path / "q.json"
    result = CliRunner().invoke(main, ["render", f"{path}:frozen_quantized()", "--format",
                                       "json", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    nodes = json.loads(out.read_text())["nodes"]
    packed = [n for n in nodes if n["kind"] == "prim::Constant"
              and n["outputs"][0]["type"].endswith("LinearPackedParamsBase")]
    assert sorted(n["label"] for n in packed) == ["fc1._packed_params", "fc2._packed_params"]
    assert all(n["hidden"] for n in packed)
    linears = [n for n in nodes if n["kind"] == "quantized::linear_dynamic"]
    assert [n["label"] for n in linears] == ["linear (dynamic quantized)"] * 2
    assert [n["outputs"][0]["shape"] for n in linears] == [[2, 32], [2, 4]]
    svg = tmp_path / "q.svg"
    result = CliRunner().invoke(main, ["render", f"{path}:frozen_quantized()", "-o", str(svg)])
    assert result.exit_code == 0, result.stderr
    assert "W_prepack=fc1._packed_params" in svg.read_text()
    assert "ScriptObject" not in svg.read_text()
    # an unnamed one (a context a pass made) reads as its class
    assert object_constant_label("12", "__torch__.torch.classes.xnnpack.Conv2dOpContext") == \
        "Conv2dOpContext"


def test_a_torchvision_style_resnet_diff_is_one_step_per_transformation(net_file):
    """Downsample branches, ReLU modules called twice per block, Sequential stages: ten
    batch norms folded, each ReLU's ``if self.inplace`` decided once for the class, the
    Sequentials inlined - and nothing left over as noise."""
    result = CliRunner().invoke(main, ["diff", f"{net_file}:ResNet", "--right-optimize",
                                       "freeze", "--format", "json"])
    assert result.exit_code == 1, result.stderr
    steps = json.loads(result.stdout)["optimization"]["steps"]
    texts = [s["text"] for s in steps]
    assert [s["kind"] for s in steps].count("batch norm folded") == 10, texts
    assert any(t.startswith("layer2.0.downsample.0 + layer2.0.downsample.1 -> one conv2d")
               for t in texts), texts
    ahead = [t for s, t in zip(steps, texts) if s["kind"] == "ahead of time"]
    assert len(ahead) == 3 and ahead[0].startswith(
        "ReLU ×9 (relu, layer1.0.relu, layer1.1.relu, layer2.0.relu, layer2.1.relu): if, relu "
        "gone"), ahead
    assert "module calls inlined: layer1: Sequential, layer2: Sequential" in texts
    assert not [s for s in steps if s["kind"] == "other"], texts
    result = CliRunner().invoke(main, ["diff", f"{net_file}:ResNet", "--right-optimize",
                                       "inference"])
    assert result.exit_code == 1, result.stderr
    assert "+ broadcast (mkldnn) before add_ at resnetish.py:" in result.stdout
    assert result.stdout.count("broadcast (mkldnn)") == 1 and "(×4)" in result.stdout
    assert "\nother (" not in result.stdout, result.stdout


def test_diff_output_extension_chooses_the_format(net_file, tmp_path):
    """``irviz diff ... -o diff.svg`` draws the picture (it wrote the text into the .svg)."""
    for ext, head in (("svg", "<?xml"), ("json", "{"), ("txt", "freeze: Net")):
        out = tmp_path / f"diff.{ext}"
        result = CliRunner().invoke(main, ["diff", f"{net_file}:Net", "--right-optimize",
                                           "freeze", "-o", str(out)])
        assert result.exit_code == 1, result.stderr
        assert out.read_text().startswith(head), (ext, out.read_text()[:80])


def test_right_optimize_with_another_mode_is_refused_not_ignored(net_file):
    result = CliRunner().invoke(main, ["diff", f"{net_file}:Net", "--right-optimize", "freeze",
                                       "--left-mode", "trace"])
    assert result.exit_code == 2, result.output
    assert "drop --left-mode trace" in result.stderr and "Traceback" not in result.stderr
