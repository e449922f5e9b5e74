"""`--isolate`: a looping, crashing or memory-hungry model becomes one clear error (exit 2).

Real processes throughout: the CLI as a subprocess (`python -m irviz`) and through
click's CliRunner (the isolated child is a real process there too).
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner

from irviz.cli import main
from irviz.child.process import ISOLATED_ENV, MEMORY_ENV
from irviz.isolate import strip_isolation_options
from conftest import ROOT, SAMPLES

posix_only = pytest.mark.skipif(os.name != "posix", reason="process groups and signals")
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="--memory-limit is enforced on Linux only")

SPIN = """
import os
import torch


class Spin(torch.nn.Module):
    def forward(self, x):
        # what an atomic write the child is doing when it is killed leaves behind
        open(os.path.join(os.environ["OUT_DIR"], ".loop.Spin.svg.k3j4h5g6.tmp"), "wb").close()
        while True:
            pass
        return x


example_inputs = {"Spin": lambda: (torch.rand(2),)}
"""

ABORT_IN_FORWARD = """
import os
import torch


class Boom(torch.nn.Module):
    def forward(self, x):
        os.abort()


example_inputs = {"Boom": lambda: (torch.rand(2),)}
"""

ABORT_ON_IMPORT = """
import os

os.abort()
"""

HOG = """
import torch


class Hog(torch.nn.Module):
    def forward(self, x):
        keep = []
        while True:
            keep.append(torch.empty(256 * 2**20, dtype=torch.uint8).fill_(1))
        return x


example_inputs = {"Hog": lambda: (torch.rand(2),)}
"""


def write_model(tmp_path, name, source):
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def irviz(*args, env=None, timeout=60):
    """`python -m irviz ARGS` in a fresh process; one that outlives ``timeout`` fails the
    test (TimeoutExpired). How long it took is not asserted: no timing in unit tests."""
    environ = {k: v for k, v in os.environ.items() if k not in (ISOLATED_ENV, MEMORY_ENV)}
    environ.update(env or {})
    return subprocess.run([sys.executable, "-m", "irviz", *map(str, args)], cwd=ROOT,
                          env=environ, capture_output=True, timeout=timeout)


def assert_clear_error(code, stderr, *fragments):
    assert code == 2, (code, stderr)
    assert stderr.startswith("error: ") or "\nerror: " in stderr, stderr
    assert "Traceback" not in stderr, stderr
    for fragment in fragments:
        assert fragment in stderr, (fragment, stderr)


@posix_only
def test_an_endless_loop_times_out_and_leaves_nothing_behind(tmp_path):
    model = write_model(tmp_path, "loop.py", SPIN)
    out = tmp_path / "out"
    out.mkdir()
    done = irviz("render", model, "--mode", "trace", "--isolate", "--timeout", "5",
                 "-o", f"{out}/", env={"OUT_DIR": str(out)})
    stderr = done.stderr.decode()
    assert_clear_error(done.returncode, stderr, "did not finish within 5 s (--timeout)",
                       "it may loop forever", "hint: ", "--timeout SECONDS")
    assert f"render {model}" in stderr  # the command it ran
    assert done.stdout == b""
    assert list(out.iterdir()) == []  # no output, and the killed child's temp file is gone


@posix_only
def test_an_abort_in_forward_is_named_through_clirunner(tmp_path):
    model = write_model(tmp_path, "boom.py", ABORT_IN_FORWARD)
    out = tmp_path / "out"
    out.mkdir()
    result = CliRunner().invoke(main, ["render", str(model), "--mode", "trace", "--isolate",
                                       "-o", f"{out}/"])
    assert_clear_error(result.exit_code, result.stderr, "the model's process crashed "
                       "(SIGABRT, e.g. a native extension or os.abort())")
    assert result.stdout == ""
    assert list(out.iterdir()) == []


@posix_only
def test_an_abort_on_import_is_named_and_other_temp_files_are_kept(tmp_path):
    model = write_model(tmp_path, "import_abort.py", ABORT_ON_IMPORT)
    unrelated = tmp_path / ".notes.md.abcd1234.tmp"  # there before the run: not irviz's
    unrelated.write_text("keep me")
    done = irviz("report", model, "--isolate", "-o", tmp_path / "report.md")
    assert_clear_error(done.returncode, done.stderr.decode(), "SIGABRT", "report ")
    assert sorted(p.name for p in tmp_path.iterdir()) == [unrelated.name, model.name]


@linux_only
def test_runaway_memory_is_a_clear_out_of_memory_error(tmp_path):
    model = write_model(tmp_path, "hog.py", HOG)
    out = tmp_path / "out"
    out.mkdir()
    done = irviz("render", model, "--mode", "trace", "--isolate",
                 "--memory-limit", "1500", "--timeout", "30", "-o", f"{out}/")
    assert_clear_error(done.returncode, done.stderr.decode(),
                       "ran out of memory (limit 1500 MB, --memory-limit)",
                       "hog.py", "raise --memory-limit")
    assert list(out.iterdir()) == []


def test_isolated_output_is_byte_identical_and_codes_pass_through():
    target = f"{SAMPLES / 'my_cell.py'}:MyLinearCell"  # no random branch: same DOT every run
    plain = irviz("render", target, "--format", "dot")
    isolated = irviz("render", target, "--format", "dot", "-o", "-", "--isolate")
    assert plain.returncode == isolated.returncode == 0, isolated.stderr
    assert plain.stdout.startswith(b'digraph "MyLinearCell"')
    assert isolated.stdout == plain.stdout
    via_runner = CliRunner().invoke(main, ["render", target, "--format", "dot", "--isolate",
                                           "--timeout", "60"])
    assert via_runner.exit_code == 0, via_runner.stderr
    assert via_runner.stdout_bytes == plain.stdout

    lint = CliRunner().invoke(main, ["lint", str(SAMPLES / "decision_gate.py"), "--isolate",
                                     "--mode", "trace"])
    assert lint.exit_code == 1, (lint.stdout, lint.stderr)  # findings, not a failure
    assert "decision_gate.py:11:" in lint.stdout and "IRV" in lint.stdout


def test_option_checks():
    bad = CliRunner().invoke(main, ["render", "x.py", "--isolate", "--timeout", "0"])
    assert bad.exit_code == 2 and "--timeout" in bad.stderr
    bad = CliRunner().invoke(main, ["lint", "x.py", "--memory-limit", "-1"])
    assert bad.exit_code == 2 and "--memory-limit" in bad.stderr
    alone = CliRunner().invoke(main, ["report", "missing.py", "--timeout", "5"])
    assert "note: --timeout only apply with --isolate" in alone.stderr
    assert strip_isolation_options(
        ["render", "m.py", "--isolate", "--timeout", "5", "--memory-limit=9", "-o", "-",
         "--", "--isolate"]) == ["render", "m.py", "-o", "-", "--", "--isolate"]
