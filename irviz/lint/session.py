"""How a lint run is set up, written once: the settings that change a spec's findings
(the cache key's), and the message that hands them to a ``--jobs`` worker
(:func:`worker_settings` in the parent, :func:`worker_workspace` in the worker)."""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from .layers.context import LintOptions

__all__ = ["settings_of", "worker_settings", "worker_workspace"]


def settings_of(config, inputs, options: dict, export: dict | None) -> dict:
    """Everything besides files that changes a spec's findings, JSON-able and made
    without torch: the cache key's settings. ``options`` are the LintOptions' fields."""
    return {
        "inputs": inputs,
        "config": {k: v for k, v in dataclasses.asdict(config).items() if k != "source"},
        "options": options,
        "export": export,
    }


def worker_settings(workspace, options: LintOptions) -> dict:
    """What a worker needs to lint the way this run does."""
    export = workspace.export_options
    header = settings_of(workspace.config, workspace.inputs, dataclasses.asdict(options),
                         None if export is None else {"strict": export.strict,
                                                      "dynamic_dims": list(export.dynamic_dims)})
    source = workspace.config.source
    header["config_source"] = str(source) if source is not None else None
    return header


def worker_workspace(header: dict):
    """A worker's Workspace and LintOptions from the parent's :func:`worker_settings`."""
    from ..compat import check_torch
    from ..config import Config, load_config
    from ..gc_pause import freeze_loaded_objects
    from ..workspace import Workspace

    check_torch()
    source = header["config_source"]
    config = load_config(path=source) if source else Config()
    workspace = Workspace(inputs=header["inputs"], config=config)
    export = header["export"]
    if export is not None:
        workspace.set_export_options(header["options"]["mode"], export["strict"],
                                     tuple(export["dynamic_dims"]))
    freeze_loaded_objects()
    from .layers.context import LintOptions

    return workspace, LintOptions(**header["options"])
