"""Shared fixtures: the samples, a seeded visualize(), golden files, Graphviz gates."""
from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import warnings
from pathlib import Path

import pytest
import torch

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
# every test lints afresh (the lint cache's own tests, test_lint_scale.py, turn it on)
os.environ.setdefault("IRVIZ_NO_CACHE", "1")

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"


def sample_module(name: str):
    """``samples/NAME.py`` imported under a private module name: a test that imports
    ``lstm_ensemble`` itself would make irviz's loader give every later load of the sample
    a fresh module name (and the classes fresh qualified names)."""
    key = f"_irviz_test_sample_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, SAMPLES / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module   # TorchScript reads the classes' source through it
        spec.loader.exec_module(module)
    return sys.modules[key]
GOLDENS = Path(__file__).resolve().parent / "goldens"

#: irviz's own package directory: a frame in it means irviz showed its own traceback
IRVIZ_PACKAGE = Path(__file__).resolve().parent.parent / "irviz"


def lint_cli(*args, cwd=None):
    """``irviz lint ARGS`` through the real CLI (click's runner), torch seeded, in ``cwd``."""
    from click.testing import CliRunner

    from irviz.cli import main

    torch.manual_seed(0)
    old = os.getcwd()
    if cwd:
        os.chdir(cwd)
    try:
        return CliRunner().invoke(main, ["lint", *map(str, args)])
    finally:
        os.chdir(old)


def shows_irviz_traceback(text: str) -> bool:
    """True when ``text`` holds a traceback frame of irviz's own code (wherever the
    checkout lives, also in a directory named ``irviz/``)."""
    import irviz

    package = Path(irviz.__file__).resolve().parent
    return any(f'File "{p}{sep}' in text for p in {package, IRVIZ_PACKAGE}
               for sep in ("/", "\\"))


requires_dot = pytest.mark.skipif(shutil.which("dot") is None,
                                  reason="Graphviz's dot binary is not installed")


def _pure_installed() -> bool:
    from irviz.render.engines import _installed_pure

    return _installed_pure() is not None


requires_pure = pytest.mark.skipif(not _pure_installed(),
                                   reason="graphviz-pure (the embedded engine) is not installed")


#: modules whose every test starts child processes, a Sphinx build, a browser or a
#: measurement: the fast inner loop (`pytest -m "not slow"`) leaves them out
SLOW_MODULES = {"test_sphinxext.py", "test_measure.py", "test_isolate.py",
                "test_viewer_browser.py", "test_fuzz.py"}
#: single slow tests in otherwise fast modules (each takes seconds)
SLOW_TESTS = {"test_report_with_measure_fills_the_measured_section",
              "test_report_with_calibrate_times_only_the_serial_baseline",
              "test_budget_collapses_a_10k_node_model", "test_depth_overrides_the_budget",
              "test_focus_opens_one_module_and_boxes_the_rest",
              "test_unknown_focus_is_a_usage_error", "test_budget_rolls_a_flat_stack_of_1667_blocks",
              "test_folder_lints_every_file"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in SLOW_MODULES or item.originalname in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)


def pytest_addoption(parser):
    parser.addoption("--update-goldens", action="store_true",
                     help="rewrite tests/goldens/* from the current output")


@pytest.fixture
def update_goldens(request) -> bool:
    return request.config.getoption("--update-goldens")


def visualize(spec: str, mode: str = "script", inputs: str | None = None):
    """Seeded, so random weights and inputs (and thus traces) are reproducible."""
    from irviz import api

    torch.manual_seed(0)
    views = api.visualize(str(SAMPLES / spec) if not Path(spec).is_absolute() else spec,
                          mode, inputs)
    return views


def one(spec: str, mode: str = "script", inputs: str | None = None):
    views = visualize(spec, mode, inputs)
    assert len(views) == 1, [v.name for v in views]
    return views[0]


#: how the browser tests start Debian's Chromium: no sandbox (root in CI), and none of its
#: background connections (this machine's network refuses them)
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]


def chromium_or_skip(module_level: bool = True):
    """``(playwright.sync_api, chromium binary)`` for a browser test, or a skip naming what
    is missing (``.ci/run`` installs both)."""
    import os
    import shutil

    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="Playwright for Python is not installed "
                                          "(pip install playwright; .ci/run does it)")
    binary = os.environ.get("IRVIZ_CHROMIUM") or shutil.which("chromium") \
        or shutil.which("chromium-browser")
    if binary is None:
        pytest.skip("no chromium binary (apt-get install chromium; .ci/run does it as root)",
                    allow_module_level=module_level)
    return sync_api, binary
