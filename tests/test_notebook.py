"""irviz in a real Jupyter notebook: nbformat builds it, nbclient runs it on an ipykernel
of this interpreter, nbconvert exports it to HTML, and headless Chromium (Playwright, as
in test_viewer_browser.py) drives the viewers in the exported page. The screenshot goes
to build/screenshots/notebook.png."""
from __future__ import annotations

import json
import os
import sys
import time

import pytest

from conftest import CHROMIUM_ARGS, ROOT, chromium_or_skip

# test dependencies (the [test] extras), never skipped: only the browser part may skip
import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbconvert import HTMLExporter

pytestmark = pytest.mark.slow

SHOTS = ROOT / "build" / "screenshots"
CELLS = [
    "import irviz",
    "import sys, torch\nsys.path.insert(0, 'samples')\nfrom decision_gate import MyCell",
    "cell = irviz.visualize(MyCell(), inputs=(torch.rand(3, 4), torch.rand(3, 4)))[0]\ncell",
    "print(repr(cell))",
    "irviz.visualize('samples/fork_basics.py:example')[0]",
]


def _kernel(tmp_path) -> KernelManager:
    """A kernel of this very interpreter (the venv's python), importing this checkout."""
    spec_dir = tmp_path / "kernels" / "irviz-test"
    spec_dir.mkdir(parents=True)
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "irviz test", "language": "python",
        "env": {"PYTHONPATH": path}}), encoding="utf-8")
    specs = KernelSpecManager(kernel_dirs=[str(tmp_path / "kernels")])
    return KernelManager(kernel_name="irviz-test", kernel_spec_manager=specs)


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """The notebook run (cells in ``CELLS``) and its HTML export, with the run's seconds."""
    tmp = tmp_path_factory.mktemp("notebook")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    started = time.perf_counter()
    NotebookClient(nb, km=_kernel(tmp), timeout=300,
                   resources={"metadata": {"path": str(ROOT)}}).execute()
    ran = time.perf_counter() - started
    body, _ = HTMLExporter().from_notebook_node(nb)
    html_path = tmp / "irviz.html"
    html_path.write_text(body, encoding="utf-8")
    return nb, html_path, ran


def test_notebook_outputs_are_the_viewer_and_a_short_repr(executed):
    nb, html_path, ran = executed
    print(f"notebook executed in {ran:.1f} s")
    cell, printed, second = nb.cells[2].outputs, nb.cells[3].outputs, nb.cells[4].outputs
    [result] = [o for o in cell if o.output_type == "execute_result"]
    data = result["data"]
    # the interactive viewer, self-contained in a frame, and the SVG beside it
    frame = data["text/html"]
    assert frame.startswith('<iframe class="irviz-frame"') and "srcdoc=" in frame
    assert "irviz-viewer" in frame and "aten::tanh" in frame
    assert "http://" not in frame.replace("http://www.w3.org", "")
    assert "https://" not in frame and "<script src" not in frame
    assert "<svg" in data["image/svg+xml"] and "tanh" in data["image/svg+xml"]
    # the plain repr names the model, the mode and the size, and no tensor
    assert data["text/plain"].startswith("<Visualization decision_gate.py:MyCell script: ")
    text = "".join(o.get("text", "") for o in printed)
    assert text.startswith("<Visualization decision_gate.py:MyCell script: ")
    assert "nodes" in text and "tensor(" not in text and len(text) < 200
    [other] = [o for o in second if o.output_type == "execute_result"]
    assert "fork_basics.py:example" in other["data"]["text/plain"]
    assert html_path.read_text(encoding="utf-8").count('class="irviz-frame"') == 2


def test_notebook_viewer_in_chromium(executed):
    """The exported notebook in Chromium: both viewers start, a search selects a node, a
    module folds; nothing is fetched from inside the frames."""
    sync_api, chromium = chromium_or_skip(module_level=False)
    _, html_path, _ = executed
    args = CHROMIUM_ARGS
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=args, headless=True)
        page = browser.new_page(viewport={"width": 1100, "height": 1400})
        errors: list[str] = []
        framed: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        # errors of the viewers' frames (about:srcdoc); not the refused CDN links
        page.on("console", lambda m: errors.append(m.text) if m.type == "error"
                and not m.location.get("url", "").startswith("http") else None)
        page.on("request", lambda r: framed.append(r.url)
                if r.frame != page.main_frame else None)
        # nbconvert's page template links CDN scripts; offline, they are refused at once
        page.route("http*://**", lambda route: route.abort())
        page.goto(html_path.as_uri(), wait_until="domcontentloaded")

        frames = page.locator("iframe.irviz-frame")
        assert frames.count() == 2
        height = frames.first.bounding_box()["height"]
        assert 320 <= height <= 602, height
        viewers = [page.frame_locator("iframe.irviz-frame").nth(i) for i in range(2)]
        for viewer in viewers:
            viewer.locator(".irviz-viewer[data-irviz-ready]").wait_for(timeout=20000)
        cell = viewers[0]
        assert cell.locator(".irviz-canvas svg").bounding_box()["width"] > 200
        # sized to its cell: the viewer fills the frame and needs no scrollbar in it
        for frame in (f for f in page.frames if f.url == "about:srcdoc"):
            spare = frame.evaluate("innerHeight - document.documentElement.scrollHeight")
            graph = frame.evaluate("document.querySelector('.irviz-canvas svg')"
                                   ".getBoundingClientRect().height / innerHeight")
            assert spare == 0 and graph > 0.6, (spare, graph)

        # search: the hits are marked, Enter selects the first and shows its details
        cell.locator(".irviz-search").fill("tanh")
        assert cell.locator("g.node.irviz-hit").count() >= 1
        cell.locator(".irviz-search").press("Enter")
        assert cell.locator("g.node.irviz-selected").count() == 1
        assert "aten::tanh" in cell.locator(".irviz-details").text_content()
        # the other view was left alone: one page, two viewers that do not share state
        assert viewers[1].locator("g.node.irviz-hit").count() == 0
        cell.locator(".irviz-search").fill("")
        cell.locator("button[data-action=reset]").click()   # Enter zoomed onto the hit

        # fold the dg module by its title: its box collapses, its ops are hidden
        gate = cell.locator("g.cluster.irviz-collapsible", has_text="dg: MyDecisionGate")
        assert gate.count() == 1
        inside = gate.evaluate("g => g.getAttribute('id')")
        shown = cell.locator("g.node:not(.irviz-hidden)").count()
        gate.locator("text").first.click(force=True)
        assert "irviz-collapsed" in gate.get_attribute("class")
        assert cell.locator("g.node:not(.irviz-hidden)").count() < shown
        assert cell.locator(f'[id="{inside}"]').count() == 1

        SHOTS.mkdir(parents=True, exist_ok=True)
        frames.first.scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / "notebook.png"), full_page=False,
                        clip={"x": 0, "y": max(0, frames.first.bounding_box()["y"] - 120),
                              "width": 1100, "height": 900})
        browser.close()
    assert not errors, errors
    assert all(u.startswith(("data:", "about:")) for u in framed), framed
