"""IRV1xx: what `torch.jit.trace` freezes, drops or cannot record.

`torch.jit.trace` runs the model once and records the tensor operations it sees.
Anything computed in Python from tensor data, shapes or module state is recorded as
the value it had on that run. These rules name each way that happens, and most of them
are silent in torch itself.
"""
from __future__ import annotations

import re

from irviz.lint.registry import Rule, rule

#: what a condition or conversion reads, most specific first: the variant kind
#: (:data:`irviz.frontends.variants.AIMS`) that drives it the other way
_READS = (
    ("machine", re.compile(r"cuda\.is_available\(\)|\.is_cuda\b|\.device\.type\b|"
                           r"\.device\s*[!=]=|==\s*[\w.]*\.device\b|is_mps\b|"
                           r"backends\.\w+\.is_available")),
    ("shapes", re.compile(r"\w+\.(?:shape|size\(\))(?:\[[^]]*\])?\s*[!=]=\s*"
                          r"\w+\.(?:shape|size\(\))")),
    ("rank", re.compile(r"\.dim\(\)|\.ndim\b|\.ndimension\(\)|"
                        r"len\(\s*[\w.]+\.(?:shape|size\(\))\s*\)")),
    ("dtype", re.compile(r"\.dtype\b|\.is_floating_point\(\)|\.is_complex\(\)")),
    ("size", re.compile(r"\.size\(|\.shape\b|\.numel\(\)|\blen\(")),
)


def reads(statement: str, default: str) -> str:
    """The kind of value ``statement`` decides on (``default`` when it names none). The
    machine decides alone only when the statement reads nothing else: torchvision's
    ``if boxes.numel() > (4000 if boxes.device.type == "cpu" else 100_000)`` is decided by
    the number of boxes too, which a variant can change, so it is not certain."""
    kinds = [kind for kind, pattern in _READS if pattern.search(statement)]
    if kinds[1:] and kinds[0] == "machine":
        return kinds[1]
    return kinds[0] if kinds else default


class ReadsCondition(Rule):
    """A rule whose finding's decision is what its statement reads (:func:`reads`): a
    branch on ``x.dim()`` needs a variant of another rank, one on ``x.sum() > 0`` other
    values."""

    @classmethod
    def decides(cls, statement: str) -> str:
        return reads(statement, cls.decision)


@rule
class TensorToPythonBool(ReadsCondition):
    """## What it does
    Checks for Python control flow that depends on tensor data: an `if`, `while`,
    `assert`, `and`/`or`/`not` or Python `max`/`min` applied to a tensor value. Under
    the tracer this includes sizes, which are 0-dim tensors while tracing:
    `x.sum() > 0`, `x.size(0) > 5`, `x.numel() > 20`, `x.shape == y.shape`.

    ## Why is this bad?
    The tracer records tensor operations, not Python decisions. torch warns
    "Converting a tensor to a Python boolean might cause the trace to be incorrect.
    We can't record the data flow of Python values, so this value will be treated as
    a constant in the future. This means that the trace might not generalize to other
    inputs!" The traced graph contains only the branch the example input took, and
    every later input goes through that same branch. The results are silently wrong.

    ## Example
    ```python
    class Gate(torch.nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x
            return -x
    ```

    ## Use instead
    Express the choice as a tensor operation, or script the part with the branch:

    ```python
    class Gate(torch.nn.Module):
        def forward(self, x):
            return torch.where(x.sum() > 0, x, -x)


    @torch.jit.script_if_tracing
    def gate(x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:
            return x
        return -x
    ```

    ## Known problems
    With the trace layer the finding comes from torch's own warning and is precise.
    The source layer guesses which names hold tensors, and can flag a Python number
    that looks like one. With example inputs it reports only lines the model ran
    (not the body of `if self.training:` in an eval model, say); with `--no-exec` or
    without inputs every line is a candidate. Code a trace never runs is never
    reported: the body of `if torch.jit.is_scripting():` or of `if not
    torch.jit.is_tracing():`. An `assert` on a shape you validate elsewhere is
    frozen but harmless: suppress it with `# noqa: IRV101`.
    A branch on metadata that stays a plain Python value (`x.dim()`, `x.dtype`) does
    not warn in torch and is reported as IRV102 instead.
    When the trace ran the line, torch's warning is the evidence: a source finding on a
    line the trace ran without a TracerWarning there is left out (the value was no traced
    tensor: `not skip_layer or synced_gpus`, or the `not x.isfinite().all()` half of a
    test an fp32 model never evaluates), unless the script-vs-trace or retrace layer
    saw that line change. The same holds for IRV104, IRV105, IRV106, IRV107 and IRV108,
    which torch warns about too.

    ## References
    - PyTorch documentation: torch.jit.script_if_tracing
    - [PyTorch documentation: torch.jit.trace](https://pytorch.org/docs/stable/generated/torch.jit.trace.html)
    """

    code = "IRV101"
    name = "tensor-to-python-bool"
    severity = "error"
    message = ("Python control flow on tensor data `{expr}`: the trace keeps only the branch "
               "the example input took")
    hint = ("use a tensor op such as torch.where, or move the branch into a "
            "@torch.jit.script_if_tracing function")
    decision = "value"


@rule
class MetadataBranchBaked(ReadsCondition):
    """## What it does
    Checks for branches on tensor metadata that the tracer sees as plain Python values:
    `x.dim()`, `x.ndim`, `len(x.shape)`, `x.dtype`, `x.is_floating_point()`,
    `x.device`, `x.is_cuda`, `torch.cuda.is_available()`, and `isinstance` on an input.

    ## Why is this bad?
    Unlike sizes, these values are not tensors while tracing, so torch does not warn
    at all. The branch is decided once, for the rank, dtype and device of the example
    input, and the other branch is not in the graph. Feeding the traced model an input
    of another rank fails at run time; another dtype silently takes the wrong branch.

    ## Example
    ```python
    class Head(torch.nn.Module):
        def forward(self, x):
            if x.dim() == 3:
                x = x.flatten(1)
            return x.relu()
    ```

    ## Use instead
    Trace with the rank, dtype and device you deploy, or script the decision:

    ```python
    @torch.jit.script_if_tracing
    def flatten_3d(x: torch.Tensor) -> torch.Tensor:
        if x.dim() == 3:
            return x.flatten(1)
        return x


    class Head(torch.nn.Module):
        def forward(self, x):
            return flatten_3d(x).relu()
    ```

    ## Known problems
    Such branches are often constant on purpose: a model deployed with one dtype on one
    device only ever needs one branch. Suppress the finding with `# noqa: IRV102` on
    the `if`. Metadata read inside helpers defined in other files may be missed when
    only the source is analysed.
    torch never warns about these, so no run confirms them line by line: in your own
    files every one is reported; in an installed library (site-packages) a finding only
    the source layer names is left out and counted in a note (`--show-unconfirmed`, or
    `show-unconfirmed = true` in `[tool.irviz]`, shows them), as for IRV131 and IRV133.

    ## References
    - PyTorch documentation: torch.jit.script_if_tracing
    - [PyTorch documentation: torch.jit.trace](https://pytorch.org/docs/stable/generated/torch.jit.trace.html)
    """

    code = "IRV102"
    name = "metadata-branch-baked"
    severity = "warning"
    message = "branch on tensor metadata `{expr}` is baked into the trace"
    hint = ("trace with the rank/dtype/device you deploy, or script the branch with "
            "@torch.jit.script_if_tracing")
    decision = "dtype"


@rule
class LoopUnrolledOnShape(Rule):
    """## What it does
    Checks for Python loops whose trip count comes from a tensor size:
    `for i in range(x.size(0))`, `range(x.shape[1])`, `while i < x.numel()`.

    ## Why is this bad?
    The tracer unrolls the loop: the graph holds one copy of the body per iteration of
    the example input. torch says nothing (the "Converting a tensor to a Python index"
    warning was removed from torch in 2021). An input with more rows has only the
    first rows processed; an input with fewer fails with an index error.

    ## Example
    ```python
    class RowSum(torch.nn.Module):
        def forward(self, x):
            out = torch.zeros_like(x[0])
            for i in range(x.size(0)):
                out = out + x[i]
            return out
    ```

    ## Use instead
    Use a tensor operation over the dimension, or script the loop so the trace calls it:

    ```python
    class RowSum(torch.nn.Module):
        def forward(self, x):
            return x.sum(0)


    @torch.jit.script_if_tracing
    def row_sum(x: torch.Tensor) -> torch.Tensor:
        out = torch.zeros_like(x[0])
        for i in range(x.size(0)):
            out = out + x[i]
        return out
    ```

    ## Known problems
    A loop over a dimension that never changes (3 RGB channels, a fixed number of
    heads) is unrolled on purpose and correct: suppress it with `# noqa: IRV103`. From
    the graph alone irviz recognises an unrolled loop by repeated nodes on one source
    line, so a loop whose body has a single cheap op, or whose size is computed far
    from the `range`, can be missed.

    ## References
    - PyTorch documentation: torch.jit.script_if_tracing
    - [PyTorch documentation: torch.jit.trace](https://pytorch.org/docs/stable/generated/torch.jit.trace.html)
    """

    code = "IRV103"
    name = "loop-unrolled-on-shape"
    severity = "warning"
    message = "loop over a tensor size `{expr}` is unrolled to the example input's size"
    hint = ("vectorise over the dimension, or move the loop into a "
            "@torch.jit.script_if_tracing function")
    decision = "size"


@rule
class TensorIteration(Rule):
    """## What it does
    Checks for Python iteration over a tensor: `for row in x`, `zip(*x)`,
    `a, b = x`, `list(x)`.

    ## Why is this bad?
    Iterating calls `len` on the tensor and indexes it row by row, in Python. torch
    warns "Iterating over a tensor might cause the trace to be incorrect. Passing a
    tensor of different shape won't change the number of iterations executed (and
    might lead to errors or silently give incorrect results)." The trace holds one copy
    of the loop body per row of the example input.

    ## Example
    ```python
    class Norms(torch.nn.Module):
        def forward(self, x):
            return torch.stack([row.norm() for row in x])
    ```

    ## Use instead
    ```python
    class Norms(torch.nn.Module):
        def forward(self, x):
            return x.norm(dim=1)
    ```

    ## Known problems
    Unpacking a dimension that is fixed by design (`mean, logvar = x` on a dimension
    of size 2) is correct: suppress it with `# noqa: IRV104`.

    ## References
    - [PyTorch documentation: torch.jit.trace](https://pytorch.org/docs/stable/generated/torch.jit.trace.html)
    """

    code = "IRV104"
    name = "tensor-iteration"
    severity = "warning"
    message = "iterating over a tensor (`{expr}`) fixes the number of iterations in the trace"
    hint = "use a tensor op over the dimension instead of a Python loop over rows"
    decision = "size"


@rule
class LenOfTensor(Rule):
    """## What it does
    Checks for `len(x)` on a tensor.

    ## Why is this bad?
    `len` returns a Python `int`, which the tracer cannot follow. torch warns "Using
    len to get tensor shape might cause the trace to be incorrect. Recommended usage
    would be tensor.shape[0]. Passing a tensor of different shape might lead to errors
    or silently give incorrect results." The trace records the example input's length
    as a constant.

    ## Example
    ```python
    class Pad(torch.nn.Module):
        def forward(self, x):
            return torch.cat([x, torch.zeros(len(x), 4)], dim=1)
    ```

    ## Use instead
    `x.size(0)` and `x.shape[0]` stay traced values when passed to torch operations:

    ```python
    class Pad(torch.nn.Module):
        def forward(self, x):
            return torch.cat([x, torch.zeros(x.size(0), 4)], dim=1)
    ```

    ## Known problems
    `len` of a tensor whose first dimension never changes (a fixed lookup table) is
    harmless. `len(x.shape)` is the rank, a different pitfall (IRV102).

    ## References
    - [PyTorch documentation: torch.jit.trace](https://pytorch.org/docs/stable/generated/torch.jit.trace.html)
    """

    code = "IRV105"
    name = "len-of-tensor"
    severity = "warning"
    message = "`{expr}` is recorded as a constant in the trace"
    hint = "use x.size(0) or x.shape[0], which the trace keeps as a value"
    decision = "size"


@rule
class TensorToPythonNumber(ReadsCondition):
    """## What it does
    Checks for conversions of tensors (including traced sizes) to Python numbers or
    lists: `.item()`, `int(t)`, `float(t)`, `complex(t)`, `.tolist()`, and `math`
    functions applied to sizes such as `math.sqrt(x.size(-1))`.

    ## Why is this bad?
    Once a value is a Python number the tracer loses it. torch warns "Converting a
    tensor to a Python integer" (or float, complex, number, list) "might cause the
    trace to be incorrect. We can't record the data flow of Python values, so this
    value will be treated as a constant in the future." Everything computed from the
    number is frozen to the example input's value.

    ## Example
    ```python
    import math

    class Attention(torch.nn.Module):
        def forward(self, q, k):
            scale = math.sqrt(q.size(-1))
            return q @ k.transpose(-2, -1) / scale
    ```

    ## Use instead
    Keep the arithmetic on tensors (size arithmetic stays traced):

    ```python
    class Attention(torch.nn.Module):
        def forward(self, q, k):
            return q @ k.transpose(-2, -1) / (q.size(-1) ** 0.5)
    ```

    ## Known problems
    A conversion whose result never changes for the inputs you deploy (a size fixed by
    the architecture) is frozen correctly; suppress it with `# noqa: IRV106`. Values
    that are only logged or printed are reported as IRV133 instead.

    ## References
    - [PyTorch documentation: torch.jit.trace](https://pytorch.org/docs/stable/generated/torch.jit.trace.html)
    """

    code = "IRV106"
    name = "tensor-to-python-number"
    severity = "error"
    message = "`{expr}` turns a tensor into a Python number: the trace records a constant"
    hint = "keep the value a tensor: use torch ops instead of .item(), int(), float() or math"
    decision = "value"


@rule
class NumpyInTrace(Rule):
    """## What it does
    Checks for tensors (or their sizes) passed through NumPy in traced code:
    `x.numpy()`, `np.*(x)`, `np.arange(x.shape[0])`, and `torch.from_numpy` of the
    result.

    ## Why is this bad?
    The tracer only sees torch operations. torch warns "Converting a tensor to a NumPy
    array might cause the trace to be incorrect", and the tensor built back from the
    array is "registered as constants in the trace". The traced model returns the
    example input's result for every input.

    ## Example
    ```python
    class Double(torch.nn.Module):
        def forward(self, x):
            return torch.from_numpy(x.numpy() * 2)
    ```

    ## Use instead
    ```python
    class Double(torch.nn.Module):
        def forward(self, x):
            return x * 2


    class Positions(torch.nn.Module):
        def forward(self, x):
            return torch.arange(x.size(0))  # not np.arange(x.shape[0])
    ```

    ## Known problems
    NumPy work on constants that do not depend on the inputs (building a fixed table
    once) is harmless, but belongs in `__init__` as a buffer.

    ## References
    - [PyTorch documentation: torch.jit.trace](https://pytorch.org/docs/stable/generated/torch.jit.trace.html)
    """

    code = "IRV107"
    name = "numpy-in-trace"
    severity = "error"
    message = "`{expr}` leaves torch: the trace records the result as a constant"
    hint = "use the torch equivalent (torch.arange, tensor arithmetic) instead of NumPy"
    decision = "value"


@rule
class TensorConstructorConstant(Rule):
    """## What it does
    Checks for tensors built from Python values inside traced code, when those values
    come from the inputs: `torch.tensor([x.size(0)])`, `torch.as_tensor(...)`,
    `torch.Tensor(...)`, `torch.from_numpy(...)`.

    ## Why is this bad?
    torch warns "torch.tensor results are registered as constants in the trace. You
    can safely ignore this warning if you use this function to create tensors out of
    constant variables that would be the same every time you call this function. In
    any other case, this might cause the trace to be incorrect." When the data came
    from the input, the traced model keeps the example input's values.

    ## Example
    ```python
    class Lengths(torch.nn.Module):
        def forward(self, x):
            return torch.tensor([x.size(0)])
    ```

    ## Use instead
    Build the tensor with a torch factory that takes the traced value:

    ```python
    class Lengths(torch.nn.Module):
        def forward(self, x):
            return torch.full((1,), x.size(0))
    ```

    ## Known problems
    A tensor of literals (`torch.tensor([0.485, 0.456, 0.406])`) is a correct constant,
    as torch's message says; irviz reports it only when the values depend on the
    inputs, which it may misjudge when the data flows through helpers. Such constants
    are still better created once, in `__init__`, with `register_buffer`.

    ## References
    - [PyTorch documentation: torch.jit.trace](https://pytorch.org/docs/stable/generated/torch.jit.trace.html)
    """

    code = "IRV108"
    name = "tensor-constructor-constant"
    severity = "warning"
    message = "`{expr}` builds a tensor from Python values: the trace stores it as a constant"
    hint = ("build it with a torch op on the input (torch.full, torch.arange), "
            "or register_buffer a fixed one")


@rule
class ResizeInTrace(Rule):
    """## What it does
    Checks for `resize_` and `resize_as_` in traced code.

    ## Why is this bad?
    torch warns "`resize_` can't be represented in the JIT at the moment, so we won't
    connect any uses of this value with its current trace. If you happen to use it
    again, it will show up as a constant in the graph. Consider using `view` or
    `reshape` to make it traceable." Later uses of the resized tensor read the example
    input's data.

    ## Example
    ```python
    class Flatten(torch.nn.Module):
        def forward(self, x):
            y = x.clone()
            y.resize_(x.numel())
            return y + 1
    ```

    ## Use instead
    ```python
    class Flatten(torch.nn.Module):
        def forward(self, x):
            return x.reshape(-1) + 1
    ```

    ## Known problems
    None known: a resized tensor that is used later is always disconnected.

    ## References
    - [PyTorch documentation: torch.jit.trace](https://pytorch.org/docs/stable/generated/torch.jit.trace.html)
    """

    code = "IRV109"
    name = "resize-in-trace"
    severity = "warning"
    message = "`{expr}` resizes in place, which the trace cannot connect to later uses"
    hint = "use view or reshape (or a new tensor) instead of resizing in place"
    decision = "size"


@rule
class GlobalTensorCaptured(Rule):
    """## What it does
    Checks for tensors read from a module-level global or a closure (not a parameter or
    buffer of the model) in traced code.

    ## Why is this bad?
    The tracer stores the tensor in the graph as a constant, with no warning. Binding
    the global to a new tensor after tracing changes nothing in the traced model (an
    in-place change is still seen, because the constant shares the storage). The
    tensor is not in the model's `state_dict`, so `load_state_dict` and `.to(device)`
    do not reach it.

    ## Example
    ```python
    WEIGHT = torch.ones(4)

    class Scale(torch.nn.Module):
        def forward(self, x):
            return x * WEIGHT
    ```

    ## Use instead
    ```python
    class Scale(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("weight", torch.ones(4))

        def forward(self, x):
            return x * self.weight
    ```

    ## Known problems
    A global constant that never changes and lives on the deployment device is frozen
    correctly. Tensors reached through `functools.partial` or attributes of imported
    modules may be missed.

    ## References
    - PyTorch documentation: torch.nn.Module.register_buffer
    - [PyTorch documentation: torch.jit.trace](https://pytorch.org/docs/stable/generated/torch.jit.trace.html)
    """

    code = "IRV120"
    name = "global-tensor-captured"
    severity = "warning"
    message = "global tensor `{expr}` is baked into the trace as a constant"
    hint = "make it a buffer (self.register_buffer) or a parameter of the module"
    decision = "state"


@rule
class DefaultArgBaked(Rule):
    """## What it does
    Checks for `forward` parameters with default values (`y=None`, `scale=2.0`) that
    the example inputs do not pass when tracing.

    ## Why is this bad?
    The tracer runs `forward` with the defaults and records only the tensors it was
    given as graph inputs. Code guarded by `if y is not None:` is dropped, `scale` is
    frozen, and the traced module no longer accepts those arguments: passing `y` to it
    raises a RuntimeError. torch does not warn.

    ## Example
    ```python
    class Model(torch.nn.Module):
        def forward(self, x, y=None, scale=2.0):
            if y is not None:
                x = x + y
            return x * scale

    traced = torch.jit.trace(Model(), (torch.rand(3),))
    ```

    ## Use instead
    Pass every input the deployed model needs, and make fixed settings constructor
    arguments:

    ```python
    class Model(torch.nn.Module):
        def __init__(self, scale=2.0):
            super().__init__()
            self.scale = scale

        def forward(self, x, y):
            return (x + y) * self.scale

    traced = torch.jit.trace(Model(), (torch.rand(3), torch.rand(3)))
    ```

    ## Known problems
    One finding per signature names every such argument, at the first of them:
    "arguments `token_type_ids`, `position_ids`, ... (7) are not in the example inputs".
    With example inputs (`--inputs` or `example_inputs`, positional or keyword) only
    the arguments they do not pass are named; a non-tensor flag they do not pass
    (`use_cache: bool = None`) is this same fact, not also IRV123. Without inputs
    (`--no-exec`, or none given) irviz cannot know which are passed and names every
    argument with a default. If the deployed model never passes the argument, the
    default is exactly what the trace should hold: suppress it with `# noqa: IRV122`.

    ## References
    - [PyTorch documentation: torch.jit.trace](https://pytorch.org/docs/stable/generated/torch.jit.trace.html)
    """

    code = "IRV122"
    name = "default-arg-baked"
    severity = "warning"
    message = "{expr}: the trace fixes {them}"
    hint = "pass the argument in the example inputs, or make it a constructor argument"
    decision = "argument"


@rule
class NonTensorInput(Rule):
    """## What it does
    Checks for `forward` parameters that take Python values (int, float, bool, str,
    None) rather than tensors.

    ## Why is this bad?
    Traced graphs take only tensors (and lists, tuples and dicts of tensors). Passing a
    Python value as an example input fails with "Type 'Tuple[Tensor, int]' cannot be
    traced. Only Tensors and (possibly nested) Lists, Dicts, and Tuples of Tensors can
    be traced". Binding it some other way (a lambda, `functools.partial`) makes the
    tracer bake the value in silently.

    ## Example
    ```python
    class TopK(torch.nn.Module):
        def forward(self, x, k: int):
            return x.topk(k).values

    traced = torch.jit.trace(TopK(), (torch.rand(8), 3))  # fails
    ```

    ## Use instead
    Make a fixed setting a constructor argument (or script the module, which keeps
    typed Python arguments):

    ```python
    class TopK(torch.nn.Module):
        def __init__(self, k: int):
            super().__init__()
            self.k = k

        def forward(self, x):
            return x.topk(self.k).values

    traced = torch.jit.trace(TopK(3), (torch.rand(8),))
    scripted = torch.jit.script(TopK(3))
    ```

    ## Known problems
    Without annotations or defaults irviz cannot always tell that a parameter takes a
    Python value; it then relies on torch's error when the model is traced. One finding
    per signature names every such argument. A non-tensor argument with a default that
    the example inputs do not pass is reported as IRV122 (the trace fixes it to its
    default), not here.

    ## References
    - [PyTorch documentation: torch.jit.trace](https://pytorch.org/docs/stable/generated/torch.jit.trace.html)
    """

    code = "IRV123"
    name = "non-tensor-input"
    severity = "warning"
    message = "{expr}: the trace bakes {them} in"
    hint = "make it a constructor argument or a tensor input, or script the module"


@rule
class TracedInTrainingMode(Rule):
    """## What it does
    Checks for models traced while in training mode (`module.training` is True, the
    default after construction) whose graph contains operations that behave
    differently in training: dropout, batch and instance norm, `rrelu`.

    ## Why is this bad?
    The tracer records these operations with their training flags as constants:
    dropout keeps dropping and BatchNorm keeps normalising with batch statistics (and
    updating its running stats). Calling `.eval()` on the traced module does not change
    the recorded flags. torch's own check ("Trace had nondeterministic nodes. Did you
    forget call .eval() on your model?") looks only at top-level nodes, so dropout
    inside a submodule and BatchNorm are not reported by torch at all.

    ## Example
    ```python
    model = Classifier()                          # training mode by default
    traced = torch.jit.trace(model, example)
    traced.eval()                                 # no effect on the recorded graph
    ```

    ## Use instead
    ```python
    model = Classifier().eval()
    with torch.no_grad():
        traced = torch.jit.trace(model, example)
    ```

    ## Known problems
    A trace made on purpose for training (or for Monte Carlo dropout at inference)
    should be in training mode; suppress the finding for that model.

    Only ops whose result depends on the flag are reported: a norm with no running
    statistics (`InstanceNorm2d`'s default, a weight-standardising `F.batch_norm` call)
    uses the input's statistics in either mode, and dropout with `p=0` is the identity.
    A module left in training mode is reported only when the model in eval mode gives
    another output than the trace on the example inputs.

    ## References
    - PyTorch documentation: torch.nn.Module.eval
    - [PyTorch documentation: torch.jit.trace](https://pytorch.org/docs/stable/generated/torch.jit.trace.html)
    """

    code = "IRV130"
    name = "traced-in-training-mode"
    severity = "error"
    proof = "certain"
    certainty = ("the op was recorded with its training flag set: every call of the trace runs it "
                 "in training mode")
    message = "`{expr}` is traced in training mode: {who}"
    hint = ("call model.eval() before torch.jit.trace, and pass training=self.training to "
            "F.dropout")


@rule
class TrainingFlagBranch(Rule):
    """## What it does
    Checks for branches on `self.training` (or another module's `.training`) in traced
    code.

    ## Why is this bad?
    `self.training` is a Python bool, so the tracer records only the branch of the mode
    the module was in when traced, with no warning. `traced.eval()` and
    `traced.train()` no longer switch between the branches: a model traced in training
    mode keeps its training behaviour in deployment.

    ## Example
    ```python
    class Noisy(torch.nn.Module):
        def forward(self, x):
            if self.training:
                x = x + 0.1 * torch.randn_like(x)
            return x

    traced = torch.jit.trace(Noisy(), example)  # the noise is in the graph for good
    ```

    ## Use instead
    Trace in the mode you deploy, or script the module so both branches survive:

    ```python
    traced = torch.jit.trace(Noisy().eval(), example)
    scripted = torch.jit.script(Noisy())          # keeps `if self.training`
    ```

    ## Known problems
    When the module was traced in the mode it is deployed in, the recorded branch is
    the right one and the finding is only a reminder that the other mode is gone: true
    but harmless (the dangerous case, ops traced in training mode, is IRV130). So in an
    installed library (site-packages) the finding is shown only when a module defined in
    that file was in training mode while traced; otherwise it is left out and counted in
    a note (`--show-unconfirmed` shows it). In your own files it is always reported.
    Pitfalls inside the branch the trace did not take are not reported (the example
    inputs never ran them); `--no-exec` reports them too.

    ## References
    - PyTorch documentation: torch.nn.Module.eval
    - [PyTorch documentation: torch.jit.trace](https://pytorch.org/docs/stable/generated/torch.jit.trace.html)
    """

    code = "IRV131"
    name = "training-flag-branch"
    severity = "warning"
    message = "`{expr}` is decided once, when the trace is recorded"
    hint = "trace in the mode you deploy (.eval()), or script the module to keep both branches"
    decision = "mode"


@rule
class RandomOpInTrace(Rule):
    """## What it does
    Reports random operations in the traced graph (including inlined submodules):
    `aten::rand*`, `aten::randn*`, `bernoulli`, `normal`, `multinomial`, dropout.

    ## Why is this bad?
    The traced model draws new random numbers on every call, so its outputs are not
    reproducible. torch's check then warns "Output nr 1. of the traced function does
    not match the corresponding output of the Python function" and, when the random op
    is at the top level, "Trace had nondeterministic nodes." A `generator=` passed while
    tracing is stored in the graph as a constant Generator. Random ops left over from
    training (dropout) usually mean the model was traced in training mode (IRV130).

    ## Example
    ```python
    class Noisy(torch.nn.Module):
        def forward(self, x):
            return x + torch.randn(x.shape)
    ```

    ## Use instead
    Let the caller supply the randomness, so the traced model is deterministic:

    ```python
    class Noisy(torch.nn.Module):
        def forward(self, x, noise):
            return x + noise

    traced = torch.jit.trace(Noisy(), (x, torch.randn(x.shape)))
    ```

    ## Known problems
    Deliberate noise (sampling, augmentation, diffusion steps) is the point of the
    model; this rule is informational for that reason.

    ## References
    - [PyTorch documentation: torch.jit.trace](https://pytorch.org/docs/stable/generated/torch.jit.trace.html)
    """

    code = "IRV132"
    name = "random-op-in-trace"
    severity = "info"
    message = "random op `{expr}` in the traced graph"
    hint = "pass the noise in as an input, or call .eval() if it comes from dropout"


@rule
class PythonSideEffectInForward(Rule):
    """## What it does
    Checks for Python side effects in traced code: assigning attributes
    (`self.calls += 1`), mutating globals or Python lists (`LOG.append(...)`),
    `print` and logging calls.

    ## Why is this bad?
    Side effects on Python objects are not tensor operations, so the tracer does not
    record them: they run while tracing and never again. A counter stays frozen, a log
    never grows, a print never prints. With the default `check_trace=True`, state that
    changes between torch's two traces makes tracing fail with "Tracing failed sanity
    checks!"; with `check_trace=False` nothing is reported.

    ## Example
    ```python
    class Counted(torch.nn.Module):
        def forward(self, x):
            self.calls += 1
            print("batch", x.shape)
            return x + 1
    ```

    ## Use instead
    Keep state in tensors the graph updates, and guard trace-time-only output:

    ```python
    class Counted(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("calls", torch.zeros(()))

        def forward(self, x):
            self.calls.add_(1)              # recorded: runs on every call
            if not torch.jit.is_tracing():
                print("batch", x.shape)
            return x + 1
    ```

    ## Known problems
    Debug prints are often meant to run only while developing; the finding is then a
    reminder. In-place updates of registered buffers are recorded by the tracer and are
    not reported. torch never warns, so in an installed library (site-packages) a
    finding only the source layer names is left out and counted in a note
    (`--show-unconfirmed` shows it); in your own files it is reported.

    ## References
    - PyTorch documentation: torch.jit.is_tracing
    - [PyTorch documentation: torch.jit.trace](https://pytorch.org/docs/stable/generated/torch.jit.trace.html)
    """

    code = "IRV133"
    name = "python-side-effect-in-forward"
    severity = "warning"
    message = "`{expr}` runs only while tracing, not when the traced model runs"
    hint = "keep state in a buffer updated in place, or return the value as an output"
    decision = "state"


@rule
class OutputIndependentOfInput(Rule):
    """## What it does
    Reports outputs of the traced graph that no graph input reaches: nothing the model
    returns there is computed from its arguments.

    ## Why is this bad?
    The traced model returns the same value for every input. Usually the value went
    through Python (a number, NumPy, a global tensor) on the way and the tracer froze
    it. torch only raises "output N ... of traced region did not have observable data
    dependence with trace inputs" for tensors no traced operation produced;
    `return torch.ones(3)` passes silently.

    ## Example
    ```python
    class Model(torch.nn.Module):
        def forward(self, x):
            mask = torch.ones(4, 4).tril()
            return x @ mask, mask
    ```

    ## Use instead
    Compute the output from the inputs (shapes count), or keep a fixed value as a
    buffer and return it outside the traced model:

    ```python
    class Model(torch.nn.Module):
        def forward(self, x):
            mask = torch.ones(x.size(-1), x.size(-1)).tril()
            return x @ mask, mask
    ```

    ## Known problems
    A deliberately constant output (a version tag, a fixed anchor grid) is reported as
    well; suppress it. Dependence through a shape (`torch.zeros(x.shape)`) counts as
    dependence.

    ## References
    - [PyTorch documentation: torch.jit.trace](https://pytorch.org/docs/stable/generated/torch.jit.trace.html)
    """

    code = "IRV134"
    name = "output-independent-of-input"
    severity = "warning"
    message = "output {index} does not depend on any input: the trace returns a constant"
    hint = "compute the output from the inputs, or keep the constant outside the traced model"


@rule
class ListOutput(Rule):
    """## What it does
    Checks for traced functions and modules that return a Python list.

    ## Why is this bad?
    The trace fixes the list's length. torch warns "Encountering a list at the output
    of the tracer might cause the trace to be incorrect, this is only valid if the
    container structure does not change based on the module's inputs. Consider using a
    constant container instead (e.g. for `list`, use a `tuple` instead...)". torch
    raises that warning from `torch/jit/_trace.py`, so it points at no line of your
    code; irviz points at the `return`.

    ## Example
    ```python
    class Split(torch.nn.Module):
        def forward(self, x):
            return [x[:, :2], x[:, 2:]]
    ```

    ## Use instead
    ```python
    class Split(torch.nn.Module):
        def forward(self, x):
            return x[:, :2], x[:, 2:]
    ```

    ## Known problems
    A list whose length never changes is traced correctly; a tuple still says so in
    the code and silences torch.

    ## References
    - [PyTorch documentation: torch.jit.trace](https://pytorch.org/docs/stable/generated/torch.jit.trace.html)
    """

    code = "IRV140"
    name = "list-output"
    severity = "warning"
    message = "`{expr}` returns a list: the trace assumes its length never changes"
    hint = "return a tuple"


@rule
class DictOrNonTensorOutput(Rule):
    """## What it does
    Checks for traced functions and modules that return a dict, a Python number, a
    string, or nothing.

    ## Why is this bad?
    `torch.jit.trace` fails: "Only tensors, lists, tuples of tensors, or dictionary of
    tensors can be output from traced functions", "Encountering a dict at the output of
    the tracer" (with the default `strict=True`), or "The traced function didn't return
    any values! Side-effects are not captured in traces, so it would be a no-op."

    ## Example
    ```python
    class Heads(torch.nn.Module):
        def forward(self, x):
            return {"logits": x * 2, "count": 3}
    ```

    ## Use instead
    Return a tuple of tensors (a NamedTuple is traced as a plain tuple), with numbers
    turned into tensors:

    ```python
    class Heads(torch.nn.Module):
        def forward(self, x):
            return x * 2, torch.full((), x.size(0))
    ```

    ## Known problems
    `torch.jit.trace(..., strict=False)` accepts a dict of tensors with fixed keys;
    such a model is reported all the same when irviz cannot see the `strict` setting.
    From the source alone irviz cannot always tell whether a returned name is a tensor.

    ## References
    - [PyTorch documentation: torch.jit.trace](https://pytorch.org/docs/stable/generated/torch.jit.trace.html)
    """

    code = "IRV141"
    name = "dict-or-non-tensor-output"
    severity = "error"
    proof = "certain"
    certainty = ("torch.jit.trace refuses an output that holds no tensor or holds a dict, whatever"
                 " the input")
    message = "`{expr}` returns a dict or a non-tensor value, which torch.jit.trace cannot record"
    hint = "return a tuple of tensors"


@rule
class TraceScriptDivergence(Rule):
    """## What it does
    Scripts the model as well as tracing it, and reports source lines where the
    scripted graph keeps a dynamic operation (`prim::If`, `prim::Loop`, `aten::size`,
    `aten::dim`, `prim::device`, `prim::dtype`) that the trace replaced by a constant.

    ## Why is this bad?
    The scripted graph shows what your code means; the trace shows what happened on one
    example. Where they differ, the traced model has frozen a decision or a size, often
    without any warning from torch (rank and dtype branches, `range` loops).

    ## Example
    ```python
    class Model(torch.nn.Module):
        def forward(self, x):
            for i in range(x.size(0)):   # script: prim::Loop; trace: unrolled
                x = x * 2
            return x
    ```

    ## Use instead
    Script the part that needs control flow and trace the rest:

    ```python
    @torch.jit.script_if_tracing
    def repeat_double(x: torch.Tensor) -> torch.Tensor:
        for i in range(x.size(0)):
            x = x * 2
        return x


    class Model(torch.nn.Module):
        def forward(self, x):
            return repeat_double(x)
    ```

    ## Known problems
    The rule needs a model that both scripts and traces. A constant the trace froze on
    purpose (a fixed dimension) is reported too; the specific rule for the line
    (IRV101-IRV109) usually explains it better. A line the trace never ran (a branch
    the example input did not take, the body of `if torch.jit.is_scripting():`) is not
    reported: the trace froze nothing there.

    ## References
    - PyTorch documentation: torch.jit.script
    - [PyTorch documentation: torch.jit.trace](https://pytorch.org/docs/stable/generated/torch.jit.trace.html)
    """

    code = "IRV150"
    name = "trace-script-divergence"
    severity = "warning"
    message = "the scripted graph has `{kind}` here (`{expr}`), the trace a constant"
    hint = "script this part (@torch.jit.script_if_tracing) or the whole module"


@rule
class ShapeSpecializedTrace(Rule):
    """## What it does
    Traces the model again with inputs of another shape (by default dimension 0 one
    larger and one smaller) and reports the first node where the two graphs differ,
    compared the way torch's own trace check compares them.

    ## Why is this bad?
    A graph that changes with the input shape has the example input's shape built in:
    other shapes run the wrong graph, with wrong results or a runtime error. torch's
    check ("Tracing failed sanity checks! ERROR: Graphs differed across invocations!")
    only catches this when given `check_inputs` of another shape, and by default it
    retraces with the same inputs.

    ## Example
    ```python
    class Model(torch.nn.Module):
        def forward(self, x):
            return x[: int(x.size(0) / 2)]
    ```

    ## Use instead
    Keep shape arithmetic on traced values, and let torch check other shapes too:

    ```python
    class Model(torch.nn.Module):
        def forward(self, x):
            return x[: x.size(0) // 2]

    traced = torch.jit.trace(Model(), torch.rand(8, 3),
                             check_inputs=[(torch.rand(5, 3),)])
    ```

    ## Known problems
    A perturbed shape the model does not accept (a fixed batch of 1, a sequence length
    that must be a multiple of 8) makes the retrace fail or differ for good reasons.
    Dimensions that are not perturbed are not checked.

    ## References
    - [PyTorch documentation: torch.jit.trace](https://pytorch.org/docs/stable/generated/torch.jit.trace.html)
    """

    code = "IRV151"
    name = "shape-specialized-trace"
    severity = "error"
    message = "the trace depends on the example input's shape: {detail}"
    hint = "keep shape arithmetic on x.size()/x.shape values, or script the shape-dependent part"


@rule
class InputDeviceBaked(Rule):
    """## What it does
    Checks for a device read from an input (`x.device`) that the trace records as a
    constant: `torch.zeros(n, device=x.device)`, `y.to(x.device)`.

    ## Why is this bad?
    `torch.jit.trace` records the device the example input was on as a constant. The
    traced model then creates those tensors on that device whatever device its inputs
    are on: a model traced on the CPU and moved to a GPU mixes devices and fails, or
    copies tensors back and forth. No input on the traced device can show it, so irviz
    reports it as a certainty.

    ## Example
    ```python
    class Model(torch.nn.Module):
        def forward(self, x):
            return x + torch.ones(x.shape[-1], device=x.device)
    ```

    ## Use instead
    Derive new tensors from the input, which carries its device with it:

    ```python
    class Model(torch.nn.Module):
        def forward(self, x):
            return x + torch.ones_like(x[0])
    ```

    ## Known problems
    A model that is traced and deployed on the same device is not affected; suppress the
    finding with `# noqa: IRV121` there. Only devices read on a line the trace ran, and
    recorded as a constant argument of an op on that line, are reported.
    """

    code = "IRV121"
    name = "input-device-baked"
    severity = "warning"
    proof = "certain"
    certainty = ("the device is a constant of the trace: an input on another device still "
                 "gets tensors made on this one")
    message = "`{expr}` reads the input's device, and the trace records it as the constant {device}"
    hint = "make the tensor from the input (torch.ones_like, x.new_ones) instead of passing device="


@rule
class ContainerInput(Rule):
    """## What it does
    Checks for an example input that is a list or a dict of tensors.

    ## Why is this bad?
    `torch.jit.trace` unpacks a list or dict input into its tensors, and the trace keeps
    its structure: a list's length, a dict's keys. Called with a list of another length
    the traced model fails ("Expected 2 elements in a list but found 3"); with a
    `List[Tensor]` model that is the whole point of the argument.

    ## Example
    ```python
    class Sum(torch.nn.Module):
        def forward(self, xs: List[torch.Tensor]):
            return torch.stack(xs).sum(0)

    traced = torch.jit.trace(Sum(), ([torch.rand(3), torch.rand(3)],))
    ```

    ## Use instead
    Pass one stacked tensor, or script the module, which keeps `List[Tensor]` dynamic:

    ```python
    class Sum(torch.nn.Module):
        def forward(self, xs: torch.Tensor):
            return xs.sum(0)
    ```

    ## Known problems
    A container that always has the same length (a fixed pair of images) is safe;
    suppress the finding with `# noqa: IRV124` on the `def forward` line.
    """

    code = "IRV124"
    name = "container-input"
    severity = "warning"
    proof = "certain"
    certainty = ("the trace unpacks the container: its length and keys are part of the "
                 "traced model's signature")
    message = "input `{expr}` is {what}: the trace fixes its {fixed}"
    hint = "pass a stacked tensor, or script the module to keep List[Tensor] dynamic"


@rule
class TraceDivergesFromModel(Rule):
    """## What it does
    Reports the line where the trace stops following the Python model, found by running
    both on variant inputs (other sizes, dtypes, values, padded masks) and tracing again on
    the input where they disagree. It is reported when no more specific rule names that
    line.

    ## Why is this bad?
    The traced model gives another result than the model it was traced from, on an input
    the model accepts. The output under the finding names that input and the difference.

    ## Example
    ```python
    class Model(torch.nn.Module):
        def forward(self, x):
            if x.dtype != torch.float32:
                x = x.float()
            return self.linear(x)
    ```

    ## Use instead
    Make the choice inside the graph (an op that works for every case), or script the part
    that decides (`@torch.jit.script_if_tracing`):

    ```python
    class Model(torch.nn.Module):
        def forward(self, x):
            return self.linear(x.to(self.linear.weight.dtype))
    ```

    ## Known problems
    The variants are generic changes of the example inputs; a pitfall that only another
    kind of input shows (another device, a much longer sequence) is not found this way.
    The line is where the two traces first differ, or the statement deciding whether it
    runs; when the cause is earlier (a size turned into a Python number), look there.
    """

    code = "IRV152"
    name = "trace-diverges-from-model"
    severity = "error"
    message = ("the trace and the Python model part ways at `{expr}`: the trace keeps what "
               "the example input did here")
    hint = ("make the choice a tensor op (torch.where), or script the deciding code "
            "(@torch.jit.script_if_tracing)")
