"""Where a command's output goes: file names per model, ``-o`` checked before any
capture work, stdout for ``-o -``."""
from __future__ import annotations

from pathlib import Path

from .errors import UsageError
from .files import check_writable_dir

__all__ = ["RENDER_FORMATS", "output_paths", "output_stem", "check_output_file"]

#: what `irviz render --format` writes
RENDER_FORMATS = ("svg", "dot", "json", "html")


def output_stem(target: str) -> str:
    """``samples/decision_gate.py:MyCell`` -> ``decision_gate``; ``pkg.mod:X`` -> ``mod``."""
    if ":" in target or target.endswith((".py", ".pt")):
        return Path(target.split(":", 1)[0]).stem
    return target.rsplit(".", 1)[-1]


def check_output_file(output: str | None, option: str = "-o/--output") -> None:
    """Fail early when the directory of a single output file cannot be written."""
    if output and output != "-":
        parent = Path(output).parent
        check_writable_dir(parent if str(parent) else Path("."), option)


def output_paths(output: str | None, names: list[str], stem: str, fmt: str,
                 formats: tuple[str, ...]) -> list:
    """Where each target's output goes: a Path, or None for stdout."""
    def default_name(name: str) -> str:
        return f"{stem}.{fmt}" if name == stem else f"{stem}.{name}.{fmt}"

    if output == "-":
        if len(names) != 1:
            raise UsageError(f"-o - (stdout) takes one model, but the target names "
                             f"{len(names)}: {', '.join(names)}",
                             hint="pick one with FILE.py:NAME, or pass a directory to -o")
        return [None]
    if output is None:
        if fmt in ("dot", "json") and len(names) == 1:
            return [None]
        check_writable_dir(Path("."))
        return [Path(default_name(n)) for n in names]
    path = Path(output)
    if path.is_dir() or output.endswith(("/", "\\")):
        check_writable_dir(path)
        return [path / default_name(n) for n in names]
    if len(names) != 1:
        raise UsageError(f"-o {output} is one file, but the target names {len(names)} "
                         f"models: {', '.join(names)}",
                         hint="pass an existing directory to -o, or pick one model with "
                              "FILE.py:NAME")
    check_writable_dir(path.parent if str(path.parent) else Path("."))
    if path.suffix and path.suffix[1:] != fmt and path.suffix[1:] in formats:
        raise UsageError(f"-o {output} ends in {path.suffix} but --format is {fmt}",
                         hint=f"use --format {path.suffix[1:]} or name the file *.{fmt}")
    return [path]
