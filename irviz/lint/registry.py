"""Rules, the registry that knows them, rule selection, and the rule documentation.

A rule is a class, one per pattern (pyflakes' messages, ruff's rules): its code, name,
severity, message template and hint are class attributes, and its docstring is its
documentation, in Markdown with fixed sections (:data:`REQUIRED_SECTIONS`). The same
text is shown by ``irviz rule IRV101``, exported as JSON, put into SARIF and written to
``docs/rules/IRV101.rst``, so it is written once.

Selection follows ruff and flake8: ``--select``/``--ignore``/``--extend-select`` take
full codes or prefixes (``IRV1``, ``IRV10``) or ``ALL``; the longer prefix wins when a
code matches both a selected and an ignored prefix.
"""
from __future__ import annotations

import difflib
import inspect
import re
import string
import textwrap
from pathlib import Path
from typing import ClassVar, Iterable

from ..errors import UsageError
from .diagnostic import SEVERITIES, Diagnostic

__all__ = ["REQUIRED_SECTIONS", "STATUSES", "Rule", "Registry", "REGISTRY", "rule",
           "sections", "summary", "rule_text", "rule_json", "rule_markdown", "rule_rst",
           "write_rule_docs"]

REQUIRED_SECTIONS = ("What it does", "Why is this bad?", "Example", "Use instead",
                     "Known problems")
STATUSES = ("stable", "preview")
PROOFS = ("counterexample", "certain")

CODE_RE = re.compile(r"IRV\d{3}")
NAME_RE = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
_HEADING_RE = re.compile(r"^##[ \t]+(?P<title>\S.*?)[ \t]*$", re.MULTILINE)
_FENCE_RE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[ \t]*$")

# the CLI options named in selection errors, keyed by the selected() argument
_OPTIONS = {"select": "--select", "ignore": "--ignore", "extend_select": "--extend-select"}


class Rule:
    """Base class of every rule. Subclasses set the class attributes below and write
    their documentation in the class docstring (see :data:`REQUIRED_SECTIONS`)."""

    code: ClassVar[str]                 # "IRV101"
    name: ClassVar[str]                 # "tensor-to-python-bool": the pattern flagged
    #: the severity a finding of this rule has once proven (docs/lint.md: the evidence
    #: ladder); unproven findings are info, and the gate decides (:mod:`irviz.lint.gate`)
    severity: ClassVar[str] = "warning"
    #: what proves a finding: ``counterexample`` (an input on which the trace and the
    #: model differ) or ``certain`` (the finding is a fact no input changes: torch.jit.trace
    #: refuses the model, a fork is never waited)
    proof: ClassVar[str] = "counterexample"
    #: for ``certain`` rules: why no input can change the finding (said in the output)
    certainty: ClassVar[str] = ""
    #: the Python decision a finding rests on, which a variant must drive the other way
    #: before the trace's agreement proves anything (docs/lint.md: held and undecided):
    #: ``""`` none, else a kind of :data:`irviz.frontends.variants.AIMS` (``value``,
    #: ``size``, ``rank``, ``shapes``, ``dtype``, ``machine``, ``mode``, ``argument``,
    #: ``state``); :meth:`decides` may read it off the finding's expression
    decision: ClassVar[str] = ""
    status: ClassVar[str] = "stable"    # "stable" | "preview"
    default: ClassVar[bool] = True      # enabled without --select (IRV4xx: False)
    message: ClassVar[str]              # str.format template filled by diagnostic(**fmt)
    hint: ClassVar[str]                 # one line: what to do instead

    @classmethod
    def decides(cls, statement: str) -> str:
        """The kind of decision the finding on ``statement`` (its source line) rests on:
        what a variant must change to drive it (:attr:`decision` unless the rule reads
        more off the statement)."""
        return cls.decision

    @classmethod
    def diagnostic(cls, *, path: str, line: int, column: int = 1,
                   end_line: int | None = None, end_column: int | None = None,
                   target: str | None = None, layers: Iterable[str] = (),
                   **fmt) -> Diagnostic:
        """The one place findings are created: ``message = cls.message.format(**fmt)``.

        The hint is formatted with the same fields when it uses any; a hint with no
        fields (or literal braces) is kept as written.
        """
        try:
            message = cls.message.format(**fmt)
        except (KeyError, IndexError) as exc:
            raise TypeError(f"{cls.code} {cls.name}: the message template "
                            f"{cls.message!r} needs the field {exc}; got "
                            f"{', '.join(sorted(fmt)) or 'none'}") from None
        hint = cls.hint
        if hint and fmt:
            try:
                hint = hint.format(**fmt)
            except (KeyError, IndexError, ValueError):
                hint = cls.hint
        return Diagnostic(code=cls.code, name=cls.name, message=message,
                          severity=cls.severity, path=path, line=line, column=column,
                          end_line=end_line, end_column=end_column, target=target,
                          layers=tuple(layers), hint=hint or None)


def sections(cls: type) -> dict[str, str]:
    """The ``## Title`` sections of a rule's docstring, in order: title -> Markdown body
    (dedented, stripped), then the generated "How a finding is proven" of a rule class
    (:func:`irviz.lint.proof.evidence_section`, from its ``proof`` and ``decision``). Text
    before the first heading is not a section."""
    from .proof import EVIDENCE_TITLE, evidence_section

    doc = inspect.cleandoc(cls.__doc__ or "")
    found: dict[str, str] = {}
    matches = list(_HEADING_RE.finditer(doc))
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(doc)
        body = doc[match.end():end]
        found[match.group("title")] = textwrap.dedent(body).strip("\n").rstrip()
    if isinstance(cls, type) and issubclass(cls, Rule) and getattr(cls, "code", None):
        found[EVIDENCE_TITLE] = evidence_section(cls)
    return found


def summary(cls: type) -> str:
    """The first paragraph of "What it does", on one line (tables, SARIF)."""
    text = sections(cls).get("What it does", "")
    first = text.split("\n\n", 1)[0]
    return " ".join(first.split())


class Registry:
    """The rules irviz knows, by code and name. :data:`REGISTRY` is the global one;
    tests build private ones."""

    def __init__(self) -> None:
        self._by_code: dict[str, type[Rule]] = {}
        self._by_name: dict[str, type[Rule]] = {}

    def __contains__(self, code: str) -> bool:
        return code.upper() in self._by_code

    def __len__(self) -> int:
        return len(self._by_code)

    def names(self) -> frozenset[str]:
        """Every rule's name (``wait-immediately-after-fork``)."""
        return frozenset(self._by_name)

    def register(self, cls: type[Rule]) -> type[Rule]:
        """Class decorator: validate the rule's attributes and documentation, then add it.

        Raises ValueError, naming the rule, for a malformed code or name, a duplicate,
        an unknown severity or status, a missing message or hint, or a missing or empty
        documentation section.
        """
        label = getattr(cls, "code", None) or cls.__name__
        code = getattr(cls, "code", None)
        if not isinstance(code, str) or not CODE_RE.fullmatch(code):
            raise ValueError(f"{cls.__name__}: code {code!r} is not of the form IRV + "
                             f"3 digits (IRV101)")
        if code in self._by_code:
            raise ValueError(f"{code}: code already used by "
                             f"{self._by_code[code].__name__}; never reuse a code")
        name = getattr(cls, "name", None)
        if not isinstance(name, str) or not NAME_RE.fullmatch(name):
            raise ValueError(f"{label}: name {name!r} is not kebab-case "
                             f"(tensor-to-python-bool)")
        if name in self._by_name:
            raise ValueError(f"{label}: name {name!r} already used by "
                             f"{self._by_name[name].code}")
        if cls.severity not in SEVERITIES:
            raise ValueError(f"{label}: severity {cls.severity!r} is not one of "
                             f"{', '.join(SEVERITIES)}")
        if cls.proof not in PROOFS:
            raise ValueError(f"{label}: proof {cls.proof!r} is not one of {', '.join(PROOFS)}")
        if cls.proof == "certain" and cls.severity != "info" and not cls.certainty:
            raise ValueError(f"{label}: a certain rule says why (its `certainty`)")
        if cls.status not in STATUSES:
            raise ValueError(f"{label}: status {cls.status!r} is not one of "
                             f"{', '.join(STATUSES)}")
        if not isinstance(cls.default, bool):
            raise ValueError(f"{label}: default must be True or False")
        for attr in ("message", "hint"):
            value = getattr(cls, attr, None)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{label}: the rule has no {attr}")
            try:
                list(string.Formatter().parse(value))
            except ValueError as exc:
                raise ValueError(f"{label}: the {attr} {value!r} is not a valid "
                                 f"str.format template ({exc}); write literal braces "
                                 f"as {{{{ and }}}}") from None
        found = sections(cls)
        for title in REQUIRED_SECTIONS:
            if title not in found:
                raise ValueError(f"{label}: the docstring has no `## {title}` section")
            if not found[title].strip():
                raise ValueError(f"{label}: the `## {title}` section of the docstring "
                                 f"is empty")
        self._by_code[code] = cls
        self._by_name[name] = cls
        return cls

    def all(self) -> list[type[Rule]]:
        """Every rule, sorted by code."""
        return [self._by_code[code] for code in sorted(self._by_code)]

    def get(self, code_or_name: str) -> type[Rule]:
        """A rule by code (any case) or name; UsageError with a suggestion otherwise."""
        key = code_or_name.strip()
        found = self._by_code.get(key.upper()) or self._by_name.get(key.lower())
        if found is not None:
            return found
        choices = list(self._by_code) + list(self._by_name)
        close = difflib.get_close_matches(key.upper() if key.upper().startswith("IRV")
                                          else key.lower(), choices, n=1)
        hint = "list every rule with `irviz rule --all`"
        if close:
            match = self._by_code.get(close[0]) or self._by_name[close[0]]
            hint = f"did you mean {match.code} ({match.name})? {hint}"
        raise UsageError(f"unknown rule {code_or_name!r}", hint=hint)

    def selected(self, select: Iterable[str] | None = None,
                 ignore: Iterable[str] | None = None,
                 extend_select: Iterable[str] | None = None, *,
                 where: str | None = None) -> set[str]:
        """The codes enabled by these options, with ruff/flake8 semantics.

        Without ``select``, the rules with ``default=True`` are on; ``select`` replaces
        that set, ``extend_select`` adds to it, ``ignore`` removes from it. Selectors
        are codes, prefixes (``IRV1``) or ``ALL`` (any case); one value may hold
        several, separated by commas or spaces. When a code matches both a selecting
        and an ignoring prefix, the longer prefix wins (``ALL`` is the shortest; on
        equal length ``ignore`` wins). An unknown selector is a UsageError naming the
        option; ``where`` names the source of the values instead (``"pyproject.toml"``
        makes it "`select` in pyproject.toml").
        """
        option_values = {"select": select, "ignore": ignore, "extend_select": extend_select}
        parsed: dict[str, list[str] | None] = {}
        for key, values in option_values.items():
            if values is None:
                parsed[key] = None
                continue
            if isinstance(values, str):  # one value, not its characters
                values = [values]
            parsed[key] = []
            for value in values:
                # "IRV1,IRV201" from the command line is two selectors
                parts = re.split(r"[,\s]+", value) if isinstance(value, str) else [value]
                parts = [part for part in parts if part] or [value]
                parsed[key] += [self._check_selector(part, key, where) for part in parts]

        def specificity(code: str, prefixes: list[str] | None) -> int:
            best = -2  # matches nothing
            for prefix in prefixes or ():
                if prefix == "ALL":
                    best = max(best, 0)
                elif code.startswith(prefix):
                    best = max(best, len(prefix))
            return best

        chosen = set()
        for code, cls in self._by_code.items():
            if parsed["select"] is None:
                on = -1 if cls.default else -2  # the implicit default is the weakest
            else:
                on = specificity(code, parsed["select"])
            on = max(on, specificity(code, parsed["extend_select"]))
            off = specificity(code, parsed["ignore"])
            if on > -2 and on > off:
                chosen.add(code)
        return chosen

    def _check_selector(self, value: str, key: str, where: str | None) -> str:
        option = f"`{key.replace('_', '-')}` in {where}" if where else _OPTIONS[key]
        if not isinstance(value, str):
            raise UsageError(f"{option}: {value!r} is not a rule code or prefix",
                             hint="use codes or prefixes such as IRV101, IRV1 or ALL")
        selector = value.strip().upper()
        if selector == "ALL" or (selector and any(c.startswith(selector)
                                                  for c in self._by_code)):
            return selector
        close = difflib.get_close_matches(selector, list(self._by_code), n=1)
        hint = "list every rule with `irviz rule --all`"
        if close:
            hint = f"did you mean {close[0]}? {hint}"
        raise UsageError(f"{option}: {value!r} matches no rule code or prefix", hint=hint)


#: the global registry of irviz's own rules
REGISTRY = Registry()
rule = REGISTRY.register


# ---------------------------------------------------------------------------
# documentation

def _default_text(cls: type[Rule]) -> str:
    return "on by default" if cls.default else "off by default"


def rule_markdown(cls: type[Rule]) -> str:
    """The rule's documentation as one Markdown page (SARIF help)."""
    parts = [f"# {cls.name} ({cls.code})", "",
             f"{cls.severity}, {cls.status}, {_default_text(cls)}", ""]
    for title, body in sections(cls).items():
        parts += [f"## {title}", body, ""]
    return "\n".join(parts).rstrip() + "\n"


def _fenced_blocks(text: str) -> Iterable[tuple[str, str | None, list[str]]]:
    """Split Markdown into ("text", None, lines) and ("code", lang, lines) runs."""
    kind, lang, lines = "text", None, []
    for line in text.splitlines():
        fence = _FENCE_RE.match(line)
        if fence and kind == "text":
            if lines:
                yield kind, None, lines
            kind, lang, lines = "code", fence.group("lang") or "python", []
        elif fence and kind == "code":
            yield kind, lang, lines
            kind, lang, lines = "text", None, []
        else:
            lines.append(line)
    if lines or kind == "code":
        yield kind, lang, lines


def rule_text(cls: type[Rule]) -> str:
    """``irviz rule IRV101``: a header line, message and hint, then each section with
    an underlined title; code blocks indented by four spaces."""
    out = [f"{cls.code} {cls.name} ({cls.severity}, {cls.status}, {_default_text(cls)})",
           "", f"Message: {cls.message}", f"Hint: {cls.hint}"]
    for title, body in sections(cls).items():
        out += ["", title, "-" * len(title)]
        for kind, _lang, lines in _fenced_blocks(body):
            if kind == "code":
                block = textwrap.dedent("\n".join(lines)).splitlines()
                out += [("    " + line).rstrip() for line in block]
            else:
                out += lines
    return "\n".join(out).rstrip() + "\n"


def rule_json(cls: type[Rule]) -> dict:
    """``irviz rule IRV101 --format json``."""
    return {"code": cls.code, "name": cls.name, "severity": cls.severity,
            "status": cls.status, "default": cls.default, "message": cls.message,
            "hint": cls.hint, "sections": sections(cls)}


_INLINE_CODE_RE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
_LINK_RE = re.compile(r"\[([^\]\n]+)\]\(([^)\s]+)\)")


def _rst_inline(text: str) -> str:
    """Markdown inline code and links -> reST (``code``, `text <url>`__)."""

    def code(match: re.Match) -> str:
        start, end = match.span()
        before = "\\ " if start and (text[start - 1].isalnum() or text[start - 1] == "_") else ""
        after = "\\ " if end < len(text) and (text[end].isalnum() or text[end] == "_") else ""
        return f"{before}``{match.group(1)}``{after}"

    text = _INLINE_CODE_RE.sub(code, text)
    return _LINK_RE.sub(lambda m: f"`{m.group(1)} <{m.group(2)}>`__", text)


def _rst_body(markdown: str) -> list[str]:
    out: list[str] = []
    for kind, lang, lines in _fenced_blocks(markdown):
        if kind == "code":
            block = textwrap.dedent("\n".join(lines)).splitlines()
            if out and out[-1] != "":
                out.append("")
            out += [f".. code-block:: {lang}", ""]
            out += [("   " + line).rstrip() for line in block]
            out.append("")
        else:
            out += [_rst_inline(line) for line in lines]
    while out and out[-1] == "":
        out.pop()
    return out


def rule_rst(cls: type[Rule]) -> str:
    """A Sphinx page for the rule: title, field list, one subsection per docstring
    section; Markdown code fences become ``.. code-block::`` directives."""
    title = f"{cls.code}: {cls.name}"
    out = [f".. _{cls.code}:", "", title, "=" * len(title), "",
           f":Code: {cls.code}", f":Name: {cls.name}", f":Severity: {cls.severity}",
           f":Status: {cls.status}", f":Default: {_default_text(cls)}",
           f":Message: {_rst_inline(cls.message)}",
           f":Hint: {_rst_inline(cls.hint)}", ""]
    for heading, body in sections(cls).items():
        out += [heading, "-" * len(heading), ""]
        out += _rst_body(body)
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _rst_index(rules: list[type[Rule]]) -> str:
    out = ["Rules", "=====", "",
           "Every rule of ``irviz lint``; ``irviz rule CODE`` shows the same text.", "",
           ".. list-table::", "   :header-rows: 1", "   :widths: 10 30 10 50", "",
           "   * - Code", "     - Name", "     - Severity", "     - Summary"]
    for cls in rules:
        out += [f"   * - :ref:`{cls.code} <{cls.code}>`", f"     - {cls.name}",
                f"     - {cls.severity}", f"     - {_rst_inline(summary(cls))}"]
    out += ["", ".. toctree::", "   :hidden:", "   :maxdepth: 1", ""]
    out += [f"   {cls.code}" for cls in rules]
    return "\n".join(out) + "\n"


def write_rule_docs(directory, registry: Registry = REGISTRY) -> list[Path]:
    """Write ``<directory>/<CODE>.rst`` for every rule and ``index.rst`` (a table and a
    toctree). Returns the paths written, the rule pages first (by code), index last."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    rules = registry.all()
    written = []
    for cls in rules:
        path = directory / f"{cls.code}.rst"
        path.write_text(rule_rst(cls), encoding="utf-8")
        written.append(path)
    index = directory / "index.rst"
    index.write_text(_rst_index(rules), encoding="utf-8")
    written.append(index)
    return written
