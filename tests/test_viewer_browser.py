"""The HTML viewer in a real headless Chromium (Debian's ``chromium`` + Playwright for
Python; ``.ci/run`` installs both). Screenshots of both themes go to build/screenshots/."""
from __future__ import annotations

import shutil

import pytest

from conftest import CHROMIUM_ARGS, ROOT, chromium_or_skip, one

sync_api, CHROMIUM = chromium_or_skip()
ARGS = CHROMIUM_ARGS
SHOTS = ROOT / "build" / "screenshots"

CASES = [
    # spec, a search, the kind of the node Enter selects (LSTMEnsemble has no tanh: its
    # LSTMs are aten::lstm inside collapsed library boxes, which a search finds too)
    ("lstm_ensemble.py:LSTMEnsemble", "lstm", "LSTM"),
    ("decision_gate.py:MyCell", "tanh", "aten::tanh"),
]


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    from irviz.render.html import viewer_page

    out = tmp_path_factory.mktemp("viewer")
    files = {}
    for spec, _, _ in CASES:
        path = out / (spec.replace(":", ".").replace(".py", "") + ".html")
        path.write_text(viewer_page(one(spec), source_url="https://example.org/{path}#L{line}"),
                        encoding="utf-8")
        files[spec] = path
    return files


def _view_box(page) -> str:
    return page.eval_on_selector(".irviz-canvas svg", "s => s.getAttribute('viewBox')")


@pytest.mark.parametrize("spec,query,expect", CASES)
def test_viewer_in_chromium(browser, pages, tmp_path, spec, query, expect):
    shots = []
    for scheme in ("light", "dark"):
        context = browser.new_context(color_scheme=scheme, viewport={"width": 1280, "height": 900})
        page = context.new_page()
        errors: list[str] = []
        requests: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: requests.append(r.url))
        page.goto(pages[spec].as_uri())
        page.wait_for_selector(".irviz-viewer[data-irviz-ready]")

        box = page.locator(".irviz-canvas svg").bounding_box()
        assert box and box["width"] > 100 and box["height"] > 100

        before = _view_box(page)
        page.click("button[data-action=zoom-in]")
        assert _view_box(page) != before
        page.click("button[data-action=fit]")

        page.fill(".irviz-search", query)
        hits = page.locator("g.node.irviz-hit").count()
        assert hits >= 1
        assert "match" in page.text_content(".irviz-count")
        # Enter centres and selects the first hit: the panel shows its source line
        page.press(".irviz-search", "Enter")
        panel = page.text_content(".irviz-details")
        assert expect in panel and spec.split(":")[0] in panel

        page.fill(".irviz-search", "")
        assert page.locator("g.node.irviz-hit").count() == 0
        page.click("button[data-action=reset]")
        # a real mouse click on a node (the first op whose details have a source)
        node = page.evaluate("""() => {
            const d = JSON.parse(document.querySelector('script.irviz-data').textContent);
            const g = [...document.querySelectorAll('g.node')].find(
                g => g.id.startsWith('irviz:') && !g.id.startsWith('irviz:box:')
                     && (d[g.id.slice(6)] || {}).code);
            return g ? g.id : null }""")
        assert node
        page.click(f'[id="{node}"]', force=True)
        panel = page.text_content(".irviz-details")
        assert "source" in panel and spec.split(":")[0] in panel
        link = page.locator(".irviz-details a.irviz-source")
        assert link.count() == 1 and link.get_attribute("href").startswith("https://example.org/")

        # fold a module cluster by its title, then unfold it
        cluster = page.locator("g.cluster.irviz-collapsible text").first
        if cluster.count():
            cluster.click(force=True)
            assert page.locator(".irviz-hidden").count() > 0
            cluster.click(force=True)
            assert page.locator(".irviz-hidden").count() == 0

        page.click("button[data-action=reset]")
        page.evaluate("window.scrollTo(0, 0)")
        name = f"{spec.replace(':', '.').replace('.py', '')}.{scheme}.png"
        shot = tmp_path / name
        page.screenshot(path=str(shot))
        shots.append(shot)
        bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert (bg == "rgb(255, 255, 255)") == (scheme == "light"), bg
        assert not errors, errors
        assert all(u.startswith(("file:", "data:", "about:")) for u in requests), requests
        context.close()
    SHOTS.mkdir(parents=True, exist_ok=True)
    for shot in shots:
        shutil.copy(shot, SHOTS / shot.name)


def test_module_pages_in_chromium(browser, tmp_path):
    """Double-click a module box: its page; the breadcrumb, back/forward and the URL hash."""
    from irviz.render.html import viewer_page

    view = one(str(ROOT / "tests" / "models" / "nested_pages.py") + ":Net")
    view.options.depth = 1
    path = tmp_path / "nested.html"
    path.write_text(viewer_page(view, engine="dot"), encoding="utf-8")
    blocks = view.graph.graph["blocks"]
    cid = {info.get("module"): c for c, info in blocks.items()}

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_selector(".irviz-viewer[data-irviz-ready]")
    canvas_ids = "() => [...document.querySelectorAll('.irviz-canvas g')].map(g => g.id)"
    assert page.text_content(".irviz-crumbs .irviz-trail") == "overview"
    assert "3 module pages" in page.text_content(".irviz-index summary")

    # a double-click on the box of encoder.layers.2 opens the page it shares with layers.0
    box = f'[id="irviz:box:{cid["encoder.layers.2"]}"]'
    page.dblclick(box, force=True)
    page.wait_for_function("location.hash.startsWith('#module=')")
    assert page.evaluate("location.hash") == "#module=encoder.layers.2"
    trail = page.text_content(".irviz-crumbs .irviz-trail")
    assert trail.startswith("overview › encoder.layers.2")
    assert "same structure as encoder.layers.0" in trail
    ids = page.evaluate(canvas_ids)
    assert f"irviz:cluster:{cid['encoder.layers.0']}" in ids
    assert f"irviz:box:{cid['encoder.layers.2']}" in ids      # drawn as a box around it
    assert page.locator(".irviz-canvas svg").count() == 1
    # search and details work on the module page
    page.fill(".irviz-search", "softmax")
    assert page.locator("g.node.irviz-hit").count() >= 1
    page.press(".irviz-search", "Enter")
    assert "aten::softmax" in page.text_content(".irviz-details")
    page.fill(".irviz-search", "")

    # the breadcrumb goes back to the overview; the browser's back and forward too
    page.click(".irviz-crumbs a:text('overview')")
    page.wait_for_function("!location.hash.startsWith('#module=')")
    assert f"irviz:box:{cid['encoder.layers.2']}" in page.evaluate(canvas_ids)
    assert page.text_content(".irviz-crumbs .irviz-trail") == "overview"
    page.go_back()
    page.wait_for_function("location.hash === '#module=encoder.layers.2'")
    assert f"irviz:cluster:{cid['encoder.layers.0']}" in page.evaluate(canvas_ids)
    page.go_forward()
    page.wait_for_function("!location.hash.startsWith('#module=')")
    assert f"irviz:cluster:{cid['encoder.layers.0']}" not in page.evaluate(canvas_ids)

    # the "Open module page" button of a box's details, and the page index
    page.click(f'[id="irviz:box:{cid["head.pool"]}"]', force=True)
    page.click(".irviz-details button.irviz-open")
    page.wait_for_function("location.hash === '#module=head.pool'")
    assert f"irviz:cluster:{cid['head.pool']}" in page.evaluate(canvas_ids)
    page.click(".irviz-index summary")
    page.click(".irviz-index a:text('encoder.final')")
    page.wait_for_function("location.hash === '#module=encoder.final'")
    assert f"irviz:cluster:{cid['encoder.final']}" in page.evaluate(canvas_ids)
    # a library box has no page
    page.goto(path.as_uri())
    page.wait_for_selector(".irviz-viewer[data-irviz-ready]")
    page.dblclick(f'[id="irviz:box:{cid["out"]}"]', force=True)
    assert page.evaluate("location.hash") == ""
    # a link to a page opens it directly (a fresh load)
    linked = context.new_page()
    linked.on("pageerror", lambda e: errors.append(str(e)))
    linked.goto(path.as_uri() + "#module=head.pool")
    linked.wait_for_selector(".irviz-viewer[data-irviz-ready]")
    assert f"irviz:cluster:{cid['head.pool']}" in linked.evaluate(canvas_ids)
    assert linked.text_content(".irviz-crumbs .irviz-trail") == "overview › head.pool"
    SHOTS.mkdir(parents=True, exist_ok=True)
    linked.screenshot(path=str(SHOTS / "nested.module-page.png"))
    assert not errors, errors
    context.close()


TALL = '''
import torch


class Tall(torch.nn.Module):
    """A long chain: a picture many screens tall and one op wide (BERT is 19 screens)."""

    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Linear(8, 8) for _ in range(40)])

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x)) + x
        return x
'''


def test_a_tall_picture_opens_readable_at_its_top_and_fills_the_window(browser, tmp_path):
    """Not a thin strip: fit-width at the top of the graph, the canvas down to the window's
    bottom edge (the viewer used ~740 px of a 900 px window)."""
    from irviz.render.html import viewer_page

    model = tmp_path / "tall.py"
    model.write_text(TALL, encoding="utf-8")
    path = tmp_path / "tall.html"
    path.write_text(viewer_page(one(f"{model}:Tall"), engine="dot"), encoding="utf-8")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(path.as_uri())
    page.wait_for_selector(".irviz-viewer[data-irviz-ready]")
    full = page.evaluate("""() => { const s = document.querySelector('.irviz-canvas svg');
        const b = s.getBBox(); return [b.width, b.height]; }""")
    x, y, w, h = (float(v) for v in _view_box(page).split())
    assert full[1] > 5 * full[0]                   # the graph is tall
    assert w < 1.5 * full[0] and h < full[1] / 2   # opened at about its width, not whole
    box = page.locator(".irviz-canvas svg").bounding_box()
    assert box["y"] + box["height"] > 900 - 40, box   # the canvas reaches the window's bottom
    page.click("button[data-action=reset]")         # "whole" is still one click away
    assert float(_view_box(page).split()[2]) > 2 * w
    context.close()
