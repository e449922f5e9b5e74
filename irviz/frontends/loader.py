"""Find the model(s) a target spec names and load them.

A *spec* is what the user passes on the command line:

``path/to/file.py``
    every model the file defines: ``torch.nn.Module`` subclasses (created with
    no arguments) and instances, TorchScript modules and functions, and plain
    functions named as keys of the file's ``example_inputs`` dict. Classes whose
    constructor needs arguments or fails are reported in
    :attr:`LoadResult.skipped`. Names starting with ``_`` are left out unless
    ``example_inputs`` names them.
``path/to/file.py:NAME``
    one attribute: a module class (created with no arguments), a module
    instance, a TorchScript object, or a plain function.
``path/to/file.py:factory()`` / ``path/to/file.py:factory(3, hidden=16)``
    call ``factory`` (arguments must be Python literals) and load what it returns.
``pkg.module`` / ``pkg.module:NAME`` / ``pkg.module:factory()``
    the same for an importable module (the current directory is searched first).
``model.pt``
    any other existing file: a TorchScript archive written by ``torch.jit.save``
    or ``ScriptModule.save``, or a ``torch.export.save`` program (``.pt2``; kind
    ``exported``, drawn in export mode).

Importing follows Flask's app discovery (``flask.cli.prepare_import`` /
``locate_app``): the file's directory - or, for a file inside a package, the
directory above the outermost package - is put at the front of ``sys.path``
while the file is imported and its models are created; ``sys.path`` is
restored afterwards. A file is imported afresh on every :func:`load`. Errors
raised by the user's own code are reported with the user's traceback (irviz and
importlib frames removed), marked as coming from the user's code.
"""
from __future__ import annotations

import ast
import difflib
import importlib
import importlib.util
import inspect
import linecache
import os
import re
import sys
import types
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import torch

from irviz.errors import ModelLoadError
from irviz.paths import display_path
from .archives import load_archive
from .records import LoadResult, Target
from .user_code import USER_TRACEBACK_HEADER, quiet_torch_warnings, user_traceback

__all__ = ["Target", "LoadResult", "load", "target_of", "user_traceback",
           "quiet_torch_warnings", "USER_TRACEBACK_HEADER"]

#: file extensions that mark a spec as a path even when it does not exist
_FILE_EXTS = {"py", "pt", "pth", "pt2", "ts", "zip", "pkl", "pickle", "torchscript", "ptl",
              "ckpt"}

#: module names irviz imported user files under -> the file; only these are
#: ever removed from sys.modules to re-import a file afresh
_OURS: dict[str, str] = {}
_USER_CODE_HINT = "the error comes from your code (or code it calls), not from irviz; see the traceback above"
_unique_counter = 0


# --------------------------------------------------------------------------- helpers


def _exc_line(exc: BaseException) -> str:
    msg = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {msg[0]}" if msg else type(exc).__name__


def _model_kind(obj: object) -> str | None:
    if isinstance(obj, torch.jit.ScriptModule):
        return "script_module"
    if isinstance(obj, torch.jit.ScriptFunction):
        return "script_function"
    if isinstance(obj, torch.nn.Module):
        return "module"
    return None


def _is_module_class(obj: object) -> bool:
    return isinstance(obj, type) and issubclass(obj, torch.nn.Module)


def _required_params(cls: type) -> tuple[list[str], str]:
    """Required constructor parameters of ``cls`` and its signature text."""
    try:
        sig = inspect.signature(cls)
    except (TypeError, ValueError):
        return [], "(...)"
    required = [p.name for p in sig.parameters.values()
                if p.default is inspect.Parameter.empty
                and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    return required, str(sig)


def _top_level_bindings(source: str | None) -> tuple[set[str], set[str]]:
    """Names bound at module level by (assignments/defs/classes, imports)."""
    local: set[str] = set()
    imported: set[str] = set()
    if source is None:
        return local, imported
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return local, imported

    def targets(node: ast.AST) -> None:
        for n in ast.walk(node):
            if isinstance(n, ast.Name):
                local.add(n.id)

    def visit(body: list[ast.stmt]) -> None:
        for st in body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                local.add(st.name)
            elif isinstance(st, ast.Assign):
                for t in st.targets:
                    targets(t)
            elif isinstance(st, (ast.AnnAssign, ast.AugAssign)):
                targets(st.target)
            elif isinstance(st, (ast.Import, ast.ImportFrom)):
                for alias in st.names:
                    imported.add((alias.asname or alias.name).split(".")[0])
            elif isinstance(st, (ast.For, ast.AsyncFor)):
                targets(st.target)
                visit(st.body)
                visit(st.orelse)
            elif isinstance(st, (ast.With, ast.AsyncWith)):
                for item in st.items:
                    if item.optional_vars is not None:
                        targets(item.optional_vars)
                visit(st.body)
            elif isinstance(st, (ast.If, ast.While)):
                visit(st.body)
                visit(st.orelse)
            elif isinstance(st, ast.Try) or type(st).__name__ == "TryStar":
                visit(st.body)
                for h in st.handlers:
                    visit(h.body)
                visit(st.orelse)
                visit(st.finalbody)
            elif isinstance(st, ast.Expr):
                for n in ast.walk(st):
                    if isinstance(n, ast.NamedExpr):
                        targets(n.target)

    visit(tree.body)
    return local, imported


def _module_source(module: types.ModuleType) -> str | None:
    file = getattr(module, "__file__", None)
    if not file or not file.endswith(".py"):
        return None
    try:
        return Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _defined_here(name: str, obj: object, module: types.ModuleType,
                  local: set[str]) -> bool:
    """Is ``obj`` (bound to ``name`` in ``module``) defined in that module, not imported?"""
    modname = module.__name__
    if isinstance(obj, type):
        return obj.__module__ == modname
    if isinstance(obj, types.FunctionType):
        return obj.__module__ == modname
    if name in local:
        return True
    if isinstance(obj, torch.jit.ScriptFunction):
        qualified = getattr(obj, "qualified_name", "") or ""
        return qualified.startswith(f"__torch__.{modname}.")
    if isinstance(obj, torch.jit.ScriptModule):
        try:
            qualified = obj._c._type().qualified_name()
        except Exception:  # pragma: no cover - private API changed
            return False
        return qualified.startswith(f"__torch__.{modname}.")
    return type(obj).__module__ == modname


def _takes_no_arguments(fn: Any) -> bool:
    """True when ``fn`` can be called with no arguments at all (a factory)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    return not any(p.default is inspect.Parameter.empty
                   and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                   for p in sig.parameters.values())


def _example_keys(module: types.ModuleType) -> list[str]:
    ex = module.__dict__.get("example_inputs")
    if isinstance(ex, dict):
        return [k for k in ex if isinstance(k, str)]
    return []


# --------------------------------------------------------------------------- spec parsing


def _is_dotted_identifier(text: str) -> bool:
    return bool(text) and all(part.isidentifier() for part in text.split("."))


def _split_spec(spec: str) -> tuple[str, str | None]:
    """Split ``spec`` into (location, attribute or None)."""
    if os.path.exists(spec):
        return spec, None
    m = re.match(r"^(.+?\.py)(?::(.*))?$", spec, re.S)
    if m:
        return m.group(1), m.group(2)
    start = 2 if re.match(r"^[A-Za-z]:[\\/]", spec) else 0  # Windows drive letter
    colon = spec.find(":", start)
    if colon >= 0:
        return spec[:colon], spec[colon + 1:]
    return spec, None


def _parse_attr(attr: str, spec: str) -> tuple[str, bool, tuple, dict, str]:
    """Parse ``NAME`` or ``NAME(literal args)``: (name, is_call, args, kwargs, display)."""
    text = attr.strip()
    if not text:
        raise ModelLoadError(f"nothing after ':' in {spec!r}",
                             hint="write FILE_OR_MODULE:NAME, or leave out ':' to load every model")
    try:
        expr = ast.parse(text, mode="eval").body
    except SyntaxError:
        raise ModelLoadError(
            f"cannot parse {text!r} in {spec!r}: expected NAME or NAME(args)",
            hint="e.g. model.py:MyCell or model.py:make_model(4, hidden=16)") from None
    if isinstance(expr, ast.Name):
        return expr.id, False, (), {}, expr.id
    if not (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name)):
        raise ModelLoadError(
            f"cannot parse {text!r} in {spec!r}: expected NAME or NAME(args)",
            hint="e.g. model.py:MyCell or model.py:make_model(4, hidden=16)")
    name = expr.func.id
    args, kwargs = [], {}
    try:
        for node in expr.args:
            if isinstance(node, ast.Starred):
                raise ValueError(ast.unparse(node))
            args.append(ast.literal_eval(node))
        for kw in expr.keywords:
            if kw.arg is None:
                raise ValueError(ast.unparse(kw))
            kwargs[kw.arg] = ast.literal_eval(kw.value)
    except ValueError:
        raise ModelLoadError(
            f"the arguments of {name}() in {spec!r} must be Python literals",
            hint="numbers, strings, True/False/None, and tuples/lists/dicts of them; "
                 "for anything else write a zero-argument factory in the file") from None
    return name, True, tuple(args), kwargs, ast.unparse(expr)


# --------------------------------------------------------------------------- importing


@contextmanager
def _user_code(path_dir: str | None) -> Iterator[None]:
    """Run user code: ``path_dir`` first on sys.path, no .pyc files, quiet torch."""
    saved_path = list(sys.path)
    saved_bytecode = sys.dont_write_bytecode
    if path_dir is not None:
        sys.path.insert(0, path_dir)
    sys.dont_write_bytecode = True
    importlib.invalidate_caches()
    try:
        with quiet_torch_warnings():
            yield
    finally:
        sys.path[:] = saved_path
        sys.dont_write_bytecode = saved_bytecode


def _forget(name: str) -> None:
    """Remove a module irviz imported earlier, so it is imported afresh."""
    if name in _OURS and name in sys.modules:
        del sys.modules[name]
    _OURS.pop(name, None)


def _standalone_name(stem: str, file: str) -> str:
    global _unique_counter
    base = re.sub(r"\W", "_", stem) or "model"
    if base[0].isdigit():
        base = "_" + base
    taken = (base in sys.modules and base not in _OURS) or base in sys.stdlib_module_names
    if not taken and base not in _OURS:
        try:
            spec = importlib.util.find_spec(base)
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.origin and os.path.realpath(spec.origin) != file:
            taken = True  # an installed/other module of that name: never shadow it
    if not taken:
        return base
    _unique_counter += 1
    return f"_irviz_user_{base}_{_unique_counter}"


def _package_layout(file: Path) -> tuple[str, str | None]:
    """(directory for sys.path, dotted name) following flask.cli.prepare_import.

    The dotted name is None when the file is not inside a usable package.
    """
    path = str(file)
    stem, ext = os.path.splitext(path)
    if ext == ".py":
        path = stem
    if os.path.basename(path) == "__init__":
        path = os.path.dirname(path)
    names = []
    while True:
        path, name = os.path.split(path)
        names.append(name)
        if not os.path.exists(os.path.join(path, "__init__.py")):
            break
    if len(names) == 1:
        return path, None
    dotted = ".".join(reversed(names))
    top = names[-1]
    if not _is_dotted_identifier(dotted) or top in sys.stdlib_module_names:
        return str(file.parent), None
    existing = sys.modules.get(top)
    if existing is not None and top not in _OURS:
        # a package of that name is already imported from somewhere else
        return str(file.parent), None
    return path, dotted


def _syntax_error(err: SyntaxError, shown: str, file: Path) -> ModelLoadError:
    where_file = err.filename or str(file)
    where = display_path(where_file) if os.path.exists(where_file) else where_file
    lineno = err.lineno or 0
    col = err.offset or 0
    loc = f"{where}:{lineno}:{col}" if col else f"{where}:{lineno}"
    detail = None
    text = err.text
    if text is None and os.path.exists(where_file) and lineno:
        text = linecache.getline(where_file, lineno)
    if text:
        line = text.rstrip("\r\n").expandtabs()
        width = 1
        if getattr(err, "end_offset", None) and err.end_lineno == err.lineno and err.end_offset > col:
            width = err.end_offset - col
        caret = " " * max(col - 1, 0) + "^" * max(width, 1)
        detail = f"    {line}\n    {caret}"
    msg = err.msg or "invalid syntax"
    same_file = os.path.exists(where_file) and os.path.realpath(where_file) == os.path.realpath(file)
    if same_file:
        message = f"{loc}: syntax error: {msg}"
    else:
        message = f"importing {shown} failed: syntax error at {loc}: {msg}"
    return ModelLoadError(message, hint=f"fix the syntax error; irviz imports {shown} the way Python does",
                          detail=detail)


def _import_failed(exc: BaseException, shown: str, file: Path | None) -> ModelLoadError:
    if isinstance(exc, SyntaxError) and exc.filename and os.path.exists(exc.filename):
        return _syntax_error(exc, shown, file or Path(exc.filename))
    return ModelLoadError(
        f"importing {shown} raised {_exc_line(exc)}",
        hint=_USER_CODE_HINT,
        detail=user_traceback(exc))


def _import_file(file: Path, shown: str) -> types.ModuleType:
    """Import ``file`` afresh; call inside ``_user_code(<its sys.path dir>)``."""
    linecache.checkcache(str(file))
    path_dir, dotted = _package_layout(file)
    if dotted is not None:
        parts = dotted.split(".")
        for i in range(len(parts), 0, -1):
            _forget(".".join(parts[:i]))
        before = set(sys.modules)
        try:
            module = importlib.import_module(dotted)
        except (Exception, SystemExit) as exc:
            for i in range(1, len(parts) + 1):
                name = ".".join(parts[:i])
                if name not in before:
                    sys.modules.pop(name, None)
            raise _import_failed(exc, shown, file) from None
        for i in range(1, len(parts) + 1):
            name = ".".join(parts[:i])
            if name not in before and name in sys.modules:
                _OURS[name] = getattr(sys.modules[name], "__file__", None) or ""
        if os.path.realpath(getattr(module, "__file__", "") or "") != str(file):
            # an already-imported package of that name won: fall back to the plain file
            return _import_standalone(file, shown)
        return module
    return _import_standalone(file, shown)


def _import_standalone(file: Path, shown: str) -> types.ModuleType:
    name = _standalone_name(file.stem, str(file))
    _forget(name)
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:  # pragma: no cover - .py files always have one
        raise ModelLoadError(f"cannot import {shown}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    _OURS[name] = str(file)
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
        sys.modules.pop(name, None)
        _OURS.pop(name, None)
        raise _import_failed(exc, shown, file) from None
    return module


def _import_module(modname: str, spec: str) -> types.ModuleType:
    """Import a dotted module name; call inside ``_user_code(os.getcwd())``."""
    try:
        return importlib.import_module(modname)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing and (modname == missing or modname.startswith(missing + ".")):
            hint = ("the current directory and PYTHONPATH are searched; "
                    "to load a file, give its path instead (e.g. path/to/model.py)")
            raise ModelLoadError(f"no module named {missing!r} (from {spec!r})", hint=hint) from None
        raise _import_failed(exc, modname, None) from None
    except (Exception, SystemExit) as exc:
        raise _import_failed(exc, modname, None) from None


# --------------------------------------------------------------------------- discovery


def _model_candidates(module: types.ModuleType) -> list[tuple[str, object]]:
    """(name, object) of every model the module defines, in definition order."""
    source = _module_source(module)
    local, _ = _top_level_bindings(source)
    keys = set(_example_keys(module))
    out = []
    for name, obj in list(vars(module).items()):
        if name.startswith("__") or name == "example_inputs":
            continue
        if name.startswith("_") and name not in keys:
            continue
        if _is_module_class(obj) or _model_kind(obj) is not None:
            if _defined_here(name, obj, module, local):
                out.append((name, obj))
        elif isinstance(obj, types.FunctionType) and (name in keys or f"{name}()" in keys):
            out.append((name, obj))
    return out


def _other_callables(module: types.ModuleType, exclude: set[str]) -> list[str]:
    out = []
    for name, obj in vars(module).items():
        if name.startswith("_") or name in exclude or name == "example_inputs":
            continue
        if isinstance(obj, (types.FunctionType, type)) and getattr(obj, "__module__", None) == module.__name__:
            out.append(name)
    return out


def _target(name: str, obj: object, kind: str, spec: str,
            module: types.ModuleType) -> Target:
    file = getattr(module, "__file__", None)
    return Target(name=name, obj=obj, kind=kind, spec=spec,
                  source_file=Path(file) if file else None, user_module=module)


#: a ``@torch.jit.interface`` class: scripting it again fails ("class already defined")
_INTERFACE = "a TorchScript interface (@torch.jit.interface): a type modules implement, not a model"


def _factory_hint(prefix: str, cls_name: str) -> str:
    return (f"write a zero-argument factory in the file, e.g. `def make_model(): "
            f"return {cls_name}(...)`, and load {prefix}:make_model()")


def _load_all(module: types.ModuleType, prefix: str, shown: str) -> LoadResult:
    targets: list[Target] = []
    skipped: list[tuple[str, str]] = []
    keys = _example_keys(module)
    for name, obj in _model_candidates(module):
        spec = f"{prefix}:{name}"
        if _is_module_class(obj):
            if obj.forward is torch.nn.Module.forward:
                skipped.append((name, "defines no forward() (a base class?)"))
                continue
            if hasattr(obj, "__torch_script_interface__"):
                skipped.append((name, _INTERFACE))
                continue
            required, sig = _required_params(obj)
            if required:
                skipped.append((name, f"its constructor needs arguments: {name}{sig}; "
                                      f"load it through a zero-argument factory ({prefix}:FACTORY())"))
                continue
            try:
                inst = obj()
            except Exception as exc:  # noqa: BLE001 - user code
                skipped.append((name, f"its constructor raised {_exc_line(exc)}"))
                continue
            targets.append(_target(name, inst, _model_kind(inst) or "module", spec, module))
        elif isinstance(obj, types.FunctionType):
            if not _takes_no_arguments(obj):
                targets.append(_target(name, obj, "function", spec, module))
            else:  # a function without parameters cannot take inputs: a factory
                try:
                    result = _call_factory(obj, name, (), {}, f"{name}()", prefix)
                except ModelLoadError as exc:
                    skipped.append((f"{name}()", exc.message))
                    continue
                targets.append(result)
        else:
            targets.append(_target(name, obj, _model_kind(obj), spec, module))
    present = set(vars(module))
    for key in keys:
        bare = key[:-2] if key.endswith("()") else key
        if bare not in present:
            skipped.append((key, f"named in example_inputs, but {shown} defines no {bare!r}"))
    if not targets:
        detail = None
        if skipped:
            detail = "skipped:\n" + "\n".join(f"  {n}: {r}" for n, r in skipped)
        raise ModelLoadError(
            f"{shown} defines no models" + (" irviz can load by itself" if skipped else ""),
            hint=(f"irviz looks for torch.nn.Module subclasses and instances, TorchScript "
                  f"objects, and functions named in example_inputs; load anything else by "
                  f"name or through a factory: {prefix}:NAME or {prefix}:make_model()"),
            detail=detail)
    return LoadResult(targets=targets, skipped=skipped)


def _call_factory(fn: Any, name: str, args: tuple, kwargs: dict, display: str,
                  prefix: str) -> Target:
    module = sys.modules.get(getattr(fn, "__module__", "") or "")
    try:
        result = fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - user code
        raise ModelLoadError(f"calling {prefix}:{display} raised {_exc_line(exc)}",
                             hint=_USER_CODE_HINT,
                             detail=user_traceback(exc)) from None
    kind = _model_kind(result)
    if kind is None:
        got = f"the class {result.__name__}" if isinstance(result, type) else type(result).__name__
        raise ModelLoadError(
            f"{prefix}:{display} returned {got}, not a model",
            hint="a factory must return a torch.nn.Module instance, a torch.jit.ScriptModule "
                 "or a torch.jit.ScriptFunction")
    return Target(name=display, obj=result, kind=kind, spec=f"{prefix}:{display}",
                  source_file=Path(module.__file__) if module is not None and getattr(module, "__file__", None) else None,
                  user_module=module)


def _unknown_name(module: types.ModuleType, name: str, prefix: str, shown: str) -> ModelLoadError:
    models = [n for n, _ in _model_candidates(module)]
    others = _other_callables(module, set(models))
    lines = []
    lines.append(f"models it defines: {', '.join(models) if models else '(none)'}")
    if others:
        lines.append(f"other public callables: {', '.join(others)}")
    pool = models + others
    everything = [n for n in vars(module) if not n.startswith("__")]
    match = [n for n in everything if n.lower() == name.lower()]
    match = match or difflib.get_close_matches(name, pool, n=1, cutoff=0.6) \
        or difflib.get_close_matches(name, everything, n=1, cutoff=0.6)
    if match:
        hint = f"did you mean {match[0]!r}? ({prefix}:{match[0]})"
    elif models:
        hint = f"pick one of the names above, e.g. {prefix}:{models[0]}, or leave out ':{name}' to load all"
    else:
        hint = f"pick one of the names above, e.g. {prefix}:NAME"
    return ModelLoadError(f"{shown} has no attribute {name!r}", hint=hint, detail="\n".join(lines))


def _load_one(module: types.ModuleType, attr: str, prefix: str, shown: str, spec: str) -> LoadResult:
    name, is_call, args, kwargs, display = _parse_attr(attr, spec)
    if name not in vars(module):
        raise _unknown_name(module, name, prefix, shown)
    obj = vars(module)[name]
    if is_call:
        if not callable(obj):
            raise ModelLoadError(f"{prefix}:{name} is a {type(obj).__name__}, not callable",
                                 hint=f"use {prefix}:{name} without the parentheses")
        return LoadResult([_call_factory(obj, name, args, kwargs, display, prefix)])
    target_spec = f"{prefix}:{name}"
    if isinstance(obj, type) and hasattr(obj, "__torch_script_interface__"):
        raise ModelLoadError(f"{prefix}:{name} is {_INTERFACE}",
                             hint="load a module that implements it")
    if isinstance(obj, type):
        if not issubclass(obj, torch.nn.Module):
            raise ModelLoadError(
                f"{prefix}:{name} is a class, but not a torch.nn.Module subclass",
                hint="give an nn.Module class or instance, a TorchScript object, a function, "
                     "or a factory call NAME()")
        required, sig = _required_params(obj)
        if required:
            raise ModelLoadError(
                f"cannot create {name} without arguments: its constructor is {name}{sig}",
                hint=_factory_hint(prefix, name)
                + (f" (literal arguments also work: {prefix}:{name}(...))"))
        try:
            inst = obj()
        except Exception as exc:  # noqa: BLE001 - user code
            raise ModelLoadError(f"creating {prefix}:{name} raised {_exc_line(exc)}",
                                 hint=_USER_CODE_HINT,
                                 detail=user_traceback(exc)) from None
        return LoadResult([_target(name, inst, _model_kind(inst) or "module", target_spec, module)])
    kind = _model_kind(obj)
    if kind is None and isinstance(obj, types.FunctionType):
        kind = "function"
    if kind is None:
        raise ModelLoadError(
            f"{prefix}:{name} is a {type(obj).__name__}, not a model",
            hint="give an nn.Module class or instance, a TorchScript module or function, "
                 "a plain function, or a factory call NAME()")
    return LoadResult([_target(name, obj, kind, target_spec, module)])


# --------------------------------------------------------------------------- entry point


def _missing_file(location: str) -> ModelLoadError:
    p = Path(location)
    message = f"no such file: {location}"
    if not p.is_absolute():
        message += f" (looked in {Path.cwd()})"
    hint = None
    if Path(location + ".py").is_file():
        hint = f"did you mean {location}.py?"
    elif p.parent.is_dir():
        siblings = [c.name for c in p.parent.iterdir()]
        close = difflib.get_close_matches(p.name, siblings, n=1, cutoff=0.8)
        if close:
            hint = f"did you mean {os.path.join(os.path.dirname(location), close[0])}?"
    else:
        hint = f"the directory {display_path(p.parent)} does not exist either"
    return ModelLoadError(message, hint=hint)


def _directory(location: str) -> ModelLoadError:
    files = sorted(c.name for c in Path(location).glob("*.py") if c.name != "__init__.py")
    if files:
        hint = "give one of its files, e.g. " + os.path.join(location, files[0])
        if len(files) > 1:
            hint += f" (it has {len(files)}: {', '.join(files[:5])}{', ...' if len(files) > 5 else ''})"
    else:
        hint = "give a .py file or a TorchScript archive (.pt)"
    return ModelLoadError(f"{location} is a directory, not a model file", hint=hint)


def load(spec: str) -> LoadResult:
    """Load the model(s) ``spec`` names (see the module docstring for the forms)."""
    spec = spec.strip()
    if not spec:
        raise ModelLoadError("no target given",
                             hint="give a model file, e.g. samples/my_cell.py or samples/my_cell.py:MyCell")
    location, attr = _split_spec(spec)
    ext = location.rsplit(".", 1)[-1].lower() if "." in os.path.basename(location) else ""

    if location.endswith(".py") or not (os.path.exists(location) or (
            _is_dotted_identifier(location) and ext not in _FILE_EXTS)):
        # a path
        if not os.path.exists(location):
            raise _missing_file(location)
        if os.path.isdir(location):
            raise _directory(location)
        file = Path(location).resolve()
        path_dir, _ = _package_layout(file)
        with _user_code(path_dir):
            module = _import_file(file, location)
            if attr is None:
                return _load_all(module, location, location)
            return _load_one(module, attr, location, location, spec)

    if os.path.isdir(location) and not os.path.exists(os.path.join(location, "__init__.py")):
        raise _directory(location)
    if os.path.isfile(location):
        if attr is not None:
            raise ModelLoadError(f"{location} is a TorchScript archive; it takes no ':{attr}' part",
                                 hint=f"give just {location}")
        return load_archive(location)

    # a dotted module name (or a package directory in the current directory)
    with _user_code(os.getcwd()):
        module = _import_module(location, spec)
        if attr is None:
            return _load_all(module, location, location)
        return _load_one(module, attr, location, location, spec)


def _defining_module(obj: object) -> str:
    """The module that defines the model's class; for a ScriptModule, the class it was
    scripted from (``__torch__.torch.nn.modules.rnn.LSTM``: torch.nn.modules.rnn), not
    torch.jit._script, where every RecursiveScriptModule's class lives."""
    if isinstance(obj, torch.jit.ScriptModule):
        try:
            qualified = obj._c._type().qualified_name()
        except Exception:  # noqa: BLE001 - a module torch made without a class type
            qualified = ""
        if qualified.startswith("__torch__."):
            parts = qualified.removeprefix("__torch__.").split(".")[:-1]
            module = ".".join(p for p in parts if not p.startswith("___torch_mangle_"))
            if module in sys.modules:
                return module
    return type(obj).__module__


def target_of(obj: object, name: str | None = None) -> Target:
    """A model object the caller already built (``nn.Module``, ScriptModule,
    ScriptFunction, plain function or torch.export's ExportedProgram) as a Target, the way torchview's ``draw_graph``
    takes a model: named after its class (or function), located by its defining module."""
    kind = _model_kind(obj)
    if kind is None and isinstance(obj, types.FunctionType):
        kind = "function"
    exported = sys.modules.get("torch.export")   # loaded if obj is an ExportedProgram
    if kind is None and exported is not None and isinstance(obj, exported.ExportedProgram):
        # drawn in export mode, as a loaded .pt2 is
        label = name or type(obj).__name__
        return Target(name=label, obj=obj, kind="exported", spec=label, source_file=None,
                      user_module=None)
    if kind is None:
        raise ModelLoadError(f"{type(obj).__name__} is not a model irviz can capture",
                             hint="pass an nn.Module, a ScriptModule, an ExportedProgram, a "
                                  "scripted or plain function, or a spec string such as "
                                  "model.py:MyCell")
    if kind in ("function", "script_function"):
        label = name or getattr(obj, "__name__", None) or getattr(obj, "name", "function")
        module = sys.modules.get(getattr(obj, "__module__", None) or "")
    else:
        label = name or getattr(obj, "original_name", None) or type(obj).__name__
        module = sys.modules.get(_defining_module(obj))
    file = getattr(module, "__file__", None)
    spec = f"{Path(file).name}:{label}" if file else label
    return Target(name=label, obj=obj, kind=kind, spec=spec,
                  source_file=Path(file) if file else None, user_module=module)
