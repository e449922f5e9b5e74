"""`irviz lint` at scale: --jobs gives the serial output byte for byte, the result cache
(.irviz_cache) skips unchanged models without importing them, --shard parts add up to
the whole run. Real CLI runs: worker processes, real captures, real files."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from irviz.cli import main
from irviz.lint.shard import parse_shard, select_shard
from conftest import ROOT, SAMPLES

FIXTURES = ROOT / "tests" / "lint_models"


def cli(*args, cwd: Path = ROOT, cache: bool = False, timeout: float = 300, flags=()):
    """``irviz lint ARGS`` in a fresh interpreter, as a user runs it."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if cache:
        env.pop("IRVIZ_NO_CACHE", None)
    return subprocess.run([sys.executable, *flags, "-m", "irviz", "lint", *map(str, args)],
                          cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=timeout)


def in_process(*args, cwd: Path, cache: bool = True):
    """``irviz lint ARGS`` through click's runner in ``cwd`` (no second interpreter)."""
    old = os.getcwd()
    os.chdir(cwd)
    try:
        env = {"IRVIZ_NO_CACHE": None} if cache else {"IRVIZ_NO_CACHE": "1"}
        return CliRunner().invoke(main, ["lint", *map(str, args)], env=env)
    finally:
        os.chdir(old)


def _model_prints(stderr: str) -> str:
    """stderr without what the models print (workers relay it in their own order)."""
    return "\n".join(line for line in stderr.splitlines() if line.startswith(("note:", "error:",
                                                                             "Found", "All")))


# -- --jobs ---------------------------------------------------------------------------------

JOBS_SPECS = [FIXTURES / "irv101_tensor_branch.py", FIXTURES / "ok_forks.py",
              SAMPLES / "make_archive.py", FIXTURES / "irv105_len_of_tensor.py",
              "tests/lint_models/no_such_model.py"]


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["json", "sarif", "github"])
def test_jobs_output_is_the_serial_output_byte_for_byte(fmt):
    serial = cli(*JOBS_SPECS, "--format", fmt)
    parallel = cli(*JOBS_SPECS, "--format", fmt, "--jobs", "2")
    assert serial.returncode == parallel.returncode == 2, serial.stderr  # a missing file
    assert serial.stdout and parallel.stdout == serial.stdout
    assert _model_prints(parallel.stderr) == _model_prints(serial.stderr)
    assert "no_such_model.py" in _model_prints(parallel.stderr)


@pytest.mark.slow
def test_jobs_timeout_is_per_target_and_the_others_still_report(tmp_path):
    (tmp_path / "forever.py").write_text(textwrap.dedent("""
        import torch
        class Loop(torch.nn.Module):
            def forward(self, x):
                while True:
                    x = x + 1
        example_inputs = {"Loop": (torch.rand(2),)}
    """))
    (tmp_path / "fine.py").write_text(textwrap.dedent("""
        import torch
        class Branch(torch.nn.Module):
            def forward(self, x):
                if x.sum() > 0:
                    return x
                return -x
        example_inputs = {"Branch": (torch.rand(3, 4),)}
    """))
    done = cli(tmp_path / "forever.py", tmp_path / "fine.py", "--jobs", "2", "--timeout", "20",
               "--format", "json", cwd=tmp_path)
    assert done.returncode == 2
    assert "the lint worker did not finish within 20 s (--timeout) while it linted " \
        in done.stderr and "forever.py; it may loop forever" in done.stderr, done.stderr
    assert {f["code"] for f in json.loads(done.stdout)} == {"IRV101"}


def test_bad_jobs_and_shard_values_name_the_option():
    for args, option in ((["--jobs", "many"], "--jobs"), (["--shard", "3/2"], "--shard"),
                         (["--shard", "0/2"], "--shard"), (["--shard", "1of2"], "--shard")):
        result = CliRunner().invoke(main, ["lint", str(SAMPLES / "my_cell.py"), *args])
        assert result.exit_code == 2
        assert f"Invalid value for '{option}'" in result.stderr
        assert "Traceback" not in result.stderr


# -- the cache ----------------------------------------------------------------------------

MODEL = """
import pathlib, torch
import helper
with open(pathlib.Path(__file__).with_suffix(".imports"), "a") as f:
    f.write("x")   # the visible side effect of importing this model
class Branch(torch.nn.Module):
    def forward(self, x):
        if x.sum() > {threshold}:
            return helper.double(x)
        return -x
example_inputs = {{"Branch": (torch.rand(3, 4),)}}
"""


def _imports(project: Path) -> dict[str, int]:
    return {p.stem: len(p.read_text()) for p in sorted(project.glob("*.imports"))}


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.irviz]\nselect = ['IRV1']\n")
    models = tmp_path / "models"
    models.mkdir()
    (models / "helper.py").write_text("def double(x):\n    return x * 2\n")
    for name, threshold in (("a", 0), ("b", 1)):
        (models / f"{name}.py").write_text(MODEL.format(threshold=threshold))
    (tmp_path / "sub").mkdir()
    return tmp_path


def test_cache_hit_skips_the_import_and_an_edit_relints_that_file_alone(project):
    models = project / "models"
    first = in_process("models/a.py", "models/b.py", "--format", "json", cwd=project)
    assert first.exit_code == 1, first.stderr
    assert _imports(models) == {"a": 1, "b": 1}
    assert (project / ".irviz_cache" / "CACHEDIR.TAG").is_file()

    again = in_process("models/a.py", "models/b.py", "--format", "json", "-v", cwd=project)
    assert again.stdout == first.stdout and again.exit_code == 1
    assert _imports(models) == {"a": 1, "b": 1}          # neither model was imported
    assert "0 linted, 2 from the cache" in again.stderr

    (models / "a.py").write_text(MODEL.format(threshold=2))
    edited = in_process("models/a.py", "models/b.py", "--format", "json", cwd=project)
    assert _imports(models) == {"a": 2, "b": 1}          # a alone was linted again
    assert edited.exit_code == 1 and json.loads(edited.stdout)[0]["code"] == "IRV101"

    # a file the model imports is part of the key: editing it re-lints both users
    (models / "helper.py").write_text("def double(x):\n    return x + x\n")
    in_process("models/a.py", "models/b.py", "--format", "json", cwd=project)
    assert _imports(models) == {"a": 3, "b": 2}

    # other options are another key; --no-cache neither reads nor writes
    in_process("models/a.py", "--format", "json", "--verify", "0", cwd=project)
    assert _imports(models)["a"] == 4
    in_process("models/a.py", "models/b.py", "--no-cache", cwd=project)
    assert _imports(models) == {"a": 5, "b": 3}


def test_a_corrupt_cache_entry_is_linted_again_not_a_crash(project):
    models = project / "models"
    first = in_process("models/b.py", "--format", "json", cwd=project)
    entries = list((project / ".irviz_cache").rglob("*.json"))
    assert len(entries) == 1
    for junk in ("{not json", '{"files": {}, "result": {"spec": 1}}', ""):
        entries[0].write_text(junk)
        again = in_process("models/b.py", "--format", "json", cwd=project)
        assert again.exit_code == first.exit_code and again.stdout == first.stdout
        assert "Traceback" not in again.stderr
    assert _imports(models)["b"] == 4
    assert not list((project / ".irviz_cache").rglob("*.tmp"))   # writes were renames


def test_the_cache_lives_in_the_project_root_and_irviz_clean_removes_it(project):
    in_process("../models/b.py", cwd=project / "sub")
    assert (project / ".irviz_cache").is_dir() and not (project / "sub" / ".irviz_cache").exists()
    old = os.getcwd()
    os.chdir(project / "sub")
    try:
        removed = CliRunner().invoke(main, ["clean"])
        assert removed.exit_code == 0 and "removed" in removed.stderr
        assert not (project / ".irviz_cache").exists()
        nothing = CliRunner().invoke(main, ["clean"])
        assert nothing.exit_code == 0 and "no cache" in nothing.stderr
    finally:
        os.chdir(old)


@pytest.mark.slow
def test_a_cache_hit_in_a_fresh_process_gives_the_same_output(project):
    models = project / "models"
    first = cli("models", "--format", "sarif", cwd=project, cache=True)
    second = cli("models", "--format", "sarif", "--jobs", "2", cwd=project, cache=True)
    assert first.returncode == second.returncode == 1
    assert second.stdout == first.stdout
    assert _imports(models) == {"a": 1, "b": 1}
    # every result from the cache: torch is never imported (that is what makes it fast)
    third = cli("models", "--format", "sarif", cwd=project, cache=True, flags=["-X", "importtime"])
    assert third.returncode == 1 and third.stdout == first.stdout
    imported = {line.rsplit("|", 1)[-1].strip() for line in third.stderr.splitlines()
                if line.startswith("import time:")}
    assert "irviz.lint.cache" in imported and "torch" not in imported


CONFIGURED = """
import json, pathlib, torch
import settings

class Model(torch.nn.Module):
    def __init__(self, gated, scale):
        super().__init__()
        self.gated, self.scale = gated, scale

    def forward(self, x):
        if self.gated:
            if x.sum() > 0:   # data-dependent: only a gated model takes it
                return x * self.scale
            return -x
        return x * self.scale

def from_config():
    config = json.loads(pathlib.Path(__file__).with_name("config.json").read_text())
    return Model(config["gated"], settings.SCALE).eval()

example_inputs = {"from_config()": lambda: (torch.rand(3, 4),)}
"""
# a project module that reads a data file when imported: a --jobs worker imports it once
# for every spec it lints
SETTINGS = """
import json, pathlib
SCALE = json.loads(pathlib.Path(__file__).with_name("scale.json").read_text())["scale"]
"""


def test_a_changed_data_file_the_model_reads_while_built_changes_the_cached_verdict(tmp_path):
    """The cache key covers the data files opened while the model was loaded and
    captured (a JSON config, as Hugging Face models read theirs), also when a ``--jobs``
    worker wrote the entry and when the read happened at a helper module's import."""
    (tmp_path / "pyproject.toml").write_text("[tool.irviz]\n")
    (tmp_path / "configured.py").write_text(CONFIGURED)
    (tmp_path / "also.py").write_text(CONFIGURED)   # imports settings in the same worker
    (tmp_path / "settings.py").write_text(SETTINGS)
    (tmp_path / "config.json").write_text('{"gated": false}')
    (tmp_path / "scale.json").write_text('{"scale": 2}')
    specs = ["configured.py:from_config()", "also.py:from_config()"]

    clean = cli(*specs, "--jobs", "2", "-v", cwd=tmp_path, cache=True)
    assert clean.returncode == 0, clean.stderr
    assert "2 linted, 0 from the cache" in clean.stderr
    again = cli(*specs, "-v", cwd=tmp_path, cache=True)
    assert again.returncode == 0 and "0 linted, 2 from the cache" in again.stderr

    (tmp_path / "config.json").write_text('{"gated": true}')
    gated = cli(*specs, "--format", "json", "-v", cwd=tmp_path, cache=True)
    assert gated.returncode == 1, gated.stderr
    assert "2 linted, 0 from the cache" in gated.stderr
    line = CONFIGURED.splitlines().index("            if x.sum() > 0:   # data-dependent: "
                                         "only a gated model takes it") + 1
    assert {(f["path"], f["line"], f["code"]) for f in json.loads(gated.stdout)} == {
        ("configured.py", line, "IRV101"), ("also.py", line, "IRV101")}

    # a file read by the import of settings.py: one process imports it once for both specs
    cli(*specs, cwd=tmp_path, cache=True)
    (tmp_path / "scale.json").write_text('{"scale": 3}')
    rescaled = cli(*specs, "-v", cwd=tmp_path, cache=True)
    assert "2 linted, 0 from the cache" in rescaled.stderr


# -- --shard ------------------------------------------------------------------------------

def test_parse_shard():
    assert parse_shard("2/4") == (2, 4) and parse_shard(None) is None


def test_shards_are_the_same_from_any_directory_and_cover_every_spec(tmp_path):
    files = sorted(str(p) for p in FIXTURES.rglob("*.py"))
    relative = [os.path.relpath(f, ROOT) for f in files]
    for n in (1, 2, 3, 5):
        parts = [select_shard([(f, True) for f in files], (k, n), ROOT) for k in range(1, n + 1)]
        assert sorted(s for part in parts for s, _ in part) == files
        old = os.getcwd()
        os.chdir(ROOT)
        try:
            same = [select_shard([(f, True) for f in relative], (k, n), ROOT)
                    for k in range(1, n + 1)]
        finally:
            os.chdir(old)
        assert [[os.path.abspath(ROOT / s) for s, _ in part] for part in same] == \
            [[s for s, _ in part] for part in parts]
        assert max(map(len, parts)) - min(map(len, parts)) <= 1


def _key(finding: dict) -> str:
    return json.dumps(finding, sort_keys=True)


@pytest.mark.slow
def test_shards_add_up_to_the_whole_run():
    targets = ["samples", "tests/lint_models"]
    full = in_process(*targets, "--format", "json", cwd=ROOT, cache=False)
    parts = [in_process(*targets, "--format", "json", "--shard", f"{k}/2", cwd=ROOT,
                        cache=False) for k in (1, 2)]
    assert full.exit_code == 1
    assert max(p.exit_code for p in parts) == full.exit_code
    whole = sorted(map(_key, json.loads(full.stdout)))
    shards = [json.loads(p.stdout) for p in parts]
    assert all(shards)
    assert sorted(_key(f) for part in shards for f in part) == whole
