"""Saved compiled models: TorchScript archives (``torch.jit.save``) and torch.export
programs (``torch.export.save``, ``.pt2``), loaded as Targets, with a diagnosis of what a
file that is neither actually is."""
from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import torch

from irviz.errors import ModelLoadError
from .records import LoadResult, Target
from .user_code import quiet_output, quiet_torch_warnings

__all__ = ["load_archive", "is_exported_archive", "load_exported", "has_export"]


def has_export() -> bool:
    return hasattr(torch, "export") and hasattr(torch.export, "export")


def _archive_diagnosis(path: Path) -> str:
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        return f"it cannot be read ({exc.strerror or exc})"
    if size == 0:
        return "the file is empty"
    if not zipfile.is_zipfile(path):
        if head.startswith(b"PK"):
            return "the zip archive is truncated or corrupted"
        if head[:1] == b"\x80":
            return "it looks like a pickle (a legacy torch.save() file), not a zip archive"
        return "it is not a zip archive"
    try:
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
    except (zipfile.BadZipFile, OSError):
        return "the zip archive is truncated or corrupted"
    if any(n.endswith("/constants.pkl") or "/code/" in n for n in names):
        return "torch could not read it (a damaged or incompatible archive?)"
    if any(n.endswith("data.pkl") for n in names):
        return "it looks like a torch.save() checkpoint (weights or a pickled module)"
    return "the zip archive holds no TorchScript code"


def _torch_said(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    first = lines[0] if lines else type(exc).__name__
    first = first.split(" This is an internal miniz error")[0]
    return first


def load_archive(location: str) -> LoadResult:
    path = Path(location)
    if is_exported_archive(path):  # torch.export.save: drawn in export mode
        return LoadResult([Target(name=path.stem, obj=load_exported(location), kind="exported",
                                  spec=location, source_file=path.resolve(), user_module=None)])
    try:
        with quiet_torch_warnings():
            obj, unit = _jit_load(path)
    except Exception as exc:  # noqa: BLE001 - torch raises RuntimeError, ValueError, ...
        if _bytecode_only(path):
            raise _bytecode_only_error(location) from None
        raise ModelLoadError(
            f"{location} is not a TorchScript archive: {_archive_diagnosis(path)}",
            hint="irviz accepts only archives written by torch.jit.save() or ScriptModule.save(); "
                 "for a checkpoint, give irviz the .py file that defines the model "
                 "(e.g. model.py:make_model())",
            detail=f"torch.jit.load said: {_torch_said(exc)}") from None
    kind = "archive"
    return LoadResult([Target(name=path.stem, obj=obj, kind=kind, spec=location,
                              source_file=path.resolve(), user_module=None,
                              compilation_unit=unit)])


def _jit_load(path: Path) -> tuple[Any, Any]:
    """``torch.jit.load``, keeping the compilation unit it loads into: the archive's free
    functions (``F.relu``) are found only there, and torch.jit.load drops it. Another
    torch's private signature falls back to torch.jit.load (calls then stay unexpanded)."""
    unit = torch._C.CompilationUnit()
    try:
        cpp = torch._C.import_ir_module(unit, str(path), torch.device("cpu"), {}, False)
    except TypeError:
        return torch.jit.load(str(path), map_location="cpu"), None
    return torch.jit._recursive.wrap_cpp_module(cpp), unit


def _bytecode_only(path: Path) -> bool:
    """A lite-interpreter zip with its bytecode (``bytecode.pkl``) but without the TorchScript
    code and constants ``_save_for_lite_interpreter`` writes beside it."""
    try:
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
    except (zipfile.BadZipFile, OSError):
        return False
    return any(n.endswith("/bytecode.pkl") for n in names) and not any(
        "/code/" in n or n.endswith("/constants.pkl") for n in names)


def _bytecode_only_error(location: str) -> ModelLoadError:
    """What such a file holds and what irviz can draw of it (nothing: the lite interpreter's
    bytecode is a flat instruction list without the graph; its operators are listed)."""
    ops = ""
    try:
        from torch.jit.mobile import _export_operator_list, _load_for_lite_interpreter

        with quiet_torch_warnings(), quiet_output():
            names = sorted(_export_operator_list(_load_for_lite_interpreter(location)))
        ops = f"it runs {len(names)} operators: {', '.join(names)}"
    except Exception as exc:  # noqa: BLE001 - a damaged file: say what torch said
        ops = f"the lite interpreter cannot load it either: {_torch_said(exc)}"
    return ModelLoadError(
        f"{location} holds only lite-interpreter bytecode, without the TorchScript code "
        "irviz draws: its graph cannot be drawn (only its operator list is known)",
        hint="draw the model before it was saved: the scripted module, its .pt "
             "(torch.jit.save), or a .ptl written by _save_for_lite_interpreter, which keeps "
             "the TorchScript code beside the bytecode",
        detail=ops)


def is_exported_archive(path: Path) -> bool:
    """A zip written by ``torch.export.save`` (its ``serialized_exported_program``)."""
    try:
        with zipfile.ZipFile(path) as zf:
            return any("serialized_exported_program" in n or n.endswith("models/model.json")
                       for n in zf.namelist())
    except (zipfile.BadZipFile, OSError):
        return False


def load_exported(location: str) -> Any:
    """The ExportedProgram a ``.pt2`` holds (torch.export.load: its own JSON format and
    tensors, no pickled code)."""
    if not has_export():
        raise ModelLoadError(f"{location} is a torch.export program, and this torch "
                             f"({torch.__version__}) has no torch.export")
    try:
        with quiet_output():
            return torch.export.load(location)
    except Exception as exc:  # noqa: BLE001
        lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
        raise ModelLoadError(
            f"{location} could not be read as a torch.export program: "
            f"{type(exc).__name__}: {lines[0] if lines else ''}",
            hint="irviz reads .pt2 files written by torch.export.save(); one saved by a "
                 "newer torch may need that torch") from None
