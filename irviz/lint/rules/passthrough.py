"""IRV0xx: what torch itself reported while tracing, when no specific rule claims it.

These rules keep torch's own text so that a message irviz does not know yet (a new
TracerWarning in a later torch, an unusual tracer error) still reaches the user,
placed on the line of their model that caused it.
"""
from __future__ import annotations

from irviz.lint.registry import Rule, rule


@rule
class UnclassifiedTracerWarning(Rule):
    """## What it does
    Reports a `torch.jit.TracerWarning` raised while tracing your model that none of
    the specific IRV1xx rules recognises, with torch's own text, on the line of your
    code that triggered it.

    ## Why is this bad?
    Every TracerWarning means the tracer saw something it cannot record as a graph
    operation. Most of them end the same way: the value "will be treated as a
    constant in the future. This means that the trace might not generalize to other
    inputs!" torch prints each warning once, attributes warnings raised inside
    libraries to the library's own file, and hides those raised from any module whose
    name starts with `torch` (torchvision, torchaudio, ...). irviz records all of them
    and keeps the ones it has no rule for under this code, so none is lost.

    ## Example
    ```python
    class Model(torch.nn.Module):
        def forward(self, x):
            # a construct that makes torch warn in a way irviz does not classify yet
            return some_new_pattern(x)
    ```

    ## Use instead
    Read torch's message: it names what was frozen. The usual fixes are to keep the
    value a tensor, or to script the part that needs Python semantics:

    ```python
    @torch.jit.script_if_tracing
    def some_new_pattern(x: torch.Tensor) -> torch.Tensor:
        ...
    ```

    ## Known problems
    The finding is only as precise as torch's message. Warnings that torch raises
    inside its own Python files (for example the list-output warning, raised from
    `torch/jit/_trace.py`) have no user line; irviz then points at the model's
    `forward`. A warning that is harmless for your model (a constant built from
    literals, say) is reported all the same: suppress it with `# noqa: IRV001`.

    ## References
    - [PyTorch documentation: torch.jit.trace](https://pytorch.org/docs/stable/generated/torch.jit.trace.html)
    """

    code = "IRV001"
    name = "unclassified-tracer-warning"
    severity = "warning"
    message = "torch.jit.trace warned: {text}"
    hint = "read torch's message: keep the value a tensor or script the code that needs Python"


@rule
class TraceFailed(Rule):
    """## What it does
    Reports that `torch.jit.trace` raised an exception on your model and example
    inputs, when no specific rule (IRV123 non-tensor input, IRV141 dict or non-tensor
    output, ...) explains it. The message is torch's, the location the user line
    closest to where tracing stopped.

    ## Why is this bad?
    There is no traced graph at all, so the model cannot be saved or deployed through
    tracing, and every rule that inspects the trace (IRV130, IRV132, IRV134, IRV150,
    IRV151, the fork/wait rules on traced models) has nothing to look at. Typical
    causes are torch's tracer errors: "Cannot insert a Tensor that requires grad as a
    constant", "Tried to trace <obj> but it is not part of the active trace",
    "Tracing can't be nested", "Tracer cannot infer type of ...".

    ## Example
    ```python
    scale = torch.ones(3, requires_grad=True)  # not a parameter of the model

    class Model(torch.nn.Module):
        def forward(self, x):
            return x * scale  # Cannot insert a Tensor that requires grad as a constant
    ```

    ## Use instead
    Fix what torch's message names; here, make the tensor part of the module:

    ```python
    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = torch.nn.Parameter(torch.ones(3))

        def forward(self, x):
            return x * self.scale
    ```

    ## Known problems
    Errors raised by your own code while it runs under the tracer (a shape mismatch
    in the example inputs, say) are reported here too, since tracing runs the model.
    Check that the model runs eagerly on the same inputs first.

    ## References
    - [PyTorch documentation: torch.jit.trace](https://pytorch.org/docs/stable/generated/torch.jit.trace.html)
    """

    code = "IRV002"
    name = "trace-failed"
    severity = "error"
    proof = "certain"
    certainty = "torch.jit.trace raised on the model's own example inputs"
    message = "torch.jit.trace failed: {text}"
    hint = "fix what torch's message names, or script the model instead of tracing it"
