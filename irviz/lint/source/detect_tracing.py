"""IRV1xx in the source: Python that ``torch.jit.trace`` runs once and freezes.

A trace records tensor operations only. Each check here finds a place where Python
itself computes with what a tensor holds (a branch, a loop bound, a number, a NumPy
array), reads state the trace cannot see (globals, ``self.training``, defaults) or
does something the trace drops (side effects, random draws, non-tensor outputs), and
reports the rule that names it. What a name holds is :mod:`.inference`'s answer.
"""
from __future__ import annotations

import ast
import collections
import logging
from typing import TYPE_CHECKING, Any

import torch

from ..rules.tracing import (DefaultArgBaked, DictOrNonTensorOutput, GlobalTensorCaptured,
                             LenOfTensor, ListOutput, LoopUnrolledOnShape,
                             MetadataBranchBaked, NonTensorInput, NumpyInTrace,
                             PythonSideEffectInForward, RandomOpInTrace,
                             TensorConstructorConstant, TensorIteration, TensorToPythonBool,
                             TensorToPythonNumber, TrainingFlagBranch)
from .inference import (CONSTRUCTORS, DATA, DROPOUT_FUNCTIONAL, DROPOUT_TORCH, NOTHING, NUM,
                        RANDOM_FUNCS, SIZED, TENSOR, TLIST, annotation_class, categories,
                        dotted, elements_of, is_nontensor_literal)

if TYPE_CHECKING:
    from .checker import FunctionChecker

#: the compilation whose code these checks judge: not the body of ``if
#: torch.jit.is_scripting():``, which a trace never runs (see :mod:`.checker`)
MODES = ("trace",)
#: the rules this family reports
RULES = (TensorToPythonBool, MetadataBranchBaked, LoopUnrolledOnShape, TensorIteration,
         LenOfTensor, TensorToPythonNumber, NumpyInTrace, TensorConstructorConstant,
         GlobalTensorCaptured, DefaultArgBaked, NonTensorInput, TrainingFlagBranch,
         RandomOpInTrace, PythonSideEffectInForward, ListOutput, DictOrNonTensorOutput)

_RANDOM_METHODS = {"bernoulli", "bernoulli_", "uniform_", "normal_", "random_",
                   "exponential_", "geometric_", "log_normal_", "cauchy_", "multinomial"}
_MUTATORS = {"append", "extend", "insert", "pop", "remove", "clear", "update", "add",
             "setdefault", "popitem", "discard", "appendleft", "extendleft"}
_LOG_METHODS = {"debug", "info", "warning", "warn", "error", "exception", "critical", "fatal"}
_LENGTH_HINT_BUILTINS = {"builtins.list", "builtins.tuple", "builtins.sorted"}
_ITERATING_BUILTINS = {"builtins." + n for n in (
    "list", "tuple", "zip", "enumerate", "sorted", "reversed", "iter", "map", "filter",
    "set", "sum", "any", "all", "dict", "frozenset")}
#: what a truth value depending on these makes the trace bake in
_DATA_OR_SIZE = {"data", "size"}


# --------------------------------------------------------------------------- parameters
def baked_parameters(c: FunctionChecker, fdef: ast.AST) -> None:
    """The model's own parameters: a default or a non-tensor argument is a constant."""
    if not c.infer.unit.is_root:
        return
    for a, default in c.infer.parameters():
        end = default if default is not None else a
        if default is not None:
            c.report(DefaultArgBaked, a, end, declaration=True)
        cls = annotation_class(a.annotation)
        if cls == "nontensor" or (cls is None and is_nontensor_literal(default)):
            c.report(NonTensorInput, a, end, declaration=True)


# --------------------------------------------------------------------------- truth tests
def _tested(c: FunctionChecker, test: ast.AST, loop: bool = False) -> None:
    if c.inside_test or c.infer.under_trace(test) is not None:
        return  # a guard such as ``torch.jit.is_tracing()`` has one value in every trace
    deps = c.infer.truth(test)
    if "size" in deps and loop:
        # ``while i < x.size(0)``: unrolled to the example's trip count, and every
        # test converts a traced size to bool (TracerWarning), so both rules apply
        c.report(LoopUnrolledOnShape, test)
    if deps & _DATA_OR_SIZE:
        c.report(TensorToPythonBool, test)
    if "meta" in deps:
        c.report(MetadataBranchBaked, test)
    if "training" in deps:
        c.report(TrainingFlagBranch, test)


def branch_test(c: FunctionChecker, node: ast.If | ast.Assert | ast.IfExp) -> None:
    _tested(c, node.test)


def while_test(c: FunctionChecker, node: ast.While) -> None:
    _tested(c, node.test, loop=True)


def boolean_operands(c: FunctionChecker, node: ast.BoolOp) -> None:
    """``a and b``: Python tests the truth of every operand but the last (of those a
    trace evaluates: not what follows ``torch.jit.is_tracing() or``)."""
    if not c.inside_test:
        tested = c.infer.traced_operands(node)
        if len(tested) == len(node.values):
            tested = tested[:-1]
        deps = set().union(*(c.infer.truth(v) for v in tested))
        if deps & _DATA_OR_SIZE:
            c.report(TensorToPythonBool, node)


def negation(c: FunctionChecker, node: ast.UnaryOp) -> None:
    if isinstance(node.op, ast.Not) and not c.inside_test \
            and c.infer.truth(node.operand) & _DATA_OR_SIZE:
        c.report(TensorToPythonBool, node)


# --------------------------------------------------------------------------- loops
def _loop_header(c: FunctionChecker, iter_node: ast.AST, start: ast.AST | None) -> None:
    infer = c.infer
    header_start = start or iter_node
    if isinstance(iter_node, ast.Call) and infer.canonical(iter_node.func)[0] == \
            "builtins.range":
        if any(infer.kinds(a) & SIZED for a in iter_node.args):
            c.report(LoopUnrolledOnShape, header_start, iter_node)
    elif TENSOR in infer.kinds(iter_node) and not infer.type_checked(iter_node):
        # ``for row in x`` / ``for row in x.t()``; zip/enumerate/list(...) over a
        # tensor are reported at the call (builtin_call)
        c.report(TensorIteration, header_start, iter_node)


def for_header(c: FunctionChecker, node: ast.For | ast.AsyncFor) -> None:
    _loop_header(c, node.iter, node)


def comprehension(c: FunctionChecker, node: ast.AST) -> None:
    for gen in node.generators:  # type: ignore[attr-defined]
        _loop_header(c, gen.iter, None)
        for cond in gen.ifs:
            _tested(c, cond)


# --------------------------------------------------------------------------- statements
def assignment(c: FunctionChecker, node: ast.Assign) -> None:
    infer = c.infer
    if any(infer.self_rooted(t) for t in node.targets):
        c.report(PythonSideEffectInForward, node)
    if any(isinstance(t, (ast.Tuple, ast.List)) for t in node.targets) and \
            TENSOR in infer.kinds(node.value) and not isinstance(node.value, (ast.Tuple,
                                                                             ast.List)) \
            and not infer.type_checked(node.value):
        c.report(TensorIteration, node)  # ``a, b = x`` iterates x


def state_write(c: FunctionChecker, node: ast.AugAssign | ast.AnnAssign | ast.Delete) -> None:
    """``self.n += 1``, ``self.cache: T = x``, ``del self.buf[0]``: the trace drops it."""
    if isinstance(node, ast.Delete):
        targets = node.targets
    elif isinstance(node, ast.AnnAssign) and node.value is None:
        return  # a declaration only
    else:
        targets = [node.target]
    if any(c.infer.self_rooted(t) for t in targets):
        c.report(PythonSideEffectInForward, node)


def global_statement(c: FunctionChecker, node: ast.Global | ast.Nonlocal) -> None:
    c.report(PythonSideEffectInForward, node, declaration=True)


def _non_tensor_literal(value: ast.AST) -> bool:
    """A number, string, bool or None returned (alone or inside a returned tuple)."""
    if isinstance(value, ast.Constant):
        return True
    if isinstance(value, ast.Tuple):
        return any(isinstance(e, ast.Constant) for e in value.elts)
    return False


def returned_output(c: FunctionChecker, node: ast.Return) -> None:
    if not c.infer.unit.is_root:
        return
    if node.value is None:
        c.report(DictOrNonTensorOutput, node)  # returns nothing: trace has no output
    elif isinstance(node.value, (ast.List, ast.ListComp)):
        c.report(ListOutput, node)
    elif isinstance(node.value, (ast.Dict, ast.DictComp)):
        c.report(DictOrNonTensorOutput, node)
    elif _non_tensor_literal(node.value):
        c.report(DictOrNonTensorOutput, node)


# --------------------------------------------------------------------------- expressions
def star_unpacking(c: FunctionChecker, node: ast.Starred) -> None:
    if isinstance(node.ctx, ast.Load) and TENSOR in c.infer.kinds(node.value) \
            and not c.infer.type_checked(node.value):
        # ``f(*x)``, ``zip(*x)``, ``[*x]``: Python sizes the tensor with len(), then
        # iterates it (two TracerWarnings)
        c.report(TensorIteration, node)
        c.report(LenOfTensor, node)


def global_tensor(c: FunctionChecker, node: ast.Name) -> None:
    infer = c.infer
    if isinstance(node.ctx, ast.Load) and node.id not in infer.locals \
            and node.id != infer.self_name:
        found, obj = infer.resolve_global(node.id)
        if found and isinstance(obj, torch.Tensor):
            c.report(GlobalTensorCaptured, node)


# --------------------------------------------------------------------------- calls
def _receiver_kinds(c: FunctionChecker, node: ast.Call) -> frozenset:
    """Kinds of ``r`` in ``r.method(...)`` (nothing for ``self.method(...)``)."""
    f = node.func
    if isinstance(f, ast.Attribute) and not c.infer.is_self(f.value):
        return c.infer.kinds(f.value)
    return NOTHING


def tensor_method_call(c: FunctionChecker, node: ast.Call) -> None:
    f = node.func
    if not isinstance(f, ast.Attribute) or c.infer.canonical(f)[0] is not None \
            or not _receiver_kinds(c, node) & DATA:
        return
    if f.attr in ("item", "tolist"):
        c.report(TensorToPythonNumber, node)
    elif f.attr == "numpy":
        c.report(NumpyInTrace, node)
    elif f.attr in _RANDOM_METHODS:
        c.report(RandomOpInTrace, node)


def builtin_call(c: FunctionChecker, node: ast.Call) -> None:
    infer = c.infer
    canon = infer.canonical(node.func)[0]
    if canon is None or not canon.startswith("builtins."):
        return
    args = node.args
    first = infer.kinds(args[0]) if args else NOTHING
    name = canon[len("builtins."):]
    if name == "len" and TENSOR in first and not infer.type_checked(args[0]):
        c.report(LenOfTensor, node)
    elif name in ("int", "float", "complex") and first & (DATA | SIZED):
        c.report(TensorToPythonNumber, node)
    elif name == "bool":
        if not c.inside_test and args and infer.truth(args[0]) & _DATA_OR_SIZE:
            c.report(TensorToPythonBool, node)
        return
    elif name in ("max", "min"):
        # Python compares the arguments (or the items of the one iterable)
        if len(args) == 1 and not isinstance(args[0], ast.Starred):
            deps = categories(elements_of(infer.kinds(args[0])))
        else:
            deps = set().union(*(categories(infer.kinds(a)) for a in args))
        if not c.inside_test and deps & _DATA_OR_SIZE:
            c.report(TensorToPythonBool, node)
        if len(args) == 1 and TENSOR in infer.kinds(args[0]):
            c.report(TensorIteration, node)
        return
    elif name in ("any", "all") and len(args) == 1:
        arg = args[0]
        inner = arg.elt if isinstance(arg, (ast.GeneratorExp, ast.ListComp)) else None
        deps = infer.truth(inner) if inner is not None else categories(
            elements_of(infer.kinds(arg)))
        if not c.inside_test and deps & _DATA_OR_SIZE:
            c.report(TensorToPythonBool, node)
    elif name == "print":
        c.report(PythonSideEffectInForward, node)
    elif name == "setattr" and args and infer.is_self(args[0]):
        c.report(PythonSideEffectInForward, node)
    if canon in _ITERATING_BUILTINS:
        # star-unpacked tensors are reported at the ``*x`` (star_unpacking)
        tensors = [a for a in args
                   if not isinstance(a, ast.Starred) and TENSOR in infer.kinds(a)]
        if tensors:
            c.report(TensorIteration, node)
            if canon in _LENGTH_HINT_BUILTINS:
                c.report(LenOfTensor, node)  # list()/tuple() call len() first


def math_or_numpy_call(c: FunctionChecker, node: ast.Call) -> None:
    canon = c.infer.canonical(node.func)[0]
    if canon is None:
        return
    if canon.startswith("math."):
        if c.infer.args_kinds(node) & (DATA | SIZED):
            c.report(TensorToPythonNumber, node)
    elif canon.startswith("numpy."):
        if c.infer.args_kinds(node) & (DATA | SIZED | {TLIST}):
            c.report(NumpyInTrace, node)


def _converts_elements(c: FunctionChecker, data: ast.AST, node: ast.Call) -> bool:
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
    kinds = frozenset().union(*(c.infer.kinds(e) for e in elements))
    if kinds & DATA:
        return True
    if kinds & SIZED:
        dtype = next((k.value for k in node.keywords if k.arg == "dtype"), None)
        name = dotted(dtype) if dtype is not None else None
        return bool(name) and any(t in name[-1] for t in ("float", "double", "half",
                                                          "bfloat", "complex"))
    return False


def constructor_call(c: FunctionChecker, node: ast.Call) -> None:
    if c.infer.canonical(node.func)[0] not in CONSTRUCTORS:
        return
    data = node.args[0] if node.args else next(
        (k.value for k in node.keywords if k.arg == "data"), None)
    if data is not None and c.infer.kinds(data) & (DATA | SIZED | {NUM, TLIST}):
        c.report(TensorConstructorConstant, node)
        if _converts_elements(c, data, node):
            c.report(TensorToPythonNumber, node)


def random_call(c: FunctionChecker, node: ast.Call) -> None:
    canon = c.infer.canonical(node.func)[0]
    if canon in RANDOM_FUNCS:
        c.report(RandomOpInTrace, node)
    elif canon in DROPOUT_FUNCTIONAL or canon in DROPOUT_TORCH:
        args = node.args
        training = args[2] if len(args) > 2 else next(
            (k.value for k in node.keywords if k.arg in ("training", "train")), None)
        default_on = canon in DROPOUT_FUNCTIONAL
        if (training is None and default_on) or (
                isinstance(training, ast.Constant) and training.value is True):
            c.report(RandomOpInTrace, node)


def logging_call(c: FunctionChecker, node: ast.Call) -> None:
    canon = c.infer.canonical(node.func)[0]
    if canon is not None and canon.startswith("logging.") \
            and canon.rsplit(".", 1)[-1] in _LOG_METHODS:
        c.report(PythonSideEffectInForward, node)


def mutation_or_log_call(c: FunctionChecker, node: ast.Call) -> None:
    """``self.history.append(x)``, ``CACHE.update(...)``, ``self.logger.info(...)``."""
    infer = c.infer
    f = node.func
    if not isinstance(f, ast.Attribute):
        return
    receiver = f.value
    rk = _receiver_kinds(c, node)
    attr = f.attr
    if attr in _MUTATORS and not rk & DATA:
        if isinstance(receiver, ast.Attribute) and infer.is_self(receiver.value):
            info = infer.owner.lookup(receiver.attr)
            if info[0] not in ("tensor", "training"):
                c.report(PythonSideEffectInForward, node)
                return
        elif infer.self_rooted(receiver):
            c.report(PythonSideEffectInForward, node)
            return
        elif isinstance(receiver, ast.Name) and receiver.id not in infer.locals:
            found, value = infer.resolve_global(receiver.id)
            if found and isinstance(value, (list, dict, set, collections.deque)):
                c.report(PythonSideEffectInForward, node)
                return
    if attr in _LOG_METHODS or attr == "log":
        canon = infer.canonical(f)[0]
        if canon is not None and canon.startswith("logging."):
            return  # reported by logging_call
        target: Any = None
        if isinstance(receiver, ast.Attribute) and infer.is_self(receiver.value):
            target = infer.owner.lookup(receiver.attr)[1]
        elif isinstance(receiver, ast.Name) and receiver.id not in infer.locals:
            target = infer.resolve_global(receiver.id)[1]
        if isinstance(target, (logging.Logger, logging.LoggerAdapter)):
            c.report(PythonSideEffectInForward, node)
        elif target is None and attr in _LOG_METHODS and not rk & DATA:
            parts = dotted(receiver)
            if parts and "log" in parts[-1].lower():
                c.report(PythonSideEffectInForward, node)


FUNCTION_CHECKS = (baked_parameters,)
NODE_CHECKS = {
    ast.If: (branch_test,), ast.Assert: (branch_test,), ast.IfExp: (branch_test,),
    ast.While: (while_test,),
    ast.BoolOp: (boolean_operands,), ast.UnaryOp: (negation,),
    ast.For: (for_header,), ast.AsyncFor: (for_header,),
    ast.ListComp: (comprehension,), ast.SetComp: (comprehension,),
    ast.GeneratorExp: (comprehension,), ast.DictComp: (comprehension,),
    ast.Assign: (assignment,), ast.AugAssign: (state_write,), ast.AnnAssign: (state_write,),
    ast.Delete: (state_write,), ast.Global: (global_statement,),
    ast.Nonlocal: (global_statement,), ast.Return: (returned_output,),
    ast.Starred: (star_unpacking,), ast.Name: (global_tensor,),
    ast.Call: (tensor_method_call, builtin_call, math_or_numpy_call, constructor_call,
               random_call, logging_call, mutation_or_log_call),
}
