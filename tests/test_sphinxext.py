"""The Sphinx extension, through real ``sphinx-build`` runs on tests/roots/test-irviz.

Each build runs ``python -m sphinx`` in a child process (a build imports the user's
models only in its own children, but a subprocess keeps Sphinx's global state out of
pytest as well).
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("sphinx")

from conftest import requires_dot  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TEST_ROOT = Path(__file__).resolve().parent / "roots" / "test-irviz"

pytestmark = requires_dot


def sphinx_build(src: Path, out: Path, *args: str, builder: str = "html",
                 timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", builder, "-q", *args, str(src), str(out)],
        capture_output=True, text=True, timeout=timeout)


def captures(build: Path) -> list[str]:
    log = build / "_irviz_cache" / "captures.log"
    return log.read_text().splitlines() if log.is_file() else []


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The test project and a copy of samples/ beside it (index.rst uses ../samples)."""
    shutil.copytree(TEST_ROOT, tmp_path / "test-irviz")
    shutil.copytree(ROOT / "samples", tmp_path / "samples",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path / "test-irviz"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict:
    """One build of the project, then a second one from scratch (-E) on the same cache."""
    tmp = tmp_path_factory.mktemp("sphinx")
    shutil.copytree(TEST_ROOT, tmp / "test-irviz")
    shutil.copytree(ROOT / "samples", tmp / "samples",
                    ignore=shutil.ignore_patterns("__pycache__"))
    src, build = tmp / "test-irviz", tmp / "build"
    started = time.perf_counter()
    first = sphinx_build(src, build / "html")
    first_s = time.perf_counter() - started
    after_first = captures(build)
    started = time.perf_counter()
    second = sphinx_build(src, build / "html", "-E")
    second_s = time.perf_counter() - started
    print(f"\nsphinx build: first {first_s:.1f} s ({len(after_first)} captures), "
          f"cached {second_s:.1f} s")
    return {"src": src, "build": build, "first": first, "second": second,
            "after_first": after_first, "after_second": captures(build),
            "first_s": first_s, "second_s": second_s}


def test_html_has_the_graphs_and_the_tables(built):
    assert built["first"].returncode == 0, built["first"].stderr
    html = (built["build"] / "html" / "index.html").read_text()
    assert html.count('class="irviz-viewer"') + html.count('class="irviz-graph"') == 3
    assert html.count("<svg") >= 3
    assert "MyCell" in html and "LSTMEnsemble" in html
    # the parallelism report as real tables, the lint finding listed under its figure
    assert "Parallelism report: lstm_ensemble.py:LSTMEnsemble" in html
    assert html.count('class="irviz-report') >= 3
    assert "IRV101" in html
    # the caption and :name: make it a numbered, referenceable figure
    assert 'id="fig-mycell"' in html and "Fig. 1" in html
    viewer_js = built["build"] / "html" / "_static" / "irviz" / "viewer.js"
    if 'class="irviz-viewer"' in html:
        assert viewer_js.is_file() and "_static/irviz/viewer.js" in html


def test_a_bad_target_is_a_warning_at_its_line(built):
    stderr = built["first"].stderr
    line = next(i for i, text in enumerate(
        (built["src"] / "index.rst").read_text().splitlines(), 1) if "NoSuchModel" in text)
    assert re.search(rf"index\.rst:{line}: WARNING: irviz: \.\./samples/my_cell\.py:"
                     rf"NoSuchModel: error: .*has no attribute 'NoSuchModel'", stderr), stderr
    assert "did you mean" in stderr or "MyCell" in stderr
    message = stderr[stderr.index("WARNING: irviz:"):]
    assert str(built["src"].parent) not in message   # paths as written, not absolute


def test_werror_fails_the_build(built, tmp_path):
    result = sphinx_build(built["src"], tmp_path / "html", "-W")
    assert result.returncode != 0
    assert "NoSuchModel" in result.stderr


def test_second_build_uses_the_cache(built):
    # one capture per directive: three drawn, one that fails (its error is cached too)
    assert sorted(line.split()[-1] for line in built["after_first"]) == ["error"] + ["ok"] * 3
    assert built["second"].returncode == 0, built["second"].stderr
    assert built["after_second"] == built["after_first"]   # nothing captured again
    html = (built["build"] / "html" / "index.html").read_text()
    assert html.count("<svg") >= 3


def test_changing_the_model_captures_again(built, project):
    build = project.parent / "build"
    shutil.copytree(built["build"] / "_irviz_cache", build / "_irviz_cache")
    before = captures(build)
    model = project.parent / "samples" / "my_cell.py"
    model.write_text(model.read_text() + "\n# changed\n")
    result = sphinx_build(project, build / "html")
    assert result.returncode == 0
    new = captures(build)[len(before):]
    assert sorted(line.split()[1] for line in new) == ["../samples/my_cell.py:MyCell",
                                                       "../samples/my_cell.py:NoSuchModel"]


def test_a_hanging_model_times_out_with_a_warning(tmp_path):
    (tmp_path / "conf.py").write_text(
        'extensions = ["irviz.sphinxext"]\nirviz_timeout = 5\n')
    (tmp_path / "hang.py").write_text(
        "import torch\n\n\nclass Hang(torch.nn.Module):\n"
        "    def forward(self, x):\n        return x\n\n\nwhile True:\n    pass\n")
    (tmp_path / "index.rst").write_text(
        "Hang\n====\n\n.. irviz:: hang.py:Hang\n\nAfter the hang.\n")
    started = time.perf_counter()
    result = sphinx_build(tmp_path, tmp_path / "_build" / "html", timeout=120)
    took = time.perf_counter() - started
    print(f"\nhanging model: build finished in {took:.1f} s")
    assert result.returncode == 0, result.stderr
    assert re.search(r"index\.rst:4: WARNING: irviz: hang\.py:Hang: .*did not finish "
                     r"within 5 s", result.stderr), result.stderr
    assert "After the hang." in (tmp_path / "_build" / "html" / "index.html").read_text()


def test_parallel_build(project):
    result = sphinx_build(project, project.parent / "build" / "html", "-j", "2")
    assert result.returncode == 0, result.stderr
    assert "parallel" not in result.stderr.lower() or "not safe" not in result.stderr
    html = (project.parent / "build" / "html" / "index.html").read_text()
    assert html.count("<svg") >= 3


def test_latex_builder(built, tmp_path):
    out = tmp_path / "latex"
    shutil.copytree(built["build"] / "_irviz_cache", tmp_path / "_irviz_cache")
    before = captures(tmp_path)
    result = sphinx_build(built["src"], out, builder="latex")
    assert result.returncode == 0, result.stderr
    tex = next(out.glob("*.tex")).read_text()
    if shutil.which("rsvg-convert"):
        names = re.findall(r"\\sphinxincludegraphics\{\{(irviz-[0-9a-f]+-\d+)\}\.pdf\}", tex)
        assert len(names) == 3
        assert all((out / f"{name}.pdf").read_bytes().startswith(b"%PDF") for name in names)
    else:
        assert "see the HTML docs" in tex
    assert captures(tmp_path) == before   # the HTML build's captures were reused


def test_the_migrate_option_shows_the_checklist_and_the_exported_program(tmp_path):
    """``:migrate:`` under an archive: irviz migrate's checklist as a table, and the
    exported program drawn beside the original."""
    import torch

    src = tmp_path / "docs"
    src.mkdir()
    (src / "conf.py").write_text((TEST_ROOT / "conf.py").read_text())

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 3)

        def forward(self, x):
            return torch.relu(self.fc(x))

    torch.jit.trace(Net(), torch.rand(2, 4)).save(str(src / "net.pt"))
    (src / "index.rst").write_text("Migration\n=========\n\n.. irviz:: net.pt\n"
                                   "   :inputs: torch.rand(2, 4)\n   :migrate:\n")
    result = sphinx_build(src, tmp_path / "html", "-W")
    assert result.returncode == 0, result.stderr
    html = (tmp_path / "html" / "index.html").read_text()
    assert "Migration to torch.export: net.pt" in html and "TS2EPConverter" in html
    for check in ("runs", "converts", "same outputs", "saved"):
        assert f"<p>{check}</p>" in html
    assert "<strong>migrated</strong>" in html
    assert html.count("<svg") >= 2   # the archive and its exported program


def test_the_profile_option_colours_by_measured_time_and_reports_the_ops(tmp_path):
    """``:profile:`` with ``:parallelism:``: the picture coloured by measured time, the
    colour menu offering it, the report's op table below."""
    src = tmp_path / "docs"
    src.mkdir()
    (src / "conf.py").write_text((TEST_ROOT / "conf.py").read_text())
    (src / "mlp.py").write_text(
        "import torch\n\nclass MLP(torch.nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.fc = torch.nn.Linear(64, 64)\n\n"
        "    def forward(self, x):\n        return torch.relu(self.fc(x)) + 1\n\n"
        "example_inputs = {'MLP': lambda: (torch.rand(32, 64),)}\n")
    (src / "index.rst").write_text("Profile\n=======\n\n.. irviz:: mlp.py:MLP\n"
                                   "   :profile:\n   :parallelism:\n")
    result = sphinx_build(src, tmp_path / "html", "-W")
    assert result.returncode == 0, result.stderr
    html = (tmp_path / "html" / "index.html").read_text()
    # Graphviz writes the class's "-" as &#45;
    assert re.search(r"irviz(-|&#45;)profiled", html) and 'value="time"' in html
    assert "Where the time goes (measured)" in html and "aten::linear" in html
