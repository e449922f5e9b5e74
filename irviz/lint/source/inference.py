"""What a name holds in the model's source: the knowing half of the AST layer.

Nothing here judges code and nothing is executed; the checks (``detect_*.py``) ask
these questions and decide what is a finding. Two things are known:

* which functions a model runs (:class:`CallGraph`): ``forward``, every method of
  ``self`` it calls, the ``forward`` of every user-defined submodule it calls (directly,
  through ``ModuleList``/``Sequential``/``ModuleDict`` indexing or iteration, or through
  ``torch.jit.fork``) and every plain user function it calls, each with the kinds its
  call sites pass in. ``torch`` library modules are not entered; library containers are
  looked through to their children. ``self.<name>`` is looked up on the instance
  (:class:`Owner`), without running its code.
* what each expression of one function holds (:class:`Inference`), from a small
  flow-insensitive taint analysis over these tags:

  - ``tensor``  - certainly a tensor (unannotated/``Tensor`` parameters, ``torch.*``
    and ``F.*`` results, tensor methods, parameters/buffers of ``self``, global tensors);
  - ``tdata``   - derived from tensors but maybe a container (submodule outputs,
    ``chunk``/``split`` results, unknown calls on tensors, ``torch.jit.wait``);
  - ``size``/``shape`` - size-derived Python values (``x.size(0)``, ``x.shape``,
    ``len(x)``, ``x.numel()``, names unpacked from ``x.shape``);
  - ``meta`` - rank/dtype/device metadata, ``isinstance`` and ``torch.cuda.is_available()``;
  - ``num`` - Python numbers already taken out of a tensor (``.item()``, ``.tolist()``,
    ``.numpy()``): the conversion is reported, later uses of the number are not;
  - ``training`` - ``self.training``; ``future`` - ``torch.jit.fork`` results;
    ``tlist`` - lists/tuples of tensors.
"""
from __future__ import annotations

import ast
import builtins
import collections
import collections.abc
import dataclasses
import inspect
import os
import sys
import sysconfig
import textwrap
import types
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from ...paths import TORCH_DIR, is_inside, is_torch_file

# --------------------------------------------------------------------------- taint tags
#: what a value holds; an expression's kinds are a frozenset of these
TENSOR, TDATA, SIZE, SHAPE, META, NUM, TRAINING, FUTURE, TLIST = (
    "tensor", "tdata", "size", "shape", "meta", "num", "training", "future", "tlist")
NOTHING: frozenset = frozenset()
DATA = frozenset({TENSOR, TDATA})
SIZED = frozenset({SIZE, SHAPE})

#: analyses (first ones and re-analyses) of one model before the walk stops: a guard
_MAX_ANALYSES = 2000

# --------------------------------------------------------------------------- vocabularies
_META_ATTRS = {"ndim", "dtype", "device", "is_cuda", "is_sparse", "is_quantized", "is_meta",
               "is_mkldnn", "is_nested", "layout", "requires_grad", "is_leaf", "names",
               "is_cpu", "is_mps", "is_xpu"}
_TENSOR_ATTRS = {"T", "mT", "H", "mH", "data", "grad", "real", "imag"}
_META_METHODS = {"dim", "ndimension", "is_floating_point", "is_complex", "is_contiguous",
                 "get_device", "is_signed", "element_size", "is_pinned", "is_shared",
                 "dim_order", "is_inference", "has_names", "is_coalesced"}
_NUM_METHODS = {"item", "tolist", "numpy", "data_ptr"}
_TUPLE_METHODS = {"chunk", "split", "unbind", "tensor_split", "split_with_sizes", "hsplit",
                  "vsplit", "dsplit", "sort", "topk", "kthvalue", "unique",
                  "unique_consecutive", "aminmax", "frexp", "slogdet", "qr", "svd", "eig",
                  "lu", "std_mean", "var_mean", "cummax", "cummin", "histogram"}
_TUPLE_WITH_DIM = {"max", "min", "median", "nanmedian", "mode"}

FORK = "torch.jit.fork"
WAIT = "torch.jit.wait"
_ANNOTATE = "torch.jit.annotate"
RANDOM_FUNCS = {"torch." + n for n in (
    "rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "bernoulli",
    "normal", "multinomial", "randperm", "poisson")}
DROPOUT_FUNCTIONAL = {"torch.nn.functional." + n for n in (
    "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
    "feature_alpha_dropout")}
DROPOUT_TORCH = {"torch." + n for n in (
    "dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout")}
CONSTRUCTORS = {"torch." + n for n in (
    "tensor", "as_tensor", "asarray", "Tensor", "from_numpy", "sparse_coo_tensor",
    "sparse_csr_tensor", "sparse_csc_tensor", "sparse_bsr_tensor", "sparse_bsc_tensor",
    "sparse_compressed_tensor", "FloatTensor", "DoubleTensor", "LongTensor", "IntTensor",
    "BoolTensor", "HalfTensor", "ByteTensor")}
_META_FUNCS = {"torch.cuda.is_available", "torch.cuda.device_count", "torch.is_tensor",
               "torch.is_floating_point", "torch.is_complex", "torch.finfo", "torch.iinfo",
               "torch.backends.mps.is_available", "torch.cuda.is_initialized"}
_SIZE_FUNCS = {"torch.numel"}
_TUPLE_FUNCS = {"torch." + n for n in (
    "split", "chunk", "unbind", "tensor_split", "hsplit", "vsplit", "dsplit", "sort", "topk",
    "kthvalue", "unique", "unique_consecutive", "std_mean", "var_mean", "aminmax",
    "meshgrid", "broadcast_tensors", "frexp", "cummax", "cummin", "lu", "histogram")}
_TUPLE_FUNCS_WITH_DIM = {"torch." + n for n in ("max", "min", "median", "nanmedian", "mode")}
_TUPLE_FUNCS |= {"torch." + n for n in ("lstm", "gru", "rnn_tanh", "rnn_relu", "lstm_cell")}
_TUPLE_FUNCS |= {"torch.nn.functional." + n for n in (
    "multi_head_attention_forward", "max_pool1d_with_indices", "max_pool2d_with_indices",
    "max_pool3d_with_indices", "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices",
    "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices")}
_TUPLE_PREFIXES = ("torch.nn.utils.rnn.",)
_TUPLE_LINALG = {"eig", "eigh", "qr", "svd", "slogdet", "lstsq", "lu", "lu_factor",
                 "lu_factor_ex", "inv_ex", "cholesky_ex", "ldl_factor", "ldl_factor_ex",
                 "solve_ex"}
# torch functions answering a question about the environment, not about tensor data
_NEUTRAL_NAME_PREFIXES = ("is_", "has_", "are_", "_is_", "_has_", "_use_", "_are_")
_DATA_QUESTIONS = {"is_nonzero", "is_same_size"}
_NEUTRAL_FUNCS = {"torch." + n for n in (
    "no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
    "is_inference_mode_enabled", "get_default_dtype", "device", "dtype", "Generator",
    "manual_seed", "autocast", "get_num_threads", "get_num_interop_threads", "typename",
    "is_storage", "are_deterministic_algorithms_enabled", "_assert",
    "_C._get_tracing_state")}
_NEUTRAL_PREFIXES = ("torch.jit.", "torch.cuda.", "torch.backends.", "torch.distributed.",
                     "torch.compiler.", "torch.profiler.", "torch.autograd.grad_mode.",
                     "torch._C._log_api_usage")
_ALIASES = {"torch": "torch", "F": "torch.nn.functional", "nn": "torch.nn", "np": "numpy",
            "numpy": "numpy", "math": "math", "logging": "logging"}
# Library modules whose forward returns a tuple (output, state) rather than one tensor.
_TUPLE_RETURNING_MODULES = (torch.nn.RNNBase, torch.nn.MultiheadAttention,
                            torch.nn.AdaptiveLogSoftmaxWithLoss)
_CONTAINERS = (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ModuleDict)



def _resolve_dotted(name: str) -> Any:
    parts = name.split(".")
    obj: Any = sys.modules.get(parts[0])
    for part in parts[1:]:
        if obj is None:
            return None
        obj = getattr(obj, part, None)
    return obj


def _known_table() -> dict[int, str]:
    names = (sorted(RANDOM_FUNCS | DROPOUT_FUNCTIONAL | DROPOUT_TORCH | CONSTRUCTORS
                    | _META_FUNCS | _SIZE_FUNCS | _TUPLE_FUNCS | _TUPLE_FUNCS_WITH_DIM)
             + [FORK, WAIT, _ANNOTATE])
    table: dict[int, str] = {}
    for name in names:
        obj = _resolve_dotted(name)
        if obj is not None:
            table.setdefault(id(obj), name)
    for alias, name in (("torch.jit._fork", FORK), ("torch.jit._wait", WAIT)):
        obj = _resolve_dotted(alias)
        if obj is not None:
            table.setdefault(id(obj), name)
    return table


_KNOWN = _known_table()
_KNOWN_OBJECTS = [_resolve_dotted(n) for n in _KNOWN.values()]  # keep the ids alive

#: the two ways a model becomes TorchScript; code may be run by both, one or neither
TRACE, SCRIPT = "trace", "script"
COMPILERS = frozenset({TRACE, SCRIPT})
#: what these calls return while torch.jit.trace runs the model (by the function's id)
_UNDER_TRACE_NAMES = {"torch.jit.is_scripting": False, "torch.jit.is_tracing": True,
                      "torch._C._get_tracing_state": True}
_UNDER_TRACE = {id(obj): value for name, value in _UNDER_TRACE_NAMES.items()
                if (obj := _resolve_dotted(name)) is not None}
_UNDER_TRACE_OBJECTS = [_resolve_dotted(n) for n in _UNDER_TRACE_NAMES]  # keep the ids alive
_IS_SCRIPTING = _resolve_dotted("torch.jit.is_scripting")


def _library_dirs() -> tuple[str, ...]:
    dirs = {TORCH_DIR}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            dirs.add(os.path.abspath(path))
    return tuple(sorted(dirs))


_LIBRARY_DIRS = _library_dirs()


def _in_dirs(path: str | None, dirs: Iterable[str]) -> bool:
    return not path or any(is_inside(path, d) for d in dirs)


def _is_torch_function(func: Any) -> bool:
    code = getattr(func, "__code__", None)
    if code is None:
        return True
    return is_torch_file(code.co_filename)


def _is_user_function(func: Any) -> bool:
    code = getattr(func, "__code__", None)
    return (isinstance(func, types.FunctionType) and code is not None
            and not _in_dirs(code.co_filename, _LIBRARY_DIRS))


def py_class(module: Any) -> type | None:
    """The Python class whose source defines ``module`` (None for loaded/traced archives)."""
    if isinstance(module, torch.jit.ScriptModule):
        try:
            concrete = object.__getattribute__(module, "_concrete_type")
        except AttributeError:
            return None
        cls = getattr(concrete, "py_class", None)
        return cls if isinstance(cls, type) else None
    return type(module)


def is_library_class(cls: type) -> bool:
    return (getattr(cls, "__module__", "") or "").split(".")[0] == "torch"


def _children(container: Any) -> list:
    try:
        mods = object.__getattribute__(container, "_modules")
        return [m for m in mods.values() if m is not None]
    except Exception:  # noqa: BLE001 - a broken module is simply not entered
        return []


def _modifier(func: Any) -> str | None:
    try:
        mod = torch._jit_internal.get_torchscript_modifier(func)
    except Exception:  # noqa: BLE001
        return None
    if mod is torch._jit_internal.FunctionModifiers.IGNORE:
        return "ignore"
    if mod is torch._jit_internal.FunctionModifiers.UNUSED:
        return "unused"
    return None


def _qualname(func: Any) -> str:
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", "?")
    return name.rsplit("<locals>.", 1)[-1]


# --------------------------------------------------------------------------- instance view
class Owner:
    """What ``self.<name>`` is on one module instance, found without running its code."""

    def __init__(self, module: Any):
        self.module = module
        self.cls = py_class(module)

    def _store(self, name: str) -> Any:
        try:
            return object.__getattribute__(self.module, name)
        except AttributeError:
            return None

    def lookup(self, name: str) -> tuple:
        if name == "training":
            return ("training", None)
        for store, tag in (("_parameters", "tensor"), ("_buffers", "tensor"),
                           ("_modules", "module")):
            d = self._store(store)
            try:
                if d is not None and name in d:
                    value = d[name]
                    return (tag, value) if value is not None else ("value", None)
            except Exception:  # noqa: BLE001
                pass
        inst = self._store("__dict__") or {}
        if name in inst:
            value = inst[name]
            if isinstance(value, torch.Tensor):
                return ("tensor", value)
            if isinstance(value, torch.nn.Module):
                return ("module", value)
            return ("value", value)
        if isinstance(self.module, torch.jit.ScriptModule):
            try:
                c = object.__getattribute__(self.module, "_c")
                if c.hasattr(name) and isinstance(c.getattr(name), torch.Tensor):
                    return ("tensor", None)
            except Exception:  # noqa: BLE001
                pass
        if self.cls is None:
            return ("unknown", None)
        try:
            value = inspect.getattr_static(self.cls, name)
        except AttributeError:
            return ("unknown", None)
        if isinstance(value, staticmethod):
            return ("method", value.__func__, False)
        if isinstance(value, classmethod):
            return ("method", value.__func__, True)
        if isinstance(value, types.FunctionType):
            return ("method", value, True)
        if isinstance(value, torch.Tensor):
            return ("tensor", value)
        if isinstance(value, property):
            return ("unknown", None)
        return ("value", value)


# --------------------------------------------------------------------------- source loading
@dataclass
class Source:
    path: str
    start: int                 # file line of the first source line
    line_offset: int           # lines added in front of the parsed text
    lines: list                # the parsed text, split into lines
    removed: list              # characters dedent removed from each line
    node: ast.AST              # the FunctionDef


_SOURCE_CACHE: dict = {}


def _unwrapped(func: Any) -> Any:
    """The function a ``functools.wraps`` decorator wrapped (itself when none)."""
    try:
        return inspect.unwrap(func)
    except (ValueError, TypeError):
        return func


def load_source(func: Any) -> Source | None:
    func = _unwrapped(func)  # a decorated forward: read the function the user wrote
    code = getattr(func, "__code__", None)
    if code is None or getattr(func, "__name__", "") == "<lambda>":
        return None
    key = (code, code.co_filename, code.co_firstlineno)
    if key in _SOURCE_CACHE:
        return _SOURCE_CACHE[key]
    src = _parse_source(func)
    if len(_SOURCE_CACHE) > 4096:
        _SOURCE_CACHE.clear()
    _SOURCE_CACHE[key] = src
    return src


def _parse_source(func: Any) -> Source | None:
    try:
        raw_lines, start = inspect.getsourcelines(func)
        path = inspect.getsourcefile(func) or inspect.getfile(func)
    except (OSError, TypeError):
        return None
    raw = "".join(raw_lines)
    text = textwrap.dedent(raw)
    offset = 0
    try:
        tree = ast.parse(text)
        body = tree.body
        removed = [len(r.rstrip("\r\n")) - len(d.rstrip("\r\n"))
                   for r, d in zip(raw.splitlines(), text.splitlines())]
    except SyntaxError:
        text = "if 1:\n" + raw
        offset = 1
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return None
        body = tree.body[0].body  # type: ignore[attr-defined]
        removed = [0] * (len(raw.splitlines()) + 1)
    node = next((n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))),
                None)
    if node is None:
        return None
    lines = text.splitlines()
    if offset:
        removed = [0] + removed
    return Source(path=path, start=start, line_offset=offset, lines=lines,
                   removed=removed, node=node)


# --------------------------------------------------------------------------- annotations
def annotation_class(ann: ast.AST | None) -> str | None:
    """'tensor', 'tlist', 'nontensor', 'none', 'unknown' or None (no annotation)."""
    if ann is None:
        return None
    if isinstance(ann, ast.Constant):
        if ann.value is None:
            return "none"
        if isinstance(ann.value, str):
            try:
                return annotation_class(ast.parse(ann.value, mode="eval").body)
            except SyntaxError:
                return "unknown"
        return "unknown"
    if isinstance(ann, (ast.Name, ast.Attribute)):
        last = ann.id if isinstance(ann, ast.Name) else ann.attr
        if last in ("Tensor", "Parameter"):
            return "tensor"
        if last in ("int", "float", "bool", "str", "complex", "bytes", "device", "dtype",
                    "NoneType"):
            return "nontensor"
        if last == "None":
            return "none"
        return "unknown"
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
        return _combine_annotations([annotation_class(ann.left),
                                     annotation_class(ann.right)])
    if isinstance(ann, ast.Subscript):
        base = ann.value
        last = base.id if isinstance(base, ast.Name) else (
            base.attr if isinstance(base, ast.Attribute) else "")
        inner = ann.slice
        elts = list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]
        parts = [annotation_class(e) for e in elts
                 if not (isinstance(e, ast.Constant) and e.value is Ellipsis)]
        if last in ("Optional", "Union"):
            return _combine_annotations(parts)
        if last in ("List", "list", "Tuple", "tuple", "Sequence", "Iterable", "Set", "set",
                    "FrozenSet", "frozenset", "Dict", "dict", "Mapping"):
            if last in ("Dict", "dict", "Mapping") and len(parts) == 2:
                parts = parts[1:]
            if parts and all(p in ("nontensor", "none") for p in parts):
                return "nontensor"
            if any(p in ("tensor", "tlist") for p in parts):
                return "tlist"
            return "unknown"
        if last == "Final":
            return _combine_annotations(parts)
        return "unknown"
    return "unknown"


#: kinds of tensors and of what holds them
_TENSORISH = DATA | {TLIST, FUTURE}


def _plain_class(cls: type) -> bool:
    """A class whose instances are not tensors and not records of tensors: a module, or a
    plain class (not a tuple/list/dict/set, a NamedTuple, a dataclass, ``object``, or a
    class built from a tensor such as torchvision's ``ImageList(tensors: Tensor, ...)``)."""
    if issubclass(cls, torch.nn.Module):
        return True
    if cls is object or issubclass(cls, (torch.Tensor, tuple, list, dict, set, frozenset,
                                         collections.abc.Mapping,
                                         collections.abc.Sequence,
                                         collections.abc.Set)):
        return False
    if dataclasses.is_dataclass(cls) or getattr(cls, "__module__", "").startswith(
            ("typing", "collections")):
        return False
    return not _built_from_tensors(cls)


def _built_from_tensors(cls: type) -> bool:
    """A class with an attribute or an ``__init__`` parameter annotated as a tensor."""
    annotations = vars(cls).get("__annotations__", {})
    if not isinstance(annotations, dict):  # a builtin type's descriptor (FunctionType)
        annotations = {}
    for value in annotations.values():
        if value is torch.Tensor or (isinstance(value, str) and annotation_class(
                ast.Constant(value)) == "tensor"):
            return True
    init = getattr(cls, "__init__", None)
    src = load_source(init) if isinstance(init, types.FunctionType) else None
    if src is None:
        return False
    args = src.node.args
    return any(annotation_class(a.annotation) == "tensor"
               for a in args.posonlyargs + args.args + args.kwonlyargs)


def _combine_annotations(parts: list) -> str:
    parts = [p for p in parts if p != "none"]
    if not parts:
        return "nontensor"
    if all(p == "nontensor" for p in parts):
        return "nontensor"
    if all(p == parts[0] for p in parts):
        return parts[0]
    return "unknown"


def _is_key_lookup(node: ast.Compare) -> bool:
    """``"masks" in target``: a string looked up in a container (a dict of tensors, say)
    compares no tensor."""
    return (len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn))
            and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str))


def is_nontensor_literal(node: ast.AST | None) -> bool:
    return (isinstance(node, ast.Constant) and node.value is not None
            and isinstance(node.value, (int, float, bool, str, complex, bytes)))


def _kinds_of_annotation(cls: str | None, default: ast.AST | None) -> frozenset:
    if cls is None:
        return NOTHING if is_nontensor_literal(default) else frozenset({TENSOR})
    return {"tensor": frozenset({TENSOR}), "tlist": frozenset({TLIST}), "nontensor": NOTHING,
            "none": NOTHING}.get(cls, frozenset({TDATA}))


# --------------------------------------------------------------------------- helpers on kinds
def categories(kinds: frozenset) -> set:
    out = set()
    if kinds & DATA:
        out.add("data")
    if kinds & SIZED:
        out.add("size")
    if META in kinds:
        out.add("meta")
    if TRAINING in kinds:
        out.add("training")
    return out


def elements_of(kinds: frozenset) -> frozenset:
    """Kinds of the elements of an iterated/unpacked value."""
    out = set()
    if TENSOR in kinds or TLIST in kinds:
        out.add(TENSOR)
    if TDATA in kinds:
        out.add(TDATA)
    if SHAPE in kinds:
        out.add(SIZE)
    for k in (NUM, META, FUTURE):
        if k in kinds:
            out.add(k)
    return frozenset(out)


def container_of(kinds: frozenset) -> frozenset:
    """Kinds of a list/tuple/dict literal holding values of ``kinds``."""
    out = set()
    if kinds & DATA or TLIST in kinds:
        out.add(TLIST)
    if kinds & SIZED:
        out.add(SHAPE)
    for k in (NUM, META, FUTURE):
        if k in kinds:
            out.add(k)
    return frozenset(out)


def _arith(kinds: frozenset) -> frozenset:
    for k in (TENSOR, TDATA, TLIST, SHAPE, SIZE, NUM, META):
        if k in kinds:
            return frozenset({k})
    return NOTHING


def _converted(kinds: frozenset) -> frozenset:
    """Kinds of ``bool(v)`` / ``not v`` (the conversion itself is reported where it happens)."""
    out = set()
    if kinds & (DATA | SIZED):
        out.add(NUM)
    for k in (META, TRAINING):
        if k in kinds:
            out.add(k)
    return frozenset(out)


def dotted(node: ast.AST) -> list | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


FUNCTION_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def walk_scope(node: ast.AST, nested: bool = False) -> Iterable[ast.AST]:
    """Nodes of a function body in source order, skipping nested function/class bodies."""
    stack = [node]
    while stack:
        cur = stack.pop()
        yield cur
        children = list(ast.iter_child_nodes(cur))
        if not nested:
            children = [c for c in children if not isinstance(c, FUNCTION_SCOPES)]
        stack.extend(reversed(children))


# --------------------------------------------------------------------------- trace guards
def _under_trace(test: ast.AST, callee: Any, depth: int = 0) -> bool | None:
    """The truth value of ``test`` under a trace (see :meth:`Inference.under_trace`);
    ``callee(func)`` is the object a called expression names."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        value = _under_trace(test.operand, callee, depth)
        return None if value is None else not value
    if isinstance(test, ast.BoolOp):
        decided = isinstance(test.op, ast.Or)  # an operand with this value decides
        values = [_under_trace(v, callee, depth) for v in test.values]
        if decided in values:
            return decided
        return None if None in values else not decided
    if (isinstance(test, ast.Compare) and len(test.ops) == 1
            and isinstance(test.ops[0], (ast.Is, ast.IsNot))
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value is None):
        value = _under_trace(test.left, callee, depth)  # ``_get_tracing_state() is not None``
        if value is None:
            return None
        return value if isinstance(test.ops[0], ast.IsNot) else not value
    if isinstance(test, ast.Call) and not test.args and not test.keywords:
        obj = callee(test.func)
        if obj is None:
            return None
        if id(obj) in _UNDER_TRACE:
            return _UNDER_TRACE[id(obj)]
        return _returned_guard(obj, depth)
    return None


def _returned_guard(fn: Any, depth: int) -> bool | None:
    """The value under a trace of a function of no arguments that only returns a guard
    (``def _is_tracing(): return torch._C._get_tracing_state()``)."""
    code = getattr(fn, "__code__", None)
    if depth >= 2 or not isinstance(fn, types.FunctionType) or code.co_argcount \
            or code.co_kwonlyargcount:
        return None
    src = load_source(fn)
    if src is None:
        return None
    body = [s for s in src.node.body
            if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        return None
    return _under_trace(body[0].value, lambda func: _named_in(fn, func), depth + 1)


def _named_in(fn: types.FunctionType, func: ast.AST) -> Any:
    """The object a dotted expression names in ``fn``'s module."""
    parts = dotted(func)
    if not parts:
        return None
    scope = fn.__globals__
    obj = scope[parts[0]] if parts[0] in scope else vars(builtins).get(parts[0])
    for part in parts[1:]:
        obj = getattr(obj, part, None) if isinstance(obj, types.ModuleType) else None
    return obj


# --------------------------------------------------------------------------- call graph
@dataclass(eq=False)
class Unit:
    """One function to analyse, as one owner runs it."""

    func: Any
    owner: Owner | None
    bound: bool            # the first parameter is self/cls
    is_root: bool
    incoming: set          # the argument kinds of each call site reaching it
    #: which compilations run it (:data:`COMPILERS`): what its call sites' code runs under
    #: (``{"script"}``: called only from the body of ``if torch.jit.is_scripting():``)
    modes: frozenset = COMPILERS


class CallGraph:
    """The functions a model runs, found while they are analysed: a worklist.

    A function is analysed again when a call site passes it new argument kinds, so its
    parameters end up holding what any caller passes in.
    """

    @classmethod
    def from_root(cls, obj: Any) -> CallGraph | None:
        """The graph that starts at ``obj``'s ``forward`` (or at the function ``obj``);
        None when there is no Python source to read (a library module, an archive)."""
        graph = cls(root_scripted=isinstance(obj, (torch.jit.ScriptModule,
                                                   torch.jit.ScriptFunction)))
        if isinstance(obj, torch.jit.ScriptFunction):
            original = getattr(obj, "_torchdynamo_inline", None)
            if original is None:
                return None
            obj = original
        if isinstance(obj, torch.nn.Module):
            klass = py_class(obj)
            if klass is None or is_library_class(klass):
                return None
            try:
                forward = inspect.getattr_static(klass, "forward")
            except AttributeError:
                return None
            if isinstance(forward, staticmethod):
                graph.add(forward.__func__, graph.owner(obj), False, True, None)
            elif isinstance(forward, types.FunctionType):
                graph.add(forward, graph.owner(obj), True, True, None)
            else:
                return None
        elif inspect.ismethod(obj) and isinstance(obj.__self__, torch.nn.Module):
            graph.add(obj.__func__, graph.owner(obj.__self__), True, True, None)
        elif isinstance(obj, types.FunctionType):
            graph.add(obj, None, False, True, None)
        else:
            return None
        return graph

    def __init__(self, root_scripted: bool = False) -> None:
        #: a scripted root: its scripted children are part of what is analysed; under a
        #: traced (Python) root, scripted callees keep their control flow and are skipped
        self.root_scripted = root_scripted
        self.units: dict = {}
        self.queue: collections.deque = collections.deque()
        self.owners: dict = {}

    def owner(self, module: Any) -> Owner:
        key = id(module)
        if key not in self.owners:
            self.owners[key] = Owner(module)
        return self.owners[key]

    def add(self, func: Any, owner: Owner | None, bound: bool, is_root: bool,
            record: tuple | None, modes: frozenset = COMPILERS) -> None:
        """Queue ``func`` as ``owner`` runs it; ``modes``: the compilations that run the
        call site (a unit is analysed again when a call site adds one)."""
        if func is None or _is_torch_function(func) or _modifier(func):
            return
        key = (func, id(owner) if owner else None, is_root)
        unit = self.units.get(key)
        if unit is None:
            unit = Unit(func, owner, bound, is_root, set(), modes)
            self.units[key] = unit
            if record is not None:
                unit.incoming.add(record)
            self.queue.append(unit)
            return
        changed = False
        if record is not None and record not in unit.incoming:
            unit.incoming.add(record)
            changed = True
        if not modes <= unit.modes:
            unit.modes |= modes
            changed = True
        if changed and unit not in self.queue:
            self.queue.append(unit)

    def add_modules(self, objs: Iterable, record: tuple | None, seen: set | None = None,
                    modes: frozenset = COMPILERS) -> None:
        seen = set() if seen is None else seen
        for obj in objs:
            if id(obj) in seen or not isinstance(obj, torch.nn.Module):
                continue
            seen.add(id(obj))
            if isinstance(obj, torch.jit.ScriptModule) and not self.root_scripted:
                continue  # compiled, not traced: its control flow survives a trace
            cls = py_class(obj)
            if cls is None:
                continue
            if is_library_class(cls):
                if issubclass(cls, _CONTAINERS):
                    self.add_modules(_children(obj), record, seen, modes)
                continue
            try:
                forward = inspect.getattr_static(cls, "forward")
            except AttributeError:
                continue
            if isinstance(forward, staticmethod):
                self.add(forward.__func__, self.owner(obj), False, False, record, modes)
            elif isinstance(forward, types.FunctionType):
                self.add(forward, self.owner(obj), True, False, record, modes)

    def pending(self) -> Iterator[tuple[Unit, Source]]:
        """Each unit to (re)analyse, with its source, until none is left; analysing one
        may queue others. A unit without readable source is skipped."""
        count = 0
        while self.queue and count < _MAX_ANALYSES:
            unit = self.queue.popleft()
            count += 1
            src = load_source(unit.func)
            if src is not None:
                yield unit, src


# --------------------------------------------------------------------------- one function
class Inference:
    """What the names and expressions of one function hold, for one analysis of a
    :class:`Unit`. The environment is solved when it is built; from then on
    :meth:`kinds` is memoised per node."""

    def __init__(self, graph: CallGraph, unit: Unit, src: Source):
        self.graph = graph
        self.unit = unit
        self.src = src
        self.fdef = src.node
        self.func = unit.func
        self.owner = unit.owner
        self.qualname = _qualname(unit.func)
        # a decorated function (functools.wraps) is read from the function written: its
        # names are that function's module's, not the decorator's
        written = _unwrapped(unit.func)
        self.globals = getattr(written, "__globals__", {}) or {}
        self.closure = self._closure_map(written)
        args = self.fdef.args
        self.positional = list(args.posonlyargs) + list(args.args)
        self.self_name = (self.positional[0].arg
                          if unit.bound and self.positional and unit.owner is not None
                          else None)
        self.locals = self._local_names()
        self.parents: dict = {}
        self._narrowed: dict = {}
        for node in walk_scope(self.fdef, nested=True):
            for child in ast.iter_child_nodes(node):
                self.parents[id(child)] = node
        self.env: dict = {}
        self.mods: dict = {}
        self.memo: dict = {}
        self.canonicals: dict = {}
        self.compute_env(self.param_kinds())
        self.memo = {}
        self.memo_enabled = True

    # ------------------------------------------------------------------ names
    @staticmethod
    def _closure_map(func: Any) -> dict:
        code = getattr(func, "__code__", None)
        cells = getattr(func, "__closure__", None) or ()
        out = {}
        if code is not None:
            for name, cell in zip(code.co_freevars, cells):
                try:
                    out[name] = cell.cell_contents
                except ValueError:
                    pass
        return out

    def _local_names(self) -> set:
        names = {a.arg for a in self.positional + list(self.fdef.args.kwonlyargs)}
        for extra in (self.fdef.args.vararg, self.fdef.args.kwarg):
            if extra is not None:
                names.add(extra.arg)
        declared = set()
        for node in walk_scope(self.fdef):
            if node is self.fdef:
                continue
            if isinstance(node, (ast.Global, ast.Nonlocal)):
                declared.update(node.names)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                names.add(node.id)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    names.add((alias.asname or alias.name).split(".")[0])
            elif isinstance(node, ast.ExceptHandler) and node.name:
                names.add(node.name)
            for child in ast.iter_child_nodes(node):  # nested defs bind their name
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    names.add(child.name)
        return names - declared

    def resolve_global(self, name: str) -> tuple:
        if name in self.closure:
            return True, self.closure[name]
        if name in self.globals:
            return True, self.globals[name]
        b = vars(builtins)
        if name in b:
            return True, b[name]
        return False, None

    def is_self(self, node: ast.AST) -> bool:
        return (self.self_name is not None and isinstance(node, ast.Name)
                and node.id == self.self_name)

    def canonical(self, func: ast.AST) -> tuple:
        """(canonical dotted name, resolved object) of a callee, or (None, None)."""
        key = id(func)
        if key not in self.canonicals:
            self.canonicals[key] = self._canonical(func)
        return self.canonicals[key]

    def _canonical(self, func: ast.AST) -> tuple:
        parts = dotted(func)
        if not parts:
            return None, None
        root = parts[0]
        if root == self.self_name or root in self.locals:
            return None, None
        found, obj = self.resolve_global(root)
        if not found or obj is None:
            base = _ALIASES.get(root)
            return (".".join([base] + parts[1:]), None) if base else (None, None)
        if isinstance(obj, types.ModuleType):
            prefix = obj.__name__
        elif isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, type)):
            prefix = f"{getattr(obj, '__module__', None) or '?'}.{obj.__qualname__}"
        else:
            prefix = None
        for attr in parts[1:]:
            if isinstance(obj, types.ModuleType):
                obj = getattr(obj, attr, None)
            elif isinstance(obj, type):
                try:
                    obj = inspect.getattr_static(obj, attr)
                except AttributeError:
                    obj = None
            else:
                obj = None
        if obj is not None and id(obj) in _KNOWN:
            return _KNOWN[id(obj)], obj
        if prefix is None:
            return None, obj
        return ".".join([prefix] + parts[1:]), obj

    # ------------------------------------------------------------------ modules
    def module_targets(self, node: ast.AST) -> list:
        if isinstance(node, ast.Attribute):
            if self.is_self(node.value):
                info = self.owner.lookup(node.attr) if self.owner else ("unknown", None)
                return [info[1]] if info[0] == "module" else []
            out = []
            for mod in self.module_targets(node.value):
                try:
                    child = object.__getattribute__(mod, "_modules").get(node.attr)
                except Exception:  # noqa: BLE001
                    child = None
                if child is not None:
                    out.append(child)
            return out
        if isinstance(node, ast.Subscript):
            out = []
            for mod in self.module_targets(node.value):
                cls = py_class(mod)
                if cls is not None and issubclass(cls, _CONTAINERS):
                    out.extend(_children(mod))
            return out
        if isinstance(node, ast.Name):
            if node.id in self.locals:
                return list(self.mods.get(node.id, []))
            found, obj = self.resolve_global(node.id)
            return [obj] if found and isinstance(obj, torch.nn.Module) else []
        return []

    def iter_modules(self, node: ast.AST) -> list:
        """Modules a ``for`` over ``node`` binds (ModuleList/Sequential/ModuleDict members)."""
        if isinstance(node, ast.Call):
            canon, _ = self.canonical(node.func)
            if canon in ("builtins.enumerate", "builtins.zip", "builtins.reversed",
                         "builtins.list", "builtins.tuple", "builtins.iter",
                         "builtins.sorted"):
                out = []
                for arg in node.args:
                    out.extend(self.iter_modules(arg.value if isinstance(arg, ast.Starred)
                                                 else arg))
                return out
            if (isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("values", "items", "children")):
                out = []
                for mod in self.module_targets(node.func.value):
                    out.extend(_children(mod))
                return out
            return []
        out = []
        for mod in self.module_targets(node):
            cls = py_class(mod)
            if cls is not None and issubclass(cls, _CONTAINERS):
                out.extend(_children(mod))
            elif isinstance(node, ast.Name):
                out.append(mod)  # a name already bound to members
        return out

    def resolve_callable(self, func: ast.AST) -> tuple | None:
        """('module', [objs]) / ('method', fn, owner, bound) / ('function', fn)."""
        if isinstance(func, ast.Attribute) and self.is_self(func.value):
            info = self.owner.lookup(func.attr)
            if info[0] == "module":
                return ("module", [info[1]])
            if info[0] == "method":
                return ("method", info[1], self.owner, info[2])
            return None
        if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call)
                and isinstance(func.value.func, ast.Name) and func.value.func.id == "super"
                and self.owner is not None):
            fn = self._super_method(func.attr)
            return ("method", fn, self.owner, True) if fn is not None else None
        if isinstance(func, ast.Subscript):
            objs = self.module_targets(func)
            return ("module", objs) if objs else None
        if isinstance(func, ast.Name):
            if func.id in self.locals:
                objs = self.mods.get(func.id)
                return ("module", list(objs)) if objs else None
            found, obj = self.resolve_global(func.id)
            if not found:
                return None
            if isinstance(obj, torch.nn.Module):
                return ("module", [obj])
            if isinstance(obj, torch.jit.ScriptFunction):
                if not self.graph.root_scripted:
                    return None  # compiled, not traced: its control flow survives a trace
                obj = getattr(obj, "_torchdynamo_inline", None) or obj
            if _is_user_function(obj):
                return ("function", obj)
            return None
        if isinstance(func, ast.Attribute):
            mods = self.module_targets(func.value)
            if mods:
                out = []
                for mod in mods:
                    info = self.graph.owner(mod).lookup(func.attr)
                    if info[0] == "method":
                        return ("method", info[1], self.graph.owner(mod), info[2])
                    if info[0] == "module":
                        out.append(info[1])
                return ("module", out) if out else None
        return None

    def _super_method(self, name: str) -> Any:
        cls = self.owner.cls if self.owner else None
        if cls is None:
            return None
        mro = cls.__mro__
        start = 0
        for i, klass in enumerate(mro):
            value = vars(klass).get(self.func.__name__)
            if value is self.func or getattr(value, "__func__", None) is self.func:
                start = i + 1
                break
        for klass in mro[start:]:
            value = vars(klass).get(name)
            if isinstance(value, types.FunctionType):
                return None if _is_torch_function(value) else value
        return None

    def jit_modifier(self, call: ast.Call) -> str | None:
        """"ignore"/"unused" when ``call`` runs a ``@torch.jit.ignore``/``unused``
        function directly (a fork's task is not looked at)."""
        canon, obj = self.canonical(call.func)
        if canon == FORK:
            return None
        target = self.resolve_callable(call.func)
        fn = target[1] if target is not None and target[0] in ("method", "function") else obj
        return _modifier(fn) if fn is not None and not isinstance(fn, list) else None

    def record_call(self, call: ast.Call, modes: frozenset = COMPILERS) -> None:
        """Queue what ``call`` runs (a fork's task too) with the kinds it passes; a
        ``@torch.jit.ignore``/``unused`` callee is not compiled and is not entered.
        ``modes``: the compilations that run the call (:meth:`branch_modes`)."""
        if self.canonical(call.func)[0] == FORK:
            callee = call.args[0] if call.args else None
            target = self.resolve_callable(callee) if isinstance(
                callee, (ast.Name, ast.Attribute, ast.Subscript)) else None
            if target is not None:
                self._record_call(target, call.args[1:], call.keywords, modes)
            return
        if self.jit_modifier(call):
            return
        target = self.resolve_callable(call.func)
        if target is not None:
            self._record_call(target, call.args, call.keywords, modes)

    def _record_call(self, target: tuple, args: list, keywords: list,
                     modes: frozenset = COMPILERS) -> None:
        pos, star = [], set()
        for arg in args:
            if isinstance(arg, ast.Starred):
                star |= elements_of(self.kinds(arg.value))
            else:
                pos.append(self.kinds(arg))
        kw, dstar = {}, set()
        for k in keywords:
            if k.arg is None:
                dstar |= self.kinds(k.value)
            else:
                kw[k.arg] = self.kinds(k.value)
        record = (tuple(pos), frozenset(star), tuple(sorted(kw.items())), frozenset(dstar))
        if target[0] == "module":
            self.graph.add_modules(target[1], record, modes=modes)
        elif target[0] == "method":
            self.graph.add(target[1], target[2], target[3], False, record, modes)
        elif target[0] == "function":
            self.graph.add(target[1], None, False, False, record, modes)

    # ------------------------------------------------------------------ parameters
    def parameters(self) -> list[tuple[ast.arg, ast.AST | None]]:
        """(parameter, its default or None) for each named parameter a caller passes
        (``self`` excluded), positional ones first."""
        args = self.fdef.args
        positional = self.positional[1:] if self.unit.bound else list(self.positional)
        defaults = [None] * (len(self.positional) - len(args.defaults)) + list(args.defaults)
        if self.unit.bound:
            defaults = defaults[1:]
        return list(zip(positional, defaults)) + list(zip(args.kwonlyargs, args.kw_defaults))

    def param_kinds(self) -> dict:
        args = self.fdef.args
        positional = self.positional[1:] if self.unit.bound else list(self.positional)
        kwonly = list(args.kwonlyargs)
        out: dict = {}
        if self.unit.is_root:
            for a, d in self.parameters():
                out[a.arg] = _kinds_of_annotation(annotation_class(a.annotation), d)
            if args.vararg is not None:
                out[args.vararg.arg] = frozenset({TLIST})
            if args.kwarg is not None:
                out[args.kwarg.arg] = frozenset({TLIST})
            return self._annotated(out, positional + kwonly)
        names = [a.arg for a in positional]
        kwnames = set(names) | {a.arg for a in kwonly}
        for pos, star, kw, dstar in self.unit.incoming:
            bound = set()
            for i, k in enumerate(pos):
                if i < len(names):
                    out[names[i]] = out.get(names[i], NOTHING) | k
                    bound.add(names[i])
                elif args.vararg is not None:
                    out[args.vararg.arg] = out.get(args.vararg.arg, NOTHING) | container_of(k)
            if star:
                for n in names[len(pos):]:
                    out[n] = out.get(n, NOTHING) | star
                    bound.add(n)
                if args.vararg is not None:
                    out[args.vararg.arg] = out.get(args.vararg.arg, NOTHING) | container_of(star)
            for n, k in kw:
                if n in kwnames:
                    out[n] = out.get(n, NOTHING) | k
                    bound.add(n)
                elif args.kwarg is not None:
                    out[args.kwarg.arg] = out.get(args.kwarg.arg, NOTHING) | container_of(k)
            if dstar:
                for n in kwnames - bound:
                    out[n] = out.get(n, NOTHING) | dstar
        return self._annotated(out, positional + kwonly)

    def _annotated(self, kinds: dict, params: list) -> dict:
        """Parameter kinds, with what an annotation says is not a tensor taken out
        (``flag: bool``, ``cache: Optional[Cache]``, ``layer: nn.Module``): a caller's
        argument a flow-insensitive guess calls tensor data is not one there."""
        for a in params:
            if a.arg in kinds and self.not_a_tensor(a.annotation):
                kinds[a.arg] = kinds[a.arg] - _TENSORISH
        return kinds

    def not_a_tensor(self, ann: ast.AST | None) -> bool:
        """True for an annotation of values that are never tensors or containers of them:
        numbers, strings, ``bool``, ``None``, modules and other plain classes of the model's
        code (``Optional[SomeCache]``); not NamedTuples, dataclasses, dicts or ``Any``."""
        cls = annotation_class(ann)
        if cls in ("nontensor", "none"):
            return True
        if cls != "unknown":
            return False
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            try:
                ann = ast.parse(ann.value, mode="eval").body
            except SyntaxError:
                return False
        if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
            return all(self.not_a_tensor(side) for side in (ann.left, ann.right))
        if isinstance(ann, ast.Subscript):
            base = dotted(ann.value)
            elts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
            return bool(base) and base[-1] in ("Optional", "Union") and all(
                self.not_a_tensor(e) for e in elts)
        if not isinstance(ann, (ast.Name, ast.Attribute)):
            return False
        obj = self.canonical(ann)[1]
        return isinstance(obj, type) and _plain_class(obj)

    # ------------------------------------------------------------------ kinds
    def name_kinds(self, name: str) -> frozenset:
        if name == self.self_name:
            return NOTHING
        if name in self.locals:
            return self.env.get(name, NOTHING)
        found, obj = self.resolve_global(name)
        return frozenset({TENSOR}) if found and isinstance(obj, torch.Tensor) else NOTHING

    def kinds(self, node: ast.AST) -> frozenset:
        key = id(node)
        if key in self.memo:
            return self.memo[key]
        result = self._kinds(node)
        if self.memo_enabled:
            self.memo[key] = result
        return result

    memo_enabled = False

    def _kinds(self, node: ast.AST) -> frozenset:
        if isinstance(node, ast.Name):
            if self.narrowed_to_nontensor(node):
                return NOTHING
            return self.name_kinds(node.id)
        if isinstance(node, ast.Attribute):
            return self._attr_kinds(node)
        if isinstance(node, ast.Call):
            return self._call_kinds(node)
        if isinstance(node, ast.Compare):
            if all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
                return NOTHING
            if _is_key_lookup(node):
                return NOTHING
            ks = frozenset().union(*(self.kinds(v) for v in [node.left] + node.comparators))
            out = set()
            if ks & DATA:
                out.add(TENSOR)
            if ks & SIZED:
                out.add(SIZE)
            for k in (META, TRAINING, NUM):
                if k in ks:
                    out.add(k)
            return frozenset(out)
        if isinstance(node, ast.BoolOp):
            return frozenset().union(*(self.kinds(v) for v in node.values))
        if isinstance(node, ast.UnaryOp):
            k = self.kinds(node.operand)
            return _converted(k) if isinstance(node.op, ast.Not) else k
        if isinstance(node, ast.BinOp):
            return _arith(self.kinds(node.left) | self.kinds(node.right))
        if isinstance(node, ast.IfExp):
            return self.kinds(node.body) | self.kinds(node.orelse)
        if isinstance(node, ast.Subscript):
            return self._subscript_kinds(node)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return container_of(frozenset().union(*(self.kinds(e) for e in node.elts)))
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return container_of(self.kinds(node.elt))
        if isinstance(node, ast.DictComp):
            return container_of(self.kinds(node.value))
        if isinstance(node, ast.Dict):
            return container_of(frozenset().union(*(self.kinds(v) for v in node.values)))
        if isinstance(node, (ast.Starred, ast.NamedExpr, ast.Await)):
            return self.kinds(node.value)
        return NOTHING

    def _attr_kinds(self, node: ast.Attribute) -> frozenset:
        if self.is_self(node.value):
            info = self.owner.lookup(node.attr)
            if info[0] == "training":
                return frozenset({TRAINING})
            if info[0] == "tensor":
                return frozenset({TENSOR})
            return NOTHING
        vk = self.kinds(node.value)
        if vk & DATA:
            if node.attr == "shape":
                return frozenset({SHAPE})
            if node.attr in _META_ATTRS:
                return frozenset({META})
            if node.attr in _TENSOR_ATTRS:
                return frozenset({TENSOR})
            return vk
        if META in vk:
            return frozenset({META})
        return vk

    def _subscript_kinds(self, node: ast.Subscript) -> frozenset:
        vk = self.kinds(node.value)
        is_slice = isinstance(node.slice, ast.Slice)
        out = set()
        if TENSOR in vk:
            out.add(TENSOR)
        if TDATA in vk:
            out.add(TDATA)
        if TLIST in vk:
            out.add(TLIST if is_slice else TENSOR)
        if SHAPE in vk:
            out.add(SHAPE if is_slice else SIZE)
        for k in (SIZE, NUM, META, FUTURE):
            if k in vk:
                out.add(k)
        return frozenset(out)

    def args_kinds(self, node: ast.Call) -> frozenset:
        ks = [self.kinds(a) for a in node.args] + [self.kinds(k.value) for k in node.keywords]
        return frozenset().union(*ks) if ks else NOTHING

    def _tensor_method_kinds(self, name: str, node: ast.Call) -> frozenset:
        has_args = bool(node.args or node.keywords)
        if name == "size" or name == "stride":
            return frozenset({SIZE if has_args else SHAPE})
        if name in ("numel", "nelement", "storage_offset"):
            return frozenset({SIZE})
        if name in _META_METHODS or (name == "type" and not has_args):
            return frozenset({META})
        if name in _NUM_METHODS:
            return frozenset({NUM})
        if name in _TUPLE_METHODS or (name in _TUPLE_WITH_DIM and has_args):
            return frozenset({TDATA})
        return frozenset({TENSOR})

    def _call_kinds(self, node: ast.Call) -> frozenset:
        f = node.func
        if isinstance(f, ast.Attribute) and not self.is_self(f.value):
            rk = self.kinds(f.value)
            if rk & DATA:
                if not hasattr(torch.Tensor, f.attr):
                    # no tensor method: the receiver is some other object here (a cache's
                    # ``update``); what it returns has no known structure
                    return frozenset({TDATA})
                return self._tensor_method_kinds(f.attr, node)
            if SHAPE in rk:
                return frozenset({SIZE}) if f.attr in ("numel", "index", "count") else rk
            if SIZE in rk:
                return frozenset({SIZE})
            if TLIST in rk:
                if f.attr in ("append", "extend", "insert", "index", "count", "clear"):
                    return NOTHING
                return frozenset({TENSOR}) if f.attr == "pop" else frozenset({TDATA})
            if FUTURE in rk:
                return frozenset({TDATA}) if f.attr == "wait" else NOTHING
            for k in (NUM, META):
                if k in rk:
                    return frozenset({k})
        canon, _obj = self.canonical(f)
        if canon is not None:
            return self._canonical_kinds(canon, node)
        target = self.resolve_callable(f)
        if target is not None:
            return self._callee_kinds(target, node)
        ak = self.args_kinds(node)
        if ak & DATA or TLIST in ak:
            return frozenset({TDATA})
        for k in (SIZE, SHAPE, NUM, META):
            if k in ak:
                return frozenset({SIZE if k == SHAPE else k})
        return NOTHING

    def _canonical_kinds(self, canon: str, node: ast.Call) -> frozenset:
        args = node.args
        first = self.kinds(args[0]) if args else NOTHING
        if canon == FORK:
            return frozenset({FUTURE})
        if canon == WAIT:
            return frozenset({TDATA})
        if canon == _ANNOTATE:
            return self.kinds(args[1]) if len(args) > 1 else NOTHING
        if canon in _META_FUNCS:
            return frozenset({META})
        if canon in _SIZE_FUNCS:
            return frozenset({SIZE})
        if canon in _TUPLE_FUNCS or (canon in _TUPLE_FUNCS_WITH_DIM
                                     and (len(args) > 1 or node.keywords)):
            return frozenset({TDATA})
        if canon == "torch.Size":
            return frozenset({SHAPE})
        last = canon.rsplit(".", 1)[-1]
        if (canon.startswith(_TUPLE_PREFIXES)
                or (canon.startswith("torch.linalg.") and last in _TUPLE_LINALG)
                or (canon.startswith("torch.nn.functional.") and any(
                    k.arg == "return_indices" for k in node.keywords))):
            return frozenset({TDATA})
        if canon in _NEUTRAL_FUNCS or canon.startswith(_NEUTRAL_PREFIXES) or (
                last.startswith(_NEUTRAL_NAME_PREFIXES) and last not in _DATA_QUESTIONS):
            return NOTHING
        if canon.startswith("torch."):
            return frozenset({TENSOR})
        if canon.startswith("numpy."):
            return frozenset({NUM}) if self.args_kinds(node) else NOTHING
        if canon.startswith("math."):
            ak = self.args_kinds(node)
            if ak & SIZED:
                return frozenset({SIZE})
            return frozenset({NUM}) if ak & (DATA | {NUM}) else NOTHING
        if canon.startswith("builtins."):
            name = canon[len("builtins."):]
            if name == "len":
                if TENSOR in first:
                    return frozenset({SIZE})
                return frozenset({META}) if SHAPE in first else NOTHING
            if name in ("int", "float", "complex"):
                if first & DATA:
                    return frozenset({NUM})
                return _arith(first & (SIZED | {NUM, META}))
            if name == "bool":
                return _converted(first)
            if name == "isinstance":
                # the Python type of a value: the same for every tensor a traced graph
                # is given, so no tensor metadata (``isinstance(cache, SomeCache)``,
                # ``isinstance(n, torch.Tensor)``)
                return NOTHING
            if name in ("max", "min", "abs", "round", "pow", "divmod", "sum"):
                if name == "sum" and TLIST in first:
                    return frozenset({TENSOR})
                return _arith(self.args_kinds(node))
            if name in ("list", "tuple", "sorted", "reversed", "iter"):
                if SHAPE in first:
                    return frozenset({SHAPE})
                if TENSOR in first:
                    return frozenset({TLIST})
                return first & frozenset({TDATA, TLIST, NUM, FUTURE})
            if name in ("zip", "map", "filter", "enumerate"):
                ak = self.args_kinds(node)  # element tuples: structure unknown
                if ak & (DATA | {TLIST}):
                    return frozenset({TDATA})
                return container_of(elements_of(ak))
            return NOTHING
        # other library callables: results follow their arguments
        target = self.resolve_callable(node.func)
        if target is not None:
            return self._callee_kinds(target, node)
        ak = self.args_kinds(node)
        return frozenset({TDATA}) if ak & (DATA | {TLIST}) else NOTHING

    def _callee_kinds(self, target: tuple, node: ast.Call) -> frozenset:
        if target[0] == "module":
            out = set()
            for obj in target[1]:
                cls = py_class(obj)
                if cls is None:
                    out.add(TDATA)
                elif is_library_class(cls):
                    out.add(TDATA if issubclass(cls, _TUPLE_RETURNING_MODULES + _CONTAINERS)
                            else TENSOR)
                else:
                    forward = getattr(cls, "forward", None)
                    out.add(TENSOR if self._returns_tensor(forward) else TDATA)
            return frozenset(out)
        fn = target[1]
        if self._returns_tensor(fn):
            return frozenset({TENSOR})
        ak = self.args_kinds(node)
        if self._returns_nontensor(fn) or not ak & (DATA | {TLIST}):
            # an unannotated helper fed no tensors (``self._weights_changed()``) is
            # assumed to compute a plain Python value
            return _arith(ak & (SIZED | {NUM, META}))
        return frozenset({TDATA})

    @staticmethod
    def _return_annotation(fn: Any) -> str | None:
        src = load_source(fn) if fn is not None else None
        if src is None:
            return None
        return annotation_class(src.node.returns)

    def _returns_tensor(self, fn: Any) -> bool:
        """Annotated to return a tensor, and no ``return a, b`` says otherwise (a library's
        ``-> torch.Tensor`` on a forward that returns a tuple)."""
        if self._return_annotation(fn) != "tensor":
            return False
        src = load_source(fn)
        return not any(isinstance(n, ast.Return) and isinstance(n.value, ast.Tuple)
                       for n in walk_scope(src.node))

    def _returns_nontensor(self, fn: Any) -> bool:
        return self._return_annotation(fn) in ("nontensor", "none")

    def truth(self, node: ast.AST) -> set:
        """What the truth value of ``node`` depends on: data/size/meta/training
        (operands of ``and``/``or`` a trace never evaluates left out)."""
        if isinstance(node, ast.Compare):
            if all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops) \
                    or _is_key_lookup(node):
                return set()
            return categories(self.kinds(node))
        if isinstance(node, ast.BoolOp):
            return set().union(*(self.truth(v) for v in self.traced_operands(node)))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return self.truth(node.operand)
        if (isinstance(node, ast.Call) and len(node.args) == 1
                and self.canonical(node.func)[0] == "builtins.bool"):
            return self.truth(node.args[0])
        return categories(self.kinds(node))

    def branch_modes(self, test: ast.AST, modes: frozenset = COMPILERS
                     ) -> tuple[frozenset, frozenset]:
        """The compilations (of ``modes``, those running the ``if``) that run the body and
        the ``else`` of ``if test:``: a trace takes only the branch :meth:`under_trace`
        says, and TorchScript compiles only the branch ``torch.jit.is_scripting()`` (or
        its ``not``) takes; both branches otherwise."""
        body, orelse = set(modes), set(modes)
        traced = self.under_trace(test)
        if traced is not None:
            (orelse if traced else body).discard(TRACE)
        scripted = self._static_if_scripting(test)
        if scripted is not None:
            (orelse if scripted else body).discard(SCRIPT)
        return frozenset(body), frozenset(orelse)

    def _static_if_scripting(self, test: ast.AST) -> bool | None:
        """True for ``torch.jit.is_scripting()``, False for its ``not``: a condition
        TorchScript resolves while compiling, leaving the other branch out."""
        negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
        call = test.operand if negated else test
        if isinstance(call, ast.Call) and not call.args and not call.keywords \
                and self.canonical(call.func)[1] is _IS_SCRIPTING:
            return not negated
        return None

    def under_trace(self, test: ast.AST) -> bool | None:
        """The truth value ``test`` always has while ``torch.jit.trace`` runs the model, or
        None when it depends on more: ``torch.jit.is_scripting()`` is False and
        ``torch.jit.is_tracing()`` (``torch._C._get_tracing_state()``, or a function that
        only returns one of these, like torchvision's ``_is_tracing()``) true, so the
        body of ``if torch.jit.is_scripting():`` and of ``if not torch.jit.is_tracing():``
        is never traced."""
        return _under_trace(test, lambda func: self.canonical(func)[1])

    def traced_operands(self, node: ast.BoolOp) -> list:
        """The operands of ``a and b`` / ``a or b`` a trace evaluates: up to the first one
        whose value under a trace (:meth:`under_trace`) decides the result."""
        decided = isinstance(node.op, ast.Or)
        for i, value in enumerate(node.values[:-1]):
            if self.under_trace(value) is decided:
                return node.values[:i + 1]
        return list(node.values)

    # ------------------------------------------------------------------ environment
    def bind(self, target: ast.AST, kinds: frozenset, mods: list | None = None) -> None:
        if isinstance(target, ast.Name):
            old = self.env.get(target.id, NOTHING)
            if not kinds <= old:
                self.env[target.id] = old | kinds
                self.changed = True
            if mods:
                known = self.mods.setdefault(target.id, [])
                for m in mods:
                    if all(m is not k for k in known):
                        known.append(m)
                        self.changed = True
        elif isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                if isinstance(elt, ast.Starred):
                    self.bind(elt.value, container_of(elements_of(kinds)), mods)
                else:
                    self.bind(elt, elements_of(kinds), mods)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, kinds, mods)

    def bind_assign(self, target: ast.AST, value: ast.AST) -> None:
        if (isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List))
                and len(target.elts) == len(value.elts)
                and not any(isinstance(e, ast.Starred) for e in target.elts + value.elts)):
            for t, v in zip(target.elts, value.elts):
                self.bind_assign(t, v)
            return
        mods = self.module_targets(value)
        if isinstance(target, ast.Name):
            self.bind(target, self.kinds(value), mods)
        else:
            self.bind(target, self.kinds(value), None)

    def bind_iter(self, target: ast.AST, iter_node: ast.AST) -> None:
        mods = self.iter_modules(iter_node)
        if mods:
            for name in (n for n in ast.walk(target) if isinstance(n, ast.Name)):
                self.bind(name, NOTHING, mods)
        if isinstance(iter_node, ast.Call):
            canon, _ = self.canonical(iter_node.func)
            args = iter_node.args
            if canon == "builtins.range":
                return
            if (canon == "builtins.enumerate" and isinstance(target, ast.Tuple)
                    and len(target.elts) == 2 and args):
                self.bind(target.elts[1], elements_of(self.kinds(args[0])))
                return
            if (canon == "builtins.zip" and isinstance(target, ast.Tuple)
                    and len(target.elts) == len(args)
                    and not any(isinstance(a, ast.Starred) for a in args)):
                for t, a in zip(target.elts, args):
                    self.bind(t, elements_of(self.kinds(a)))
                return
        kinds = self.kinds(iter_node)
        if isinstance(target, ast.Name):
            self.bind(target, elements_of(kinds))
        else:
            self.bind(target, kinds)  # tuple targets unpack one element further

    def compute_env(self, params: dict) -> None:
        self.env = {k: v for k, v in params.items() if v}
        sites = [n for n in walk_scope(self.fdef)
                 if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For,
                                   ast.AsyncFor, ast.comprehension, ast.NamedExpr))]
        for _ in range(25):
            self.changed = False
            for node in sites:
                if isinstance(node, ast.Assign):
                    for target in node.targets:
                        self.bind_assign(target, node.value)
                elif isinstance(node, ast.AugAssign):
                    if isinstance(node.target, ast.Name):
                        self.bind(node.target, _arith(self.kinds(node.target)
                                                      | self.kinds(node.value)))
                elif isinstance(node, ast.AnnAssign):
                    if node.value is None:
                        pass
                    elif isinstance(node.target, ast.Name) and self.not_a_tensor(
                            node.annotation):  # ``n: int = ...``
                        self.bind(node.target, self.kinds(node.value) - _TENSORISH,
                                  self.module_targets(node.value))
                    else:
                        self.bind_assign(node.target, node.value)
                elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                    self.bind_iter(node.target, node.iter)
                elif isinstance(node, ast.NamedExpr):
                    self.bind_assign(node.target, node.value)
            if not self.changed:
                break

    # ------------------------------------------------------------------ structure
    def parent(self, node: ast.AST) -> ast.AST | None:
        return self.parents.get(id(node))

    def type_checked(self, node: ast.AST) -> bool:
        """True inside ``if isinstance(name, ...)`` (or its else) for the name ``node``:
        the flow-insensitive taint cannot tell which type the branch holds."""
        if not isinstance(node, ast.Name):
            return False
        prev, cur = node, self.parent(node)
        while cur is not None and cur is not self.fdef:
            test = getattr(cur, "test", None)
            if isinstance(cur, (ast.If, ast.IfExp, ast.While)) and prev is not test:
                for sub in ast.walk(test):
                    if (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name)
                            and sub.func.id == "isinstance" and sub.args
                            and isinstance(sub.args[0], ast.Name)
                            and sub.args[0].id == node.id):
                        return True
            prev, cur = cur, self.parent(cur)
        return False

    def narrowed_to_nontensor(self, node: ast.Name) -> bool:
        """True where a type test says ``node``'s name holds no tensor: in the body of
        ``if isinstance(name, C):`` (or of ``... if isinstance(name, C) else ...``, or after
        ``isinstance(name, C) and``), or the ``else`` of ``if not isinstance(name, C):``,
        for classes C that are neither tensors nor records of them (a cache, a config)."""
        key = id(node)
        if key not in self._narrowed:
            self._narrowed[key] = self._narrowed_by_test(node)
        return self._narrowed[key]

    def _narrowed_by_test(self, node: ast.Name) -> bool:
        prev, cur = node, self.parent(node)
        while cur is not None and cur is not self.fdef:
            if isinstance(cur, (ast.If, ast.IfExp, ast.While)) and prev is not cur.test:
                body = cur.body if isinstance(cur.body, list) else [cur.body]
                in_body = any(prev is b for b in body)
                if self._type_test(cur.test, node.id, negated=not in_body):
                    return True
            elif isinstance(cur, ast.BoolOp) and isinstance(cur.op, ast.And):
                for value in cur.values:
                    if value is prev:
                        break
                    if self._type_test(value, node.id, negated=False):
                        return True
            elif isinstance(cur, FUNCTION_SCOPES):
                return False
            prev, cur = cur, self.parent(cur)
        return False

    def _type_test(self, test: ast.AST, name: str, negated: bool) -> bool:
        """``test`` is (or, ``and``-ed, includes) ``isinstance(name, C)`` with C no tensor
        class (``negated``: ``not isinstance(...)``, or ``or``-ed ones)."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self._type_test(test.operand, name, not negated)
        if isinstance(test, ast.BoolOp):
            joins = ast.Or if negated else ast.And
            return isinstance(test.op, joins) and any(
                self._type_test(v, name, negated) for v in test.values)
        if negated or not (isinstance(test, ast.Call) and len(test.args) == 2
                           and isinstance(test.args[0], ast.Name)
                           and test.args[0].id == name
                           and self.canonical(test.func)[0] == "builtins.isinstance"):
            return False
        classes = test.args[1]
        elts = classes.elts if isinstance(classes, ast.Tuple) else [classes]
        objs = [self.canonical(e)[1] for e in elts]
        return bool(objs) and all(isinstance(o, type) and _plain_class(o) for o in objs)

    def self_rooted(self, node: ast.AST) -> bool:
        """``self.a.b``, ``self.a[i]``: an expression reaching into ``self``."""
        if not isinstance(node, (ast.Attribute, ast.Subscript)):
            return False
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        return self.is_self(node)
