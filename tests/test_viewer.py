"""The HTML viewer's page, without a browser: well-formed, self-contained, inert data."""
from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest

from conftest import ROOT, one
from irviz.render.html import VIEWER_DIR, node_details, svg_ids, viewer_fragment, viewer_page

SEEDS = ["decision_gate.py:MyCell", "my_cell.py:MyCell", "rnn_loop.py:WrapRNN",
         "fork_basics.py:example", "lstm_ensemble.py:LSTMEnsemble"]
HOSTILE = "</script><script>alert(1)</script><!--<script>"


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.data: list[str] = []
        self._in_json = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        self._in_json = tag == "script" and attrs.get("type") == "application/json"

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_json = False

    def handle_data(self, data):
        if self._in_json:
            self.data.append(data)


def _parse(page: str) -> _Page:
    parser = _Page()
    parser.feed(page)
    parser.close()
    return parser


@pytest.fixture(scope="module")
def pages():
    return {spec: viewer_page(one(spec), source_url="https://example.org/{path}#L{line}")
            for spec in SEEDS}


@pytest.mark.parametrize("spec", SEEDS)
def test_page_is_self_contained(pages, spec):
    page = pages[spec]
    assert page.startswith("<!DOCTYPE html>")
    parsed = _parse(page)
    tags = [t for t, _ in parsed.tags]
    assert tags.count("svg") == 1
    assert "<?xml" not in page and "<!DOCTYPE svg" not in page
    # no network: nothing loaded from elsewhere, and a CSP forbidding it anyway
    assert not re.search(r"<script[^>]*\bsrc=", page)
    assert not re.search(r"<link[^>]*href=[\"']?(https?:)?//", page)
    assert not any(t in ("link", "iframe", "img") for t in tags)
    csp = [a["content"] for t, a in parsed.tags
           if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert csp and csp[0].startswith("default-src 'none'")
    # no inline handlers, no absolute paths of this machine
    assert not re.search(r"\son[a-z]+=", page)
    assert str(VIEWER_DIR.parent.parent.parent) not in page

    [blob] = parsed.data
    details = json.loads(blob)
    ids = svg_ids(page)
    nodes = set(re.findall(r'<g id="irviz:((?!cluster:)[^"]*)" class="node', page))
    assert nodes and nodes <= set(details), sorted(nodes - set(details))[:5]
    assert set(details) <= ids
    for key, entry in details.items():
        assert {"kind", "label", "outputs", "scope", "source", "url", "findings", "fork"} <= set(entry)
        if entry["url"]:
            assert entry["url"].startswith("https://example.org/") and str(ROOT) not in entry["url"]
        if entry["source"]:
            assert not entry["source"].startswith("/"), entry["source"]


def test_details_of_the_decision_gate():
    view = one("decision_gate.py:MyCell")
    finding = {"code": "IRV001", "name": "hostile", "message": HOSTILE, "severity": "warning",
               "path": str(view.capture.target.source_file), "line": 24, "column": 1}
    details = node_details(view, [finding], "https://example.org/{path}#L{line}")
    [tanh] = [d for d in details.values() if d["kind"] == "aten::tanh"]
    assert tanh["source"] == "decision_gate.py:24"
    assert tanh["url"] == "https://example.org/decision_gate.py#L24"
    assert "torch.tanh" in tanh["code"]
    assert tanh["outputs"] == ["new_h: Tensor [3×4 float32]"]
    assert tanh["findings"][0]["message"] == HOSTILE
    assert tanh["findings"][0]["path"] == "decision_gate.py"
    boxes = [k for k in details if k.startswith("box:")]
    assert boxes and all(details[k]["kind"].endswith(" call") for k in boxes)
    json.dumps(details)  # JSON-safe


def test_fork_details():
    details = node_details(one("lstm_ensemble.py:LSTMEnsemble"))
    forks = [d for d in details.values() if d["kind"] == "prim::fork"]
    assert forks and forks[0]["fork"]["callee"] and forks[0]["fork"]["waits"]
    waits = [d for d in details.values() if d["kind"] == "aten::wait"]
    assert any(d["fork"] and d["fork"].get("waits_for") for d in waits)


def test_hostile_strings_stay_inert():
    svg = ('<?xml version="1.0"?>\n<!DOCTYPE svg>\n<svg width="10pt" height="10pt" '
           'viewBox="0 0 10 10"><g id="irviz:n1" class="node"><title>n1</title></g></svg>')
    details = {"n1": {"kind": HOSTILE, "label": HOSTILE, "outputs": [HOSTILE], "scope": "",
                      "source": None, "url": "javascript:alert(1)", "findings": [],
                      "fork": None},
               "gone": {"label": "not in the SVG"}}
    out = viewer_fragment(svg, details, title=HOSTILE, uid='x" onload="alert(1)')
    parsed = _parse(out)
    [blob] = parsed.data
    assert "</script" not in blob.lower() and "<!--" not in blob and "<" not in blob
    assert json.loads(blob) == {"n1": details["n1"]}
    assert out.count("<script") == 1          # only the JSON block
    assert 'onload="' not in out and "<script>alert" not in out
    assert 'width="10pt"' not in out and "<?xml" not in out and "DOCTYPE" not in out


def test_static_files():
    js = (VIEWER_DIR / "viewer.js").read_text(encoding="utf-8")
    css = (VIEWER_DIR / "viewer.css").read_text(encoding="utf-8")
    assert len(js.splitlines()) < 320
    assert "innerHTML" not in js and "eval(" not in js and "fetch(" not in js
    assert "prefers-color-scheme: dark" in css and 'html[data-theme="dark"]' in css
    assert 'body[data-theme="dark"]' in css
