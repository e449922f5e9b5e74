"""The HTML viewer's page, without a browser: well-formed, self-contained, inert data."""
from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest

from conftest import ROOT, one
from irviz.render.html import (VIEWER_DIR, module_pages, node_details, svg_ids,
                               viewer_fragment, viewer_page)

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
    assert len(js.splitlines()) < 520   # hand-written, no framework: 478 with the overlay menu
    assert "innerHTML" not in js and "eval(" not in js and "fetch(" not in js
    assert "prefers-color-scheme: dark" in css and 'html[data-theme="dark"]' in css
    assert 'body[data-theme="dark"]' in css


# -- module pages ---------------------------------------------------------------------
NESTED = str(ROOT / "tests" / "models" / "nested_pages.py")


def _templates(page: str) -> dict[str, tuple[str, dict]]:
    """page key -> (its SVG, its JSON data), from the <template> elements."""
    out = {}
    for key, body in re.findall(r'<template class="irviz-page" data-page="([^"]*)">(.*?)</template>',
                                page, re.S):
        [blob] = re.findall(r'<script type="application/json" class="irviz-data">(.*?)</script>',
                            body, re.S)
        out[key] = (body, json.loads(blob))
    return out


def _manifest(page: str) -> dict:
    [blob] = re.findall(r'<script type="application/json" class="irviz-pages">(.*?)</script>',
                        page, re.S)
    return json.loads(blob)


@pytest.mark.parametrize("mode", ["script", "trace"])
def test_module_pages_one_per_collapsed_user_call(mode):
    view = one(f"{NESTED}:Net", mode)
    view.options.depth = 1
    blocks = view.graph.graph["blocks"]
    page = viewer_page(view, engine="dot")
    book, templates = _manifest(page), _templates(page)
    overview = page.split("<template", 1)[0]
    # every user module call boxed in the overview has a page; library boxes have none
    boxed = {blocks[i[4:]]["module"]: blocks[i[4:]] for i in svg_ids(overview)
             if i.startswith("box:")}
    assert {"out", "encoder.layers.0.norm"} & set(boxed) == {"out"}  # norm is inside a box
    assert set(book["modules"]) == {m for m, info in boxed.items()
                                    if "torch.nn" not in info["qualified_type"]}
    assert set(book["modules"]) == {f"encoder.layers.{i}" for i in range(4)} | {
        "encoder.final", "head.pool"}
    # the four identical layers share the first one's page
    pages = {p["module"]: key for key, p in book["pages"].items()}
    assert set(pages) == {"encoder.layers.0", "encoder.final", "head.pool"}
    assert set(templates) == set(book["pages"])
    for i in range(1, 4):
        assert book["modules"][f"encoder.layers.{i}"] == {"page": pages["encoder.layers.0"],
                                                          "same_as": "encoder.layers.0"}
    assert book["pages"][pages["encoder.layers.0"]]["same"] == [
        f"encoder.layers.{i}" for i in range(1, 4)]
    # a page draws its module expanded: its cluster and its own ops (not the library's)
    cid = next(c for c, info in blocks.items() if info.get("module") == "encoder.layers.0")
    svg, data = templates[pages["encoder.layers.0"]]
    ids = svg_ids(svg)
    assert f"cluster:{cid}" in ids and f"box:{cid}" not in ids and f"box:{cid}" in svg_ids(overview)
    kinds = {d["kind"] for k, d in data.items() if k.startswith(cid + "/")}
    assert {"aten::softmax", "aten::mul", "aten::add"} <= kinds
    assert "aten::softmax" not in {d["kind"] for d in json.loads(_parse(overview).data[0]).values()}
    # each page's data: only the ids drawn on it
    for svg, data in templates.values():
        assert data and set(data) <= svg_ids(svg)
    assert 'class="irviz-page"' in page and "double-click a module box" in page


def test_module_pages_cap_and_budget():
    view = one(f"{NESTED}:Net")
    view.options.depth = 1
    pages = module_pages(view, engine="dot", max_pages=1)
    assert [p.module for p in pages.pages] == ["encoder.layers.0"]
    assert pages.skipped == 2 and pages.calls == 6
    for path in ("encoder.final", "head.pool"):
        note = pages.modules[path]["note"]
        assert pages.modules[path]["page"] is None and f"--focus {path}" in note
    assert "2 more not rendered" in pages.summary()
    assert module_pages(view, engine="dot", max_pages=0).pages == []
    # no depth, a tiny budget: the overview boxes encoder and head; encoder's page alone is
    # over the budget, so its layers are boxes there - and get pages of their own
    view.options.depth, view.options.max_nodes = None, 6
    view.dot()
    notes = view.render_notes
    pages = module_pages(view, engine="dot")
    assert [p.module for p in pages.pages] == ["encoder", "head", "encoder.layers.0",
                                               "encoder.final", "head.pool"]
    assert pages.calls == 2
    encoder = pages.pages[0]
    assert "alone exceeds the budget" in encoder.svg
    assert view.render_notes == notes  # the overview's notes, not a page's


def test_module_pages_hostile_names():
    view = one(f"{NESTED}:Hostile")
    view.options.depth = 0
    page = viewer_page(view, engine="dot")
    parsed = _parse(page)
    assert "<script>alert" not in page and "javascript:alert(1)" in page  # as text only
    scripts = re.findall(r"<script[^>]*>", page)
    # irviz's own scripts only: the overview's data, the page index, each page's data, JS
    assert scripts.count("<script>") == 1
    assert all(s == "<script>" or 'type="application/json"' in s for s in scripts)
    book = _manifest(page)
    modules = set(book["modules"])
    assert modules == {"d.</script><script>alert(1)</script>", 'd."];x->y[label="',
                       "d.javascript:alert(1)"}
    for blob in [b for b in parsed.data]:
        assert "<" not in blob and "</script" not in blob.lower()
    assert not re.search(r"\son[a-z]+=", page)
    templates = _templates(page)
    assert len(templates) == 3
    for svg, data in templates.values():
        assert "<script" not in svg.split('<script type="application/json"')[0]
        assert {d.get("module") for d in data.values()} & modules


def test_module_pages_stop_at_the_node_budget_of_all_pages():
    view = one(f"{NESTED}:Net")
    view.options.depth = 1
    every = module_pages(view, engine="dot")
    assert len(every.pages) == 3
    # a budget the first page already fills: one page, the rest get the size note
    view.dot(focus="encoder.layers.0", depth=None)
    first_page_nodes = view.drawn_nodes
    few = module_pages(view, engine="dot", max_page_nodes=first_page_nodes)
    assert [p.module for p in few.pages] == ["encoder.layers.0"]
    assert few.skipped == 2
    note = few.modules["head.pool"]["note"]
    assert f"the pages already draw {first_page_nodes} nodes" in note
    assert "--focus head.pool" in note
