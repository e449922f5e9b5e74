"""The pre-commit hook in .pre-commit-hooks.yaml, run by real pre-commit (`try-repo`, which
reads this repository's hook file) on a temporary git repository: a model with a tracing
pitfall fails the hook with the finding; the fixed model passes."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import ROOT

pytest.importorskip("pre_commit")

BROKEN = """
import torch


class Gate(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return -x


example_inputs = {"Gate": (torch.rand(3, 4),)}
"""
FIXED = BROKEN.replace("""        if x.sum() > 0:
            return x * 2
        return -x""", """        return torch.where(x.sum() > 0, x * 2, -x)""")
NOT_A_MODEL = "def helper(x):\n    return x + 1\n"


def _git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env=dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
                            GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t"))


def _hook(repo: Path, home: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PRE_COMMIT_HOME=str(home), PYTHONPATH=str(ROOT),
               PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))
    return subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(ROOT),
                           "irviz-lint", "--all-files", "--verbose"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_the_hook_fails_on_the_pitfall_and_passes_once_it_is_fixed(tmp_path):
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout of irviz (try-repo clones it)")
    repo = tmp_path / "project"
    repo.mkdir()
    _git("init", "-q", cwd=repo)
    (repo / "model.py").write_text(BROKEN)
    (repo / "utils.py").write_text(NOT_A_MODEL)   # staged too: a note, not an error
    _git("add", ".", cwd=repo)
    _git("commit", "-qm", "a model", cwd=repo)

    failed = _hook(repo, tmp_path / "pre-commit-home")
    out = failed.stdout + failed.stderr
    assert failed.returncode == 1, out
    assert "irviz lint" in out and "Failed" in out
    assert "model.py:7:12: IRV101" in out
    assert "utils.py: no models" in out

    (repo / "model.py").write_text(textwrap.dedent(FIXED))
    _git("add", ".", cwd=repo)
    passed = _hook(repo, tmp_path / "pre-commit-home")
    out = passed.stdout + passed.stderr
    assert passed.returncode == 0, out
    assert "Passed" in out and "IRV101" not in out
