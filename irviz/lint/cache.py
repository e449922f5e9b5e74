"""The lint result cache (``.irviz_cache/`` in the project root), like ruff's.

A lint runs the model: importing, scripting, tracing and the verification take seconds
per model. A spec whose files did not change gives the same findings, so its
:class:`~irviz.lint.spec_result.SpecResult` is stored and read back on the next run
without importing the model at all.

The entry of a spec is found by a key that needs no import: the spec as given, the
working directory, the content of the spec's own file, the versions of irviz (its
source files' sizes and times too, for a checkout that changes under one version), torch
and Python, the example inputs and every option and ``[tool.irviz]`` setting. The entry
then lists the other files the result depends on with their content hashes: the Python
files (:func:`irviz.lint.runner.dependency_files`) and every data file opened while the
model was loaded and captured (a JSON config; :mod:`irviz.lint.opened_files`). One
changed, new or missing file makes it a miss. Environment variables and native libraries
are not covered (docs/ci.md says so; ``--no-cache`` or ``irviz clean`` when they change).

Writes are atomic (a temporary file renamed into place); an entry that cannot be read or
parsed is a miss, never an error; a cache that cannot be written is skipped.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import sys
import tempfile
from pathlib import Path

from .spec_result import SpecResult

__all__ = ["CACHE_DIR", "LintCache", "project_root", "clean"]

CACHE_DIR = ".irviz_cache"
#: bumped when the entry layout changes
_LAYOUT = "2"


def project_root(config) -> Path:
    """Where ``.irviz_cache`` lives: the directory of the pyproject.toml with
    ``[tool.irviz]`` in force, else the working directory."""
    source = getattr(config, "source", None)
    return Path(source).resolve().parent if source is not None else Path.cwd()


def clean(root: Path) -> bool:
    """Remove ``root/.irviz_cache``; True when there was one."""
    directory = Path(root) / CACHE_DIR
    if not directory.exists():
        return False
    shutil.rmtree(directory)
    return True


#: files larger than this (weights) are keyed by size and modification time, not content:
#: hashing them on every cached run would cost more than it saves
_HASHED_UP_TO = 8 << 20


def _file_hash(path: str, memo: dict) -> str | None:
    """sha256 of the file's bytes, once per path and (size, mtime) in this process;
    ``"absent"`` for a file that does not exist (a model that looked for an optional
    file depends on its absence), None when it cannot be read."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "absent"
    except OSError:
        return None
    stamp = (path, st.st_size, st.st_mtime_ns)
    if st.st_size > _HASHED_UP_TO:
        return f"stat:{st.st_size}:{st.st_mtime_ns}"
    if stamp not in memo:
        try:
            with open(path, "rb") as handle:
                memo[stamp] = hashlib.sha256(handle.read()).hexdigest()
        except OSError:
            return None
    return memo[stamp]


def _irviz_stamp() -> str:
    """irviz's version and its source files' sizes and times: a changed irviz (a new
    release, or an edited checkout) never reads an old entry."""
    from .. import __version__

    here = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256(__version__.encode())
    for path in sorted(here.rglob("*.py")):
        try:
            st = path.stat()
        except OSError:
            continue
        digest.update(f"{path.relative_to(here)}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _torch_version() -> str:
    """torch's version, from its metadata: importing torch takes seconds."""
    from importlib import metadata

    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return "unknown"


def _spec_file(spec: str) -> str | None:
    """The file a spec names (``FILE.py``, ``FILE.py:NAME``, an archive), or None for a
    spec only an import resolves (``package.module:NAME``): those are not cached."""
    from .targets import spec_location

    location = spec_location(spec)
    return os.path.abspath(location) if os.path.isfile(location) else None


class LintCache:
    """The entries under ``root/.irviz_cache`` for one run's settings (``settings``: a
    JSON-able description of everything besides files that changes findings)."""

    def __init__(self, root: Path, settings: dict):
        self.directory = Path(root) / CACHE_DIR / "lint"
        self._memo: dict = {}
        self._salt = json.dumps({
            "layout": _LAYOUT, "irviz": _irviz_stamp(), "torch": _torch_version(),
            "python": sys.version, "platform": platform.platform(), "cwd": os.getcwd(),
            "settings": settings}, sort_keys=True, default=str)
        #: what happened this run, for ``-v`` and the tests: spec -> "hit" | "miss"
        self.outcomes: dict[str, str] = {}
        self.write_failed: str | None = None

    def _entry(self, spec: str) -> Path | None:
        file = _spec_file(spec)
        if file is None:
            return None
        content = _file_hash(file, self._memo)
        if content is None:
            return None
        key = hashlib.sha256(f"{self._salt}\0{spec}\0{file}\0{content}".encode()).hexdigest()
        return self.directory / key[:2] / f"{key}.json"

    def get(self, spec: str) -> SpecResult | None:
        """The stored result of ``spec`` when every file it depends on is unchanged."""
        entry = self._entry(spec)
        result = None
        if entry is not None:
            try:
                data = json.loads(entry.read_text("utf-8"))
                if all(_file_hash(path, self._memo) == digest
                       for path, digest in data["files"].items()):
                    result = SpecResult.from_dict(data["result"])
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                result = None   # missing or corrupt: lint again, it is rewritten
        self.outcomes[spec] = "hit" if result is not None else "miss"
        return result

    def put(self, result: SpecResult) -> None:
        """Store ``result`` (not one with errors: those are linted again next time)."""
        if result.errors:
            return
        entry = self._entry(result.spec)
        if entry is None:
            return
        files = {path: _file_hash(path, self._memo) for path in result.files}
        if any(digest is None for digest in files.values()):
            return
        data = json.dumps({"files": files, "result": result.to_dict()}, sort_keys=True)
        try:
            self._ensure_directory(entry.parent)
            fd, tmp = tempfile.mkstemp(prefix=f".{entry.name}.", suffix=".tmp",
                                       dir=entry.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    handle.write(data)
                os.replace(tmp, entry)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
        except OSError as exc:
            self.write_failed = f"{self.directory.parent}: {exc.strerror or exc}"

    def _ensure_directory(self, directory: Path) -> None:
        """Make the entry's directory; the cache's top gets a ``.gitignore`` (``*``) and a
        ``CACHEDIR.TAG`` so neither git nor backups pick it up."""
        top = self.directory.parent
        if not top.exists():
            top.mkdir(parents=True, exist_ok=True)
            (top / ".gitignore").write_text("# made by irviz\n*\n", "utf-8")
            (top / "CACHEDIR.TAG").write_text(
                "Signature: 8a477f597d28d172789f06886806bc55\n"
                "# This file is a cache directory tag created by irviz.\n", "utf-8")
        directory.mkdir(parents=True, exist_ok=True)
