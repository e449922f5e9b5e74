"""Fuzzing the pipeline with random TorchScript programs (hypothesis).

Each example is a small program written as *source text* into a temporary file: plain
functions on two 3×3 tensors with a random dataflow of safe tensor ops, nested ``if`` on
``x.sum() > 0`` and ``for i in range(k)`` loops with a constant ``k``, and
``torch.jit.fork``/``torch.jit.wait`` of helper functions - waited right away or later,
inside branches and loops, from a typed list of futures waited in a second loop, forked
from inside another forked helper, or never waited. The file is loaded with the real
loader, captured in script mode and in trace mode (with example inputs), and:

* ``irviz.api.build`` gives a graph that passes ``assert_invariants`` (the IR invariants);
* ``to_dot`` of the same graph twice, and of a second build, gives identical text;
* in script mode every ``torch.jit.fork(`` whose future is waited has its ``prim::fork``
  node at that line with a non-empty ``irviz.waits`` (forks never waited may be deleted
  by torch's dead code elimination; those that stay are listed as unpaired);
* in trace mode every recorded fork of a waited call is paired with its wait.

``IRVIZ_FUZZ_EXAMPLES`` sets the number of examples (default 25, derandomized so CI sees
the same programs every run; setting it also draws new random programs).
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from irviz.analyses import fork_wait
import pytest
import torch

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from irviz import api  # noqa: E402
from irviz.frontends.capture import capture  # noqa: E402
from irviz.frontends.inputs import resolve_inputs  # noqa: E402
from irviz.frontends.loader import load  # noqa: E402
from irviz.ir.invariants import assert_invariants  # noqa: E402
from irviz.render.dot import to_dot  # noqa: E402

_EXAMPLES = os.environ.get("IRVIZ_FUZZ_EXAMPLES")
FUZZ = settings(max_examples=int(_EXAMPLES or "25"), deadline=None,
                derandomize=_EXAMPLES is None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

N = 3  # every tensor is N×N, so every op below keeps the shape

UNARY = ["torch.neg({a})", "torch.relu({a})", "torch.tanh({a})", "torch.sigmoid({a})",
         "{a} * 0.5", "{a}.sum(dim=0, keepdim=True) + {a}", "torch.matmul({a}, {a}.t())",
         "{a}.sum(1, keepdim=True).expand_as({a})"]
BINARY = ["{a} + {b}", "{a} * {b}", "{a} - {b}", "torch.matmul({a}, {b}.t())",
          f"torch.cat([{{a}}, {{b}}], dim=0).narrow(0, 0, {N})",
          "torch.stack([{a}, {b}]).sum(0)", "torch.maximum({a}, {b})"]


@dataclass
class Program:
    """Source lines being written, and the fork calls among them (1-based line numbers)."""

    lines: list[str] = field(default_factory=lambda: [
        "import torch", "from typing import List", ""])
    #: line -> (the function it is in, the helper it forks)
    waited_forks: dict[int, tuple[str, str]] = field(default_factory=dict)
    unwaited_forks: dict[int, tuple[str, str]] = field(default_factory=dict)
    helpers: list[str] = field(default_factory=list)
    counter: int = 0

    def emit(self, indent: int, text: str) -> int:
        self.lines.append("    " * indent + text)
        return len(self.lines)

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

    def live_forks(self) -> set[int]:
        """Lines of the waited forks that run: those of ``main`` and, transitively, those
        inside the helpers such a fork runs (a helper only an unwaited fork runs may be
        deleted with it)."""
        live, reached, todo = set(), set(), ["main"]
        while todo:
            owner = todo.pop()
            for line, (where, helper) in self.waited_forks.items():
                if where == owner:
                    live.add(line)
                    if helper not in reached:
                        reached.add(helper)
                        todo.append(helper)
        return live


def _op(draw, names: list[str], first: str | None = None) -> str:
    """One op on ``names``; its first operand ``first`` when given (a value carried
    through a loop or branch)."""
    a = first or draw(st.sampled_from(names))
    if draw(st.booleans()):
        return draw(st.sampled_from(UNARY)).format(a=a)
    return draw(st.sampled_from(BINARY)).format(a=a, b=draw(st.sampled_from(names)))


def _helper(draw, prog: Program) -> None:
    """``def hK(a, b)``: a chain of ops; later helpers may fork an earlier one."""
    name = f"h{len(prog.helpers)}"
    prog.emit(0, f"def {name}(a, b):")
    names = ["a", "b"]
    if prog.helpers and draw(st.booleans()):
        callee = draw(st.sampled_from(prog.helpers))
        prog.waited_forks[prog.emit(1, f"f = torch.jit.fork({callee}, a, b)")] = (name, callee)
        names.append("c")
        prog.emit(1, "c = torch.jit.wait(f)")
    for _ in range(draw(st.integers(1, 3))):
        var = prog.fresh("t")
        prog.emit(1, f"{var} = {_op(draw, names)}")
        names.append(var)
    prog.emit(1, f"return {' + '.join(names[2:])}")  # every value is used: none is dead
    prog.emit(0, "")
    prog.helpers.append(name)


def _fork_args(draw, names: list[str]) -> str:
    return f"{draw(st.sampled_from(names))}, {draw(st.sampled_from(names))}"


def _block(draw, prog: Program, names: list[str], target: str | None, indent: int,
           depth: int) -> list[str]:
    """Statements at ``indent``. Inside a branch or loop body (``target`` set) each
    statement updates ``target``, so no variable escapes the block half-defined."""
    for _ in range(draw(st.integers(1, 3 if target else 5))):
        kind = draw(st.sampled_from(["op", "op", "if", "loop", "fork", "fork_later",
                                     "fork_list", "fork_branch", "fork_unwaited"]))
        if kind in ("if", "loop") and depth >= 2:
            kind = "op"
        if kind.startswith("fork") and not prog.helpers:
            kind = "op"
        out = target or prog.fresh("v")
        if kind == "op":
            carried = target if target and draw(st.booleans()) else None
            prog.emit(indent, f"{out} = {_op(draw, names, carried)}")
        elif kind in ("if", "loop"):
            prog.emit(indent, f"{out} = {draw(st.sampled_from(names))}")
            inner = names + ([out] if out not in names else [])
            if kind == "if":
                prog.emit(indent, f"if {draw(st.sampled_from(inner))}.sum() > 0:")
                _block(draw, prog, inner, out, indent + 1, depth + 1)
                if draw(st.booleans()):
                    prog.emit(indent, "else:")
                    _block(draw, prog, inner, out, indent + 1, depth + 1)
            else:
                prog.emit(indent, f"for i{depth} in range({draw(st.integers(1, 3))}):")
                _block(draw, prog, inner, out, indent + 1, depth + 1)
        elif kind in ("fork", "fork_later"):
            fut = prog.fresh("fut")
            helper = draw(st.sampled_from(prog.helpers))
            prog.waited_forks[prog.emit(
                indent, f"{fut} = torch.jit.fork({helper}, {_fork_args(draw, names)})")] = \
                ("main", helper)
            if kind == "fork_later":  # some work of the caller beside the task
                other = prog.fresh("w")
                prog.emit(indent, f"{other} = {_op(draw, names)}")
                names = names + [other]
            combine = f"{out} + " if target and out in names else ""
            prog.emit(indent, f"{out} = {combine}torch.jit.wait({fut})")
        elif kind == "fork_list":
            futs = prog.fresh("futs")
            helper = draw(st.sampled_from(prog.helpers))
            prog.emit(indent, f"{futs}: List[torch.jit.Future[torch.Tensor]] = []")
            prog.emit(indent, f"for j{depth} in range({draw(st.integers(1, 3))}):")
            prog.waited_forks[prog.emit(
                indent + 1, f"{futs}.append(torch.jit.fork({helper}, {_fork_args(draw, names)}))"
            )] = ("main", helper)
            if not (target and out in names):
                prog.emit(indent, f"{out} = {draw(st.sampled_from(names))}")
            prog.emit(indent, f"for f{depth} in {futs}:")
            prog.emit(indent + 1, f"{out} = {out} + torch.jit.wait(f{depth})")
        elif kind == "fork_branch":  # waited in one branch, or in both
            fut = prog.fresh("fut")
            helper = draw(st.sampled_from(prog.helpers))
            prog.waited_forks[prog.emit(
                indent, f"{fut} = torch.jit.fork({helper}, {_fork_args(draw, names)})")] = \
                ("main", helper)
            if not (target and out in names):
                prog.emit(indent, f"{out} = {draw(st.sampled_from(names))}")
            prog.emit(indent, f"if {draw(st.sampled_from(names))}.sum() > 0:")
            prog.emit(indent + 1, f"{out} = {out} + torch.jit.wait({fut})")
            if draw(st.booleans()):
                prog.emit(indent, "else:")
                prog.emit(indent + 1, f"{out} = {out} * torch.jit.wait({fut})")
        else:  # fork_unwaited: the future is dropped
            helper = draw(st.sampled_from(prog.helpers))
            prog.unwaited_forks[prog.emit(
                indent, f"{prog.fresh('lost')} = torch.jit.fork({helper}, "
                        f"{_fork_args(draw, names)})")] = ("main", helper)
            prog.emit(indent, f"{out} = {_op(draw, names)}")
        if out not in names:
            names = names + [out]
    if target is None:  # every value is used, so no waited fork is dead code
        prog.emit(indent, f"return {' + '.join(names[2:])}")
    return names


@st.composite
def programs(draw) -> Program:
    prog = Program()
    for _ in range(draw(st.integers(0, 3)) or draw(st.integers(0, 3))):
        _helper(draw, prog)
    prog.emit(0, "def main(x, y):")
    _block(draw, prog, ["x", "y"], None, 1, 0)
    prog.emit(0, "")
    prog.emit(0, "")
    prog.emit(0, f"example_inputs = {{'main': (torch.rand({N}, {N}), torch.rand({N}, {N}))}}")
    return prog


def _line(location: str | None) -> int | None:
    return int(location.rsplit(":", 2)[1]) if location else None


def _check(prog: Program, path: Path) -> None:
    [target] = load(f"{path}:main").targets
    torch.manual_seed(0)
    example = resolve_inputs(target, None)
    for mode in ("script", "trace"):
        cap = capture(target, mode, example)
        G = api.build(cap)
        assert_invariants(G)
        dot = to_dot(G)
        assert dot == to_dot(G), f"{mode}: to_dot is not deterministic"
        assert dot == to_dot(api.build(cap)), f"{mode}: a second build draws differently"
        forks = {n: d for n, d in G.nodes(data=True) if d["kind"] == "prim::fork"}
        unpaired = set(fork_wait.unpaired(G).forks)
        assert unpaired == {n for n, d in forks.items() if not d.get("irviz.waits")}, mode
        if mode == "trace":
            # traced forks carry no source line: with no dropped future, all are waited
            if not prog.unwaited_forks:
                assert not unpaired, f"trace: forks {sorted(unpaired)} have no wait"
            continue
        for node, data in forks.items():
            line = _line(data.get("user_source"))
            assert line in prog.waited_forks or line in prog.unwaited_forks, (mode, node)
            if line in prog.waited_forks:
                assert data.get("irviz.waits"), f"{mode}: the fork at line {line} has no wait"
        # script: every waited fork call site is in the graph
        drawn = {_line(d.get("user_source")) for d in forks.values()}
        missing = prog.live_forks() - drawn
        assert not missing, f"forks at lines {sorted(missing)} have no prim::fork node"


@FUZZ
@given(programs())
def test_random_programs_build_check_and_draw_deterministically(prog):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz_program.py"
        path.write_text(prog.text(), encoding="utf-8")
        try:
            _check(prog, path)
        except BaseException:
            print(f"--- the program ---\n{prog.text()}")  # shown by pytest on failure
            raise
