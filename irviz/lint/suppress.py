"""``# noqa`` comments in the user's source, as flake8 reads them.

On the reported line:

- ``# noqa`` suppresses every finding there;
- ``# noqa: IRV101,IRV2`` suppresses those codes and prefixes (comma or space separated,
  any case). Codes of other tools are allowed beside them and ignored, so
  ``# noqa: E501`` alone does not hide an IRV finding.

A ``# noqa`` anywhere in a statement that spans several lines covers all of its lines
(flake8 does the same). Anywhere in the file:

- ``# irviz: noqa`` suppresses every irviz finding in the file;
- ``# irviz: noqa: IRV103`` suppresses those codes and prefixes in the file.

Files are read once per modification time. Why each finding was dropped (or kept
despite a ``# noqa``) is logged on the ``irviz.lint`` logger at debug level.
"""
from __future__ import annotations

import io
import logging
import os
import re
import tokenize
from functools import lru_cache
from typing import Iterable

from .diagnostic import Diagnostic

__all__ = ["suppressed_by", "is_suppressed", "filter_suppressed"]

log = logging.getLogger("irviz.lint")

#: ``# noqa`` / ``# noqa: CODES``; the codes are parsed by :func:`_codes`
NOQA_INLINE_RE = re.compile(r"#\s*noqa\b(?P<colon>\s*:(?P<codes>[^#]*))?", re.IGNORECASE)
#: ``# irviz: noqa`` / ``# irviz: noqa: CODES``
NOQA_FILE_RE = re.compile(r"#\s*irviz\s*:\s*noqa\b(?P<colon>\s*:(?P<codes>[^#]*))?",
                          re.IGNORECASE)
#: a code of any tool (E501, IRV101, IRV1) or the bare IRV prefix
_CODE_RE = re.compile(r"[A-Z]+[0-9]+|IRV", re.IGNORECASE)

def _codes(match: re.Match) -> bool | frozenset[str]:
    """The codes a noqa comment lists; a comment without codes suppresses everything.

    The list ends at the first word that is not a code (``# noqa: IRV101 tensor is
    static`` lists IRV101). ``# noqa:`` followed by no code at all counts as a bare
    ``# noqa``, as in flake8.
    """
    if not match.group("colon"):
        return True
    found = []
    for token in re.split(r"[,\s]+", match.group("codes").strip()):
        if not _CODE_RE.fullmatch(token):
            break
        found.append(token.upper())
    return frozenset(found) if found else True


def _merge(a, b):
    """Union of two scopes (None: nothing, True: everything, else code prefixes)."""
    if a is True or b is True:
        return True
    return frozenset(a or ()) | frozenset(b or ())


def _comments(text: str) -> tuple[list[tuple[int, str]], list[tuple[int, int]]]:
    """The comments of a source (line, text) and the line ranges of its multi-line
    statements. Falls back to a plain scan of the lines when the file does not tokenize."""
    comments: list[tuple[int, str]] = []
    spans: list[tuple[int, int]] = []
    try:
        start = None
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                comments.append((tok.start[0], tok.string))
            elif tok.type == tokenize.NEWLINE:
                if start is not None and tok.start[0] > start:
                    spans.append((start, tok.start[0]))
                start = None
            elif tok.type not in (tokenize.NL, tokenize.INDENT, tokenize.DEDENT,
                                  tokenize.ENDMARKER) and start is None:
                start = tok.start[0]
    except (tokenize.TokenError, SyntaxError, ValueError):
        comments = [(number, line[line.index("#"):])
                    for number, line in enumerate(text.splitlines(), 1) if "#" in line]
        spans = []
    return comments, spans


@lru_cache(maxsize=256)
def _noqa_map(path: str, mtime_ns: int, size: int):
    """(file-level scope or None, {line: scope}) for one version of one file."""
    try:
        with tokenize.open(path) as f:
            text = f.read()
    except (OSError, SyntaxError, UnicodeDecodeError):
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError as exc:
            log.debug("cannot read %s for noqa comments: %s", path, exc)
            return None, {}
    file_level = None
    lines: dict[int, bool | frozenset[str]] = {}
    comments, spans = _comments(text)
    for line, comment in comments:
        whole_file = NOQA_FILE_RE.search(comment)
        if whole_file:
            file_level = _merge(file_level, _codes(whole_file))
            comment = comment[:whole_file.start()] + comment[whole_file.end():]
        inline = NOQA_INLINE_RE.search(comment)
        if inline:
            lines[line] = _merge(lines.get(line), _codes(inline))
    for first, last in spans:
        scope = None
        for line in range(first, last + 1):
            if line in lines:
                scope = _merge(scope, lines[line])
        if scope is not None:
            for line in range(first, last + 1):
                lines[line] = scope
    return file_level, lines


def _scopes(path: str, line: int):
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None, None
    file_level, lines = _noqa_map(path, st.st_mtime_ns, st.st_size)
    return file_level, lines.get(line)


def suppressed_by(path: str, line: int) -> set[str] | bool:
    """What the ``noqa`` comments suppress at ``path:line``: True for everything,
    else the set of code prefixes (upper case; empty when nothing is suppressed)."""
    file_level, inline = _scopes(path, line)
    scope = _merge(file_level, inline)
    return True if scope is True else set(scope)


def _reason(d: Diagnostic) -> str | None:
    """Which comment suppresses ``d``, or None when none does."""
    file_level, inline = _scopes(d.path, d.line)
    code = d.code.upper()
    if inline is True:
        return "`# noqa`"
    if inline is not None:
        for prefix in sorted(inline):
            if code.startswith(prefix):
                return f"`# noqa: {prefix}`"
    if file_level is True:
        return "`# irviz: noqa`"
    if file_level is not None:
        for prefix in sorted(file_level):
            if code.startswith(prefix):
                return f"`# irviz: noqa: {prefix}`"
    if inline is not None or file_level is not None:
        listed = sorted(set(inline or ()) | set(file_level or ()))
        log.debug("%s:%d: %s kept: the noqa comments list only %s", d.path, d.line,
                  d.code, ", ".join(listed))
    return None


def is_suppressed(d: Diagnostic) -> bool:
    """Whether a ``noqa`` comment in the user's file suppresses this finding."""
    return _reason(d) is not None


def filter_suppressed(diags: Iterable[Diagnostic]) -> tuple[list[Diagnostic], int]:
    """The findings no ``noqa`` comment suppresses (order kept), and how many were
    dropped."""
    kept: list[Diagnostic] = []
    dropped = 0
    for d in diags:
        reason = _reason(d)
        if reason is None:
            kept.append(d)
        else:
            dropped += 1
            log.debug("%s:%d: %s suppressed by %s", d.path, d.line, d.code, reason)
    return kept, dropped
