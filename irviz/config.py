"""``[tool.irviz]`` in pyproject.toml: found like black and ruff find theirs, and checked.

irviz walks up from the start directory and takes the first ``pyproject.toml`` that has
a ``[tool.irviz]`` table; it stops at a directory holding ``.git`` (the project root)
or at the filesystem root. Keys are kebab-case, as in ruff::

    [tool.irviz]
    select = ["IRV1", "IRV2"]
    ignore = ["IRV132"]
    extend-select = ["IRV205"]
    per-file-ignores = { "tests/*" = ["IRV133"] }
    exclude = ["build/*"]
    dynamic-dims = ["x:0"]
    mode = "trace"
    format = "text"
    engine = "auto"
    depth = 2
    show-unconfirmed = false
    show-info = false
    verify = 16
    variants = ["torch.rand(2, 8)", "torch.rand(8)"]   # or a table: {"model.py:Net" = [...]}

An unknown key or a value of the wrong type is a :class:`~irviz.errors.UsageError`
naming the file and the key. Command-line options override these values; rule codes
are checked by :meth:`irviz.lint.registry.Registry.selected`.
"""
from __future__ import annotations

import difflib
import fnmatch
import os
from dataclasses import dataclass, field
from pathlib import Path

from .errors import UsageError
from .paths import display_path

try:  # Python 3.11+
    import tomllib
except ImportError:  # pragma: no cover - Python 3.10
    try:
        import tomli as tomllib
    except ImportError:
        tomllib = None

__all__ = ["Config", "KEYS", "find_config", "load_config", "per_file_ignored", "variants_for"]

MODES = ("script", "trace", "auto", "export")
FORMATS = ("text", "json", "sarif", "github")
#: the Graphviz engines (irviz.render.engines runs them; "auto" takes the first usable)
ENGINES = ("auto", "pure", "dot", "wasm")

#: every key of [tool.irviz] and what it takes
KEYS = {
    "select": "a list of rule codes or prefixes",
    "ignore": "a list of rule codes or prefixes",
    "extend-select": "a list of rule codes or prefixes",
    "per-file-ignores": "a table of glob = [codes]",
    "exclude": "a list of globs",
    "dynamic-dims": 'a list of "input:dim" strings',
    "mode": f"one of {', '.join(MODES)}",
    "format": f"one of {', '.join(FORMATS)}",
    "engine": f"one of {', '.join(ENGINES)}",
    "depth": "a non-negative integer",
    "show-unconfirmed": "a boolean",
    "show-info": "a boolean",
    "verify": "a non-negative integer",
    "variants": ('a list of --inputs expressions (strings), or a table of "target glob" = '
                 "[expressions]"),
}


@dataclass
class Config:
    """The settings of ``[tool.irviz]``; None (or empty) where the file says nothing."""

    select: list[str] | None = None
    ignore: list[str] | None = None
    extend_select: list[str] | None = None
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    exclude: list[str] = field(default_factory=list)
    dynamic_dims: list[str] = field(default_factory=list)
    mode: str | None = None
    format: str | None = None
    engine: str | None = None
    depth: int | None = None
    #: lint: show unconfirmed source findings in installed libraries (irviz.lint.evidence)
    show_unconfirmed: bool | None = None
    #: lint: show info findings in text output (docs/lint.md: the evidence ladder)
    show_info: bool | None = None
    #: lint: how many variant inputs the verification runs at most (0: none)
    verify: int | None = None
    #: lint: inputs the verification runs besides the variants it makes, each an
    #: ``--inputs`` expression, by the glob of the targets they are for (``*``: every
    #: one; :func:`variants_for`)
    variants: dict[str, list[str]] = field(default_factory=dict)
    #: the pyproject.toml these settings came from (None: defaults, no file)
    source: Path | None = None



def _read_toml(path: Path) -> dict:
    if tomllib is None:  # pragma: no cover - Python 3.10 without tomli
        raise UsageError(f"cannot read {display_path(path)}: reading TOML needs Python 3.11+ or the "
                         f"tomli package", hint="pip install tomli")
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{display_path(path)} is not valid TOML: {exc}",
                         hint="fix the file, or pass another one with --config") from None
    except OSError as exc:
        raise UsageError(f"cannot read {display_path(path)}: {exc.strerror or exc}") from None


def _irviz_table(data: dict) -> dict | None:
    tool = data.get("tool")
    if not isinstance(tool, dict):
        return None
    return tool.get("irviz")


def find_config(start: Path) -> Path | None:
    """The first ``pyproject.toml`` with a ``[tool.irviz]`` table in ``start`` or a
    directory above it, stopping at a ``.git`` directory or the filesystem root."""
    start = Path(start).resolve()
    if start.is_file():
        start = start.parent
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file() and _irviz_table(_read_toml(candidate)) is not None:
            return candidate
        if (directory / ".git").exists():
            return None
    return None


def _type_name(value) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "a table"}.get(type(value), type(value).__name__)


def _wrong(path: Path, key: str, value, expected: str | None = None) -> UsageError:
    return UsageError(f"`{key}` in [tool.irviz] of {display_path(path)} must be "
                      f"{expected or KEYS[key]}, got {_type_name(value)}: {value!r}")


def _str_list(path: Path, key: str, value, expected: str | None = None) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        error = _wrong(path, key, value, expected)
        if isinstance(value, str):
            error.hint = f'write {key} = ["{value}"]'
        raise error
    return list(value)


def _choice(path: Path, key: str, value, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise _wrong(path, key, value)
    return value


def _parse(table: dict, path: Path) -> Config:
    if not isinstance(table, dict):
        raise UsageError(f"[tool.irviz] in {display_path(path)} must be a table, got "
                         f"{_type_name(table)}")
    config = Config(source=path)
    for key, value in table.items():
        if key not in KEYS:
            close = difflib.get_close_matches(key.replace("_", "-"), list(KEYS), n=1)
            hint = f"valid keys: {', '.join(sorted(KEYS))}"
            if close:
                hint = f"did you mean `{close[0]}`? {hint}"
            raise UsageError(f"unknown key `{key}` in [tool.irviz] of {display_path(path)}", hint=hint)
        if key in ("select", "ignore", "extend-select", "exclude", "dynamic-dims"):
            setattr(config, key.replace("-", "_"), _str_list(path, key, value))
        elif key == "per-file-ignores":
            if not isinstance(value, dict):
                raise _wrong(path, key, value)
            config.per_file_ignores = {
                glob: _str_list(path, f'per-file-ignores."{glob}"', codes,
                                "a list of rule codes or prefixes")
                for glob, codes in value.items()}
        elif key == "mode":
            config.mode = _choice(path, key, value, MODES)
        elif key == "format":
            config.format = _choice(path, key, value, FORMATS)
        elif key == "engine":
            config.engine = _choice(path, key, value, ENGINES)
        elif key == "depth":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise _wrong(path, key, value)
            config.depth = value
        elif key == "show-unconfirmed":
            if not isinstance(value, bool):
                raise _wrong(path, key, value)
            config.show_unconfirmed = value
        elif key == "show-info":
            if not isinstance(value, bool):
                raise _wrong(path, key, value)
            config.show_info = value
        elif key == "verify":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise _wrong(path, key, value)
            config.verify = value
        elif key == "variants":
            config.variants = _variants(path, value)
    return config


def _variants(path: Path, value) -> dict[str, list[str]]:
    """``variants``: a list of ``--inputs`` expressions for every target, or a table of
    them by target glob; each expression must at least be Python (it is evaluated in the
    model's module when the model is linted)."""
    if isinstance(value, dict):
        by_glob = {glob: _str_list(path, f'variants."{glob}"', exprs,
                                   "a list of --inputs expressions (strings)")
                   for glob, exprs in value.items()}
    else:
        by_glob = {"*": _str_list(path, "variants", value)}
    for glob, exprs in by_glob.items():
        key = "variants" if glob == "*" and not isinstance(value, dict) else \
            f'variants."{glob}"'
        for i, expr in enumerate(exprs):
            try:
                compile(expr.strip(), "<variants>", "eval")
            except SyntaxError as exc:
                raise UsageError(f"`{key}` in [tool.irviz] of {display_path(path)}: entry "
                                 f"{i + 1} ({expr!r}) is not a Python expression: {exc.msg}",
                                 hint='each entry is written like --inputs, e.g. '
                                      '"torch.rand(2, 8)" or "(torch.rand(3), torch.rand(3))"'
                                 ) from None
    return by_glob


def variants_for(config: Config, spec: str) -> list[str]:
    """The ``variants`` expressions for the target ``spec`` (``model.py:Net``): those of
    every glob matching it (fnmatch, against the spec and against its part after the
    file's directory), in the file's order."""
    out: list[str] = []
    name = spec.replace(os.sep, "/")
    short = name.rsplit("/", 1)[-1]
    for glob, exprs in config.variants.items():
        if glob == "*" or fnmatch.fnmatchcase(name, glob) or fnmatch.fnmatchcase(short, glob):
            out.extend(e for e in exprs if e not in out)
    return out


def config_start(specs) -> Path:
    """Where the config search starts: the first spec's directory (a spec string naming a
    file or folder), else the working directory."""
    for spec in specs[:1]:
        if isinstance(spec, (str, Path)):
            first = Path(str(spec).split(":", 1)[0])
            if first.exists():
                return first.resolve().parent if first.is_file() else first.resolve()
    return Path.cwd()


def load_config(start: Path | None = None, path: Path | None = None) -> Config:
    """The settings for a run started in ``start`` (default: the working directory).

    An explicit ``path`` (``--config``) wins over the search and must have a
    ``[tool.irviz]`` table. Without any file, every setting is at its default.
    """
    if path is not None:
        path = Path(path)
        if not path.is_file():
            raise UsageError(f"config file {display_path(path)} does not exist",
                             hint="pass the path of a pyproject.toml with a [tool.irviz] "
                                  "table")
        table = _irviz_table(_read_toml(path))
        if table is None:
            raise UsageError(f"{display_path(path)} has no [tool.irviz] table",
                             hint="add one, or leave out --config to search for it")
        return _parse(table, path)
    found = find_config(Path(start) if start is not None else Path.cwd())
    if found is None:
        return Config()
    return _parse(_irviz_table(_read_toml(found)), found)


def per_file_ignored(config: Config, path: str) -> set[str]:
    """The codes and prefixes ``per-file-ignores`` ignores for ``path`` (upper case).

    Each glob is matched (fnmatch) against the path relative to the directory of the
    config file, with forward slashes, and against the file's base name.
    """
    if not config.per_file_ignores:
        return set()
    base = config.source.parent if config.source is not None else Path.cwd()
    absolute = Path(os.path.abspath(path))
    try:
        relative = absolute.relative_to(Path(os.path.abspath(base))).as_posix()
    except ValueError:
        relative = Path(path).as_posix()
    name = absolute.name
    ignored: set[str] = set()
    for glob, codes in config.per_file_ignores.items():
        pattern = glob[2:] if glob.startswith("./") else glob
        # fnmatch's * crosses "/", so "dir/*" is recursive; "**/" may also match nothing
        patterns = {pattern, pattern.replace("**/", "")}
        if any(fnmatch.fnmatchcase(relative, p) or fnmatch.fnmatchcase(name, p)
               for p in patterns):
            ignored.update(code.strip().upper() for code in codes)
    return ignored
