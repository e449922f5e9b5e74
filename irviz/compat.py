"""Which torch versions irviz supports, checked when a command starts.

irviz reads TorchScript graphs through torch's public ``torch._C`` Graph/Node/Value
bindings, whose behaviour it is tested against. TorchScript is deprecated (torch 2.5+)
and upstream plans to turn ``torch.jit.script``/``trace`` into errors; a torch outside
the tested range gets a clear message instead of odd failures deep in a capture.
``IRVIZ_ALLOW_ANY_TORCH=1`` skips the check (at your own risk).
"""
from __future__ import annotations

import os
from importlib import metadata

from .errors import UsageError

#: the torch releases irviz is tested with: [MIN, MAX)
MIN_TORCH = (2, 1)
MAX_TORCH = (2, 15)


def _parse(version: str) -> tuple[int, int]:
    parts = version.split("+")[0].split(".")
    return int(parts[0]), int("".join(ch for ch in parts[1] if ch.isdigit()) or 0)


def check_torch(version: str | None = None) -> str:
    """The installed torch version; UsageError when it is outside the supported range."""
    if version is None:
        try:
            version = metadata.version("torch")
        except metadata.PackageNotFoundError:
            raise UsageError("torch is not installed",
                             hint="pip install 'torch>=2.1,<2.15' (the CPU build is enough)") \
                from None
    if os.environ.get("IRVIZ_ALLOW_ANY_TORCH"):
        return version
    try:
        found = _parse(version)
    except (ValueError, IndexError):
        return version  # a development build with an unusual version string: let it try
    if not MIN_TORCH <= found < MAX_TORCH:
        low, high = ".".join(map(str, MIN_TORCH)), ".".join(map(str, MAX_TORCH))
        raise UsageError(
            f"irviz supports torch >= {low} and < {high}; this is torch {version}",
            hint=("TorchScript is deprecated and newer torch releases may refuse it: install "
                  f"a torch in the range (pip install 'torch>={low},<{high}'), or set "
                  "IRVIZ_ALLOW_ANY_TORCH=1 to try anyway"))
    return version
