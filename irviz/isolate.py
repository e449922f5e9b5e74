"""``--isolate``: run an irviz command in a child process that cannot take irviz down.

irviz runs the user's model code (importing the file, tracing, example inputs). An
infinite loop, a crash in native code or runaway memory must become one clear error,
not a hung docs build or a dead irviz. :func:`run_isolated` re-runs the same command as
``python -m irviz ...`` in a child of :mod:`irviz.child` (its own process group, the
memory limit, ``IRVIZ_ISOLATED`` so it does not isolate again). This role's request is
the command line; its result the child's exit code, with its stdout (SVG, DOT, JSON)
and stderr relayed byte for byte as they come. At ``--timeout`` the group is stopped
and a death by a signal is named (:func:`irviz.child.ending.explain`); then the
temporary files of the killed child's atomic writes (``.NAME.*.tmp``) are removed, so
nothing half-written is left (a killed child never renames one into place: the group
is dead before irviz looks).
"""
from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import threading
from pathlib import Path

import click

from .child.ending import Ended, explain
from .child.process import ISOLATED_ENV, LIMITS_ENFORCED, TERM_GRACE, Child, kill_group, wait
from .errors import IrvizError

DEFAULT_TIMEOUT = 300.0
DEFAULT_MEMORY_MB = 4096
#: Options that only concern the parent; the child never sees them.
ISOLATION_PARAMS = ("isolate", "timeout", "memory_limit")
_ISOLATION_OPTS = {"--isolate": 0, "--timeout": 1, "--memory-limit": 1}
#: Options whose value is an output path (the child writes it atomically).
_OUTPUT_OPTS = ("-o", "--output", "--trace-out")
#: ``tempfile.mkstemp(prefix=".NAME.", suffix=".tmp")``: 8 random characters.
_TEMP_RE = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp$")
#: In a directory irviz writes files of its own naming into (``-o DIR/``, the current
#: directory): only temporary files of those outputs (``.STEM.NAME.svg.*.tmp``).
_DIR_TEMP_RE = re.compile(r"^\..+\.(svg|dot|json|html)\.[a-z0-9_]{8}\.tmp$")

def is_isolated() -> bool:
    """True inside the child of :func:`run_isolated`."""
    return bool(os.environ.get(ISOLATED_ENV))


def argv_from_context(ctx: click.Context) -> list[str]:
    """The command line of ``ctx``'s command, rebuilt from its parsed parameters.

    Works the same from the console script, ``python -m irviz`` and click's CliRunner
    (where ``sys.argv`` is not the command's). Parameters left at their default are
    left out (the child computes the same default); the isolation options are dropped.
    """
    options: list[str] = []
    arguments: list[str] = []
    for param in ctx.command.params:
        name = param.name
        if name in ISOLATION_PARAMS or name not in ctx.params or not param.expose_value:
            continue
        value = ctx.params[name]
        if isinstance(param, click.Argument):
            arguments.extend(str(v) for v in (value if isinstance(value, (tuple, list))
                                              else [value]) if v is not None)
            continue
        source = ctx.get_parameter_source(name)
        if source in (click.core.ParameterSource.DEFAULT,
                      click.core.ParameterSource.DEFAULT_MAP) or value is None:
            continue
        assert isinstance(param, click.Option)
        if param.is_flag and isinstance(value, bool):
            if value:
                options.append(param.opts[0])
            elif param.secondary_opts:
                options.append(param.secondary_opts[0])
            continue
        values = value if param.multiple else [value]
        for v in values:
            options.append(param.opts[0])
            options.extend(str(x) for x in (v if isinstance(v, (tuple, list)) else [v]))
    if any(a.startswith("-") for a in arguments):
        return [ctx.info_name or ctx.command.name or "", *options, "--", *arguments]
    return [ctx.info_name or ctx.command.name or "", *arguments, *options]


def strip_isolation_options(argv: list[str]) -> list[str]:
    """``argv`` without ``--isolate``, ``--timeout S`` and ``--memory-limit MB``."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            out.extend(argv[i:])
            break
        key = arg.split("=", 1)[0]
        if key in _ISOLATION_OPTS:
            i += 1 + (_ISOLATION_OPTS[key] if "=" not in arg else 0)
            continue
        out.append(arg)
        i += 1
    return out


def _output_dirs(argv: list[str]) -> list[tuple[Path, str | None]]:
    """(directory, file name or None for any) where the child may leave temp files."""
    found: list[tuple[Path, str | None]] = [(Path("."), None)]  # default outputs go here
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        value = None
        if arg in _OUTPUT_OPTS and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.split("=", 1)[0] in _OUTPUT_OPTS[1:] and "=" in arg:
            value = arg.split("=", 1)[1]
        elif arg.startswith("-o") and len(arg) > 2 and not arg.startswith("--"):
            value = arg[2:]
        if not value or value == "-":
            continue
        path = Path(value)
        if value.endswith(("/", os.sep)) or path.is_dir():
            found.append((path, None))
        else:
            found.append((path.parent, path.name))
    return found


def _temp_files(dirs: list[tuple[Path, str | None]]) -> set[Path]:
    out: set[Path] = set()
    for directory, name in dirs:
        try:
            entries = list(directory.iterdir())
        except OSError:
            continue
        for p in entries:
            if (_DIR_TEMP_RE.match(p.name) if name is None else
                    _TEMP_RE.match(p.name) and p.name.startswith(f".{name}.")):
                out.add(p.resolve())
    return out


def _remove_leftovers(dirs: list[tuple[Path, str | None]], before: set[Path]) -> None:
    for path in _temp_files(dirs) - before:
        try:
            path.unlink()
        except OSError:
            pass


def _error(message: str, hint: str) -> None:
    click.echo(IrvizError(message, hint=hint).format(), err=True)


class _Stopped(Exception):
    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _raise_stopped(signum, _frame):
    raise _Stopped(signum)


def run_isolated(argv: list[str], timeout: float, memory_mb: int) -> int:
    """Run ``irviz *argv`` in an isolated child; its exit code, or 2 with a clear error.

    ``argv`` is the command and its arguments (``["render", "model.py", ...]``);
    ``--isolate``, ``--timeout`` and ``--memory-limit`` in it are ignored.
    """
    argv = strip_isolation_options(list(argv))
    shown = shlex.join(argv)
    if memory_mb > 0 and not LIMITS_ENFORCED:
        click.echo(f"note: --memory-limit is not enforced on {sys.platform} (Linux only)",
                   err=True)
    dirs = _output_dirs(argv)
    before = _temp_files(dirs)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass

    handlers = {}
    if threading.current_thread() is threading.main_thread():
        for name in ("SIGTERM", "SIGHUP"):
            sig = getattr(signal, name, None)
            if sig is not None:
                handlers[sig] = signal.signal(sig, _raise_stopped)
    child = None
    finished = False
    try:
        try:
            child = Child("irviz", *argv, memory_mb=memory_mb, requests=False)
        except (OSError, subprocess.SubprocessError) as exc:
            click.echo(f"internal error: could not start the isolated irviz process "
                       f"({type(exc).__name__}: {exc}); run without --isolate", err=True)
            return 3
        # at the deadline the group gets SIGTERM, then SIGKILL; after a normal exit,
        # stragglers the model started are killed so they cannot hold our pipes
        timed_out = wait(child.proc, timeout, TERM_GRACE)
        code = child.proc.returncode
        child.drain()
        finished = True
    except (KeyboardInterrupt, _Stopped) as exc:
        if child is not None:
            kill_group(child.proc, 0.2)
            _remove_leftovers(dirs, before)
        if isinstance(exc, KeyboardInterrupt):
            raise
        _error(f"stopped by {signal.Signals(exc.signum).name} while irviz ran `{shown}`; "
               "the model's process was killed", hint="nothing was left half-written")
        return 128 + exc.signum
    finally:
        for sig, old in handlers.items():
            signal.signal(sig, old)
        if child is not None and not finished and child.proc.poll() is None:
            kill_group(child.proc)

    ended = explain(Ended(code, timed_out, timeout, memory_mb), "the model's process",
                    f" while irviz ran `{shown}`")
    if timed_out or code < 0:
        _remove_leftovers(dirs, before)
        _error(ended.message, ended.hint)
        return 2
    return code
