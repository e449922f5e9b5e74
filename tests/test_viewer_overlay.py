"""The HTML viewer's overlay menu (issue 31): colour the nodes by estimated cost or memory
in a real headless Chromium, and back to the structure colours."""
from __future__ import annotations


import torch

import irviz.api as api
from conftest import CHROMIUM_ARGS, chromium_or_skip
from irviz.render.html import viewer_page

sync_api, CHROMIUM = chromium_or_skip()
ARGS = CHROMIUM_ARGS

class Wide(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.big = torch.nn.Linear(64, 1024)
        self.small = torch.nn.Linear(1024, 4)

    def forward(self, x):
        return torch.relu(self.small(torch.relu(self.big(x)))) + 1


def _fills(page) -> dict:
    return page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('g.node')]
        .filter(g => g.id.startsWith('irviz:'))
        .map(g => [g.id.slice(6), (g.querySelector('polygon, ellipse, path') || {}).getAttribute
                   ? g.querySelector('polygon, ellipse, path').getAttribute('fill') : null]))""")


def test_the_overlay_menu_colours_nodes_by_memory_and_cost_and_restores_them(tmp_path):
    [view] = api.visualize(Wide(), inputs=(torch.rand(32, 64),))
    path = tmp_path / "wide.html"
    path.write_text(viewer_page(view, max_pages=0), encoding="utf-8")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(path.as_uri())
        page.wait_for_selector(".irviz-viewer[data-irviz-ready]")
        options = page.eval_on_selector_all(".irviz-overlay option", "os => os.map(o => o.value)")
        assert options == ["", "cost", "bytes"]   # no profile: no measured time to show
        before = _fills(page)
        page.select_option(".irviz-overlay", "bytes")
        after = _fills(page)
        legend = page.text_content(".irviz-overlay-legend")
        assert "KiB" in legend and "log scale" in legend
        # the 32x1024 float32 activations (128 KiB) get the darkest step, 32x4 the lightest
        big = [k for k, v in after.items() if v == "#ec7014"]
        assert big and all(before[k] != "#ec7014" for k in big)
        assert "#ffffd4" in after.values()
        page.select_option(".irviz-overlay", "cost")
        assert page.text_content(".irviz-overlay-legend")
        page.select_option(".irviz-overlay", "")
        assert _fills(page) == before and page.text_content(".irviz-overlay-legend") == ""
        browser.close()
    assert not errors
