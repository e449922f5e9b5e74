"""Fork/wait shapes for the analysis tests, one function per pattern.

Each function is scripted by the tests; the comment on a fork line says what
the analysis must find for it.
"""
from typing import List, Tuple

import torch


def foo(x):
    return torch.neg(x)


def bar(x):
    return torch.relu(x) * 2


def direct(x):
    fut = torch.jit.fork(foo, x)  # paired with the wait below; overlap: mul
    y = x * 2
    return torch.jit.wait(fut) + y


def immediate(x):
    fut = torch.jit.fork(foo, x)  # hazard: waited right away
    y = torch.jit.wait(fut)
    return y + x


def in_list(x):
    futs: List[torch.jit.Future[torch.Tensor]] = []
    for _ in range(3):
        futs.append(torch.jit.fork(foo, x))  # 3 instances, waited in the second loop
    out = torch.zeros_like(x)
    for f in futs:
        out = out + torch.jit.wait(f)
    return out


def dynamic_loop(x):
    futs: List[torch.jit.Future[torch.Tensor]] = []
    for i in range(x.size(0)):
        futs.append(torch.jit.fork(foo, x[i]))  # instances: dynamic
    return torch.stack([torch.jit.wait(f) for f in futs])


def same_iteration(x):
    for _ in range(4):
        x = torch.jit.wait(torch.jit.fork(foo, x))  # hazard: serialised per iteration
    return x


def inner(x):
    fut = torch.jit.fork(bar, x)  # nested inside outer's task
    return torch.jit.wait(fut) + foo(x)


def nested(x):
    fut = torch.jit.fork(inner, x)
    y = torch.sin(x)
    return torch.jit.wait(fut) + y


def in_branch(x):
    if bool(x.sum() > 0):
        fut = torch.jit.fork(foo, x)  # one fork per branch, one wait for both
    else:
        fut = torch.jit.fork(bar, x)
    return torch.jit.wait(fut)


def start(x) -> torch.jit.Future[torch.Tensor]:
    return torch.jit.fork(foo, x)  # the future leaves through a return


def across_calls(x):
    fut = start(x)
    y = torch.cos(x)
    return torch.jit.wait(fut) + y


def escapes(x) -> Tuple[torch.Tensor, torch.jit.Future[torch.Tensor]]:
    fut = torch.jit.fork(foo, x)  # never waited: returned to the caller
    return x + 1, fut


class Sub(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        return self.lin(x)


class ForkModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = Sub()
        self.b = Sub()

    def forward(self, x):
        fa = torch.jit.fork(self.a, x)  # callee: a.forward
        fb = torch.jit.fork(self.b, x)  # callee: b.forward
        return torch.jit.wait(fa) + torch.jit.wait(fb)


def pipelined(x):
    fut = torch.jit.fork(foo, x)  # waited in the loop (first iteration) or after it (none)
    acc = torch.zeros_like(x)
    for i in range(3):
        nxt = torch.jit.fork(bar, x + i)  # waited in the next iteration, or after the loop
        acc = acc + torch.jit.wait(fut)
        fut = nxt
    return acc + torch.jit.wait(fut)


def through_if(x):
    fut = torch.jit.fork(foo, x)  # passed through an if: reaches the one wait
    if bool(x.sum() > 0):
        other = fut
    else:
        other = torch.jit.fork(bar, x)
    return torch.jit.wait(other)


example_inputs = {name: (lambda: (torch.rand(4, 8),)) for name in [
    "direct", "immediate", "in_list", "dynamic_loop", "same_iteration", "nested",
    "in_branch", "across_calls", "escapes", "ForkModule", "pipelined", "through_if"]}
