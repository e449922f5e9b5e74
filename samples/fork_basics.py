"""Seed 2, part 1-2: the ``torch.jit.fork`` / ``torch.jit.wait`` API.

``example`` forks one task and waits for it; ``example_loop`` forks 100 tasks
into a typed list of futures and waits for them in a second loop (returns -100
for ``torch.ones(1)``).
"""
from typing import List

import torch


def foo(x):
    return torch.neg(x)


def example(x):
    # Call `foo` asynchronously; the work after the fork overlaps with it.
    fut: torch.jit.Future[torch.Tensor] = torch.jit.fork(foo, x)
    y = x * 2  # runs while foo(x) may still be running
    return torch.jit.wait(fut) + y


def example_loop(x):
    futures: List[torch.jit.Future[torch.Tensor]] = []
    for _ in range(100):
        futures.append(torch.jit.fork(foo, x))
    results = []
    for future in futures:
        results.append(torch.jit.wait(future))
    return torch.sum(torch.stack(results))


example_inputs = {
    "example": lambda: (torch.rand(3, 4),),
    "example_loop": lambda: (torch.ones(1),),
}
