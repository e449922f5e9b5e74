"""How ``irviz lint`` shows its findings: text, JSON, SARIF and GitHub annotations.

Every formatter takes the same arguments, ``(diags, *, rules=(), tool_version="")``,
and returns the whole output as a string; :data:`FORMATTERS` maps the ``--format``
names to them. Formatters only present: they neither sort, filter nor decide the exit
status, and keep the findings in the order given.
"""
from __future__ import annotations

import hashlib
import json
import linecache
import os
import re
from collections import Counter
from pathlib import Path
from typing import Iterable, Sequence
from urllib.parse import quote

from ..paths import display_path
from .. import __version__
from ..lint.diagnostic import Diagnostic
from ..lint.registry import Rule, rule_markdown, rule_text, sections, summary

__all__ = ["format_text", "format_json", "format_sarif", "format_github", "FORMATTERS",
           "SARIF_SCHEMA", "INFORMATION_URI", "related_lines"]

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://pypi.org/project/irviz/"

_SARIF_LEVELS = {"error": "error", "warning": "warning", "info": "note"}
_GITHUB_LEVELS = {"error": "error", "warning": "warning", "info": "notice"}
_BANDS = {"0": "passthrough", "1": "tracing", "2": "fork-wait", "3": "scripting",
          "4": "noisy"}


#: what a terminal would act on instead of showing: C0 controls (newline and tab
#: included: one finding is one line), DEL, C1 controls, bidi overrides and isolates, and
#: the lone surrogates that stand for the undecodable bytes of a file name
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escape_char(match: re.Match) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # os.fsdecode's stand-in for the byte code - 0xDC00
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def _printable(text: str, keep: str = "") -> str:
    """``text`` with every unprintable character (see :data:`_UNPRINTABLE`), except those
    in ``keep``, written as a Python-style escape (``\\x1b``, ``\\u202e``)."""
    return _UNPRINTABLE.sub(lambda m: m.group() if m.group() in keep else _escape_char(m),
                            text)


def format_text(diags: Iterable[Diagnostic], *, rules: Sequence[type[Rule]] = (),
                tool_version: str = "", show_hints: bool = True) -> str:
    """``path:line:col: CODE message`` per finding (flake8's default), then an indented
    line per related location (``    called from model.py:31``) and an indented
    ``hint: ...`` line when ``show_hints``; paths as given. Control characters (newlines
    included) are written as escapes, so a finding is one line and a terminal shows
    every character rather than acting on it."""
    out = []
    for d in diags:
        out.append(f"{_printable(d.path)}:{d.line}:{d.column}: {d.code} "
                   f"{_printable(d.message)}\n")
        for line in related_lines(d):
            out.append(f"    {_printable(line)}\n")
        if d.evidence is not None:
            out.append(f"    {_printable(d.evidence.line())}\n")
        if d.remedy_line():
            out.append(f"    {_printable(d.remedy_line())}\n")
        if show_hints and d.hint:
            out.append(f"    hint: {_printable(d.hint)}\n")
    return "".join(out)


def related_lines(d: Diagnostic) -> list[str]:
    """``called from model.py:31`` for each of the finding's related locations."""
    return [f"{message} {path}:{line}" for path, line, message in d.related]


def evidence_lines(d: Diagnostic) -> list[str]:
    """``counterexample: ...`` / ``held on: ...`` / ``certain: ...`` when the finding has
    evidence."""
    return ([d.evidence.line()] if d.evidence is not None else []) + \
        ([d.remedy_line()] if d.remedy_line() else [])


def format_json(diags: Iterable[Diagnostic], *, rules: Sequence[type[Rule]] = (),
                tool_version: str = "") -> str:
    """A JSON list of :meth:`Diagnostic.to_dict`, indented by 2, with a final newline."""
    return json.dumps([d.to_dict() for d in diags], indent=2) + "\n"


# ---------------------------------------------------------------------------
# GitHub workflow commands

def _escape_data(text: str) -> str:
    """As ``escapeData`` of GitHub's actions/toolkit (the message after ``::``); other
    control characters written as escapes, as in the text format."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return _printable(text)


def _escape_property(text: str) -> str:
    """As ``escapeProperty`` of GitHub's actions/toolkit (``key=value`` properties)."""
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _display_path(path: str) -> str:
    """:func:`irviz.paths.display_path` with forward slashes (SARIF URIs, annotations)."""
    return display_path(path).replace(os.sep, "/")


def format_github(diags: Iterable[Diagnostic], *, rules: Sequence[type[Rule]] = (),
                  tool_version: str = "") -> str:
    """One GitHub Actions workflow command per finding, which GitHub shows as an
    annotation on the line: ``::error file=a.py,line=3,col=5,title=IRV101
    tensor-to-python-bool::message`` (``warning``, or ``notice`` for info)."""
    out = []
    for d in diags:
        props = [("file", _display_path(d.path)), ("line", str(d.line)),
                 ("col", str(d.column))]
        if d.end_line is not None:
            props.append(("endLine", str(d.end_line)))
        if d.end_column is not None:
            props.append(("endColumn", str(d.end_column)))
        props.append(("title", f"{d.code} {d.name}"))
        joined = ",".join(f"{key}={_escape_property(value)}" for key, value in props)
        level = _GITHUB_LEVELS.get(d.severity, "warning")
        text = "\n".join([d.message, *related_lines(d), *evidence_lines(d)])
        out.append(f"::{level} {joined}::{_escape_data(text)}\n")
    return "".join(out)


# ---------------------------------------------------------------------------
# SARIF 2.1.0

def _artifact_location(path: str) -> dict:
    """A relative, percent-encoded URI under %SRCROOT% (the working directory) when the
    file lies inside it, else an absolute file URI."""
    relative = _display_path(path)
    if not os.path.isabs(relative) and not relative.startswith("../"):
        # the file name's bytes, percent-encoded (os.fsencode: undecodable bytes too)
        return {"uri": quote(os.fsencode(relative), safe="/"), "uriBaseId": "%SRCROOT%"}
    return {"uri": Path(os.path.abspath(path)).as_uri()}


def _related_location(index: int, path: str, line: int, message: str) -> dict:
    """A SARIF ``location`` (§3.28) for a related place: ``relatedLocations`` of a result
    (§3.27.22), with the id its message could link to and what it is (``called from``)."""
    physical: dict = {"artifactLocation": _artifact_location(path)}
    if line >= 1:
        physical["region"] = {"startLine": line}
    return {"id": index, "physicalLocation": physical, "message": {"text": message}}


def _region(d: Diagnostic) -> dict | None:
    if d.line < 1:
        return None
    region = {"startLine": d.line, "startColumn": max(d.column, 1)}
    if d.end_line is not None and d.end_line >= d.line:
        region["endLine"] = d.end_line
    if d.end_column is not None and d.end_column >= 1:
        region["endColumn"] = d.end_column
    return region


def _line_text(path: str, line: int) -> str:
    linecache.checkcache(path)
    return linecache.getline(path, line).strip() if line >= 1 else ""


def _fingerprint(d: Diagnostic, counts: Counter) -> str:
    """Stable across runs and line shifts: the code, the path and the text of the
    flagged line (not its number), with a counter for identical lines."""
    text = _line_text(d.path, d.line) or f"line {d.line}"
    key = "\0".join((d.code, _display_path(d.path), text))
    counts[key] += 1
    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return f"{digest}:{counts[key]}"


def _clip(text: str, limit: int = 1024) -> str:
    """GitHub code scanning takes rule descriptions of at most 1024 characters."""
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "\u2026"


def _rule_descriptor(cls: type[Rule]) -> dict:
    docs = sections(cls)
    full = "\n\n".join(docs[t] for t in ("What it does", "Why is this bad?") if t in docs)
    tags = ["torchscript", _BANDS.get(cls.code[3:4], "other")]
    if cls.status == "preview":
        tags.append("preview")
    precision = getattr(cls, "precision", "medium" if cls.status == "preview" else "high")
    return {
        "id": cls.code,
        "name": cls.name,
        "shortDescription": {"text": _clip(summary(cls) or cls.name)},
        "fullDescription": {"text": _clip(full or summary(cls) or cls.name)},
        "help": {"text": rule_text(cls), "markdown": rule_markdown(cls)},
        "defaultConfiguration": {"level": _SARIF_LEVELS.get(cls.severity, "warning")},
        "properties": {"tags": tags, "precision": precision},
    }


def _bare_descriptor(d: Diagnostic) -> dict:
    """For a finding whose rule class was not passed in ``rules``."""
    return {
        "id": d.code,
        "name": d.name,
        "shortDescription": {"text": d.name},
        "fullDescription": {"text": d.name},
        "help": {"text": d.hint or d.name},
        "defaultConfiguration": {"level": _SARIF_LEVELS.get(d.severity, "warning")},
    }


def _sarif_fix(remedy) -> dict:
    """A verified remedy that edits the source as a SARIF ``fix`` (§3.55): the whole line
    replaced (from its first column to the next line's)."""
    edit = remedy.edit
    return {"description": {"text": remedy.line()},
            "artifactChanges": [{
                "artifactLocation": _artifact_location(edit.path),
                "replacements": [{
                    "deletedRegion": {"startLine": edit.line, "startColumn": 1,
                                      "endLine": edit.line + 1, "endColumn": 1},
                    "insertedContent": {"text": edit.new + "\n"}}]}]}


def format_sarif(diags: Iterable[Diagnostic], *, rules: Sequence[type[Rule]] = (),
                 tool_version: str = "") -> str:
    """A SARIF 2.1.0 log that GitHub code scanning accepts: one run, the rules that
    appear among the findings (documented from ``rules``), one result per finding."""
    diags = list(diags)
    by_code = {cls.code: cls for cls in rules}
    descriptors: list[dict] = []
    index: dict[str, int] = {}
    for d in diags:
        if d.code not in index:
            index[d.code] = len(descriptors)
            cls = by_code.get(d.code)
            descriptors.append(_rule_descriptor(cls) if cls else _bare_descriptor(d))
    counts: Counter = Counter()
    results = []
    for d in diags:
        text = "\n".join([d.message, *related_lines(d), *evidence_lines(d)]) + (
            f"\nhint: {d.hint}" if d.hint else "")
        physical = {"artifactLocation": _artifact_location(d.path)}
        region = _region(d)
        if region:
            physical["region"] = region
        result = {
            "ruleId": d.code,
            "ruleIndex": index[d.code],
            "level": _SARIF_LEVELS.get(d.severity, "warning"),
            "message": {"text": text},
            "locations": [{"physicalLocation": physical}],
            "partialFingerprints": {"irviz/v1": _fingerprint(d, counts)},
        }
        if d.related:
            result["relatedLocations"] = [_related_location(i, *r)
                                          for i, r in enumerate(d.related, 1)]
        properties = {}
        if d.target:
            properties["target"] = d.target
        if d.layers:
            properties["layers"] = list(d.layers)
        if d.evidence is not None:
            properties["evidence"] = d.evidence.to_dict()
        if d.remedy is not None:
            properties["remedy"] = d.remedy.to_dict()
            if d.remedy.edit is not None:
                result["fixes"] = [_sarif_fix(d.remedy)]
        elif d.remedy_tried:
            properties["remedy_tried"] = [a.to_dict() for a in d.remedy_tried]
        if properties:
            result["properties"] = properties
        results.append(result)
    root = Path.cwd().as_uri().rstrip("/") + "/"
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "irviz",
                "version": tool_version or __version__,
                "informationUri": INFORMATION_URI,
                "rules": descriptors,
            }},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": root}},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }
    return json.dumps(log, indent=2) + "\n"


#: ``--format`` name -> formatter
FORMATTERS = {"text": format_text, "json": format_json, "sarif": format_sarif,
              "github": format_github}
