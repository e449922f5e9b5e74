"""From TorchScript to ``torch.export``: the conversion ``irviz migrate`` checks.

TorchScript is deprecated; its users own archives. An archive (or a ScriptModule /
ScriptFunction) goes through torch's ``TS2EPConverter``; a Python model through
``torch.export`` (:mod:`irviz.frontends.export`, non-strict first). What this module adds:

* the converter rewrites the graph it is given in place (ONNX function substitution,
  attribute lifting): it always gets an *independent copy* (saved and loaded again), never
  the user's module;
* before converting, ``explain`` lists the nodes the converter has no rule for: each
  becomes a :class:`Blocker` at the user's line (the archive's debug info keeps it) with the
  rewrite irviz's IRV5xx rules suggest;
* a failure inside the converter (an ``IndexError`` from its output handling, say) is told
  with the node it was converting, found by following ``convert_node``;
* forks: the converter has no rule for ``prim::fork``. ``inline_forks`` makes a serial copy
  (each task's subgraph inlined at its fork, ``wait`` dropped, the futures' types made
  plain) that the converter may take; the parallelism is then lost, and irviz says so;
* it never freezes a size to make a loop convert: a loop over ``x.size(0)`` made constant
  converts and is silently wrong at another batch size.
"""
from __future__ import annotations

import contextlib
import io
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterator

import torch

from ..errors import CaptureError
from ..location import ArchiveDebugInfo, Location, node_locations
from ..paths import display_path
from .inputs import ExampleInputs
from .records import Target
from .user_code import quiet_output

__all__ = ["Blocker", "Conversion", "convert", "independent_copy", "inline_forks",
           "node_locations_in", "CONVERTER"]

CONVERTER = "TS2EPConverter"

#: what to do about a node the converter cannot take, by kind (IRV505's advice)
_HINTS = {
    "prim::Loop": ("a loop whose trip count is only known at run time (a size, a list's "
                   "length): export the Python model with torch.export.export (the loop is "
                   "unrolled for the example's length, and the program takes only that one), "
                   "or write it as scan(step, init, xs) "
                   "(torch._higher_order_ops.scan) so one program takes every length; never "
                   "replace the size by a constant, which converts and is wrong at another "
                   "size (IRV505, IRV502)"),
    "prim::fork": ("a fork: the converter has no rule for torch.jit.fork; --inline-forks "
                   "converts a serial copy (the parallelism is lost), or export the Python "
                   "model with the fork as a plain call (IRV505, IRV504)"),
    "aten::wait": "a wait on a fork's future: see the fork (--inline-forks)",
    "prim::If": ("an if on tensor data: write it with torch.cond(pred, true_fn, false_fn, "
                 "operands) in the Python model and export that (IRV501)"),
}
_DEFAULT_HINT = "export the Python model with torch.export.export instead (IRV505)"


@dataclass(frozen=True)
class Blocker:
    """A node the converter cannot convert, where it is and what to do."""

    kind: str
    #: the user's ``file:line:col`` (None when the archive kept no debug info)
    location: str | None
    #: the node's first IR line, for the record
    ir: str
    hint: str

    def to_dict(self) -> dict:
        return {"kind": self.kind, "location": self.location, "ir": self.ir,
                "hint": self.hint}


@dataclass
class Conversion:
    """What converting one target gave."""

    #: "TS2EPConverter" or "torch.export (strict=False)"
    method: str
    program: Any = None
    blockers: list[Blocker] = field(default_factory=list)
    #: why it did not convert, in irviz's words (None when it converted)
    error: str | None = None
    #: forks were inlined: the program runs their tasks one after another
    serial_forks: int = 0
    notes: list[str] = field(default_factory=list)


def independent_copy(compiled: Any) -> Any:
    """A copy of a ScriptModule / ScriptFunction that shares nothing with it (the converter
    rewrites its input's graphs)."""
    if isinstance(compiled, torch.jit.ScriptModule):
        buffer = io.BytesIO()
        torch.jit.save(compiled, buffer)
        buffer.seek(0)
        return torch.jit.load(buffer)
    return torch._C._create_function_from_graph(compiled.name, compiled.graph.copy())


def _plain_type(ty):
    """``Future[T]`` -> ``T``, inside lists, optionals and tuples too."""
    kind = ty.kind()
    if kind == "FutureType":
        return _plain_type(ty.getElementType())
    if kind == "ListType":
        return torch._C.ListType(_plain_type(ty.getElementType()))
    if kind == "OptionalType":
        return torch._C.OptionalType(_plain_type(ty.getElementType()))
    if kind == "TupleType":
        return torch._C.TupleType([_plain_type(e) for e in ty.elements()])
    return ty


def _values(block) -> Iterator:
    for node in block.nodes():
        yield from node.outputs()
        for inner in node.blocks():
            yield from inner.paramNode().outputs()
            yield from _values(inner)


def inline_forks(compiled: Any) -> int:
    """Make ``compiled`` (a copy: it is rewritten) serial: every call inlined, each fork's
    task inlined where it was forked, each ``wait`` the value itself. Returns how many forks
    were inlined. ``torch._C._jit_pass_inline_fork_wait`` alone leaves a list of futures
    typed as futures (``futures.append(fork(...))``), which no op then accepts."""
    graph = compiled.graph
    count = 0
    for _ in range(64):   # nested forks surface as their parents are inlined
        torch._C._jit_pass_inline(graph)
        forks = graph.findAllNodes("prim::fork", True)
        if not forks:
            break
        for node in forks:
            with graph.insert_point_guard(node):
                results = graph.insertGraph(node.g("Subgraph"), list(node.inputs()))
            node.output().replaceAllUsesWith(results[0])
            node.destroy()
            count += 1
    for wait in graph.findAllNodes("aten::wait", True):
        wait.output().replaceAllUsesWith(wait.input())
        wait.destroy()
    for value in _values(graph.block()) if hasattr(graph, "block") else ():
        if "Future" in value.type().annotation_str:
            value.setType(_plain_type(value.type()))
    for value in graph.inputs():
        if "Future" in value.type().annotation_str:
            value.setType(_plain_type(value.type()))
    return count


#: what may read a list whose length is fixed (anything else could change or keep it)
_LIST_READS = {"aten::len", "aten::__getitem__", "aten::stack", "aten::cat",
               "prim::ListUnpack"}


def fixed_length_lists(graph, locate=lambda node: None) -> list[tuple[str | None, int]]:
    """Lists whose length the program fixes: built empty (or from values) and appended to
    in straight-line code, then only read. Each becomes one ``ListConstruct`` of all its
    values, so ``len()`` of it is a constant and a loop over it has a known trip count
    (``futures = []``, one ``append`` per ensemble member, ``for fut in futures``: the
    converter refuses a loop over a list's length). This is not freezing a size: no input
    decides the length, the appends in the code do; a loop over ``x.size(0)`` is never
    touched. Returns ``(the list's location, its length)`` for each list rewritten."""
    rewritten = []
    for node in graph.findAllNodes("prim::ListConstruct", True):
        home = node.owningBlock()
        order = {n: i for i, n in enumerate(home.nodes())}

        def anchor(user, home=home):   # the node of ``home`` that holds ``user``
            while user is not None and user.owningBlock() != home:
                user = user.owningBlock().owningNode()
            return user

        uses = list(node.output().uses())
        appends = [u.user for u in uses if u.user.kind() == "aten::append" and u.offset == 0]
        reads = [u.user for u in uses if u.user not in appends]
        if not appends or any(a.owningBlock() != home or a.output().uses() for a in appends):
            continue
        last = max(order[a] for a in appends)
        if any(r.kind() not in _LIST_READS or order.get(anchor(r), -1) <= last
               for r in reads):
            continue
        appends.sort(key=lambda a: order[a])
        values = list(node.inputs()) + [a.inputsAt(1) for a in appends]
        full = graph.create("prim::ListConstruct", values)
        full.output().setType(node.output().type())
        full.insertAfter(appends[-1])
        for r in reads:
            r.replaceInputWith(node.output(), full.output())
        rewritten.append((locate(node) or locate(appends[0]), len(values)))
        for a in appends:
            a.destroy()
        node.destroy()
    if rewritten:
        torch._C._jit_pass_peephole_list_idioms(graph)   # len() of a ListConstruct
        torch._C._jit_pass_constant_propagation(graph)
    return rewritten


def _found(node, debug) -> str | None:
    """A node's ``path:line:col``: the user's when known (an archive's debug info keeps
    it), else the innermost."""
    source, user = node_locations(node, debug)
    return user or source


def _location(node, debug) -> str | None:
    found = _found(node, debug)
    if not found or found.count(":") < 2:
        return found
    path, line, col = Location.parse(found)
    return f"{display_path(path)}:{line}:{col}"


def _stack_trace(node, debug) -> str | None:
    """The node's user line as an FX ``stack_trace``: torch.export's re-trace carries a
    node's meta to the nodes it makes, so the exported program's ops keep the TorchScript
    lines they came from (the converter writes none), and irviz draws them at those."""
    found = _found(node, debug)
    if not found or found.count(":") < 2:
        return None
    path, line, _ = Location.parse(found)
    return f'  File "{path}", line {line}, in forward\n'


def node_locations_in(target: Target, nodes: list) -> list[str | None]:
    """The user's ``file:line:col`` of each of ``target``'s TorchScript ``nodes``."""
    debug = _debug_info(target)
    return [_location(node, debug) for node in nodes]


def _debug_info(target: Target):
    if target.kind != "archive" or target.source_file is None:
        return None
    return ArchiveDebugInfo(target.source_file)


class _Trail:
    """Where the converter was when it failed: the TorchScript nodes it was converting
    (innermost last), and, once the FX graph is re-traced by torch.export, the FX node it was
    running, traced back to the TorchScript node that made it. TS2EPConverter says neither
    which node nor where when its handlers raise, nor when the re-trace fails (a
    ``torch.cond`` whose branch returns an input unchanged)."""

    def __init__(self):
        self.converting: list = []
        self.running: list = []
        #: FX node -> the TorchScript node whose conversion made it
        self.made: dict = {}
        self.made_by_name: dict = {}

    def failed_at(self):
        """The TorchScript node the failure belongs to (None when unknown)."""
        if self.converting:
            return self.converting[-1]
        for fx_node in reversed(self.running):
            origin = self.made.get(fx_node) or self.made_by_name.get(fx_node.name)
            if origin is not None:
                return origin
        return None


@contextlib.contextmanager
def _following_nodes(debug=None) -> Iterator[_Trail]:
    from torch._export import converter
    from torch.fx import Interpreter

    original, original_run = converter.TS2FXGraphConverter.convert_node, Interpreter.run_node
    trail = _Trail()

    def convert_node(self, node):
        graph = self.fx_graph
        last = graph._root.prev   # nodes are appended before the sentinel root
        trail.converting.append(node)
        original(self, node)
        trail.converting.pop()
        fx_node = last.next
        trace = _stack_trace(node, debug) if fx_node is not graph._root else None
        while fx_node is not graph._root:
            trail.made[fx_node] = node
            trail.made_by_name.setdefault(fx_node.name, node)
            if trace and fx_node.op == "call_function" \
                    and not fx_node.meta.get("stack_trace"):
                fx_node.meta["stack_trace"] = trace
            fx_node = fx_node.next

    def run_node(self, n):
        trail.running.append(n)
        result = original_run(self, n)
        trail.running.pop()
        return result

    converter.TS2FXGraphConverter.convert_node = convert_node
    Interpreter.run_node = run_node
    try:
        yield trail
    finally:
        converter.TS2FXGraphConverter.convert_node = original
        Interpreter.run_node = original_run


def _blockers(copy: Any, args: tuple, debug) -> list[Blocker]:
    from torch._export import converter

    with quiet_output(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = converter.TS2EPConverter(copy, args)
        lifted, fqn = converter.get_block_to_lifted_attrs(ts.ts_graph)
        explainer = converter.ExplainTS2FXGraphConverter(
            ts.ts_graph, ts.name_to_param, ts.name_to_buffer, lifted,
            ts.name_to_non_tensor_attributes, ts.name_to_constant, fqn)
        explainer.explain()
    seen, out = set(), []
    for node in explainer.unsupported_node_list:
        blocker = Blocker(node.kind(), _location(node, debug),
                          str(node).split("\n")[0].strip()[:160],
                          _HINTS.get(node.kind(), _DEFAULT_HINT))
        key = (blocker.kind, blocker.location)
        if key not in seen:
            seen.add(key)
            out.append(blocker)
    return out


def _lines(exc: BaseException) -> list[str]:
    return [line.strip() for line in str(exc).strip().splitlines() if line.strip()]


def _cause(exc: BaseException) -> str:
    """The converter's own reason, one line, without the IR it quotes. A failure of the
    re-trace through ``torch.compile`` (a ``torch.cond``) opens with a generic sentence
    ("... Got graph break/error:"): its reason is the next line, with torch's explanation."""
    inner = exc.__cause__ or exc
    lines = _lines(inner)
    first = lines[0] if lines else ""
    for i, line in enumerate(lines[:-1]):
        if line.endswith("Got graph break/error:"):
            first = lines[i + 1]
            break
    explanation = next((line.split(":", 1)[1].strip() for line in lines
                        if line.startswith("Explanation:")), None)
    if explanation:
        first += f" ({explanation.split('. Found in')[0].rstrip('.')})"
    first = first.split(" %")[0].split(" # ")[0]
    return f"{type(inner).__name__}: {first[:240]}".rstrip(": ")


def _torch_hint(exc: BaseException) -> str | None:
    """torch's first ``Hint:`` line of a failure, when it gives one."""
    return next((line.split(":", 1)[1].strip() for line in _lines(exc.__cause__ or exc)
                 if line.startswith("Hint:")), None)


def _failure_hint(node, exc: BaseException) -> str:
    """What to do about the node the converter failed at."""
    text = str(exc.__cause__ or exc)
    if node.kind() == "prim::If" and "aliasing" in text:
        return ("a branch of this if returns one of its inputs unchanged, and torch.cond's "
                "branches may not: return x.clone() in that branch (script and save the "
                "model again), or export the Python model with torch.cond (IRV501)")
    hint = _HINTS.get(node.kind(), _DEFAULT_HINT)
    torch_hint = _torch_hint(exc)
    return hint + (f"; torch says: {torch_hint}" if torch_hint else "")


def convert_compiled(target: Target, compiled: Any, inputs: ExampleInputs,
                     forks: bool = False) -> Conversion:
    """``TS2EPConverter`` on an independent copy of ``compiled``; ``forks``: inline the
    forks first (serially)."""
    from torch._export import converter

    result = Conversion(CONVERTER)
    if inputs.kwargs:
        raise CaptureError(f"{CONVERTER} takes positional inputs only",
                           hint="give --inputs as a tuple of tensors")
    args = tuple(inputs.args)
    debug = _debug_info(target)
    copy = independent_copy(compiled)
    if forks:
        result.serial_forks = inline_forks(copy)
        if result.serial_forks:
            result.notes.append(f"{result.serial_forks} fork(s) inlined into a serial copy: "
                                "each task runs after the other, the parallelism is lost")
    for location, length in fixed_length_lists(copy.graph, lambda n: _location(n, debug)):
        result.notes.append(f"the list filled at {location or '(no line)'} gets its {length} "
                            "values from appends in straight-line code: its length is "
                            "fixed by the program (not by an input), so a loop over it "
                            f"runs {length} times")
    try:
        result.blockers = _blockers(independent_copy(copy), args, debug)
    except Exception as exc:  # noqa: BLE001 - explain itself failing is told, not raised
        result.notes.append(f"{CONVERTER}.explain() failed: {_cause(exc)}")
    with quiet_output(), warnings.catch_warnings(), _following_nodes(debug) as trail:
        warnings.simplefilter("ignore")
        try:
            result.program = converter.TS2EPConverter(copy, args).convert()
        except Exception as exc:  # noqa: BLE001 - the converter raises many types
            node = trail.failed_at()
            where = ""
            if node is not None:
                location = _location(node, debug)
                where = f" at {node.kind()}" + (f" ({location})" if location else "")
                if not any(b.kind == node.kind() and b.location == location
                           for b in result.blockers):
                    result.blockers.append(Blocker(
                        node.kind(), location, str(node).split("\n")[0].strip()[:160],
                        _failure_hint(node, exc)))
            result.error = f"{CONVERTER} failed{where}: {_cause(exc)}"
    return result


def convert(target: Target, compiled: Any, inputs: ExampleInputs,
            forks: bool = False) -> Conversion:
    """The conversion of ``target``: its compiled form through the converter, or the Python
    model through torch.export."""
    if target.kind in ("archive", "script_module", "script_function"):
        return convert_compiled(target, compiled, inputs, forks)
    from .export import ExportOptions, export_target

    result = Conversion("torch.export (strict=False)")
    dims = tuple(f"{name}:{d}" for name, value in _named(target, inputs)
                 if isinstance(value, torch.Tensor) for d in range(value.dim()))
    try:
        result.program, notes = export_target(target, inputs, ExportOptions(dynamic_dims=dims))
        result.notes += notes
    except CaptureError as exc:
        result.error = exc.message + (f"; {exc.hint}" if exc.hint else "")
        return result
    forks = serialized_forks(result.program)
    if forks:
        result.serial_forks = len(forks)
        result.notes.append(f"{len(forks)} fork site(s) ({', '.join(forks)}) run serially in "
                            "the exported program: torch.export runs torch.jit.fork's task "
                            "in place, the parallelism is lost (IRV504)")
    return result


_FORK_FRAME = re.compile(r'File "(.+?)", line (\d+), in .*\n\s*(.*)')


def serialized_forks(program: Any) -> list[str]:
    """The ``file:line`` of each ``torch.jit.fork`` an exported Python model went through:
    export runs the task in place, and says nothing (the ops' stack traces still pass
    through the fork's line)."""
    found: list[str] = []
    for node in program.graph.nodes:
        for path, line, code in _FORK_FRAME.findall(node.meta.get("stack_trace") or ""):
            where = f"{display_path(path)}:{line}"
            if "fork(" in code and where not in found:
                found.append(where)
    return found


def _named(target: Target, inputs: ExampleInputs) -> list[tuple[str, Any]]:
    from .inputs import forward_arguments

    try:
        names = forward_arguments(target.obj)
    except Exception:  # noqa: BLE001 - no signature: positional names unknown
        names = []
    out = list(zip(names, inputs.args)) if names else []
    return out + list(inputs.kwargs.items())
