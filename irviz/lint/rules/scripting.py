"""IRV3xx: scripting problems; IRV4xx: noisy advisories, off unless selected.

IRV3xx rules cover models that `torch.jit.script` cannot compile, and scripted models
that still carry frozen traces or Python calls. IRV4xx rules are off by default (as in
TorchFix): they fire on code that is usually fine, and are meant to be selected
(`--extend-select IRV4`) when reviewing a model before deployment.
"""
from __future__ import annotations

from irviz.lint.registry import Rule, rule


@rule
class NotScriptable(Rule):
    """## What it does
    Tries `torch.jit.script` on the model and reports the construct it cannot compile,
    with the compiler's message, on the line the error names: NumPy calls, Python
    builtins TorchScript lacks, global tensors, `tolist()` without a type hint,
    attribute lookups on Python modules such as `torch.cuda`.

    ## Why is this bad?
    A model that does not script can only be traced, and everything the tracer freezes
    (IRV1xx) then applies to it without a way out. irviz also cannot compare the trace
    with the scripted graph (IRV150). torch's errors look like "Python builtin
    <built-in function arange> is currently not supported in Torchscript", "Expected
    type hint for result of tolist()", "python value of type 'Tensor' cannot be used as
    a value".

    ## Example
    ```python
    import numpy as np

    class Positions(torch.nn.Module):
        def forward(self, x):
            return x + torch.from_numpy(np.arange(x.shape[0]))
    ```

    ## Use instead
    Use the torch equivalent, and annotate what TorchScript cannot infer:

    ```python
    from typing import List

    class Positions(torch.nn.Module):
        def forward(self, x):
            return x + torch.arange(x.size(0))

    def sizes(x: torch.Tensor) -> List[int]:
        out: List[int] = x.tolist()
        return out
    ```

    ## Known problems
    The compiler stops at the first error, so a model with several problems shows one
    at a time. A model you only ever trace does not need to script: this is a warning,
    not an error, and it can be suppressed for the model.

    ## References
    - PyTorch documentation: torch.jit.script, TorchScript language reference
    """

    code = "IRV301"
    name = "not-scriptable"
    severity = "warning"
    proof = "certain"
    certainty = ("torch.jit.script compiles the code, not a run of it: no input changes whether it"
                 " compiles")
    message = "torch.jit.script cannot compile this: {text}"
    hint = ("replace the construct with its torch/TorchScript equivalent, or add the type "
            "annotation it asks for")


@rule
class TracedModuleInsideScript(Rule):
    """## What it does
    Checks for scripted models that hold or call a module produced by
    `torch.jit.trace`.

    ## Why is this bad?
    The scripted parent keeps its own `if`s and loops, so the whole model looks
    dynamic, but the traced child is still the recording of one example: its loops
    stay unrolled and its branches fixed. Measured: a traced child that loops over
    `x.size(0)`, called from a scripted parent with an input of 5 rows, returned
    `[3.0, 3.0]` where the eager model gives `[5.0, 5.0]`, with no error or warning.

    ## Example
    ```python
    class Parent(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.child = torch.jit.trace(Child(), torch.rand(3, 2))

        def forward(self, x):
            if x.sum() > 0:
                return self.child(x)
            return x

    scripted = torch.jit.script(Parent())
    ```

    ## Use instead
    Script the child as well (or make its shape-dependent code
    `@torch.jit.script_if_tracing` before tracing it):

    ```python
    class Parent(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.child = torch.jit.script(Child())

        def forward(self, x):
            if x.sum() > 0:
                return self.child(x)
            return x
    ```

    ## Known problems
    A traced child made only of shape-agnostic operations (a plain convolution stack)
    has nothing frozen and is fine; the finding then asks you to check that it is.

    ## References
    - PyTorch documentation: TorchScript, mixing tracing and scripting
    """

    code = "IRV303"
    name = "traced-module-inside-script"
    severity = "warning"
    message = ("`{expr}` is a traced module called from scripted code: its shapes and "
               "branches stay frozen")
    hint = "script the submodule too, instead of tracing it"


@rule
class JitIgnoreReachable(Rule):
    """## What it does
    Checks for functions and methods decorated with `@torch.jit.ignore` that the
    scripted `forward` calls.

    ## Why is this bad?
    An ignored function stays a Python call inside the scripted model. The model
    scripts and runs in Python, but cannot be saved: `torch.jit.save` fails with
    "Could not export Python function call 'helper'. Remove calls to Python functions
    before export." Loading it in C++ or on a mobile runtime is then impossible.

    ## Example
    ```python
    class Model(torch.nn.Module):
        @torch.jit.ignore
        def helper(self, x):
            return torch.from_numpy(scipy.special.expit(x.numpy()))

        def forward(self, x):
            return self.helper(x)
    ```

    ## Use instead
    Write the helper in TorchScript:

    ```python
    class Model(torch.nn.Module):
        def helper(self, x: torch.Tensor) -> torch.Tensor:
            return torch.sigmoid(x)

        def forward(self, x):
            return self.helper(x)
    ```

    ## Known problems
    A model that is scripted and used in the same Python process, and never saved,
    works. `@torch.jit.ignore(drop=True)` behaves like `@torch.jit.unused` (IRV305).

    ## References
    - PyTorch documentation: torch.jit.ignore
    """

    code = "IRV304"
    name = "jit-ignore-reachable"
    severity = "warning"
    proof = "certain"
    certainty = ("a @torch.jit.ignore function is called from Python, so the scripted model cannot"
                 " be saved and run without it")
    message = "`{expr}` is @torch.jit.ignore: a model that reaches it cannot be saved"
    hint = "rewrite the function in TorchScript so the saved model can run it"


@rule
class JitUnusedReachable(Rule):
    """## What it does
    Checks for methods decorated with `@torch.jit.unused` on a path the scripted
    `forward` can take.

    ## Why is this bad?
    TorchScript replaces an unused method with one that raises. The model scripts,
    saves and loads, then fails at run time when the path is taken: "The following
    operation failed in the TorchScript interpreter ... RuntimeError: This Python
    function is annotated to be ignored and cannot be run".

    ## Example
    ```python
    class Model(torch.nn.Module):
        @torch.jit.unused
        def fallback(self, x):
            return torch.from_numpy(np.minimum(x.numpy(), 100))

        def forward(self, x):
            if x.sum() > 100:
                return self.fallback(x)
            return x
    ```

    ## Use instead
    Make the method scriptable, or move the call out of the path the deployed model
    takes:

    ```python
    class Model(torch.nn.Module):
        def fallback(self, x: torch.Tensor) -> torch.Tensor:
            return x.clamp(max=100)

        def forward(self, x):
            if x.sum() > 100:
                return self.fallback(x)
            return x
    ```

    ## Known problems
    `@torch.jit.unused` exists for paths that are reachable in code but never taken in
    deployment (training-only or debugging branches); irviz cannot know that a
    condition is always false there, so such uses are reported too. The one condition
    it does know is `torch.jit.is_scripting()`: TorchScript never compiles the `else`
    of `if torch.jit.is_scripting():` (nor the body of `if not
    torch.jit.is_scripting():`), so a call there is not reported.

    ## References
    - PyTorch documentation: torch.jit.unused
    """

    code = "IRV305"
    name = "jit-unused-reachable"
    severity = "warning"
    message = "`{expr}` is @torch.jit.unused: the scripted model raises when it gets there"
    hint = "make the method scriptable, or keep it off every path the deployed model takes"


@rule
class LibraryTracerWarning(Rule):
    """## What it does
    Reports TracerWarnings raised inside torch, torchvision or other library code
    while tracing your model, attributed to the nearest line of your code on the call
    stack.

    ## Why is this bad?
    torch installs a warning filter that hides TracerWarnings from every module whose
    name starts with `torch` other than `torch.jit`, which includes torchvision,
    torchaudio and torch_geometric. A library that converts a tensor to a Python value
    on your behalf freezes it just the same. For example BatchNorm traced in training
    mode warns inside `torch/nn/functional.py` and nothing is shown.

    ## Example
    ```python
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))
    traced = torch.jit.trace(model, torch.rand(8, 4))   # training mode
    ```

    ## Use instead
    Usually the cause is on your side of the call: the mode, or a Python value passed
    to the library.

    ```python
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4)).eval()
    traced = torch.jit.trace(model, torch.rand(8, 4))
    ```

    ## Known problems
    Many library warnings concern values that are constant by design (checks on
    argument shapes, printing a tensor), so this rule is noisy and off by default.
    The user line is the nearest frame of your code, which may be far from the cause.

    ## References
    - [PyTorch documentation: torch.jit.trace](https://pytorch.org/docs/stable/generated/torch.jit.trace.html)
    """

    code = "IRV404"
    name = "library-tracer-warning"
    severity = "info"
    default = False
    message = "torch warned inside {origin}: {text}"
    hint = "check the mode (.eval()) and the Python values your code passes to the library"
