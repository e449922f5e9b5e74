"""A scripted archive is drawn like the live model it was saved from (issue 30): function
calls (``F.relu``, ``F.batch_norm``) expanded from the archive's own compilation unit, at
the lines of the archive's debug info, and ``irviz diff archive.pt model.py:Model`` of the
same model finds nothing. Also the diff's reading of torch's code: a library op named at
two lines by script and trace is one op, a removed torch.nn module is one entry, and a
default printed two ways is no change. Real torch, real archives, the real CLI."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from irviz.analyses.graph_match import _spelled_alike, match_graphs
from irviz.cli import main
from irviz.report.diff import Side, to_text
from irviz.workspace import Workspace

MODEL = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.bn = nn.BatchNorm2d(8)
        self.drop = nn.Dropout(0.1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        x = F.relu(self.bn(self.conv(x)))
        x = F.batch_norm(x, self.bn.running_mean, self.bn.running_var)
        x = x.mean(dim=(2, 3))
        x = self.drop(x)
        return F.relu(self.fc(x))


example_inputs = {"Model": lambda: (torch.rand(2, 3, 8, 8),)}
'''


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> tuple[Path, Path]:
    """model.py and the archive a user's own process wrote from it with torch.jit.save."""
    root = tmp_path_factory.mktemp("archive")
    (root / "model.py").write_text(MODEL)
    subprocess.run([sys.executable, "-c", "import torch; from model import Model; "
                    "torch.jit.save(torch.jit.script(Model().eval()), 'model.pt')"],
                   cwd=root, check=True, capture_output=True)
    return root / "model.py", root / "model.pt"


def _graph(spec: str, mode: str = "script"):
    ws = Workspace()
    [target] = ws.targets(spec)
    return ws.graph(ws.capture(target, mode))


def _place(location: str | None) -> str | None:
    if not location:
        return None
    path, line, col = location.rsplit(":", 2)
    return f"{Path(path).name}:{line}:{col}"


def _drawn(G) -> tuple[Counter, Counter]:
    """What the picture is made of: the visible nodes (kind, label, module, place) and
    the call containers (kind, label, module, call site)."""
    nodes = Counter((d["kind"], d["label"], d["scope"], _place(d.get("source")))
                    for _, d in G.nodes(data=True) if not d.get("hidden"))
    calls = Counter((info["kind"], info["label"], info.get("module"),
                     _place(info.get("user_source")))
                    for info in G.graph["blocks"].values()
                    if info["kind"] in ("method", "function"))
    return nodes, calls


def test_archive_is_drawn_with_the_boxes_of_its_live_model(saved):
    model, archive = saved
    live, loaded = _graph(f"{model}:Model"), _graph(str(archive))
    assert loaded.graph["mode"] == "archive"
    live_nodes, live_calls = _drawn(live)
    archive_nodes, archive_calls = _drawn(loaded)
    assert archive_calls == live_calls
    assert archive_nodes == live_nodes
    # every function call is expanded: no bare call box is left
    assert not [d for _, d in loaded.nodes(data=True) if d["kind"] == "prim::CallFunction"]
    functions = sorted(info["label"] for info in loaded.graph["blocks"].values()
                       if info["kind"] == "function")
    assert functions.count("relu()") == 2 and "batch_norm()" in functions


def test_archive_calls_have_the_user_lines_of_its_debug_info(saved):
    """torch gives an archive's F.relu call no original line (it looks it up at the
    callee's name); the debug info holds it: the call sits at the user's ``F.relu``."""
    _, archive = saved
    loaded = _graph(str(archive))
    relu_calls = sorted(_place(info["user_source"]) for info in loaded.graph["blocks"].values()
                        if info["kind"] == "function" and info["label"] == "relu()")
    assert relu_calls == ["model.py:15:13", "model.py:19:16"]
    # the expanded body has torch's own lines, from the same debug info
    body = [d for _, d in loaded.nodes(data=True) if d["kind"] == "aten::relu"]
    assert body and all(Path(d["source"].rsplit(":", 2)[0]).name == "functional.py"
                        for d in body)


def test_archive_json_matches_the_live_json(saved, tmp_path):
    """The same comparison through the CLI's JSON output."""
    model, archive = saved
    outputs = []
    for spec in (f"{model}:Model", str(archive)):
        out = tmp_path / f"{len(outputs)}.json"
        result = CliRunner().invoke(main, ["render", spec, "--format", "json", "-o", str(out)])
        assert result.exit_code == 0, result.output
        data = json.loads(out.read_text())
        outputs.append(Counter((n["kind"], n["label"], n["scope"]) for n in data["nodes"]
                               if not n.get("hidden")))
    assert outputs[0] == outputs[1]


def test_diff_of_archive_against_its_source_is_empty(saved):
    model, archive = saved
    result = CliRunner().invoke(main, ["diff", str(archive), f"{model}:Model"])
    assert result.exit_code == 0, result.output
    assert "no difference" in result.output


def test_diff_of_archive_against_its_source_in_a_real_process(saved):
    model, archive = saved
    proc = subprocess.run([sys.executable, "-m", "irviz", "diff", "model.pt", "model.py:Model",
                           "--format", "json"], cwd=model.parent, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    assert data["added"] == data["removed"] == data["changed"] == []


# -- torch's own code in a diff -----------------------------------------------------------
def _files(tmp_path: Path, before: str, after: str) -> tuple[str, str]:
    specs = []
    for name, body in (("a", before), ("b", after)):
        path = tmp_path / f"{name}.py"
        path.write_text("import torch\nfrom torch import nn\nimport torch.nn.functional as F\n"
                        "\n\nclass M(nn.Module):\n" + textwrap.indent(textwrap.dedent(body),
                                                                      "    ")
                        + "\n\nexample_inputs = {'M': lambda: (torch.rand(3, 4),)}\n")
        specs.append(f"{path}:M")
    return specs[0], specs[1]


def _diff(left: str, right: str, left_mode="script", right_mode="script"):
    torch.manual_seed(0)
    return match_graphs(_graph(left, left_mode), _graph(right, right_mode))


def test_a_removed_dropout_is_one_entry(tmp_path):
    before, after = _files(tmp_path, """
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.drop = nn.Dropout(0.5)

        def forward(self, x):
            return self.drop(self.fc(x))
        """, """
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            return self.fc(x)
        """)
    d = _diff(before, after)
    assert [(e.label, e.kind) for e in d.removed] == [("drop: Dropout", "prim::CallMethod")]
    assert d.added == [] and d.changed == []
    assert d.counts()["removed"] == 1
    text = to_text(d, Side(before, "M", "script", 0), Side(after, "M", "script", 0))
    assert "- prim::CallMethod drop: Dropout" in text
    for internal in ("aten::lt", "prim::If", "RaiseException"):
        assert internal not in text
    assert "1 removed, 0 added" in text


def test_a_library_op_at_two_lines_is_one_op(tmp_path):
    """The script names F.relu's op at functional.py (inside the expanded call), the trace
    at the user's line: one op, paired, not removed plus added."""
    spec, _ = _files(tmp_path, """
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            return F.relu(self.fc(x))
        """, "def forward(self, x):\n    return x\n")
    d = _diff(spec, spec, "script", "trace")
    assert not [e for e in d.added + d.removed if e.kind in ("aten::relu", "aten::linear")]
    script = d.left
    [relu] = [n for n, data in script.nodes(data=True) if data["kind"] == "aten::relu"]
    assert relu in d.pairs
    assert d.added == []


def test_defaults_printed_two_ways_are_no_change(tmp_path):
    spec, _ = _files(tmp_path, """
        def forward(self, x):
            return x + torch.zeros(3, 4)
        """, "def forward(self, x):\n    return x\n")
    d = _diff(spec, spec, "script", "trace")
    assert not [c for c in d.changed if any(w.startswith(("pin_memory", "device", "layout"))
                                            for w in c.what)]
    assert d.equal


def test_spelled_alike_is_not_too_lenient():
    assert _spelled_alike("pin_memory", "None", "0")
    assert _spelled_alike("device", "None", "cpu")
    assert _spelled_alike("keepdim", "False", "0")
    assert not _spelled_alike("device", "None", "cuda:0")
    assert not _spelled_alike("dim", "None", "0")
    assert not _spelled_alike("alpha", "1", "2")


def test_debug_info_reader_builds_plain_data_only(tmp_path):
    """The debug info comes from the user's file: a pickle naming any global but torch's
    list markers is refused (no line), never run."""
    import pickle
    import zipfile

    from irviz.location import ArchiveDebugInfo

    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    archive = tmp_path / "evil.pt"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("evil/code/__torch__/m.py", "x = f(y)\n")
        zf.writestr("evil/code/__torch__/m.py.debug_pkl", pickle.dumps(Evil()))
    text = 'Serialized   File "code/__torch__/m.py", line 1\nx = f(y)\n    ~ <--- HERE\n'
    assert ArchiveDebugInfo(archive).original(text) is None
    assert not marker.exists()
