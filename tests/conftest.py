"""Shared fixtures: the samples, a seeded visualize(), golden files, Graphviz gates."""
from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pytest
import torch

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
GOLDENS = Path(__file__).resolve().parent / "goldens"

#: irviz's own package directory: a frame in it means irviz showed its own traceback
IRVIZ_PACKAGE = Path(__file__).resolve().parent.parent / "irviz"


def shows_irviz_traceback(text: str) -> bool:
    """True when ``text`` holds a traceback frame of irviz's own code (wherever the
    checkout lives, also in a directory named ``irviz/``)."""
    import irviz

    package = Path(irviz.__file__).resolve().parent
    return any(f'File "{p}{sep}' in text for p in {package, IRVIZ_PACKAGE}
               for sep in ("/", "\\"))


requires_dot = pytest.mark.skipif(shutil.which("dot") is None,
                                  reason="Graphviz's dot binary is not installed")


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
