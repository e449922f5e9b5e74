"""IRV2xx: `torch.jit.fork` / `torch.jit.wait` patterns that give no parallelism.

A fork only pays off when its task is large and the caller does other work before
waiting for it. The measurements behind these rules (a loaded 2-vCPU machine, torch
2.13): one fork plus its wait cost roughly 15-40 microseconds, and in eager mode
`torch.jit.fork` runs the function synchronously, so there is parallelism only in
scripted or traced models.
"""
from __future__ import annotations

from irviz.lint.registry import Rule, rule


@rule
class WaitImmediatelyAfterFork(Rule):
    """## What it does
    Checks for a `torch.jit.wait` on a future right after the `torch.jit.fork` that
    created it, with no independent work in between (only constants, or operations
    that need the future's result).

    ## Why is this bad?
    The caller blocks until the task finishes, so nothing runs beside it: the fork
    adds its overhead (tens of microseconds for starting the task and waiting for it)
    and gives no overlap. Measured: forking one branch and waiting for it at once,
    then calling the other branch, was 3-9 times slower than two direct calls.

    ## Example
    ```python
    class TwoBranches(torch.nn.Module):
        def forward(self, x):
            fut = torch.jit.fork(self.branch_a, x)
            a = torch.jit.wait(fut)
            b = self.branch_b(x)
            return a + b
    ```

    ## Use instead
    Do the other work between the fork and the wait:

    ```python
    class TwoBranches(torch.nn.Module):
        def forward(self, x):
            fut = torch.jit.fork(self.branch_a, x)
            b = self.branch_b(x)            # runs beside branch_a
            a = torch.jit.wait(fut)
            return a + b
    ```

    ## Known problems
    When the work between fork and wait is only cheap glue (indexing, building a
    tuple) irviz counts it as no work, which is usually right. A fork that is waited
    at once on purpose (to run the task on an inter-op thread) is reported too.

    ## References
    - [PyTorch documentation: torch.jit.fork](https://pytorch.org/docs/stable/generated/torch.jit.fork.html)
    """

    code = "IRV201"
    name = "wait-immediately-after-fork"
    severity = "warning"
    proof = "certain"
    certainty = ("the wait follows its fork with nothing in between: no input gives the task "
                 "anything to overlap")
    message = "the future is waited right after the fork: nothing runs beside `{callee}`"
    hint = ("move independent work between torch.jit.fork and torch.jit.wait, "
            "or call the function directly")


@rule
class ForkNeverWaited(Rule):
    """## What it does
    Checks for `torch.jit.fork` calls whose future is never passed to
    `torch.jit.wait`, returned, or stored where it could be waited.

    ## Why is this bad?
    In eager mode the forked function runs synchronously at the fork, so the code
    appears to work. In TorchScript (scripted or traced) an unused future is dead code
    and the fork is deleted: the scripted graph has no `prim::fork` at all, and the
    task, with any side effect it has, never runs in the deployed model. Because the
    fork is gone from the graph, only the source shows the mistake.

    ## Example
    ```python
    class Model(torch.nn.Module):
        def forward(self, x):
            fut = torch.jit.fork(self.update_stats, x)
            return self.head(x)
    ```

    ## Use instead
    Wait for the future (after the independent work), or call the function directly:

    ```python
    class Model(torch.nn.Module):
        def forward(self, x):
            fut = torch.jit.fork(self.update_stats, x)
            y = self.head(x)
            torch.jit.wait(fut)
            return y
    ```

    ## Known problems
    A future handed to a helper that waits for it, or kept in a container irviz cannot
    follow, can be reported although it is waited.

    ## References
    - [PyTorch documentation: torch.jit.fork](https://pytorch.org/docs/stable/generated/torch.jit.fork.html)
    """

    code = "IRV202"
    name = "fork-never-waited"
    severity = "error"
    proof = "certain"
    certainty = ("a fork nobody waits for is removed from the scripted graph or races the caller "
                 "on every call")
    message = "the future of `{expr}` is never waited: TorchScript deletes this fork"
    hint = "call torch.jit.wait on the future, or call the function directly"


@rule
class ForkWaitSameIteration(Rule):
    """## What it does
    Checks for a `torch.jit.fork` and the `torch.jit.wait` of its future inside the
    same loop iteration.

    ## Why is this bad?
    Each iteration starts one task and waits for it before the next iteration starts
    another, so the tasks run one after another: the loop pays the fork overhead per
    iteration and gains nothing. Measured: four small forks with fork and wait in one
    loop took 96 microseconds against 11 for four direct calls.

    ## Example
    ```python
    class Ensemble(torch.nn.Module):
        def forward(self, x):
            outs = []
            for model in self.models:
                fut = torch.jit.fork(model, x)
                outs.append(torch.jit.wait(fut))
            return torch.stack(outs)
    ```

    ## Use instead
    Fork every task in one loop, then wait for them in a second loop:

    ```python
    class Ensemble(torch.nn.Module):
        def forward(self, x):
            futures = [torch.jit.fork(model, x) for model in self.models]
            return torch.stack([torch.jit.wait(fut) for fut in futures])
    ```

    ## Known problems
    When each iteration needs the previous iteration's result, the tasks cannot run
    side by side anyway; then the fork should go, not move.

    ## References
    - [PyTorch documentation: torch.jit.fork](https://pytorch.org/docs/stable/generated/torch.jit.fork.html)
    """

    code = "IRV203"
    name = "fork-wait-same-iteration"
    severity = "warning"
    proof = "certain"
    certainty = ("the fork and its wait are in one loop iteration: the iterations run one after "
                 "another on every input")
    message = ("fork and wait in the same loop iteration: the tasks of `{callee}` run one "
               "after another")
    hint = "fork every task in one loop, then wait for them in a second loop"


@rule
class ForkSingleInteropThread(Rule):
    """## What it does
    Reports models with forks when torch has a single inter-op thread
    (`torch.get_num_interop_threads() == 1`) in the process irviz ran them in.

    ## Why is this bad?
    Forked tasks run on the inter-op thread pool. With one thread they run one at a
    time, so the forks add their overhead and give no parallelism: the model can only
    get slower than the same code without forks.

    ## Example
    ```python
    torch.set_num_interop_threads(1)
    model = torch.jit.script(Ensemble())   # every member forked
    ```

    ## Use instead
    Give the inter-op pool several threads, once, at start-up, before any inter-op work
    runs:

    ```python
    torch.set_num_interop_threads(4)
    model = torch.jit.script(Ensemble())
    ```

    ## Known problems
    irviz sees the settings of the process it runs in, which may differ from the
    process that serves the model (environment variables, a launcher that sets the
    thread counts). The rule is informational for that reason.

    ## References
    - PyTorch documentation: torch.set_num_interop_threads, CPU threading and TorchScript inference
    - [PyTorch documentation: torch.jit.fork](https://pytorch.org/docs/stable/generated/torch.jit.fork.html)
    """

    code = "IRV204"
    name = "fork-single-interop-thread"
    severity = "info"
    message = "torch has 1 inter-op thread here: forked tasks run one at a time"
    hint = "call torch.set_num_interop_threads(n) with n > 1 at start-up, before any inter-op work"


@rule
class ForkTinyTask(Rule):
    """## What it does
    Reports forked tasks whose estimated cost is below the cost of forking and waiting
    for them (roughly 30 microseconds): a few cheap operations, with no large matmul,
    convolution or reduction.

    ## Why is this bad?
    Starting a task on the inter-op pool and waiting for it has a fixed cost. When the
    task itself is cheaper than that, running it beside the caller can only make the
    model slower. Measured: four forked 4x4 matmuls took 69 microseconds against 11
    for the same four calls made directly.

    ## Example
    ```python
    def scale(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    class Model(torch.nn.Module):
        def forward(self, x):
            futures = [torch.jit.fork(scale, x[i]) for i in range(4)]
            return torch.stack([torch.jit.wait(f) for f in futures])
    ```

    ## Use instead
    Call cheap functions directly (better, batch them into one tensor operation), and
    keep forks for large tasks:

    ```python
    class Model(torch.nn.Module):
        def forward(self, x):
            return x[:4] * 2
    ```

    ## Known problems
    The cost is an estimate (FLOPs and bytes of the heavy operations, or an operation
    count when shapes are unknown), and the fork overhead depends on the machine.
    Tasks near the threshold can be misjudged either way; measure with
    `irviz report --measure`.

    ## References
    - [PyTorch documentation: torch.jit.fork](https://pytorch.org/docs/stable/generated/torch.jit.fork.html)
    """

    code = "IRV205"
    name = "fork-tiny-task"
    severity = "info"
    default = False  # noisy: toy tasks and traced forks are often deliberate
    message = "the task `{callee}` (about {cost}) costs less than forking it (about {overhead})"
    hint = "call the function directly, or batch the small tasks into one larger one"


@rule
class ForkUnderTrace(Rule):
    """## What it does
    Reports `torch.jit.fork` calls in code run by `torch.jit.trace`.

    ## Why is this bad?
    The tracer records the fork (`prim::fork` and `aten::wait`, without a warning), so
    the traced model does run the task in parallel. But the forked function is traced
    too: its Python branches and loops are frozen to the example input like the rest
    of the trace, which is easy to forget when the function was written for scripting.
    In eager mode the same code runs the task synchronously.

    ## Example
    ```python
    def branch(x):
        if x.sum() > 0:          # frozen by the trace
            return x
        return -x

    class Model(torch.nn.Module):
        def forward(self, x):
            fut = torch.jit.fork(branch, x)
            return torch.jit.wait(fut) + x * 2
    ```

    ## Use instead
    Script the forked function, so the traced fork calls its compiled graph with the
    branches intact:

    ```python
    @torch.jit.script
    def branch(x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:
            return x
        return -x

    class Model(torch.nn.Module):
        def forward(self, x):
            fut = torch.jit.fork(branch, x)
            y = x * 2
            return torch.jit.wait(fut) + y
    ```

    ## Known problems
    A forked function with no control flow and no shape-dependent Python traces
    correctly; the rule is informational for that reason.

    ## References
    - [PyTorch documentation: torch.jit.fork](https://pytorch.org/docs/stable/generated/torch.jit.fork.html)
    - [PyTorch documentation: torch.jit.trace](https://pytorch.org/docs/stable/generated/torch.jit.trace.html)
    """

    code = "IRV206"
    name = "fork-under-trace"
    severity = "info"
    default = False  # noisy: toy tasks and traced forks are often deliberate
    message = ("`torch.jit.fork` under torch.jit.trace: `{callee}` is traced too (its shapes "
               "and branches are frozen)")
    hint = "script the forked function (@torch.jit.script) or the whole model"
