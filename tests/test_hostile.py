"""Hostile model content: every string a model brings is escaped in every output.

Module and submodule names (``nn.ModuleDict`` keys and ``add_module`` names may be any
text), class names (``type("<script>...", ...)``), string constants of scripted code,
source file names (quotes, ``<``, spaces, unicode, newlines, control characters, bytes
that are not UTF-8), source lines, 100k-character strings, and lint messages built from
source text go through the real pipeline (``irviz.api.visualize`` and the CLI), and:

* the DOT parses with the real ``dot`` and has exactly the nodes, clusters and edges irviz
  meant (nothing injected);
* the SVG and HTML have no active content (no ``<script>``, event attributes,
  ``javascript:`` links, ``<foreignObject>``, ``<iframe>``, ``<object>``, ``<embed>``);
* JSON and SARIF parse and keep the strings intact;
* long strings are cut in the picture and kept whole in the JSON.
"""
from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote_to_bytes

import pytest
import torch
from click.testing import CliRunner

from conftest import requires_dot
from irviz import api
from irviz.cli import main
from irviz.ir.invariants import assert_invariants
from irviz.render.dot import RenderOptions, _DotWriter

pytestmark = requires_dot

SCRIPT = "</svg><script>alert(1)</script>"
TAG = "<script>alert(1)</script>"
JS = "javascript:alert(1)"
DOT_BREAK = '"];evil->node[label="'
IFRAME = "<iframe src=javascript:alert(1)>"
IMG = "<img src=x onerror=alert(1)>"
LOOP_TEXT = "<b>**x**</b>`|`"          # Markdown marks, a backtick and a pipe
CONTROL = "\x01\x1b[31m\x7f"
LONG_A = "A" * 100_000                   # in a string constant
LONG_K = "K" * 100_000                   # a submodule name
EVIL_FILE = 'a"];b->c[label="x.py'
RAISED = f"{IFRAME}{CONTROL} {LONG_A}"

EVIL_SOURCE = '''\
import torch
from typing import List


@torch.jit.script
def helper(x: torch.Tensor, s: str) -> torch.Tensor:
    if s == "\\"];evil->node[label=\\"pwn":
        return x * 2
    return x + 1


class Evil(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.d = torch.nn.ModuleDict({
            "<script>alert(1)</script>": torch.nn.ReLU(),
            "javascript:alert(1)": torch.nn.Tanh(),
            '"];evil->node[label="': torch.nn.Sigmoid(),
            "@LONG_K@": torch.nn.ReLU6(),
        })

    def forward(self, x):
        x = self.d["<script>alert(1)</script>"](x)
        x = self.d["javascript:alert(1)"](x)
        x = self.d['"];evil->node[label="'](x)
        x = self.d["@LONG_K@"](x)
        y = helper(x, "</svg><script>alert(1)</script>")
        futs: List[torch.jit.Future[torch.Tensor]] = []
        for _ in range(len("<b>**x**</b>`|`")):
            futs.append(torch.jit.fork(helper, x, "<iframe src=javascript:alert(1)>"))
        for f in futs:
            y = y + torch.jit.wait(f)
        if x.sum() > len("</svg><script>alert(1)</script>"):  # <img src=x onerror=alert(1)>
            raise RuntimeError("<iframe src=javascript:alert(1)>\\x01\\x1b[31m\\x7f @LONG_A@")
        return y


# a class name no `class` statement can write; traced only (scripting needs its source)
Hostile = type("</svg><script>alert(1)</script>", (torch.nn.Module,),
               {"forward": lambda self, x: x * 2})


class TraceEvil(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.add_module("<script>alert(1)</script>", Hostile())
        self.add_module('a"];b->c[label="x', torch.nn.ReLU())

    def forward(self, x):
        x = getattr(self, "<script>alert(1)</script>")(x)
        x = getattr(self, 'a"];b->c[label="x')(x)
        if x.sum() > len("</svg><script>alert(1)</script>"):  # <img src=x onerror=alert(1)>
            return x - 1
        return x + 1


def make(name: str):
    return TraceEvil()


example_inputs = {"Evil": (torch.rand(3, 4),), "TraceEvil": (torch.rand(3, 4),),
                  "make": (torch.rand(3, 4),)}
'''.replace("@LONG_K@", LONG_K).replace("@LONG_A@", LONG_A)

#: a small model for the file-name cases: an `if` on tensor data (a lint finding) and a
#: call, so names show in clusters, tooltips and findings
SMALL_SOURCE = '''\
import torch


def f(x):
    if x.sum() > 0:
        return x + 1
    return x - 1


class M(torch.nn.Module):
    def forward(self, x):
        return f(x) * 2


example_inputs = {"M": (torch.rand(3),)}
'''

#: file names as bytes (os.fsdecode gives the str Python and irviz see)
FILE_NAMES = [
    b'q"];b->c[label="x.py',
    b"<img src=x onerror=alert(1)>.py",
    "sp ace é 漢 \u202egnp.py".encode(),
    b"new\nline.py",
    b"ctl\x01\x1b[31m.py",
    b"javascript:alert(1).py",
    b"bad\xff\xfename.py",                # not UTF-8: torch itself cannot capture it
]


# ------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def evil(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("evil") / EVIL_FILE
    path.write_text(EVIL_SOURCE, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def named(tmp_path_factory) -> list[Path]:
    """One small model per hostile file name the file system takes."""
    folder = tmp_path_factory.mktemp("names")
    made = []
    for raw in FILE_NAMES:
        try:
            with open(os.path.join(os.fsencode(folder), raw), "wb") as fh:
                fh.write(SMALL_SOURCE.encode())
        except OSError:  # a file system that refuses the name
            continue
        made.append(folder / os.fsdecode(raw))
    assert len(made) >= 5
    return made


def capturable(path: Path) -> bool:
    try:
        os.fsdecode(path).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@pytest.fixture(scope="module")
def views(evil):
    """(target, mode) -> Visualization of the hostile models, captured once."""
    torch.manual_seed(0)
    out = {}
    for name, mode in [("Evil", "script"), ("Evil", "trace"), ("TraceEvil", "trace"),
                       (f"make({SCRIPT + '--><!--'!r})", "trace")]:
        [view] = api.visualize(f"{evil}:{name}", mode)
        assert_invariants(view.graph)
        out[name.split("(")[0], mode] = view
    return out


def cli(*args, cwd: Path | None = None):
    torch.manual_seed(0)
    old = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    finally:
        os.chdir(old)


# ------------------------------------------------------------------------- checkers

_QUOTED = r'"(?:[^"\\]|\\.)*"'
_IRVIZ_ID = re.compile(r"(?:box:|ghost:\d+:)?[\w:/.]+")


def _unquote(token: str) -> str:
    return token[1:-1].replace('\\"', '"')


def graphviz_json(dot: str) -> dict:
    proc = subprocess.run([shutil.which("dot"), "-Tjson0"], input=dot.encode("utf-8"),
                          capture_output=True, timeout=120)
    stderr = proc.stderr.decode(errors="replace")
    # layout warnings (Graphviz 2.43's spline router on some nested clusters) are not
    # parse errors; anything about the syntax is
    assert proc.returncode == 0 and "syntax" not in stderr and "Error" not in stderr, stderr
    return json.loads(proc.stdout)


def check_dot(dot: str, G=None, options: RenderOptions | None = None) -> dict:
    """The DOT parses with `dot`, and Graphviz sees exactly the statements irviz wrote
    (one per line): no node, edge or cluster was injected by a string."""
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]", dot)
    written_nodes = {_unquote(m) for m in re.findall(rf"^\s*({_QUOTED}) \[", dot, re.M)}
    written_edges = re.findall(rf"^\s*{_QUOTED} -> {_QUOTED} \[", dot, re.M)
    written_clusters = {_unquote(m)
                        for m in re.findall(rf"^\s*subgraph ({_QUOTED}) {{$", dot, re.M)}
    gv = graphviz_json(dot)
    names = [o["name"] for o in gv.get("objects", [])]
    clusters, nodes = set(names[:gv["_subgraph_cnt"]]), names[gv["_subgraph_cnt"]:]
    assert len(nodes) == len(set(nodes)) == len(written_nodes)
    assert set(nodes) == written_nodes
    assert len(gv.get("edges", [])) == len(written_edges)
    assert clusters == written_clusters
    for name in nodes:
        assert _IRVIZ_ID.fullmatch(name), name
    if G is not None:
        blocks = G.graph["blocks"]
        for name in clusters:
            cid = name.removeprefix("cluster_")
            assert cid in blocks or cid.removeprefix("ctl:") in G, name
        writer = _DotWriter(G, options or RenderOptions())
        drawn = {r for r in writer.rep.values() if r is not None}
        boxes = {f"box:{cid}" for cid, top in writer.collapsed.items() if cid == top}
        assert drawn <= set(nodes)
        for name in set(nodes) - drawn:  # placeholders, ghosts and boxes of empty calls
            assert (name.endswith("/empty") and name[:-6] in blocks) \
                or name.startswith("ghost:") or name in boxes, name
    # the picture stays usable: no label or tooltip carries a whole 100k string
    assert "A" * 1000 not in dot and "K" * 1000 not in dot
    assert max(len(line) for line in dot.splitlines()) < 10_000
    return gv


_ACTIVE = {"script", "foreignobject", "iframe", "object", "embed", "frame", "frameset",
           "applet", "base", "meta", "link", "handler", "listener", "set", "animate"}


def _check_element(tag: str, attrs: list[tuple[str, str | None]], own_meta: bool = False):
    tag = tag.split("}")[-1].lower()
    if not (own_meta and tag == "meta"):
        assert tag not in _ACTIVE, tag
    for key, value in attrs:
        key = key.split("}")[-1].lower()
        assert not key.startswith("on"), (tag, key, value)
        if key in ("href", "src", "action", "formaction", "xlink:href", "style"):
            squeezed = re.sub(r"[\s\x00-\x1f]", "", value or "").lower()
            assert "javascript:" not in squeezed and "expression(" not in squeezed, value


def check_svg(svg: bytes | str) -> ET.Element:
    """Well-formed XML without active content; returns the root."""
    text = svg.decode("utf-8") if isinstance(svg, bytes) else svg
    assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff]", text)
    root = ET.fromstring(text.encode("utf-8"))
    for el in root.iter():
        _check_element(el.tag, list(el.attrib.items()))
    return root


def svg_text(root: ET.Element) -> str:
    """Every text and attribute value of the SVG, decoded, one per line."""
    parts = []
    for el in root.iter():
        parts += [el.text or ""] + list(el.attrib.values())
    return "\n".join(parts)


class _Page(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, list]] = []
        self.text: list[str] = []
        self.scripts: list[tuple[dict, str]] = []   # (attributes, content)

        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, attrs))
        if tag == "script":
            self.scripts.append((dict(attrs), ""))
            self._in_script = True

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_startendtag(self, tag, attrs):
        self.elements.append((tag, attrs))

    def handle_data(self, data):
        if self._in_script:
            attrs, content = self.scripts[-1]
            self.scripts[-1] = (attrs, content + data)
        else:
            self.text.append(data)


#: the <meta> elements irviz's pages have (the viewer adds its CSP, viewport, colours)
_OWN_META = {("charset", "utf-8"), ("http-equiv", "Content-Security-Policy"),
             ("name", "viewport"), ("name", "color-scheme")}


def check_html(page: str, viewer: bool = False) -> _Page:
    """No active content but irviz's own: the report has no script at all; the viewer has
    its JSON data block and its own viewer.js, nothing else."""
    parser = _Page()
    parser.feed(page)
    parser.close()
    assert parser.elements and parser.elements[0][0] == "html"
    for tag, attrs in parser.elements:
        if tag in ("meta", "script"):
            continue
        _check_element(tag, attrs)
    metas = [a[0] for t, a in parser.elements if t == "meta"]
    assert all(m in _OWN_META for m in metas) and len(metas) == len(set(metas)), metas
    if not viewer:
        assert metas == [("charset", "utf-8")] and not parser.scripts
        return parser
    from irviz.render.html import VIEWER_DIR

    [(data_attrs, data), (js_attrs, js)] = parser.scripts
    assert data_attrs == {"type": "application/json", "class": "irviz-data"}
    assert js_attrs == {} and js == (VIEWER_DIR / "viewer.js").read_text(encoding="utf-8")
    parser.data = json.loads(data)
    return parser


# ------------------------------------------------------------------------- the picture

@pytest.mark.parametrize("key", [("Evil", "script"), ("Evil", "trace"),
                                 ("TraceEvil", "trace"), ("make", "trace")])
def test_dot_parses_and_draws_exactly_the_graph(views, key):
    view = views[key]
    gv = check_dot(view.dot(), view.graph)
    tooltips = "\n".join(o.get("tooltip", "") for o in gv["objects"])
    if key == ("Evil", "script"):
        # the string constants are there, as text, in the tooltip of their consumer
        assert f"a={SCRIPT}" in tooltips and DOT_BREAK[:-1] in tooltips
        assert f"d.{TAG}: ReLU" in tooltips and f"d.{JS}: Tanh" in tooltips
    if key == ("TraceEvil", "trace"):
        assert f"{TAG}: {SCRIPT}" in tooltips and 'a"];b->c[label="x: ReLU' in tooltips


@pytest.mark.parametrize("engine", ["pure", "dot", "wasm"])
@pytest.mark.parametrize("key", [("Evil", "script"), ("TraceEvil", "trace"), ("make", "trace")])
def test_svg_has_no_active_content(views, key, engine):
    from irviz.render.engines import available_engines

    if engine not in available_engines():
        pytest.skip(f"no {engine} engine here")
    view = views[key]
    root = check_svg(view.svg(engine))
    text = svg_text(root)
    assert "A" * 1000 not in text and "K" * 1000 not in text
    if key == ("Evil", "script"):
        assert f"d.{TAG}: ReLU" in text          # a module name, shown as text
        assert f"a={SCRIPT}" in text             # a string constant
        assert EVIL_FILE in text                 # the file name (title and tooltips)
        assert IFRAME in text and "\x1b" not in text and "\x7f" not in text
    if key == ("make", "trace"):
        assert "--><!--" in text                 # the graph's name, in its <title>


def test_json_keeps_every_string_whole(views, evil):
    view = views["Evil", "script"]
    data = json.loads(view.json())
    blocks = data["graph"]["blocks"]
    modules = {b.get("module") for b in blocks.values()}
    assert {f"d.{TAG}", f"d.{JS}", f"d.{DOT_BREAK}", f"d.{LONG_K}"} <= modules
    values = [n["attributes"].get("value") for n in data["nodes"] if n.get("attributes")]
    assert SCRIPT in values and "<iframe src=javascript:alert(1)>" in values
    assert RAISED in values                       # control characters and 100k chars kept
    assert data["graph"]["source_file"] == str(evil)
    sources = {n["user_source"] for n in data["nodes"] if n.get("user_source")}
    assert sources and all(s.startswith(f"{evil}:") for s in sources)
    loops = [n for n in data["nodes"] if n["kind"] == "prim::Loop"]
    assert any(LOOP_TEXT in (n.get("code") or "") for n in loops)
    traced = json.loads(views["TraceEvil", "trace"].json())
    labels = {b["label"] for b in traced["graph"]["blocks"].values()}
    assert f"{TAG}: {SCRIPT}" in labels


def test_source_locations_survive_quotes_and_newlines_in_file_names(views, named, evil):
    """Regression: a `"` in the file name used to lose every node's source location, and a
    newline made traced nodes point at a file that does not exist."""
    assert all(d["source"] and d["source"].startswith(str(evil))
               for _, d in views["Evil", "script"].graph.nodes(data=True)
               if d["kind"] == "aten::add")
    newline = next(p for p in named if "\n" in p.name)
    for mode in ("script", "trace"):
        [view] = api.visualize(f"{newline}:M", mode)
        sources = [d["user_source"] for _, d in view.graph.nodes(data=True)
                   if d["kind"] == "aten::add"]
        assert sources and all(s.startswith(f"{newline}:") for s in sources), sources


def test_file_names_in_every_picture_and_json(named):
    for path in named:
        if not capturable(path):
            continue
        for mode in ("script", "trace"):
            [view] = api.visualize(f"{path}:M", mode)
            dot = view.dot()
            check_dot(dot, view.graph)
            text = svg_text(check_svg(view.svg("dot")))
            shown = path.name.replace("\n", "?").replace("\x01", "?").replace("\x1b", "?")
            shown = shown.replace("\u202e", "?")
            assert shown in text, (path.name, mode)
            data = json.loads(view.json())
            assert data["graph"]["source_file"] == str(path)


def test_timeline_svg_escapes_task_labels_and_sites():
    from irviz.render.timeline import timeline_svg

    tasks = [{"lane": 0, "start_us": 0, "dur_us": 900, "label": SCRIPT},
             {"lane": 1, "start_us": 10, "dur_us": 300, "label": IFRAME + CONTROL,
              "name": TAG, "site": EVIL_FILE + ":3"},
             {"lane": 1, "start_us": 400, "dur_us": 2, "label": LONG_A}]
    root = check_svg(timeline_svg(tasks, f"{IMG}: {SCRIPT}"))
    text = svg_text(root)
    assert SCRIPT in text and EVIL_FILE in text and IFRAME in text


# ------------------------------------------------------------------------- the CLI

def test_cli_render_dot_svg_json(evil, tmp_path):
    result = cli("render", f"{evil}:Evil", "--format", "dot")
    assert result.exit_code == 0, result.stderr
    check_dot(result.stdout)
    out = tmp_path / "evil.svg"
    result = cli("render", f"{evil}:Evil", "-o", out, "--engine", "dot")
    assert result.exit_code == 0, result.stderr
    assert f"d.{TAG}: ReLU" in svg_text(check_svg(out.read_bytes()))
    result = cli("render", f"{evil}:TraceEvil", "--mode", "trace", "-o", out, "--engine", "dot")
    assert result.exit_code == 0, result.stderr
    check_svg(out.read_bytes())
    result = cli("render", f"{evil}:Evil", "--format", "json")
    assert result.exit_code == 0, result.stderr
    values = [n["attributes"].get("value") for n in json.loads(result.stdout)["nodes"]]
    assert RAISED in values and SCRIPT in values


def test_cli_render_with_lint_findings_drawn(evil, tmp_path):
    """Lint messages quote the source line; drawn on the picture, they stay text."""
    result = cli("render", f"{evil}:TraceEvil", "--mode", "trace", "--lint", "--format", "dot")
    assert result.exit_code == 0, result.stderr
    gv = check_dot(result.stdout)
    assert "IRV101" in gv["label"]
    out = tmp_path / "linted.svg"
    result = cli("render", f"{evil}:TraceEvil", "--mode", "trace", "--lint", "-o", out,
                 "--engine", "dot")
    assert result.exit_code == 0, result.stderr
    assert f'x.sum() > len("{SCRIPT}")' in svg_text(check_svg(out.read_bytes()))


def test_cli_report_html_json_md(evil, tmp_path):
    out = tmp_path / "report.html"
    result = cli("report", f"{evil}:Evil", "--format", "html", "-o", out, "--engine", "dot")
    assert result.exit_code == 0, result.stderr
    html_page = out.read_text(encoding="utf-8")
    page = check_html(html_page)
    text = "".join(page.text)
    assert EVIL_FILE + ":Evil" in text           # the title
    # the loop's source line is one <code> element: its backticks and ** are text
    loop = f'for _ in range(len("{LOOP_TEXT}")):'
    assert f"<td><code>{html.escape(loop)}</code></td>" in html_page
    assert [a for t, a in page.elements if t == "svg"]  # the graph is inlined

    result = cli("report", f"{evil}:Evil", "--format", "json")
    assert result.exit_code == 0, result.stderr
    [target] = json.loads(result.stdout)["targets"]
    assert target["title"] == EVIL_FILE + ":Evil"
    assert any(LOOP_TEXT in ((f["loop"] or {}).get("code") or "") for f in target["forks"])
    assert target["forks"] and all(f["fork_site"]["path"].endswith(EVIL_FILE)
                                   for f in target["forks"])

    result = cli("report", f"{evil}:Evil")
    assert result.exit_code == 0, result.stderr
    md = result.stdout
    # outside code spans, no Markdown or HTML mark of the model's text survives unescaped
    prose = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", md)
    assert not re.search(r"(?<!\\)[<>\[\]*`]", prose.replace("**", "")), prose
    # the loop line as one code span: a fence longer than its backtick, the pipe escaped
    assert '``for _ in range(len("<b>**x**</b>`\\|`")):``' in md


def test_cli_render_html_viewer(evil, tmp_path):
    """The viewer page: irviz's own two scripts, the model's strings only as JSON data."""
    out = tmp_path / "evil.html"
    result = cli("render", f"{evil}:Evil", "--format", "html", "-o", out, "--engine", "dot")
    assert result.exit_code == 0, result.stderr
    page = check_html(out.read_text(encoding="utf-8"), viewer=True)
    modules = {d.get("module") for d in page.data.values()}
    assert {f"d.{TAG}", f"d.{JS}", f"d.{LONG_K}"} <= modules   # kept whole, as data
    # the raise-only branch is folded into a check: its text is in the details, as data
    assert any(f'len("{SCRIPT}")' in text for d in page.data.values()
               for text in d.get("checks", []))
    drawn = tmp_path / "evil-checks.html"
    result = cli("render", f"{evil}:Evil", "--format", "html", "-o", drawn, "--engine", "dot",
                 "--show-checks")
    assert result.exit_code == 0, result.stderr
    page = check_html(drawn.read_text(encoding="utf-8"), viewer=True)
    assert any(d.get("code") and f'len("{SCRIPT}")' in d["code"] for d in page.data.values())


def test_viewer_source_links_encode_the_file_name(views):
    from urllib.parse import quote

    from irviz.render.html import node_details

    details = node_details(views["Evil", "script"], source_url="https://example.org/{path}#L{line}")
    urls = {d["url"] for d in details.values() if d.get("url")}
    assert urls and all(u.startswith(f"https://example.org/{quote(EVIL_FILE)}#L") for u in urls)


def lint(*args, cwd=None):
    return cli("lint", "--exit-zero", "--no-hints", "--show-info", *args, cwd=cwd)


def _finding_lines(text: str) -> list[str]:
    """The text format's lines that start a finding (its evidence line is indented)."""
    lines = text.splitlines()
    assert all(line.startswith(("    counterexample: ", "    held", "    certain: ",
                                "    undecided: ", "    called from ", "    remedy ",
                                "    no verified remedy: "))
               for line in lines if line.startswith(" ")), lines
    return [line for line in lines if not line.startswith(" ")]


def test_cli_lint_formats_keep_the_message_and_escape_it(evil, tmp_path):
    result = lint(str(evil), "--format", "json", cwd=evil.parent)
    assert result.exit_code == 0, result.stderr
    found = json.loads(result.stdout)
    quoted = [d for d in found if f'len("{SCRIPT}")' in d["message"]]
    assert quoted and all(d["path"] == EVIL_FILE for d in quoted)

    result = lint(str(evil), "--format", "sarif", cwd=evil.parent)
    assert result.exit_code == 0, result.stderr
    log = json.loads(result.stdout)
    texts = [r["message"]["text"] for r in log["runs"][0]["results"]]
    assert any(f'len("{SCRIPT}")' in t for t in texts)
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in log["runs"][0]["results"]}
    assert {unquote_to_bytes(u) for u in uris} == {EVIL_FILE.encode()}
    _validate_sarif(log)

    result = lint(str(evil), "--format", "github", cwd=evil.parent)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines and all(line.startswith(("::error ", "::warning ", "::notice "))
                         for line in lines)
    assert any(f'len("{SCRIPT}")' in line for line in lines)

    result = lint(str(evil), "--format", "text", cwd=evil.parent)
    assert result.exit_code == 0, result.stderr
    lines = _finding_lines(result.stdout)
    assert lines and all(line.startswith(EVIL_FILE + ":") for line in lines)


def test_cli_lint_hostile_file_names(named):
    folder = named[0].parent
    expected = {os.fsdecode(p.name) for p in named}
    result = lint(".", "--format", "json", cwd=folder)
    assert result.exit_code == 0, result.stderr
    paths = {d["path"] for d in json.loads(result.stdout)}
    assert paths == expected                     # every name, byte for byte

    result = lint(".", "--format", "sarif", cwd=folder)
    assert result.exit_code == 0, result.stderr
    log = json.loads(result.stdout)
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in log["runs"][0]["results"]}
    assert {unquote_to_bytes(u) for u in uris} == {os.fsencode(p) for p in expected}
    _validate_sarif(log)

    for fmt in ("text", "github"):
        result = lint(".", "--format", fmt, cwd=folder)
        assert result.exit_code == 0, result.stderr
        out = result.stdout
        assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202e\ud800-\udfff]", out), out
        lines = _finding_lines(out) if fmt == "text" else out.splitlines()
        first = ("::",) if fmt == "github" else ()
        n_findings = len(json.loads(lint(".", "--format", "json", cwd=folder).stdout))
        assert len(lines) == n_findings          # one line per finding: no forged lines
        assert all(line.startswith(first) for line in lines) if first else True
    text = lint(".", "--format", "text", cwd=folder).stdout
    assert "new\\x0aline.py:" in text and "bad\\xff\\xfename.py:" in text
    assert "ctl\\x01\\x1b[31m.py:" in text


def test_cli_render_a_file_torch_cannot_capture_is_a_user_error(named, tmp_path):
    bad = [p for p in named if not capturable(p)]
    if not bad:
        pytest.skip("the file system took no name that is not UTF-8")
    result = cli("render", f"{bad[0]}:M", "-o", tmp_path / "x.svg")
    assert result.exit_code == 2, (result.exit_code, result.stderr)


def _validate_sarif(log: dict) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema_path = Path(__file__).resolve().parent / "data" / "sarif-schema-2.1.0.json"
    if not schema_path.is_file():
        return
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    errors = list(jsonschema.Draft4Validator(schema).iter_errors(log))
    assert not errors, [e.message for e in errors[:5]]
