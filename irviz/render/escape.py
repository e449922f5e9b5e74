"""Escaping for every format irviz writes: one helper per output format.

Every string that comes from a model is untrusted text: module and attribute names
(``nn.ModuleDict`` keys and ``add_module`` names may be any string), string constants
of scripted code, source file names (which may hold quotes, ``<``, newlines, control
characters, or bytes that are not UTF-8), source lines, and the lint messages built
from them. The writers pass each such string through the one helper of their format:

==========  ===============================================================================
DOT         :func:`dot_string` for a double-quoted ID (names, plain labels, tooltips);
            :func:`dot_html` for text inside an HTML-like label, whose markup is built
            by irviz and marked as such by wrapping it in :class:`HtmlLabel`
SVG, HTML   :func:`xml_text` for element text and attribute values
JSON        :func:`json_dumps` (the data kept intact, see there)
==========  ===============================================================================

The *picture* formats first pass text through :func:`display`: characters that XML 1.0
forbids, invisible controls and bidi overrides become ``?``, and the undecodable bytes
of a file name (lone surrogates from ``os.fsdecode``) become U+FFFD; labels are cut
with :func:`truncate`. The *data* formats (JSON, SARIF) keep every string as it was.
Lint's text and GitHub formats have their own helpers in
:mod:`irviz.report.formatters`.
"""
from __future__ import annotations

import dataclasses
import html
import json
import re

__all__ = ["display", "truncate", "dot_string", "dot_html", "HtmlLabel", "dot_value", "xml_text",
           "json_dumps"]

#: lone surrogates: what ``os.fsdecode`` makes of bytes that are not UTF-8
_SURROGATE = re.compile("[\ud800-\udfff]")
#: C0 controls (newline and tab separately), DEL, C1 controls, the bidi overrides and
#: isolates (which reorder the text around them), and the non-characters XML forbids
_UNSHOWN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ufffe\uffff]")
#: either of the two: one scan finds the (rare) text that needs rewriting
_ODD = re.compile(f"{_SURROGATE.pattern}|{_UNSHOWN.pattern}")


def display(text: object, newlines: bool = False) -> str:
    """``text`` made safe to show: see the module doc. Newlines are kept only when
    ``newlines`` (tooltips); otherwise they, like tabs, become ``?``."""
    text = str(text)
    if _ODD.search(text):
        text = _UNSHOWN.sub("?", _SURROGATE.sub("\ufffd", text))
    if not newlines:
        return text.replace("\n", "?").replace("\t", "?")
    return text.replace("\r", "?").replace("\t", "?")


def truncate(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, the last one an ellipsis when cut."""
    return text if len(text) <= width else text[: width - 1] + "…"


def dot_string(text: object) -> str:
    """A DOT double-quoted string. Backslashes are doubled (so Graphviz's ``\\N``,
    ``\\l``... escapes cannot be injected), quotes escaped, newlines written ``\\n``."""
    text = display(text, newlines=True)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def dot_html(text: object) -> str:
    """Text for inside an HTML-like DOT label (``<``, ``>``, ``&`` and quotes escaped)."""
    return html.escape(display(text), quote=True)


class HtmlLabel(str):
    """A complete HTML-like DOT label ``<...>`` built by irviz from :func:`dot_html` text:
    written as is, where any other value is written with :func:`dot_string`."""

    def __new__(cls, markup: str) -> "HtmlLabel":
        if not (markup.startswith("<") and markup.endswith(">")):
            raise ValueError("an HTML-like label is written <...>")
        return super().__new__(cls, markup)


def dot_value(value: object) -> str:
    """An attribute value: an :class:`HtmlLabel` as is, anything else quoted."""
    return str.__str__(value) if isinstance(value, HtmlLabel) else dot_string(value)


def xml_text(text: object) -> str:
    """Text or an attribute value in SVG or HTML (newlines kept: tooltips use them)."""
    return html.escape(display(text, newlines=True), quote=True)


def _escape_surrogate(match: re.Match) -> str:
    return "\\u%04x" % ord(match.group())


def json_dumps(obj: object, **kwargs) -> str:
    """``json.dumps`` with ``ensure_ascii=False``, every string kept intact.

    A lone surrogate (a file-name byte that is not UTF-8) cannot be encoded as UTF-8, so
    it is written as its ``\\udcXX`` escape: the output is plain UTF-8, and ``json.loads``
    gives back the very same string (``os.fsencode`` of it, the original bytes).
    """
    kwargs.setdefault("default", _plain)
    return _SURROGATE.sub(_escape_surrogate, json.dumps(obj, ensure_ascii=False, **kwargs))


def _plain(obj: object) -> object:
    """The analyses' typed records (dataclasses) as JSON objects."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")
