"""Sphinx extension: ``.. irviz:: samples/model.py:Model`` draws a model's TorchScript IR.

Add ``"irviz.sphinxext"`` to ``extensions`` in ``conf.py``. Laid out like
``sphinx.ext.graphviz``: a docutils node, a directive that validates its options and
stores what to draw on the node, one visitor per builder, and :func:`setup`.

The directive never runs the user's model in the Sphinx process. It starts a child
(``python -m irviz.sphinxext``, a role of :mod:`irviz.child`) that captures the model,
renders the SVG and, when asked, lints it and builds the parallelism report, and answers
with one JSON result. It runs with a timeout (``irviz_timeout``): a model that hangs or
crashes becomes a warning at the directive's line, and the build goes on (``-W`` turns
it into a failure). Results are stored in ``irviz_cache_dir`` under a
content hash of everything that affects them (the model file's bytes, the options,
irviz's and torch's versions), so an unchanged directive is not captured again.

All state lives on the doctree nodes and in the cache files (written atomically under
unique names), so the extension is safe for parallel reading and writing (``-j N``).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives

from . import __version__

try:  # the interactive viewer; without it the HTML builder inlines the bare SVG
    from .render import html as _viewer
except ImportError:  # pragma: no cover - depends on the installed irviz
    _viewer = None

#: bumped when the JSON the child writes changes shape (part of every cache key)
RESULT_FORMAT = 1
#: the file in the cache directory that gets one line per capture (tests read it)
CAPTURE_LOG = "captures.log"
#: how much of a failed child's stderr goes into the warning
STDERR_TAIL = 1500


class irviz_graph(nodes.General, nodes.Inline, nodes.Element):
    """One rendered model: ``svg``, ``details`` (viewer data or None), ``title``, ``uid``."""


def _align(argument: str) -> str:
    return directives.choice(argument, ("left", "center", "right"))


def _mode(argument: str) -> str:
    return directives.choice(argument, ("script", "trace", "auto", "export"))


# ---------------------------------------------------------------------------------------
# the directive (read phase): resolve, look up the cache or capture, build nodes

try:
    from sphinx.util import logging as _logging
    from sphinx.util.docutils import SphinxDirective
except ImportError:  # pragma: no cover - the child process only needs the capture code
    SphinxDirective = object  # type: ignore[assignment,misc]
    _logging = None

logger = _logging.getLogger(__name__) if _logging else None


class IrvizDirective(SphinxDirective):
    """``.. irviz:: TARGET``: the IR graph of the model(s) TARGET names, as a figure."""

    required_arguments = 1
    optional_arguments = 0
    final_argument_whitespace = True   # model.py:factory(3, hidden=16)
    has_content = False
    option_spec = {
        "mode": _mode,
        "inputs": directives.unchanged_required,
        "depth": directives.nonnegative_int,
        "max-nodes": directives.nonnegative_int,
        "lint": directives.flag,
        "parallelism": directives.flag,
        "migrate": directives.flag,
        "profile": directives.flag,
        "caption": directives.unchanged_required,
        "name": directives.unchanged,
        "align": _align,
        "class": directives.class_option,
    }

    def run(self) -> list[nodes.Node]:
        spec = self.arguments[0]
        config = self.config
        target, model_file = self._resolve(spec)
        if model_file is not None:
            if not model_file.is_file():
                return [self._warning(f"{spec}: no such file: {self._shown(model_file)}")]
            self.env.note_dependency(str(model_file))
        request = {
            "target": target,
            "mode": self.options.get("mode", config.irviz_mode),
            "inputs": self.options.get("inputs"),
            "depth": self.options.get("depth", config.irviz_depth),
            "max_nodes": self.options.get("max-nodes", 1000),
            "lint": "lint" in self.options,
            "parallelism": "parallelism" in self.options,
            "migrate": "migrate" in self.options,
            "profile": "profile" in self.options,
            "source_url": config.irviz_source_url,
            "source_root": str(self._source_root()),
        }
        # the target as seen from conf.py: the same model shares one cache entry from
        # every document, and the key holds no absolute path
        key_spec = spec if model_file is None else (
            Path(os.path.relpath(model_file, self.env.app.confdir)).as_posix()
            + spec[len(spec.partition(":")[0]):])
        key = cache_key(request, key_spec, model_file)
        cache_dir = self._cache_dir()
        result_file = cache_dir / f"{key}.json"
        if result_file.is_file():
            logger.info("irviz: cached %s (%s)", spec, key[:12])
            result = json.loads(result_file.read_text(encoding="utf-8"))
        else:
            logger.info("irviz: capturing %s", spec)
            result = capture_in_child(request, result_file, float(config.irviz_timeout),
                                      cwd=Path(self.env.app.confdir))
            with open(cache_dir / CAPTURE_LOG, "a", encoding="utf-8") as log:
                status = "error" if "error" in result else "ok"
                log.write(f"{key} {spec} {status}\n")   # one short O_APPEND write: -j safe
        if "error" in result:
            message = result["error"]
            if model_file is not None:  # the path as written, not this machine's
                message = message.replace(str(model_file), spec.partition(":")[0])
            return [self._warning(f"{spec}: {message}")]
        return self._nodes(spec, key, result)

    # -- helpers ---------------------------------------------------------------------

    def _warning(self, message: str) -> nodes.system_message:
        return self.state.document.reporter.warning(f"irviz: {message}", line=self.lineno)

    def _shown(self, path: Path) -> str:
        """A path as the docs author wrote it: relative to conf.py's directory."""
        try:
            return os.path.relpath(path, self.env.app.confdir)
        except ValueError:  # pragma: no cover - another drive on Windows
            return str(path)

    def _resolve(self, spec: str) -> tuple[str, Path | None]:
        """The target for the child (file part absolute) and the model file, if any.

        ``file.py[:NAME]``, ``file.pt`` or ``dir/...`` are files relative to the
        document's directory (to conf.py's directory when they start with ``/``);
        ``package.module:NAME`` is passed through.
        """
        head, sep, rest = spec.partition(":")
        if not (head.endswith((".py", ".pt", ".pth")) or "/" in head):
            return spec, None
        if head.startswith("/"):
            path = Path(self.env.app.confdir) / head.lstrip("/")
        else:
            path = Path(self.env.doc2path(self.env.docname)).parent / head
        path = Path(os.path.normpath(path))
        return str(path) + sep + rest, path

    def _source_root(self) -> Path:
        root = self.config.irviz_source_root
        return Path(os.path.normpath(Path(self.env.app.confdir) / root)) if root else Path(
            self.env.app.confdir)

    def _cache_dir(self) -> Path:
        configured = Path(self.config.irviz_cache_dir)
        base = Path(self.env.app.outdir).parent
        cache = configured if configured.is_absolute() else base / configured
        cache.mkdir(parents=True, exist_ok=True)
        return cache

    def _nodes(self, spec: str, key: str, result: dict) -> list[nodes.Node]:
        figure = nodes.figure("", classes=["irviz"] + self.options.get("class", []))
        if "align" in self.options:
            figure["align"] = self.options["align"]
        for i, view in enumerate(result["views"]):
            graph = irviz_graph()
            graph["svg"] = view["svg"]
            graph["details"] = view.get("details")
            graph["title"] = view["title"]
            graph["uid"] = f"irviz-{key[:12]}-{i}"
            graph["alt"] = f"TorchScript IR graph of {view['title']} ({view['mode']})"
            figure += graph
        if "caption" in self.options:
            text_nodes, messages = self.state.inline_text(self.options["caption"], self.lineno)
            caption = nodes.caption(self.options["caption"], "", *text_nodes)
            caption.source, caption.line = self.get_source_info()
            figure += caption
            figure += messages
        self.add_name(figure)
        out: list[nodes.Node] = [figure]
        for view in result["views"]:
            if "lint" in self.options:
                out += _findings_nodes(view)
            if "parallelism" in self.options:
                out += _report_nodes(view)
            if "migrate" in self.options and view.get("migration"):
                out += _migration_nodes(view)
        for view in result["views"]:
            for note in view.get("notes", []):
                logger.debug("irviz: %s: %s", spec, note)
        return out


def _migration_nodes(view: dict) -> list[nodes.Node]:
    """The migration checklist (``irviz migrate``) under the figure, as a table."""
    m = view["migration"]
    title = nodes.rubric("", "", nodes.Text(
        f"Migration to torch.export: {view['title']} ({m['method']})"))
    rows = [[[["", c]] for c in row] for row in m["rows"]]
    verdict = nodes.paragraph("", "", nodes.strong(
        "", "migrated" if m["migrated"] else "not migrated"))
    out = [title, _table([[["", "check"]], [["", ""]], [["", "detail"]]], rows), verdict]
    out += [nodes.paragraph("", f"note: {n}") for n in m["notes"]]
    return out


def _findings_nodes(view: dict) -> list[nodes.Node]:
    title = nodes.rubric("", "", nodes.Text(f"irviz lint: {view['title']}"))
    findings = view.get("findings") or []
    if not findings:
        return [title, nodes.paragraph("", "No findings.")]
    items = nodes.bullet_list(classes=["irviz-findings"])
    for d in findings:
        where = f"{os.path.basename(str(d.get('path') or ''))}:{d.get('line')}"
        para = nodes.paragraph("", "", nodes.literal("", d["code"]),
                               nodes.Text(f" ({d['severity']}) {where}: {d['message']}"))
        item = nodes.list_item("", para)
        for related in d.get("related") or ():  # the user's call into a library's line
            item += nodes.paragraph("", f"{related['message']} "
                                        f"{os.path.basename(str(related['path']))}:"
                                        f"{related['line']}")
        if d.get("hint"):
            item += nodes.paragraph("", "", nodes.emphasis("", "hint: "), nodes.Text(d["hint"]))
        items += item
    return [title, items]


def _cell(segments: list) -> nodes.paragraph:
    """A report cell from ``(mark, text)`` segments: "c" code, "b" bold, "" plain."""
    para = nodes.paragraph()
    for mark, text in segments:
        if mark == "c":
            para += nodes.literal("", text)
        elif mark == "b":
            para += nodes.strong("", text)
        else:
            para += nodes.Text(text)
    return para


def _table(headers: list, rows: list) -> nodes.table:
    table = nodes.table(classes=["irviz-report"])
    group = nodes.tgroup(cols=len(headers))
    table += group
    for _ in headers:
        group += nodes.colspec(colwidth=1)
    head = nodes.thead()
    group += head
    head += nodes.row("", *[nodes.entry("", _cell(h)) for h in headers])
    body = nodes.tbody()
    group += body
    for row in rows:
        body += nodes.row("", *[nodes.entry("", _cell(c)) for c in row])
    return table


def _report_nodes(view: dict) -> list[nodes.Node]:
    out: list[nodes.Node] = [nodes.rubric("", "", nodes.Text(
        f"Parallelism report: {view['title']} ({view['mode']})"))]
    for t in view.get("tables") or []:
        out.append(nodes.paragraph("", "", nodes.strong("", "", *_cell(t["title"]).children)))
        out.append(_table(t["headers"], t["rows"]))
        if t.get("note"):
            out.append(_cell(t["note"]))
    return out


# ---------------------------------------------------------------------------------------
# the cache key and the child process

def _torch_version() -> str:
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:  # pragma: no cover
        return "none"


def cache_key(request: dict, spec: str, model_file: Path | None) -> str:
    """sha256 of everything that affects the result (absolute paths excluded, so a
    project that is moved keeps its cache)."""
    h = hashlib.sha256()
    keyed = {k: v for k, v in request.items() if k not in ("target", "source_root")}
    from .render.engines import identity

    keyed.update(spec=spec, irviz=__version__, torch=_torch_version(), format=RESULT_FORMAT,
                 viewer=_viewer is not None, python=sys.version_info[:2],
                 graphviz=identity())
    h.update(json.dumps(keyed, sort_keys=True).encode("utf-8"))
    if model_file is not None and model_file.is_file():
        h.update(b"\0file\0" + model_file.read_bytes())
        from .config import find_config

        config = find_config(model_file.resolve().parent)   # [tool.irviz] gates :lint:
        if config is not None:
            h.update(b"\0config\0" + config.read_bytes())
    return h.hexdigest()


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def capture_in_child(request: dict, result_file: Path, timeout: float, cwd: Path) -> dict:
    """Run the capture in a ``python -m irviz.sphinxext`` child (a role of
    :mod:`irviz.child`: ``request`` in, one result out); its result, or ``{"error": ...}``.

    The result is stored in ``result_file`` when it is a success or an error irviz
    reported (a load or capture error: the same inputs give the same error); a timeout or
    a crash is not stored, so the next build tries again.
    """
    from .child.protocol import call

    try:  # own session; at the deadline the whole group is killed
        reply = call("irviz.sphinxext", request, timeout, cwd=cwd,
                     pythonpath=(str(cwd), *sys.path))
    except OSError as exc:
        return {"error": f"could not start the capture process: {exc}"}
    failure = reply.failure("the capture process", timeout_option="irviz_timeout in conf.py")
    if failure is not None:
        tail = "" if reply.ended.timed_out else reply.stderr.strip()[-STDERR_TAIL:]
        return {"error": failure.message + (f":\n{tail}" if tail else "")}
    result = dict(reply.result, seconds=round(reply.seconds, 2))
    _write_atomic(result_file, json.dumps(result).encode("utf-8"))
    return result


def _segments(text: str) -> list:
    from .report.parallelism import _BOLD, _CODE, _segments as segments

    marks = {_CODE: "c", _BOLD: "b", "": ""}
    return [[marks[m], part] for m, part in segments(text)]


def _child_capture(req: dict) -> dict:
    """The child's work: capture, render, and lint / report when asked, through the same
    Workspace and lint gate as the CLI (``[tool.irviz]`` found from the model file)."""
    import torch

    from .compat import check_torch
    from .config import load_config
    from .errors import UsageError
    from .render.dot import RenderOptions
    from .workspace import Workspace

    check_torch()
    torch.manual_seed(0)   # random weights and inputs: the same picture on every build
    model_file = Path(req["target"].split(":", 1)[0])
    config = load_config(model_file.resolve().parent if model_file.exists() else None)
    workspace = Workspace(inputs=req["inputs"], config=config)
    targets = workspace.targets(req["target"])   # an overloaded forward: one view each
    if not targets:
        raise UsageError(f"{req['target']} names no model")
    gate = session = None
    if req["lint"]:
        from .lint.gate import Gate
        from .lint.session import LintSession

        gate, session = Gate.from_config(config), LintSession(workspace)
    options = RenderOptions(depth=req["depth"], max_nodes=req["max_nodes"] or None,
                            source_root=req["source_root"])
    views, out = [], []
    for tgt in targets:
        found = gate.apply(session.target(tgt).found).kept if gate is not None else []
        view = workspace.view(tgt, req["mode"], options, findings=found)
        notes = []
        if req.get("profile"):   # measured op times on the picture (a child of this child)
            profiled = workspace.profile(tgt, req["mode"], view.graph)
            if profiled.get("error"):
                notes.append(f"not profiled: {profiled['error']}")
        findings = [d.to_dict() for d in found]
        svg = view.svg().decode("utf-8")
        details = None
        if _viewer is not None:
            details = _viewer.node_details(view, findings=findings or None,
                                           source_url=req["source_url"])
        views.append(view)
        out.append({"name": view.name, "title": view.title(), "mode": view.capture.mode,
                    "svg": svg, "details": details, "findings": findings,
                    "notes": list(view.capture.notes) + list(view.render_notes) + notes})
    if req.get("migrate"):
        import tempfile

        from .commands.migrate import checklist_rows, migrate_into

        with tempfile.TemporaryDirectory() as folder:
            m = migrate_into(req["target"], workspace, Path(folder))
        if out:
            out[0]["migration"] = {"method": m.method, "migrated": m.migrated,
                                   "rows": [list(r) for r in checklist_rows(m)],
                                   "notes": m.notes}
        if m.program_target is not None:   # the exported program drawn beside the original
            view = workspace.view(m.program_target, "export", options)
            out.append({"name": view.name, "title": view.title(), "mode": "export",
                        "svg": view.svg().decode("utf-8"), "details": None, "findings": [],
                        "notes": []})
    if req["parallelism"]:
        from .report import parallelism as rep

        report = rep.build_report(views)
        for entry, t in zip(out, report["targets"]):
            entry["tables"] = [{
                "title": _segments(table.title),
                "headers": [_segments(h) for h in table.headers],
                "rows": [[_segments(c) for c in row] for row in table.rows],
                "note": _segments(table.note) if table.note else None,
            } for table in rep._tables(t)]
    return {"views": out}


def _child_answer(req: dict) -> dict:
    """The child's result: the capture's, or the error to warn with."""
    from .errors import IrvizError

    try:
        return _child_capture(req)
    except IrvizError as exc:
        return {"error": exc.format()}
    except Exception as exc:  # noqa: BLE001 - reported as a warning, never a traceback
        return {"error": f"internal error: {type(exc).__name__}: {exc}"}


# ---------------------------------------------------------------------------------------
# builders (write phase)

def html_visit_irviz_graph(self, node: irviz_graph) -> None:
    from .report.parallelism import strip_xml_prolog

    if _viewer is not None and node.get("details") is not None:
        self.body.append(_viewer.viewer_fragment(node["svg"], node["details"],
                                                 title=node["title"], uid=node["uid"]))
    else:
        # irviz's own SVG: every model string in it is escaped by the renderer
        self.body.append(f'<div class="irviz-graph" id="{node["uid"]}" role="img" '
                         f'aria-label="{self.encode(node["alt"])}" '
                         f'style="overflow:auto;max-width:100%;max-height:80vh">'
                         f'{strip_xml_prolog(node["svg"])}</div>\n')
    raise nodes.SkipNode


def _svg_to_pdf(svg: str, path: Path) -> bool:
    converter = shutil.which("rsvg-convert")
    if converter is None:
        return False
    if path.is_file():
        return True
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        subprocess.run([converter, "-f", "pdf", "-o", str(tmp)], input=svg.encode("utf-8"),
                       check=True, timeout=120, capture_output=True)
        os.replace(tmp, path)
        return True
    except (OSError, subprocess.SubprocessError):
        tmp.unlink(missing_ok=True)
        return False


def latex_visit_irviz_graph(self, node: irviz_graph) -> None:
    name = f"{node['uid']}.pdf"
    if _svg_to_pdf(node["svg"], Path(self.builder.outdir) / name):
        self.body.append(f"\n\\sphinxincludegraphics{{{{{name[:-4]}}}.pdf}}\n")
    else:
        logger.warning("irviz: rsvg-convert is not installed, so %s is not drawn in the "
                       "LaTeX output", node["title"], location=node, type="irviz")
        self.body.append(f"\n[{self.encode(node['alt'])}: see the HTML docs]\n")
    raise nodes.SkipNode


def text_visit_irviz_graph(self, node: irviz_graph) -> None:
    self.add_text(f"[{node['alt']}: see the HTML docs]")
    raise nodes.SkipNode


def man_visit_irviz_graph(self, node: irviz_graph) -> None:
    self.body.append(f"[{node['alt']}: see the HTML docs]")
    raise nodes.SkipNode


def texinfo_visit_irviz_graph(self, node: irviz_graph) -> None:
    self.body.append(f"[{self.escape(node['alt'])}: see the HTML docs]")
    raise nodes.SkipNode


def _viewer_assets() -> list[Path]:
    folder = Path(getattr(_viewer, "VIEWER_DIR", "") or "")
    if _viewer is None or not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir()
                  if p.suffix in (".js", ".css"))


def _add_assets(app) -> None:
    if app.builder.format != "html":
        return
    for asset in _viewer_assets():
        if asset.suffix == ".js":
            app.add_js_file(f"irviz/{asset.name}")
        else:
            app.add_css_file(f"irviz/{asset.name}")


def _copy_assets(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    static = Path(app.outdir) / "_static" / "irviz"
    static.mkdir(parents=True, exist_ok=True)
    for asset in _viewer_assets():
        shutil.copyfile(asset, static / asset.name)


def setup(app) -> dict:
    app.add_node(irviz_graph,
                 html=(html_visit_irviz_graph, None),
                 latex=(latex_visit_irviz_graph, None),
                 text=(text_visit_irviz_graph, None),
                 man=(man_visit_irviz_graph, None),
                 texinfo=(texinfo_visit_irviz_graph, None))
    app.add_directive("irviz", IrvizDirective)
    app.add_config_value("irviz_mode", "script", "env", types=frozenset({str}))
    app.add_config_value("irviz_depth", None, "env", types=frozenset({int, type(None)}))
    app.add_config_value("irviz_source_url", None, "env", types=frozenset({str, type(None)}))
    app.add_config_value("irviz_source_root", None, "env", types=frozenset({str, type(None)}))
    app.add_config_value("irviz_cache_dir", "_irviz_cache", "", types=frozenset({str}))
    app.add_config_value("irviz_timeout", 120, "", types=frozenset({int, float}))
    app.connect("builder-inited", _add_assets)
    app.connect("build-finished", _copy_assets)
    return {"version": __version__, "parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":
    from .child.protocol import serve

    sys.exit(serve(lambda requests: map(_child_answer, requests)))
