"""IRV5xx: what a TorchScript model loses, or cannot keep, when it moves to `torch.export`.

TorchScript is deprecated in torch 2.13; its successor is `torch.export`. These rules run
only with `irviz lint --mode export`: the model is exported (non-strict unless
`--strict`) and scripted, and the two are compared. Measured on torch 2.13: a
data-dependent `if` fails to export (`GuardOnDataDependentSymNode`; strict: GB0170), a
loop over a size exports silently unrolled, `Dim.AUTO` on such a size comes out static,
`torch.jit.fork` exports "successfully" with every fork run serially (strict: GB0007),
and `TS2EPConverter` fails on `prim::Loop` with a size trip count and on `prim::fork`.
"""
from __future__ import annotations

from irviz.lint.registry import Rule, rule


@rule
class ExportFailed(Rule):
    """## What it does
    Reports that `torch.export.export` raised on your model and example inputs when no
    specific IRV5xx rule explains why, with torch's first line, on the line of your code
    where export stopped.

    ## Why is this bad?
    There is no exported program at all, so the model cannot move off TorchScript as it
    is written. A common cause in a TorchScript code base is a submodule that is itself
    scripted or traced (`torch.jit.script(...)` or `torch.jit.trace(...)` assigned to an
    attribute): export runs it in the TorchScript interpreter, which cannot take
    export's symbolic tensors.

    ## Example
    ```python
    class Loop(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.cell = torch.jit.trace(Cell(), (torch.rand(3, 4), torch.rand(3, 4)))

        def forward(self, xs):
            return self.cell(xs[0], xs[1])
    ```

    ## Use instead
    Build the model from its Python modules for export:

    ```python
    class Loop(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.cell = Cell()

        def forward(self, xs):
            return self.cell(xs[0], xs[1])
    ```

    ## Known problems
    The finding is only as precise as torch's message; `--debug` on `irviz render
    --mode export` shows torch's whole error, and what torch printed while exporting.

    ## References
    - [PyTorch documentation: torch.export](https://pytorch.org/docs/stable/export.html)
    """

    code = "IRV500"
    name = "export-failed"
    severity = "error"
    proof = "certain"
    certainty = "torch.export failed on these inputs"
    message = "torch.export failed: {text}"
    hint = "fix what torch's message names; a scripted or traced submodule must be Python for export"


@rule
class ExportDataDependentBranch(Rule):
    """## What it does
    Checks for Python control flow on tensor data (`if x.sum() > 0:`) that stops
    `torch.export`, at the line of the `if`, quoting torch's message. With `--strict`
    the message carries torch's graph-break id (GB0170).

    ## Why is this bad?
    TorchScript compiled both branches into a `prim::If`; `torch.export` traces one
    program for all inputs and cannot pick a branch from a value it does not know.
    Non-strict export fails with `GuardOnDataDependentSymNode: Could not guard on
    data-dependent expression`, strict export with "Data-dependent branching" (GB0170).
    `draft_export` bakes the branch it happened to see behind a runtime assert, and in
    measured runs baked the wrong one.

    ## Example
    ```python
    class Gate(torch.nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x
            else:
                return -x
    ```

    ## Use instead
    `torch.cond` keeps both branches in the exported program (a branch must not return
    its input itself); for an elementwise choice `torch.where` is simpler:

    ```python
    class Gate(torch.nn.Module):
        def forward(self, x):
            return torch.cond(x.sum() > 0, lambda x: x.clone(), lambda x: -x, (x,))
    ```

    ## Known problems
    Any data-dependent decision export cannot make is reported here, not only an `if`
    (a size taken from `tensor.item()`, say); there `torch._check` on the value is the
    fix. Only the first one is found: export stops at it.

    ## References
    - [PyTorch documentation: torch.cond](https://pytorch.org/docs/stable/generated/torch.cond.html)
    - [PyTorch documentation: torch.export](https://pytorch.org/docs/stable/export.html)
    """

    code = "IRV501"
    name = "export-data-dependent-branch"
    severity = "error"
    proof = "certain"
    certainty = "torch.export refused the data-dependent branch"
    message = "torch.export cannot branch on tensor data here: {text}"
    hint = "write the branch as torch.cond(pred, true_fn, false_fn, (x,)), or torch.where"


@rule
class ExportUnrolledLoop(Rule):
    """## What it does
    Checks for a Python loop whose trip count comes from a tensor's size
    (`for i in range(xs.size(0)):`) that `torch.export` unrolled, at the `for` line,
    with the trip count it baked in.

    ## Why is this bad?
    TorchScript kept the loop as a `prim::Loop` that runs as often as the input asks.
    `torch.export` runs the Python loop while tracing and records each step: the
    exported program holds one copy of the body per step of the example input (the
    seed RNN: ten `select(xs, 0, i)` and ten cells) and only accepts that length.
    Nothing warns; marking the size dynamic fails with "Constraints violated", and
    `Dim.AUTO` silently makes it static again (IRV503).

    ## Example
    ```python
    class RNNLoop(torch.nn.Module):
        def forward(self, xs):
            h = torch.zeros(3, 4)
            for i in range(xs.size(0)):
                h = self.cell(xs[i], h)
            return h
    ```

    ## Use instead
    `scan` keeps one body that runs once per step, for any length, so the size can be
    a dynamic dim:

    ```python
    from torch._higher_order_ops import scan

    class RNNLoop(torch.nn.Module):
        def forward(self, xs):
            def step(h, x):
                h = self.cell(x, h)
                return h, h.clone()

            h, ys = scan(step, torch.zeros(3, 4), xs)
            return h
    ```

    ## Known problems
    Only `for` loops whose trip count TorchScript computes from a size are checked; a
    `while` loop on a size is unrolled too and not reported. When export fails for
    another reason, the finding comes from the scripted graph and the example input's
    size.

    ## References
    - [PyTorch documentation: torch.export, control flow](https://pytorch.org/docs/stable/export.html)
    """

    code = "IRV502"
    name = "export-unrolled-loop"
    severity = "warning"
    proof = "certain"
    certainty = "the exported program holds the loop unrolled"
    message = "torch.export unrolls this loop over `{expr}`: {detail}"
    hint = "write the loop as scan(step, init, xs) so one program takes every length"


@rule
class ExportDynamicDimStatic(Rule):
    """## What it does
    Checks for a dimension named in `--dynamic-dims` that `torch.export` did not keep
    dynamic: with `Dim.AUTO` it came out static (a fixed size in the program), or the
    export failed with "Constraints violated" because the code specialises it.

    ## Why is this bad?
    The exported program only accepts the example's size there, while the TorchScript
    model took any size. `Dim.AUTO` says nothing when it specialises a dimension; the
    failure names torch's symbol, not your input.

    ## Example
    ```python
    class RNNLoop(torch.nn.Module):
        def forward(self, xs):          # --dynamic-dims xs:0
            h = torch.zeros(3, 4)
            for i in range(xs.size(0)):  # specialises xs.size(0)
                h = self.cell(xs[i], h)
            return h
    ```

    ## Use instead
    Make the code shape-generic (a `scan` over the dimension, no Python `int` taken from
    it), then mark it dynamic:

    ```python
    class RNNLoop(torch.nn.Module):
        def forward(self, xs):
            h, ys = scan(lambda h, x: (self.cell(x, h),) * 2, torch.zeros(3, 4), xs)
            return h
    ```

    ## Known problems
    A dimension that came out static is reported at `forward`: export does not say
    which line specialised it. A size fixed on purpose (a batch of one, say) is
    reported all the same: leave it out of `--dynamic-dims`.

    ## References
    - [PyTorch documentation: torch.export, dynamic shapes](https://pytorch.org/docs/stable/export.html)
    """

    code = "IRV503"
    name = "export-dynamic-dim-static"
    severity = "warning"
    proof = "certain"
    certainty = "torch.export specialized the dimension"
    message = "the dynamic dimension {dim} is not dynamic in the exported program: {detail}"
    hint = "make the code shape-generic along that dimension (scan, no int() of its size)"


@rule
class ExportForkSerial(Rule):
    """## What it does
    Checks for `torch.jit.fork` calls, which `torch.export` runs serially, at each fork
    line, with the speed-up irviz predicts for the TorchScript model (the one the
    exported program loses). With `--strict` the message carries torch's graph-break id
    (GB0007).

    ## Why is this bad?
    In TorchScript a fork runs its task on an inter-op thread beside the caller. Eager
    `torch.jit.fork`, which non-strict export runs, calls the function at once on the
    caller's thread: the export succeeds and every task is inlined one after another in
    the graph, with no warning (`draft_export` reports "no issues"). Strict export
    refuses the fork (GB0007, "function `fork` should not be traced").

    ## Example
    ```python
    class Ensemble(torch.nn.Module):
        def forward(self, x):
            futures = [torch.jit.fork(m, x) for m in self.models]
            return torch.stack([torch.jit.wait(f) for f in futures]).sum(0)
    ```

    ## Use instead
    Write the members as plain calls; the exported graph keeps them independent, and
    an executor that runs independent operators in parallel can overlap them:

    ```python
    class Ensemble(torch.nn.Module):
        def forward(self, x):
            return torch.stack([m(x) for m in self.models]).sum(0)
    ```

    ## Known problems
    The predicted speed-up is irviz's cost model on the scripted graph
    (`irviz report`), not a measurement. torch 2.13's CPU wheel has no inter-op
    parallel executor for exported programs, so the parallelism is lost until one runs
    the program.

    ## References
    - [PyTorch documentation: torch.jit.fork](https://pytorch.org/docs/stable/generated/torch.jit.fork.html)
    - [PyTorch documentation: torch.export](https://pytorch.org/docs/stable/export.html)
    """

    code = "IRV504"
    name = "export-fork-serial"
    severity = "warning"
    proof = "certain"
    certainty = "the exported program runs the forked task serially"
    message = "torch.export runs `torch.jit.fork({callee})` serially: {detail}"
    hint = "call the function directly; the fork's parallelism is lost in export"


@rule
class TorchscriptConverterUnsupported(Rule):
    """## What it does
    Checks a scripted model for constructs `torch._export.converter.TS2EPConverter`
    (TorchScript to `ExportedProgram`) cannot convert in torch 2.13, naming the
    construct and its source line: `prim::fork`, and a `prim::Loop` whose trip count
    is a tensor's size or whose condition the body computes (a `while` loop).

    ## Why is this bad?
    `TS2EPConverter` is the way to move a TorchScript model, or a saved `.pt` archive
    without its Python, to `torch.export`. It converts `prim::If` into `torch.cond`, but
    stops at the first construct it has no conversion for: "prim::Loop currently cannot
    run with dynamic value of number of iterations", and for a fork "got empty schema".

    ## Example
    ```python
    class Ensemble(torch.nn.Module):
        def forward(self, xs):
            futures = [torch.jit.fork(m, xs) for m in self.models]
            for i in range(xs.size(0)):
                xs = xs + 1
            return torch.stack([torch.jit.wait(f) for f in futures]).sum(0)
    ```

    ## Use instead
    Convert from the Python model with `torch.export.export`, with the fork as a plain
    call and the loop as `scan`:

    ```python
    class Ensemble(torch.nn.Module):
        def forward(self, xs):
            xs = xs + xs.size(0)
            return torch.stack([m(xs) for m in self.models]).sum(0)
    ```

    ## Known problems
    irviz reads the scripted graph rather than running the converter (which rewrites
    the scripted module's graph in place); the conditions are the torch 2.13
    converter's. Other constructs the converter rejects are not checked. A loop with a
    constant trip count converts, unrolled, and so may a loop over a list (its length
    can be a constant to the converter): neither is reported.

    ## References
    - [PyTorch documentation: torch.export](https://pytorch.org/docs/stable/export.html)
    """

    code = "IRV505"
    name = "torchscript-converter-unsupported"
    severity = "warning"
    proof = "certain"
    certainty = "the converter has no rule for this node"
    message = "TS2EPConverter cannot convert this `{construct}`: {reason}"
    hint = "export the Python model with torch.export.export instead of converting the TorchScript"


__all__ = ["ExportFailed", "ExportDataDependentBranch", "ExportUnrolledLoop",
           "ExportDynamicDimStatic", "ExportForkSerial", "TorchscriptConverterUnsupported"]
