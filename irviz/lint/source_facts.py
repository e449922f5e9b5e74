"""Source layer of ``irviz lint``: tracing pitfalls found by reading the model's code.

Nothing is executed. ``source_facts(model)`` reads the Python source of
``forward`` (``inspect.getsource`` + ``textwrap.dedent`` + ``ast``) and, transitively,
of every method of ``self`` it calls, the ``forward`` of every user-defined
submodule it calls (directly, through ``ModuleList``/``Sequential``/``ModuleDict``
indexing or iteration, or through ``torch.jit.fork``) and every plain user
function it calls. ``torch`` library modules (``nn.LSTM``, ``nn.Linear`` ...) are
not entered; library containers are looked through to their children.

A small flow-insensitive taint analysis decides what each local name holds:

* ``tensor``  - certainly a tensor (unannotated/``Tensor`` parameters, ``torch.*``
  and ``F.*`` results, tensor methods, parameters/buffers of ``self``, global tensors);
* ``tdata``   - derived from tensors but maybe a container (submodule outputs,
  ``chunk``/``split`` results, unknown calls on tensors, ``torch.jit.wait``);
* ``size``/``shape`` - size-derived Python values (``x.size(0)``, ``x.shape``,
  ``len(x)``, ``x.numel()``, names unpacked from ``x.shape``);
* ``meta`` - rank/dtype/device metadata, ``isinstance`` and ``torch.cuda.is_available()``;
* ``num`` - Python numbers already taken out of a tensor (``.item()``, ``.tolist()``,
  ``.numpy()``): the conversion is reported, later uses of the number are not;
* ``training`` - ``self.training``; ``future`` - ``torch.jit.fork`` results;
  ``tlist`` - lists/tuples of tensors.

Every fact is a :class:`SourceFact`; ``KIND_CODES`` maps each kind to its rule code.
"""
from __future__ import annotations

import ast
import builtins
import collections
import inspect
import logging
import os
import sys
import sysconfig
import textwrap
import types
from dataclasses import dataclass
from typing import Any, Iterable

import torch

__all__ = ["SourceFact", "KINDS", "KIND_CODES", "source_facts"]


@dataclass(frozen=True)
class SourceFact:
    kind: str            # one of KINDS
    path: str            # the source file (as inspect reports it)
    line: int            # 1-based
    column: int          # 1-based (ast col_offset + 1, in characters)
    end_line: int        # 1-based
    end_column: int      # 1-based, exclusive (ast end_col_offset + 1)
    detail: str          # the offending source, on one line, at most 80 characters
    function: str        # qualified function, e.g. "MyDecisionGate.forward"


KIND_CODES: dict[str, str] = {
    "tensor-branch": "IRV101",
    "metadata-branch": "IRV102",
    "shape-loop": "IRV103",
    "tensor-iteration": "IRV104",
    "len-of-tensor": "IRV105",
    "tensor-to-number": "IRV106",
    "numpy": "IRV107",
    "tensor-constructor": "IRV108",
    "global-tensor": "IRV120",
    "default-arg": "IRV122",
    "non-tensor-param": "IRV123",
    "training-branch": "IRV131",
    "random-op": "IRV132",
    "side-effect": "IRV133",
    "list-output": "IRV140",
    "dict-output": "IRV141",
    "fork-immediate-wait": "IRV201",
    "fork-never-waited": "IRV202",
    "fork-same-iteration": "IRV203",
    "jit-ignore-call": "IRV304",
    "jit-unused-call": "IRV305",
}
KINDS: tuple[str, ...] = tuple(KIND_CODES)

# --------------------------------------------------------------------------- taint tags
_T, _TD, _SZ, _SH, _META, _NUM, _TRAIN, _FUT, _TL = (
    "tensor", "tdata", "size", "shape", "meta", "num", "training", "future", "tlist")
_E: frozenset = frozenset()
_DATA = frozenset({_T, _TD})
_SIZE = frozenset({_SZ, _SH})

_DETAIL_MAX = 80
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
_RANDOM_METHODS = {"bernoulli", "bernoulli_", "uniform_", "normal_", "random_",
                   "exponential_", "geometric_", "log_normal_", "cauchy_", "multinomial"}
_MUTATORS = {"append", "extend", "insert", "pop", "remove", "clear", "update", "add",
             "setdefault", "popitem", "discard", "appendleft", "extendleft"}
_LOG_METHODS = {"debug", "info", "warning", "warn", "error", "exception", "critical", "fatal"}
_LENGTH_HINT_BUILTINS = {"builtins.list", "builtins.tuple", "builtins.sorted"}
_ITERATING_BUILTINS = {"builtins." + n for n in (
    "list", "tuple", "zip", "enumerate", "sorted", "reversed", "iter", "map", "filter",
    "set", "sum", "any", "all", "dict", "frozenset")}

_FORK = "torch.jit.fork"
_WAIT = "torch.jit.wait"
_ANNOTATE = "torch.jit.annotate"
_RANDOM_FUNCS = {"torch." + n for n in (
    "rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "bernoulli",
    "normal", "multinomial", "randperm", "poisson")}
_DROPOUT_F = {"torch.nn.functional." + n for n in (
    "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
    "feature_alpha_dropout")}
_DROPOUT_T = {"torch." + n for n in (
    "dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout")}
_CONSTRUCTORS = {"torch." + n for n in (
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
    "is_storage", "are_deterministic_algorithms_enabled", "_assert")}
_NEUTRAL_PREFIXES = ("torch.jit.", "torch.cuda.", "torch.backends.", "torch.distributed.",
                     "torch.compiler.", "torch.profiler.", "torch.autograd.grad_mode.",
                     "torch._C._log_api_usage")
_ALIASES = {"torch": "torch", "F": "torch.nn.functional", "nn": "torch.nn", "np": "numpy",
            "numpy": "numpy", "math": "math", "logging": "logging"}
# Library modules whose forward returns a tuple (output, state) rather than one tensor.
_TUPLE_RETURNING_MODULES = (torch.nn.RNNBase, torch.nn.MultiheadAttention,
                            torch.nn.AdaptiveLogSoftmaxWithLoss)
_CONTAINERS = (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ModuleDict)

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))


def _resolve_dotted(name: str) -> Any:
    parts = name.split(".")
    obj: Any = sys.modules.get(parts[0])
    for part in parts[1:]:
        if obj is None:
            return None
        obj = getattr(obj, part, None)
    return obj


def _known_table() -> dict[int, str]:
    names = (sorted(_RANDOM_FUNCS | _DROPOUT_F | _DROPOUT_T | _CONSTRUCTORS | _META_FUNCS
                    | _SIZE_FUNCS | _TUPLE_FUNCS | _TUPLE_FUNCS_WITH_DIM)
             + [_FORK, _WAIT, _ANNOTATE])
    table: dict[int, str] = {}
    for name in names:
        obj = _resolve_dotted(name)
        if obj is not None:
            table.setdefault(id(obj), name)
    for alias, name in (("torch.jit._fork", _FORK), ("torch.jit._wait", _WAIT)):
        obj = _resolve_dotted(alias)
        if obj is not None:
            table.setdefault(id(obj), name)
    return table


_KNOWN = _known_table()
_KNOWN_OBJECTS = [_resolve_dotted(n) for n in _KNOWN.values()]  # keep the ids alive


def _library_dirs() -> tuple[str, ...]:
    dirs = {_TORCH_DIR}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            dirs.add(os.path.abspath(path))
    return tuple(sorted(dirs))


_LIBRARY_DIRS = _library_dirs()


def _in_dirs(path: str | None, dirs: Iterable[str]) -> bool:
    if not path:
        return True
    path = os.path.abspath(path)
    return any(path == d or path.startswith(d + os.sep) for d in dirs)


def _is_torch_function(func: Any) -> bool:
    code = getattr(func, "__code__", None)
    if code is None:
        return True
    return _in_dirs(code.co_filename, (_TORCH_DIR,))


def _non_tensor_literal(value: ast.AST) -> bool:
    """A number, string, bool or None returned (alone or inside a returned tuple)."""
    if isinstance(value, ast.Constant):
        return True
    if isinstance(value, ast.Tuple):
        return any(isinstance(e, ast.Constant) for e in value.elts)
    return False


def _is_user_function(func: Any) -> bool:
    code = getattr(func, "__code__", None)
    return (isinstance(func, types.FunctionType) and code is not None
            and not _in_dirs(code.co_filename, _LIBRARY_DIRS))


def _py_class(module: Any) -> type | None:
    """The Python class whose source defines ``module`` (None for loaded/traced archives)."""
    if isinstance(module, torch.jit.ScriptModule):
        try:
            concrete = object.__getattribute__(module, "_concrete_type")
        except AttributeError:
            return None
        cls = getattr(concrete, "py_class", None)
        return cls if isinstance(cls, type) else None
    return type(module)


def _is_library_class(cls: type) -> bool:
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


def _shorten(text: str) -> str:
    text = " ".join(part.strip() for part in text.splitlines() if part.strip())
    if len(text) > _DETAIL_MAX:
        text = text[:_DETAIL_MAX - 3] + "..."
    return text


# --------------------------------------------------------------------------- instance view
class _Owner:
    """What ``self.<name>`` is on one module instance, found without running its code."""

    def __init__(self, module: Any):
        self.module = module
        self.cls = _py_class(module)

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
class _Source:
    path: str
    start: int                 # file line of the first source line
    line_offset: int           # lines added in front of the parsed text
    lines: list                # the parsed text, split into lines
    removed: list              # characters dedent removed from each line
    node: ast.AST              # the FunctionDef


_SOURCE_CACHE: dict = {}


def _load_source(func: Any) -> _Source | None:
    try:  # a decorated forward (functools.wraps): read the function the user wrote
        func = inspect.unwrap(func)
    except ValueError:
        pass
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


def _parse_source(func: Any) -> _Source | None:
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
    return _Source(path=path, start=start, line_offset=offset, lines=lines,
                   removed=removed, node=node)


# --------------------------------------------------------------------------- annotations
def _annotation_class(ann: ast.AST | None) -> str | None:
    """'tensor', 'tlist', 'nontensor', 'none', 'unknown' or None (no annotation)."""
    if ann is None:
        return None
    if isinstance(ann, ast.Constant):
        if ann.value is None:
            return "none"
        if isinstance(ann.value, str):
            try:
                return _annotation_class(ast.parse(ann.value, mode="eval").body)
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
        return _combine_annotations([_annotation_class(ann.left),
                                     _annotation_class(ann.right)])
    if isinstance(ann, ast.Subscript):
        base = ann.value
        last = base.id if isinstance(base, ast.Name) else (
            base.attr if isinstance(base, ast.Attribute) else "")
        inner = ann.slice
        elts = list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]
        parts = [_annotation_class(e) for e in elts
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


def _combine_annotations(parts: list) -> str:
    parts = [p for p in parts if p != "none"]
    if not parts:
        return "nontensor"
    if all(p == "nontensor" for p in parts):
        return "nontensor"
    if all(p == parts[0] for p in parts):
        return parts[0]
    return "unknown"


def _is_nontensor_literal(node: ast.AST | None) -> bool:
    return (isinstance(node, ast.Constant) and node.value is not None
            and isinstance(node.value, (int, float, bool, str, complex, bytes)))


def _kinds_of_annotation(cls: str | None, default: ast.AST | None) -> frozenset:
    if cls is None:
        return _E if _is_nontensor_literal(default) else frozenset({_T})
    return {"tensor": frozenset({_T}), "tlist": frozenset({_TL}), "nontensor": _E,
            "none": _E}.get(cls, frozenset({_TD}))


# --------------------------------------------------------------------------- helpers on kinds
def _cats(kinds: frozenset) -> set:
    out = set()
    if kinds & _DATA:
        out.add("data")
    if kinds & _SIZE:
        out.add("size")
    if _META in kinds:
        out.add("meta")
    if _TRAIN in kinds:
        out.add("training")
    return out


def _elem(kinds: frozenset) -> frozenset:
    """Kinds of the elements of an iterated/unpacked value."""
    out = set()
    if _T in kinds or _TL in kinds:
        out.add(_T)
    if _TD in kinds:
        out.add(_TD)
    if _SH in kinds:
        out.add(_SZ)
    for k in (_NUM, _META, _FUT):
        if k in kinds:
            out.add(k)
    return frozenset(out)


def _container(kinds: frozenset) -> frozenset:
    """Kinds of a list/tuple/dict literal holding values of ``kinds``."""
    out = set()
    if kinds & _DATA or _TL in kinds:
        out.add(_TL)
    if kinds & _SIZE:
        out.add(_SH)
    for k in (_NUM, _META, _FUT):
        if k in kinds:
            out.add(k)
    return frozenset(out)


def _arith(kinds: frozenset) -> frozenset:
    for k in (_T, _TD, _TL, _SH, _SZ, _NUM, _META):
        if k in kinds:
            return frozenset({k})
    return _E


def _converted(kinds: frozenset) -> frozenset:
    """Kinds of ``bool(v)`` / ``not v`` (the conversion itself is reported where it happens)."""
    out = set()
    if kinds & (_DATA | _SIZE):
        out.add(_NUM)
    for k in (_META, _TRAIN):
        if k in kinds:
            out.add(k)
    return frozenset(out)


def _dotted(node: ast.AST) -> list | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


_FUNC_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_COMPS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def _walk_scope(node: ast.AST, nested: bool = False) -> Iterable[ast.AST]:
    """Nodes of a function body in source order, skipping nested function/class bodies."""
    stack = [node]
    while stack:
        cur = stack.pop()
        yield cur
        children = list(ast.iter_child_nodes(cur))
        if not nested:
            children = [c for c in children if not isinstance(c, _FUNC_SCOPES)]
        stack.extend(reversed(children))


# --------------------------------------------------------------------------- analysis units
@dataclass(eq=False)
class _Unit:
    func: Any
    owner: _Owner | None
    bound: bool            # the first parameter is self/cls
    is_root: bool
    incoming: set
    facts: set


class _Engine:
    def __init__(self, root_scripted: bool = False) -> None:
        #: a scripted root: its scripted children are part of what is analysed; under a
        #: traced (Python) root, scripted callees keep their control flow and are skipped
        self.root_scripted = root_scripted
        self.units: dict = {}
        self.queue: collections.deque = collections.deque()
        self.owners: dict = {}

    def owner(self, module: Any) -> _Owner:
        key = id(module)
        if key not in self.owners:
            self.owners[key] = _Owner(module)
        return self.owners[key]

    def add(self, func: Any, owner: _Owner | None, bound: bool, is_root: bool,
            record: tuple | None) -> None:
        if func is None or _is_torch_function(func) or _modifier(func):
            return
        key = (func, id(owner) if owner else None, is_root)
        unit = self.units.get(key)
        if unit is None:
            unit = _Unit(func, owner, bound, is_root, set(), set())
            self.units[key] = unit
            if record is not None:
                unit.incoming.add(record)
            self.queue.append(unit)
        elif record is not None and record not in unit.incoming:
            unit.incoming.add(record)
            if unit not in self.queue:
                self.queue.append(unit)

    def add_modules(self, objs: Iterable, record: tuple | None, seen: set | None = None) -> None:
        seen = set() if seen is None else seen
        for obj in objs:
            if id(obj) in seen or not isinstance(obj, torch.nn.Module):
                continue
            seen.add(id(obj))
            if isinstance(obj, torch.jit.ScriptModule) and not self.root_scripted:
                continue  # compiled, not traced: its control flow survives a trace
            cls = _py_class(obj)
            if cls is None:
                continue
            if _is_library_class(cls):
                if issubclass(cls, _CONTAINERS):
                    self.add_modules(_children(obj), record, seen)
                continue
            try:
                forward = inspect.getattr_static(cls, "forward")
            except AttributeError:
                continue
            if isinstance(forward, staticmethod):
                self.add(forward.__func__, self.owner(obj), False, False, record)
            elif isinstance(forward, types.FunctionType):
                self.add(forward, self.owner(obj), True, False, record)

    def run(self) -> list:
        count = 0
        while self.queue and count < _MAX_ANALYSES:
            unit = self.queue.popleft()
            count += 1
            src = _load_source(unit.func)
            if src is None:
                continue
            unit.facts = _Analysis(self, unit, src).run()
        facts: set = set()
        for unit in self.units.values():
            facts |= unit.facts
        return sorted(facts, key=lambda f: (f.path, f.line, f.column, f.kind, f.end_line,
                                            f.end_column, f.detail, f.function))


# --------------------------------------------------------------------------- one function
class _Analysis:
    def __init__(self, engine: _Engine, unit: _Unit, src: _Source):
        self.engine = engine
        self.unit = unit
        self.src = src
        self.fdef = src.node
        self.func = unit.func
        self.owner = unit.owner
        self.qualname = _qualname(unit.func)
        self.globals = getattr(unit.func, "__globals__", {}) or {}
        self.closure = self._closure_map(unit.func)
        args = self.fdef.args
        self.positional = list(args.posonlyargs) + list(args.args)
        self.self_name = (self.positional[0].arg
                          if unit.bound and self.positional and unit.owner is not None
                          else None)
        self.locals = self._local_names()
        self.parents: dict = {}
        for node in _walk_scope(self.fdef, nested=True):
            for child in ast.iter_child_nodes(node):
                self.parents[id(child)] = node
        self.env: dict = {}
        self.mods: dict = {}
        self.memo: dict = {}
        self.facts: set = set()
        self.suppress = 0

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
        for node in _walk_scope(self.fdef):
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
        parts = _dotted(func)
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
                cls = _py_class(mod)
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
            cls = _py_class(mod)
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
                if not self.engine.root_scripted:
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
                    info = self.engine.owner(mod).lookup(func.attr)
                    if info[0] == "method":
                        return ("method", info[1], self.engine.owner(mod), info[2])
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

    def _record_call(self, target: tuple, args: list, keywords: list) -> None:
        pos, star = [], set()
        for arg in args:
            if isinstance(arg, ast.Starred):
                star |= _elem(self.kinds(arg.value))
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
            self.engine.add_modules(target[1], record)
        elif target[0] == "method":
            self.engine.add(target[1], target[2], target[3], False, record)
        elif target[0] == "function":
            self.engine.add(target[1], None, False, False, record)

    # ------------------------------------------------------------------ parameters
    def param_kinds(self) -> dict:
        args = self.fdef.args
        positional = self.positional[1:] if self.unit.bound else list(self.positional)
        defaults = [None] * (len(self.positional) - len(args.defaults)) + list(args.defaults)
        if self.unit.bound:
            defaults = defaults[1:]
        kwonly = list(args.kwonlyargs)
        out: dict = {}
        if self.unit.is_root:
            for a, d in list(zip(positional, defaults)) + list(zip(kwonly, args.kw_defaults)):
                out[a.arg] = _kinds_of_annotation(_annotation_class(a.annotation), d)
            if args.vararg is not None:
                out[args.vararg.arg] = frozenset({_TL})
            if args.kwarg is not None:
                out[args.kwarg.arg] = frozenset({_TL})
            return out
        names = [a.arg for a in positional]
        kwnames = set(names) | {a.arg for a in kwonly}
        for pos, star, kw, dstar in self.unit.incoming:
            bound = set()
            for i, k in enumerate(pos):
                if i < len(names):
                    out[names[i]] = out.get(names[i], _E) | k
                    bound.add(names[i])
                elif args.vararg is not None:
                    out[args.vararg.arg] = out.get(args.vararg.arg, _E) | _container(k)
            if star:
                for n in names[len(pos):]:
                    out[n] = out.get(n, _E) | star
                    bound.add(n)
                if args.vararg is not None:
                    out[args.vararg.arg] = out.get(args.vararg.arg, _E) | _container(star)
            for n, k in kw:
                if n in kwnames:
                    out[n] = out.get(n, _E) | k
                    bound.add(n)
                elif args.kwarg is not None:
                    out[args.kwarg.arg] = out.get(args.kwarg.arg, _E) | _container(k)
            if dstar:
                for n in kwnames - bound:
                    out[n] = out.get(n, _E) | dstar
        return out

    def param_facts(self) -> None:
        args = self.fdef.args
        positional = self.positional[1:] if self.unit.bound else list(self.positional)
        defaults = [None] * (len(self.positional) - len(args.defaults)) + list(args.defaults)
        if self.unit.bound:
            defaults = defaults[1:]
        pairs = list(zip(positional, defaults)) + list(zip(args.kwonlyargs, args.kw_defaults))
        for a, default in pairs:
            end = default if default is not None else a
            if default is not None:
                self.fact("default-arg", a, end)
            cls = _annotation_class(a.annotation)
            if cls == "nontensor" or (cls is None and _is_nontensor_literal(default)):
                self.fact("non-tensor-param", a, end)

    # ------------------------------------------------------------------ kinds
    def name_kinds(self, name: str) -> frozenset:
        if name == self.self_name:
            return _E
        if name in self.locals:
            return self.env.get(name, _E)
        found, obj = self.resolve_global(name)
        return frozenset({_T}) if found and isinstance(obj, torch.Tensor) else _E

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
            return self.name_kinds(node.id)
        if isinstance(node, ast.Attribute):
            return self._attr_kinds(node)
        if isinstance(node, ast.Call):
            return self._call_kinds(node)
        if isinstance(node, ast.Compare):
            if all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
                return _E
            ks = frozenset().union(*(self.kinds(v) for v in [node.left] + node.comparators))
            out = set()
            if ks & _DATA:
                out.add(_T)
            if ks & _SIZE:
                out.add(_SZ)
            for k in (_META, _TRAIN, _NUM):
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
            return _container(frozenset().union(*(self.kinds(e) for e in node.elts)))
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return _container(self.kinds(node.elt))
        if isinstance(node, ast.DictComp):
            return _container(self.kinds(node.value))
        if isinstance(node, ast.Dict):
            return _container(frozenset().union(*(self.kinds(v) for v in node.values)))
        if isinstance(node, (ast.Starred, ast.NamedExpr, ast.Await)):
            return self.kinds(node.value)
        return _E

    def _attr_kinds(self, node: ast.Attribute) -> frozenset:
        if self.is_self(node.value):
            info = self.owner.lookup(node.attr)
            if info[0] == "training":
                return frozenset({_TRAIN})
            if info[0] == "tensor":
                return frozenset({_T})
            return _E
        vk = self.kinds(node.value)
        if vk & _DATA:
            if node.attr == "shape":
                return frozenset({_SH})
            if node.attr in _META_ATTRS:
                return frozenset({_META})
            if node.attr in _TENSOR_ATTRS:
                return frozenset({_T})
            return vk
        if _META in vk:
            return frozenset({_META})
        return vk

    def _subscript_kinds(self, node: ast.Subscript) -> frozenset:
        vk = self.kinds(node.value)
        is_slice = isinstance(node.slice, ast.Slice)
        out = set()
        if _T in vk:
            out.add(_T)
        if _TD in vk:
            out.add(_TD)
        if _TL in vk:
            out.add(_TL if is_slice else _T)
        if _SH in vk:
            out.add(_SH if is_slice else _SZ)
        for k in (_SZ, _NUM, _META, _FUT):
            if k in vk:
                out.add(k)
        return frozenset(out)

    def _args_kinds(self, node: ast.Call) -> frozenset:
        ks = [self.kinds(a) for a in node.args] + [self.kinds(k.value) for k in node.keywords]
        return frozenset().union(*ks) if ks else _E

    def _tensor_method_kinds(self, name: str, node: ast.Call) -> frozenset:
        has_args = bool(node.args or node.keywords)
        if name == "size" or name == "stride":
            return frozenset({_SZ if has_args else _SH})
        if name in ("numel", "nelement", "storage_offset"):
            return frozenset({_SZ})
        if name in _META_METHODS or (name == "type" and not has_args):
            return frozenset({_META})
        if name in _NUM_METHODS:
            return frozenset({_NUM})
        if name in _TUPLE_METHODS or (name in _TUPLE_WITH_DIM and has_args):
            return frozenset({_TD})
        return frozenset({_T})

    def _call_kinds(self, node: ast.Call) -> frozenset:
        f = node.func
        if isinstance(f, ast.Attribute) and not self.is_self(f.value):
            rk = self.kinds(f.value)
            if rk & _DATA:
                return self._tensor_method_kinds(f.attr, node)
            if _SH in rk:
                return frozenset({_SZ}) if f.attr in ("numel", "index", "count") else rk
            if _SZ in rk:
                return frozenset({_SZ})
            if _TL in rk:
                if f.attr in ("append", "extend", "insert", "index", "count", "clear"):
                    return _E
                return frozenset({_T}) if f.attr == "pop" else frozenset({_TD})
            if _FUT in rk:
                return frozenset({_TD}) if f.attr == "wait" else _E
            for k in (_NUM, _META):
                if k in rk:
                    return frozenset({k})
        canon, _obj = self.canonical(f)
        if canon is not None:
            return self._canonical_kinds(canon, node)
        target = self.resolve_callable(f)
        if target is not None:
            return self._callee_kinds(target, node)
        ak = self._args_kinds(node)
        if ak & _DATA or _TL in ak:
            return frozenset({_TD})
        for k in (_SZ, _SH, _NUM, _META):
            if k in ak:
                return frozenset({_SZ if k == _SH else k})
        return _E

    def _canonical_kinds(self, canon: str, node: ast.Call) -> frozenset:
        args = node.args
        first = self.kinds(args[0]) if args else _E
        if canon == _FORK:
            return frozenset({_FUT})
        if canon == _WAIT:
            return frozenset({_TD})
        if canon == _ANNOTATE:
            return self.kinds(args[1]) if len(args) > 1 else _E
        if canon in _META_FUNCS:
            return frozenset({_META})
        if canon in _SIZE_FUNCS:
            return frozenset({_SZ})
        if canon in _TUPLE_FUNCS or (canon in _TUPLE_FUNCS_WITH_DIM
                                     and (len(args) > 1 or node.keywords)):
            return frozenset({_TD})
        if canon == "torch.Size":
            return frozenset({_SH})
        last = canon.rsplit(".", 1)[-1]
        if (canon.startswith(_TUPLE_PREFIXES)
                or (canon.startswith("torch.linalg.") and last in _TUPLE_LINALG)
                or (canon.startswith("torch.nn.functional.") and any(
                    k.arg == "return_indices" for k in node.keywords))):
            return frozenset({_TD})
        if canon in _NEUTRAL_FUNCS or canon.startswith(_NEUTRAL_PREFIXES) or (
                last.startswith(_NEUTRAL_NAME_PREFIXES) and last not in _DATA_QUESTIONS):
            return _E
        if canon.startswith("torch."):
            return frozenset({_T})
        if canon.startswith("numpy."):
            return frozenset({_NUM}) if self._args_kinds(node) else _E
        if canon.startswith("math."):
            ak = self._args_kinds(node)
            if ak & _SIZE:
                return frozenset({_SZ})
            return frozenset({_NUM}) if ak & (_DATA | {_NUM}) else _E
        if canon.startswith("builtins."):
            name = canon[len("builtins."):]
            if name == "len":
                if _T in first:
                    return frozenset({_SZ})
                return frozenset({_META}) if _SH in first else _E
            if name in ("int", "float", "complex"):
                if first & _DATA:
                    return frozenset({_NUM})
                return _arith(first & (_SIZE | {_NUM, _META}))
            if name == "bool":
                return _converted(first)
            if name == "isinstance":
                return frozenset({_META}) if first & (_DATA | {_TL}) else _E
            if name in ("max", "min", "abs", "round", "pow", "divmod", "sum"):
                if name == "sum" and _TL in first:
                    return frozenset({_T})
                return _arith(self._args_kinds(node))
            if name in ("list", "tuple", "sorted", "reversed", "iter"):
                if _SH in first:
                    return frozenset({_SH})
                if _T in first:
                    return frozenset({_TL})
                return first & frozenset({_TD, _TL, _NUM, _FUT})
            if name in ("zip", "map", "filter", "enumerate"):
                ak = self._args_kinds(node)  # element tuples: structure unknown
                return frozenset({_TD}) if ak & (_DATA | {_TL}) else _container(_elem(ak))
            return _E
        # other library callables: results follow their arguments
        target = self.resolve_callable(node.func)
        if target is not None:
            return self._callee_kinds(target, node)
        ak = self._args_kinds(node)
        return frozenset({_TD}) if ak & (_DATA | {_TL}) else _E

    def _callee_kinds(self, target: tuple, node: ast.Call) -> frozenset:
        if target[0] == "module":
            out = set()
            for obj in target[1]:
                cls = _py_class(obj)
                if cls is None:
                    out.add(_TD)
                elif _is_library_class(cls):
                    out.add(_TD if issubclass(cls, _TUPLE_RETURNING_MODULES + _CONTAINERS)
                            else _T)
                else:
                    forward = getattr(cls, "forward", None)
                    out.add(_T if self._returns_tensor(forward) else _TD)
            return frozenset(out)
        fn = target[1]
        if self._returns_tensor(fn):
            return frozenset({_T})
        ak = self._args_kinds(node)
        if self._returns_nontensor(fn) or not ak & (_DATA | {_TL}):
            # an unannotated helper fed no tensors (``self._weights_changed()``) is
            # assumed to compute a plain Python value
            return _arith(ak & (_SIZE | {_NUM, _META}))
        return frozenset({_TD})

    @staticmethod
    def _return_annotation(fn: Any) -> str | None:
        src = _load_source(fn) if fn is not None else None
        if src is None:
            return None
        return _annotation_class(src.node.returns)

    def _returns_tensor(self, fn: Any) -> bool:
        return self._return_annotation(fn) == "tensor"

    def _returns_nontensor(self, fn: Any) -> bool:
        return self._return_annotation(fn) in ("nontensor", "none")

    def truth(self, node: ast.AST) -> set:
        """What the truth value of ``node`` depends on: data/size/meta/training."""
        if isinstance(node, ast.Compare):
            if all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
                return set()
            return _cats(self.kinds(node))
        if isinstance(node, ast.BoolOp):
            return set().union(*(self.truth(v) for v in node.values))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return self.truth(node.operand)
        if (isinstance(node, ast.Call) and len(node.args) == 1
                and self.canonical(node.func)[0] == "builtins.bool"):
            return self.truth(node.args[0])
        return _cats(self.kinds(node))

    # ------------------------------------------------------------------ environment
    def bind(self, target: ast.AST, kinds: frozenset, mods: list | None = None) -> None:
        if isinstance(target, ast.Name):
            old = self.env.get(target.id, _E)
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
                    self.bind(elt.value, _container(_elem(kinds)), mods)
                else:
                    self.bind(elt, _elem(kinds), mods)
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
                self.bind(name, _E, mods)
        if isinstance(iter_node, ast.Call):
            canon, _ = self.canonical(iter_node.func)
            args = iter_node.args
            if canon == "builtins.range":
                return
            if (canon == "builtins.enumerate" and isinstance(target, ast.Tuple)
                    and len(target.elts) == 2 and args):
                self.bind(target.elts[1], _elem(self.kinds(args[0])))
                return
            if (canon == "builtins.zip" and isinstance(target, ast.Tuple)
                    and len(target.elts) == len(args)
                    and not any(isinstance(a, ast.Starred) for a in args)):
                for t, a in zip(target.elts, args):
                    self.bind(t, _elem(self.kinds(a)))
                return
        kinds = self.kinds(iter_node)
        if isinstance(target, ast.Name):
            self.bind(target, _elem(kinds))
        else:
            self.bind(target, kinds)  # tuple targets unpack one element further

    def compute_env(self, params: dict) -> None:
        self.env = {k: v for k, v in params.items() if v}
        sites = [n for n in _walk_scope(self.fdef)
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
                    if node.value is not None:
                        self.bind_assign(node.target, node.value)
                elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                    self.bind_iter(node.target, node.iter)
                elif isinstance(node, ast.NamedExpr):
                    self.bind_assign(node.target, node.value)
            if not self.changed:
                break

    # ------------------------------------------------------------------ facts
    def position(self, lineno: int, col: int) -> tuple:
        idx = lineno - 1
        text = self.src.lines[idx] if 0 <= idx < len(self.src.lines) else ""
        chars = len(text.encode("utf-8")[:col].decode("utf-8", "replace"))
        removed = self.src.removed[idx] if 0 <= idx < len(self.src.removed) else 0
        return self.src.start + lineno - 1 - self.src.line_offset, chars + removed + 1

    def segment(self, l1: int, c1: int, l2: int, c2: int) -> str:
        lines = [s.encode("utf-8") for s in self.src.lines[l1 - 1:l2]]
        if not lines:
            return ""
        if len(lines) == 1:
            return lines[0][c1:c2].decode("utf-8", "replace")
        lines[0] = lines[0][c1:]
        lines[-1] = lines[-1][:c2]
        return "\n".join(s.decode("utf-8", "replace") for s in lines)

    def fact(self, kind: str, start: ast.AST, end: ast.AST | None = None) -> None:
        end = end or start
        l1, c1 = start.lineno, start.col_offset
        l2 = getattr(end, "end_lineno", None) or l1
        c2 = getattr(end, "end_col_offset", None)
        if c2 is None:
            c2 = c1
        line, column = self.position(l1, c1)
        end_line, end_column = self.position(l2, c2)
        detail = _shorten(self.segment(l1, c1, l2, c2))
        self.facts.add(SourceFact(kind, self.src.path, line, column, end_line, end_column,
                                  detail, self.qualname))

    def run(self) -> set:
        self.compute_env(self.param_kinds())
        self.memo = {}
        self.memo_enabled = True
        if self.unit.is_root:
            self.param_facts()
        for stmt in self.fdef.body:
            self.visit(stmt)
        return self.facts

    def visit(self, node: ast.AST) -> None:
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is not None:
            method(node)
        else:
            self.generic_visit(node)

    def generic_visit(self, node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, _FUNC_SCOPES):
                self.visit(child)

    def visit_suppressed(self, node: ast.AST) -> None:
        self.suppress += 1
        try:
            self.visit(node)
        finally:
            self.suppress -= 1

    def branch_facts(self, test: ast.AST, loop: bool = False) -> None:
        deps = self.truth(test)
        if "size" in deps and loop:
            # ``while i < x.size(0)``: unrolled to the example's trip count, and every
            # test converts a traced size to bool (TracerWarning), so both rules apply
            self.fact("shape-loop", test)
        if deps & {"data", "size"}:
            self.fact("tensor-branch", test)
        if "meta" in deps:
            self.fact("metadata-branch", test)
        if "training" in deps:
            self.fact("training-branch", test)

    def visit_test(self, test: ast.AST, loop: bool = False) -> None:
        if not self.suppress:
            self.branch_facts(test, loop)
        self.visit_suppressed(test)

    def visit_If(self, node: ast.If) -> None:
        self.visit_test(node.test)
        for stmt in node.body + node.orelse:
            self.visit(stmt)

    def visit_While(self, node: ast.While) -> None:
        self.visit_test(node.test, loop=True)
        for stmt in node.body + node.orelse:
            self.visit(stmt)

    def visit_Assert(self, node: ast.Assert) -> None:
        self.visit_test(node.test)
        if node.msg is not None:
            self.visit(node.msg)

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self.visit_test(node.test)
        self.visit(node.body)
        self.visit(node.orelse)

    def _loop_header_facts(self, iter_node: ast.AST, start: ast.AST | None) -> None:
        header_start = start or iter_node
        if isinstance(iter_node, ast.Call) and self.canonical(iter_node.func)[0] == \
                "builtins.range":
            if any(self.kinds(a) & _SIZE for a in iter_node.args):
                self.fact("shape-loop", header_start, iter_node)
        elif _T in self.kinds(iter_node) and not self._type_checked(iter_node):
            # ``for row in x`` / ``for row in x.t()``; zip/enumerate/list(...) over a
            # tensor are reported at the call (visit_Call)
            self.fact("tensor-iteration", header_start, iter_node)

    def _type_checked(self, node: ast.AST) -> bool:
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

    def visit_For(self, node: ast.For) -> None:
        self._loop_header_facts(node.iter, node)
        self.visit(node.iter)
        self.visit(node.target)
        for stmt in node.body + node.orelse:
            self.visit(stmt)

    visit_AsyncFor = visit_For

    def _visit_comp(self, node: ast.AST) -> None:
        for gen in node.generators:  # type: ignore[attr-defined]
            self._loop_header_facts(gen.iter, None)
            self.visit(gen.iter)
            for cond in gen.ifs:
                self.visit_test(cond)
        if isinstance(node, ast.DictComp):
            self.visit(node.key)
            self.visit(node.value)
        else:
            self.visit(node.elt)  # type: ignore[attr-defined]

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _visit_comp

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        if not self.suppress:
            deps = set().union(*(self.truth(v) for v in node.values[:-1]))
            if deps & {"data", "size"}:
                self.fact("tensor-branch", node)
        for v in node.values[:-1]:
            self.visit_suppressed(v)
        self.visit(node.values[-1])

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if isinstance(node.op, ast.Not):
            if not self.suppress and self.truth(node.operand) & {"data", "size"}:
                self.fact("tensor-branch", node)
            self.visit_suppressed(node.operand)
        else:
            self.visit(node.operand)

    def _self_rooted(self, node: ast.AST) -> bool:
        if not isinstance(node, (ast.Attribute, ast.Subscript)):
            return False
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        return self.is_self(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        if any(self._self_rooted(t) for t in node.targets):
            self.fact("side-effect", node)
        if any(isinstance(t, (ast.Tuple, ast.List)) for t in node.targets) and \
                _T in self.kinds(node.value) and not isinstance(node.value, (ast.Tuple,
                                                                             ast.List)) \
                and not self._type_checked(node.value):
            self.fact("tensor-iteration", node)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if self._self_rooted(node.target):
            self.fact("side-effect", node)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None and self._self_rooted(node.target):
            self.fact("side-effect", node)
        if node.value is not None:
            self.visit(node.value)

    def visit_Delete(self, node: ast.Delete) -> None:
        if any(self._self_rooted(t) for t in node.targets):
            self.fact("side-effect", node)
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        self.fact("side-effect", node)

    visit_Nonlocal = visit_Global

    def visit_Return(self, node: ast.Return) -> None:
        if self.unit.is_root and node.value is not None:
            if isinstance(node.value, (ast.List, ast.ListComp)):
                self.fact("list-output", node)
            elif isinstance(node.value, (ast.Dict, ast.DictComp)):
                self.fact("dict-output", node)
            elif _non_tensor_literal(node.value):
                self.fact("dict-output", node)
        elif self.unit.is_root and node.value is None:
            self.fact("dict-output", node)  # returns nothing: trace has no output
        self.generic_visit(node)

    def visit_Starred(self, node: ast.Starred) -> None:
        if isinstance(node.ctx, ast.Load) and _T in self.kinds(node.value) \
                and not self._type_checked(node.value):
            # ``f(*x)``, ``zip(*x)``, ``[*x]``: Python sizes the tensor with len(), then
            # iterates it (two TracerWarnings)
            self.fact("tensor-iteration", node)
            self.fact("len-of-tensor", node)
        self.visit(node.value)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load) and node.id not in self.locals \
                and node.id != self.self_name:
            found, obj = self.resolve_global(node.id)
            if found and isinstance(obj, torch.Tensor):
                self.fact("global-tensor", node)

    # ------------------------------------------------------------------ calls
    def visit_Call(self, node: ast.Call) -> None:
        f = node.func
        canon, obj = self.canonical(f)
        suppress_args = False
        receiver = f.value if isinstance(f, ast.Attribute) else None
        rk = self.kinds(receiver) if receiver is not None and not self.is_self(receiver) \
            else _E
        # tensor methods
        if receiver is not None and rk & _DATA and canon is None:
            if f.attr in ("item", "tolist"):
                self.fact("tensor-to-number", node)
            elif f.attr == "numpy":
                self.fact("numpy", node)
            elif f.attr in _RANDOM_METHODS:
                self.fact("random-op", node)
        if canon is not None:
            suppress_args = self._canonical_facts(canon, obj, node)
        self._side_effect_call(node, canon, obj, receiver, rk)
        self._traverse_call(node, canon, obj)
        self.visit(f)
        for arg in node.args:
            if suppress_args:
                self.visit_suppressed(arg)
            else:
                self.visit(arg)
        for kw in node.keywords:
            self.visit(kw.value)

    def _canonical_facts(self, canon: str, obj: Any, node: ast.Call) -> bool:
        args = node.args
        first = self.kinds(args[0]) if args else _E
        if canon.startswith("builtins."):
            name = canon[len("builtins."):]
            if name == "len" and _T in first and not self._type_checked(args[0]):
                self.fact("len-of-tensor", node)
            elif name in ("int", "float", "complex") and first & (_DATA | _SIZE):
                self.fact("tensor-to-number", node)
            elif name == "bool":
                if not self.suppress and args and self.truth(args[0]) & {"data", "size"}:
                    self.fact("tensor-branch", node)
                return True
            elif name in ("max", "min"):
                # Python compares the arguments (or the items of the one iterable)
                if len(args) == 1 and not isinstance(args[0], ast.Starred):
                    deps = _cats(_elem(self.kinds(args[0])))
                else:
                    deps = set().union(*(_cats(self.kinds(a)) for a in args))
                if not self.suppress and deps & {"data", "size"}:
                    self.fact("tensor-branch", node)
                if len(args) == 1 and _T in self.kinds(args[0]):
                    self.fact("tensor-iteration", node)
                return True
            elif name in ("any", "all") and len(args) == 1:
                arg = args[0]
                inner = arg.elt if isinstance(arg, (ast.GeneratorExp, ast.ListComp)) else None
                deps = self.truth(inner) if inner is not None else _cats(
                    _elem(self.kinds(arg)))
                if not self.suppress and deps & {"data", "size"}:
                    self.fact("tensor-branch", node)
            elif name == "print":
                self.fact("side-effect", node)
            elif name == "setattr" and args and self.is_self(args[0]):
                self.fact("side-effect", node)
            if canon in _ITERATING_BUILTINS:
                # star-unpacked tensors are reported at the ``*x`` (visit_Starred)
                tensors = [a for a in args
                           if not isinstance(a, ast.Starred) and _T in self.kinds(a)]
                if tensors:
                    self.fact("tensor-iteration", node)
                    if canon in _LENGTH_HINT_BUILTINS:
                        self.fact("len-of-tensor", node)  # list()/tuple() call len() first
            return False
        if canon.startswith("math."):
            if self._args_kinds(node) & (_DATA | _SIZE):
                self.fact("tensor-to-number", node)
            return False
        if canon.startswith("numpy."):
            if self._args_kinds(node) & (_DATA | _SIZE | {_TL}):
                self.fact("numpy", node)
            return False
        if canon in _CONSTRUCTORS:
            data = args[0] if args else next(
                (k.value for k in node.keywords if k.arg == "data"), None)
            if data is not None and self.kinds(data) & (_DATA | _SIZE | {_NUM, _TL}):
                self.fact("tensor-constructor", node)
                if self._converts_elements(data, node):
                    self.fact("tensor-to-number", node)
            return False
        if canon in _RANDOM_FUNCS:
            self.fact("random-op", node)
        elif canon in _DROPOUT_F or canon in _DROPOUT_T:
            training = args[2] if len(args) > 2 else next(
                (k.value for k in node.keywords if k.arg in ("training", "train")), None)
            default_on = canon in _DROPOUT_F
            if (training is None and default_on) or (
                    isinstance(training, ast.Constant) and training.value is True):
                self.fact("random-op", node)
        elif canon == _FORK:
            self._fork_facts(node)
        elif canon.startswith("logging.") and canon.rsplit(".", 1)[-1] in _LOG_METHODS:
            self.fact("side-effect", node)
        return False

    def _converts_elements(self, data: ast.AST, node: ast.Call) -> bool:
        """``torch.tensor([t.sum()])`` / ``torch.tensor([x.size(0)], dtype=torch.float)``:
        the elements of a list display are turned into Python numbers one by one
        (a 0-dim tensor always; a traced size when a floating dtype is asked for)."""
        elements = []
        stack = [data]
        while stack:
            cur = stack.pop()
            if isinstance(cur, (ast.List, ast.Tuple)):
                stack.extend(cur.elts)
            elif cur is not data:
                elements.append(cur)
        if not elements:
            return False
        kinds = frozenset().union(*(self.kinds(e) for e in elements))
        if kinds & _DATA:
            return True
        if kinds & _SIZE:
            dtype = next((k.value for k in node.keywords if k.arg == "dtype"), None)
            name = _dotted(dtype) if dtype is not None else None
            return bool(name) and any(t in name[-1] for t in ("float", "double", "half",
                                                              "bfloat", "complex"))
        return False

    def _side_effect_call(self, node: ast.Call, canon: str | None, obj: Any,
                          receiver: ast.AST | None, rk: frozenset) -> None:
        f = node.func
        if receiver is None or not isinstance(f, ast.Attribute):
            return
        attr = f.attr
        if attr in _MUTATORS and not rk & _DATA:
            if isinstance(receiver, ast.Attribute) and self.is_self(receiver.value):
                info = self.owner.lookup(receiver.attr)
                if info[0] not in ("tensor", "training"):
                    self.fact("side-effect", node)
                    return
            elif self._self_rooted(receiver):
                self.fact("side-effect", node)
                return
            elif isinstance(receiver, ast.Name) and receiver.id not in self.locals:
                found, value = self.resolve_global(receiver.id)
                if found and isinstance(value, (list, dict, set, collections.deque)):
                    self.fact("side-effect", node)
                    return
        if attr in _LOG_METHODS or attr == "log":
            if canon is not None and canon.startswith("logging."):
                return  # reported with the canonical facts
            target: Any = None
            if isinstance(receiver, ast.Attribute) and self.is_self(receiver.value):
                target = self.owner.lookup(receiver.attr)[1]
            elif isinstance(receiver, ast.Name) and receiver.id not in self.locals:
                target = self.resolve_global(receiver.id)[1]
            if isinstance(target, (logging.Logger, logging.LoggerAdapter)):
                self.fact("side-effect", node)
            elif target is None and attr in _LOG_METHODS and not rk & _DATA:
                parts = _dotted(receiver)
                if parts and "log" in parts[-1].lower():
                    self.fact("side-effect", node)

    def _traverse_call(self, node: ast.Call, canon: str | None, obj: Any) -> None:
        if canon == _FORK:
            callee = node.args[0] if node.args else None
            target = self.resolve_callable(callee) if isinstance(
                callee, (ast.Name, ast.Attribute, ast.Subscript)) else None
            if target is not None:
                self._record_call(target, node.args[1:], node.keywords)
            return
        target = self.resolve_callable(node.func)
        fn = target[1] if target is not None and target[0] in ("method", "function") else obj
        mod = _modifier(fn) if fn is not None and not isinstance(fn, list) else None
        if mod:
            self.fact("jit-%s-call" % mod, node)
            return
        if target is not None:
            self._record_call(target, node.args, node.keywords)

    # ------------------------------------------------------------------ fork/wait
    def parent(self, node: ast.AST) -> ast.AST | None:
        return self.parents.get(id(node))

    def _is_wait_of(self, call: ast.AST, name: str) -> bool:
        if not isinstance(call, ast.Call):
            return False
        if self.canonical(call.func)[0] == _WAIT:
            return bool(call.args) and isinstance(call.args[0], ast.Name) \
                and call.args[0].id == name
        return (isinstance(call.func, ast.Attribute) and call.func.attr == "wait"
                and isinstance(call.func.value, ast.Name) and call.func.value.id == name)

    def innermost_loop(self, node: ast.AST) -> ast.AST | None:
        prev, cur = node, self.parent(node)
        skip = None
        while cur is not None and cur is not self.fdef:
            if isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                return None
            if isinstance(cur, _LOOPS) and any(prev is s for s in cur.body):
                return cur
            if isinstance(cur, ast.comprehension):
                owner = self.parent(cur)
                if prev is cur.iter and owner is not None and owner.generators[0] is cur:
                    skip = owner
            if isinstance(cur, _COMPS) and cur is not skip:
                return cur
            prev, cur = cur, self.parent(cur)
        return None

    def _next_statement(self, stmt: ast.AST) -> ast.AST | None:
        parent = self.parent(stmt)
        for field in ("body", "orelse", "finalbody"):
            block = getattr(parent, field, None)
            if isinstance(block, list):
                for i, s in enumerate(block):
                    if s is stmt:
                        return block[i + 1] if i + 1 < len(block) else None
        return None

    def _fork_facts(self, node: ast.Call) -> None:
        parent = self.parent(node)
        loop = self.innermost_loop(node)
        if isinstance(parent, ast.Call) and self.canonical(parent.func)[0] == _WAIT \
                and parent.args and parent.args[0] is node:
            self.fact("fork-immediate-wait", node)
            if loop is not None:
                self.fact("fork-same-iteration", node)
            return
        if isinstance(parent, ast.Expr):
            self.fact("fork-never-waited", node)
            return
        name = None
        if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and \
                isinstance(parent.targets[0], ast.Name):
            name = parent.targets[0].id
        elif isinstance(parent, ast.AnnAssign) and isinstance(parent.target, ast.Name):
            name = parent.target.id
        if name is None:
            return
        nxt = self._next_statement(parent)
        if nxt is not None and any(self._is_wait_of(n, name) for n in _walk_scope(nxt)):
            # ``fa = fork(..); fb = fork(..); wait(fa) + wait(fb)``: the tasks overlap
            # each other, so only a statement waiting for nothing but ``name`` counts
            others = {n.args[0].id for n in _walk_scope(nxt)
                      if isinstance(n, ast.Call) and self.canonical(n.func)[0] == _WAIT
                      and n.args and isinstance(n.args[0], ast.Name)} - {name}
            if not others:
                self.fact("fork-immediate-wait", node)
        after = (parent.end_lineno, parent.end_col_offset)
        used = False
        for n in _walk_scope(self.fdef, nested=True):
            if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load):
                if (n.lineno, n.col_offset) >= after or (
                        loop is not None and self.innermost_loop(n) is loop):
                    used = True
                    break
        if not used:
            self.fact("fork-never-waited", node)
            return
        if loop is not None:
            for n in _walk_scope(loop):
                if self._is_wait_of(n, name) and self.innermost_loop(n) is loop:
                    self.fact("fork-same-iteration", node)
                    break


# --------------------------------------------------------------------------- entry point
def source_facts(obj: Any) -> list[SourceFact]:
    """Tracing pitfalls visible in the source of ``obj`` (an nn.Module or a function).

    ``forward`` and everything it calls in user code is read, never run. A
    ScriptModule/ScriptFunction is read from its original Python source when
    that can be found; a loaded or traced archive gives ``[]``.
    """
    engine = _Engine(root_scripted=isinstance(obj, (torch.jit.ScriptModule,
                                                   torch.jit.ScriptFunction)))
    if isinstance(obj, torch.jit.ScriptFunction):
        original = getattr(obj, "_torchdynamo_inline", None)
        if original is None:
            return []
        obj = original
    if isinstance(obj, torch.nn.Module):
        cls = _py_class(obj)
        if cls is None or _is_library_class(cls):
            return []
        try:
            forward = inspect.getattr_static(cls, "forward")
        except AttributeError:
            return []
        if isinstance(forward, staticmethod):
            engine.add(forward.__func__, engine.owner(obj), False, True, None)
        elif isinstance(forward, types.FunctionType):
            engine.add(forward, engine.owner(obj), True, True, None)
        else:
            return []
    elif inspect.ismethod(obj) and isinstance(obj.__self__, torch.nn.Module):
        engine.add(obj.__func__, engine.owner(obj.__self__), True, True, None)
    elif isinstance(obj, types.FunctionType):
        engine.add(obj, None, False, True, None)
    else:
        return []
    return engine.run()
