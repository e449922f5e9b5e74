"""Run the trace against the Python model on variant inputs: counterexamples.

A trace is wrong for an input when it gives another result than the model's own Python on
it. That is the only proof a tracing finding can have (docs/lint.md: the evidence
ladder), and it is cheap: two forward passes per variant. For each variant of
:mod:`irviz.frontends.variants`:

1. the Python model runs it; if it raises, the variant is not a valid input and is
   skipped (it never counts as a counterexample);
2. the first trace runs it; a raise, another shape or dtype, or a value further off than
   the output dtype's tolerance (integer and bool outputs: bit-exact) is a
   counterexample.

Random ops (dropout left in training mode, ``torch.rand``) draw the same numbers in the
trace and in the model under the same seed, so both runs start from one seed. When the two
still differ on the example inputs themselves, values cannot be compared at all and only
shapes are (:attr:`Verification.compared` says which was done).
"""
from __future__ import annotations

import contextlib
import time
import warnings
from dataclasses import dataclass, field, replace
from typing import Any, Iterator

import torch

from .capture import Capture, capture, raised
from .decisions import Decision, DecisionRecorder
from .inputs import ExampleInputs
from .variants import SECOND_CALL, Variant

__all__ = ["Outcome", "Verification", "Preserved", "verify", "retrace_on", "lines_run",
           "intra_op_threads", "error_line"]

#: (rtol, atol) per float dtype of an output: what a second run of the same ops may differ by
TOLERANCE = {torch.float64: (1e-7, 1e-9), torch.float32: (1e-4, 1e-5),
             torch.float16: (2e-2, 2e-2), torch.bfloat16: (2e-2, 2e-2)}
_DEFAULT_TOLERANCE = (1e-4, 1e-5)
#: the seed both runs of one variant start from
SEED = 0


@dataclass(frozen=True)
class Outcome:
    """What one variant showed."""

    variant: Variant
    #: the Python model ran it (else ``error`` says what it raised)
    valid: bool
    error: str | None = None
    #: the trace differs from the model on it
    counterexample: bool = False
    #: which output differs (``output 0 (last_hidden_state)``); None when the trace raised
    output: str | None = None
    #: the trace's error, or the largest difference
    difference: str | None = None
    #: what the model's Python decided at each watched line on this run
    #: (:class:`~irviz.frontends.decisions.DecisionRecorder`)
    taken: dict = field(default_factory=dict, compare=False)

    def summary(self) -> str:
        """``x: dim 0 3 -> 4: output 0 has shape (4, 2) where the model gives (3, 2)``."""
        what = self.difference or "the trace differs from the model"
        if self.output:
            what = f"{self.output}: {what}"
        return f"{self.variant.change}: {what}"


@dataclass
class Verification:
    """Every variant's outcome, how outputs were compared, and the time it took."""

    outcomes: list[Outcome] = field(default_factory=list)
    #: ``values``, ``values under a fixed seed`` or ``shapes``
    compared: str = "values"
    seconds: float = 0.0
    #: why values could not be compared (the trace and the model differ on the example)
    note: str | None = None
    #: what the model's Python decided at each watched line on the example inputs
    example_taken: dict = field(default_factory=dict)

    @property
    def valid(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.valid]

    @property
    def counterexamples(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.counterexample]

    def describe(self) -> str:
        """``7 of 9 variants valid (values compared), 1 counterexample, 0.06 s`` (``-v``)."""
        return (f"{len(self.valid)} of {len(self.outcomes)} variants valid ({self.compared} "
                f"compared), {len(self.counterexamples)} counterexample(s), "
                f"{self.seconds:.2f} s")

    def held_on(self) -> tuple[str, ...]:
        """The short names of the valid variants the trace agreed on."""
        return tuple(dict.fromkeys(o.variant.short for o in self.valid
                                   if not o.counterexample))


def _leaves(value: Any, name: str = "") -> list[tuple[str, Any]]:
    """The tensors (and other values) of an output, each with its path."""
    if isinstance(value, torch.Tensor):
        return [(name, value)]
    if isinstance(value, (tuple, list)):
        return [leaf for i, v in enumerate(value)
                for leaf in _leaves(v, f"{name}.{i}" if name else str(i))]
    if isinstance(value, dict):
        return [leaf for k, v in value.items()
                for leaf in _leaves(v, f"{name}.{k}" if name else str(k))]
    return [(name, value)]


def error_line(exc: BaseException) -> str:
    """The user-facing line of an error (``RuntimeError: expected scalar type Double but
    found Float``), TorchScript's re-raised ones included."""
    name, message = raised(exc)
    # TorchScript's signature names a mangled class that changes from one run to the next
    message = message.split(" Declaration: ")[0] if message else message
    return f"{name}: {message}"[:200] if message else name


def _shape(t: torch.Tensor) -> str:
    return str(tuple(t.shape))


def _compare(name: str, got: Any, want: Any, shapes_only: bool) -> str | None:
    """How the trace's ``got`` differs from the model's ``want`` (None: it does not)."""
    if isinstance(want, torch.Tensor) and isinstance(got, torch.Tensor):
        if got.shape != want.shape:
            return f"the trace gives shape {_shape(got)} where the model gives {_shape(want)}"
        if got.dtype != want.dtype:
            return (f"the trace gives dtype {str(got.dtype)[6:]} where the model gives "
                    f"{str(want.dtype)[6:]}")
        if shapes_only or got.numel() == 0:
            return None
        if not (want.dtype.is_floating_point or want.dtype.is_complex):
            if torch.equal(got, want):
                return None
            wrong = int((got != want).sum())
            return f"{wrong} of the trace's {want.numel()} values differ from the model's (exact)"
        rtol, atol = TOLERANCE.get(want.dtype, _DEFAULT_TOLERANCE)
        diff = (got.double() - want.double()).abs()
        diff = torch.where(torch.isnan(diff), torch.full_like(diff, float("inf")), diff)
        if torch.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
            # outputs as small as the tolerance (random weights can give ~1e-6): compared
            # at their own scale, where the absolute tolerance would hide any difference
            scale = float(torch.maximum(got.double().abs().max(), want.double().abs().max()))
            if not 0 < scale < 10 * atol or float(diff.max()) <= rtol * 10 * scale:
                return None
            return (f"the trace's values differ from the model's by up to "
                    f"{float(diff.max()):.3g}, on outputs of at most {scale:.3g} (compared "
                    f"at that scale: {rtol * 10:g} x {scale:.3g})")
        return (f"the trace's values differ from the model's by up to {float(diff.max()):.3g} "
                f"(tolerance {atol:g} + {rtol:g} x |value|)")
    if isinstance(want, torch.Tensor) or isinstance(got, torch.Tensor):
        return f"the trace gives {type(got).__name__} where the model gives {type(want).__name__}"
    return None if got == want else f"the trace gives {got!r} where the model gives {want!r}"


def _differs(trace_out: Any, model_out: Any, names: list[str] | None, shapes_only: bool
             ) -> tuple[str | None, str | None]:
    """``(output, difference)`` of the first output that differs, or ``(None, None)``."""
    got, want = _leaves(trace_out), _leaves(model_out)
    if len(got) != len(want):
        return None, f"the trace gives {len(got)} outputs where the model gives {len(want)}"
    for i, ((path, g), (_, w)) in enumerate(zip(got, want)):
        difference = _compare(path, g, w, shapes_only)
        if difference is not None:
            label = f"output {path or i}"
            if names and i < len(names) and names[i] not in (str(i), path):
                label += f" ({names[i]})"
            return label, difference
    return None, None


class Preserved:
    """Puts the model's Python state back after a run on another input. Models change
    themselves on the inputs they see (Swin shrinks its window for a small image, caches
    keep the last length), and a variant must not change what later runs, the user's
    picture included, see: every module's attributes are restored, and its buffers'
    values."""

    def __init__(self, obj: Any):
        # a ScriptModule keeps its state in TorchScript, where a run of Python cannot reach
        self.modules = [m for m in obj.modules() if not isinstance(m, torch.jit.ScriptModule)
                        ] if isinstance(obj, torch.nn.Module) else []

    def __enter__(self):
        self.saved = []
        for m in self.modules:
            attrs = {k: v for k, v in vars(m).items()
                     if k not in ("_parameters", "_buffers", "_modules")}
            buffers = {k: b.detach().clone() for k, b in m._buffers.items() if b is not None}
            self.saved.append((m, attrs, dict(m._buffers), buffers, dict(m._modules)))
        return self

    def __exit__(self, *exc):
        with torch.no_grad():
            for m, attrs, buffer_slots, buffers, modules in self.saved:
                for key in [k for k in vars(m) if k not in attrs
                            and k not in ("_parameters", "_buffers", "_modules")]:
                    del m.__dict__[key]
                m.__dict__.update(attrs)
                m._buffers.clear()
                m._buffers.update(buffer_slots)
                for key, value in buffers.items():
                    if m._buffers.get(key) is not None and m._buffers[key].shape == value.shape:
                        m._buffers[key].copy_(value)
                m._modules.clear()
                m._modules.update(modules)
        return False


class _Quiet:
    """No warnings and no gradients while the variants run (torch's warnings were
    recorded by the capture; a variant's repeat of them is noise)."""

    def __enter__(self):
        self._warnings = warnings.catch_warnings()
        self._warnings.__enter__()
        warnings.simplefilter("ignore")
        self._grad = torch.no_grad()
        self._grad.__enter__()
        return self

    def __exit__(self, *exc):
        self._grad.__exit__(*exc)
        self._warnings.__exit__(*exc)
        return False


@contextlib.contextmanager
def intra_op_threads(n: int | None) -> Iterator[None]:
    """``n`` intra-op threads inside the block (None: as they are), put back after."""
    before = torch.get_num_threads()
    if n is None or n == before:
        yield
        return
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _run_model(first: Capture, inputs: ExampleInputs, recorder: DecisionRecorder | None = None,
               variant: Variant | None = None) -> Any:
    """The model's Python on ``inputs`` (in ``variant``'s mode; with the arguments of an
    ``argument`` variant, which the trace's adapter does not know, called directly)."""
    torch.manual_seed(SEED)
    obj = first.target.obj
    if variant is not None and variant.mode is not None:
        obj.train(variant.mode == "train")
    with recorder if recorder is not None else _NOTHING:
        if variant is not None and variant.kind == "argument":
            return inputs.call(obj)
        return first.run_python(inputs)


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_NOTHING = _Nothing()


def _run_trace(first: Capture, inputs: ExampleInputs) -> Any:
    torch.manual_seed(SEED)
    return first.run(inputs)


def _output_names(first: Capture) -> list[str] | None:
    leaves = first.adapter.outputs if first.adapter is not None else None
    return list(leaves.names) if leaves is not None else None


def verify(first: Capture, variants: list[Variant], random: bool = False,
           decisions: list[Decision] = (), threads: int | None = None) -> Verification:
    """The outcome of each of ``variants`` on ``first`` (a trace with inputs), with what
    the model's Python decided at each of ``decisions`` on the example and on each.

    ``random``: the trace holds random ops, so values are compared under a fixed seed (or
    by shape, when even the example inputs give different values). Without random ops,
    a model that gives other values on the same inputs a second time keeps state the
    trace baked (``self.calls += 1``): that second call is a counterexample of its own
    (a ``state`` variant among ``variants`` stands for it). ``threads``: torch's
    intra-op threads while the variants run (None: as they are)."""
    started = time.perf_counter()
    result = Verification(compared="values under a fixed seed" if random else "values")
    again = next((v for v in variants if v.kind == "state"), None)
    variants = [v for v in variants if v.kind != "state"]
    with _Quiet():
        recorder = DecisionRecorder(list(decisions)) if decisions else None
        try:
            want = _run_model(first, first.inputs, recorder)
            output, difference = _differs(_run_trace(first, first.inputs), want,
                                          _output_names(first), False)
        except Exception as exc:  # noqa: BLE001 - the model's own error
            result.note = f"the trace does not run on its own example inputs: {error_line(exc)}"
            result.seconds = time.perf_counter() - started
            return result
        if recorder is not None:
            result.example_taken = recorder.taken()
        if difference is not None and random:
            result.compared = "shapes"
            result.note = ("the trace and the model give different values on the example "
                           "inputs themselves (random ops): outputs compared by shape only")
        elif again is not None or difference is not None:
            again = again or Variant(first.inputs, SECOND_CALL, "state", "second call", 0)
            result.outcomes.append(Outcome(again, valid=True, counterexample=True,
                                           output=output, difference=difference)
                                   if difference is not None else Outcome(again, valid=True))
        shapes_only = result.compared == "shapes"
        with intra_op_threads(threads):
            for variant in variants:
                result.outcomes.append(_outcome(first, variant, shapes_only, decisions))
    result.seconds = time.perf_counter() - started
    return result


def _outcome(first: Capture, variant: Variant, shapes_only: bool,
             decisions: list[Decision]) -> Outcome:
    with Preserved(first.target.obj):
        recorder = DecisionRecorder(list(decisions)) if decisions else None
        outcome = _compared(first, variant, shapes_only, recorder)
    if recorder is not None:
        outcome = replace(outcome, taken=recorder.taken())
    return outcome


def _compared(first: Capture, variant: Variant, shapes_only: bool,
              recorder: DecisionRecorder | None) -> Outcome:
    try:
        want = _run_model(first, variant.inputs, recorder, variant)
    except Exception as exc:  # noqa: BLE001 - not a valid input of this model
        return Outcome(variant, valid=False, error=error_line(exc))
    names = _output_names(first)
    try:
        got = _run_trace(first, variant.inputs)
    except Exception as exc:  # noqa: BLE001 - the trace breaks where the model runs
        return Outcome(variant, valid=True, counterexample=True,
                       difference=f"the trace raises \"{error_line(exc)}\"; the model runs")
    if variant.kind == "argument" and first.adapter is not None:
        return Outcome(variant, valid=True)  # outputs not flattened alike: not compared
    output, difference = _differs(got, want, names, shapes_only)
    if difference is None and not shapes_only and _uninformative(want):
        output, difference = _with_weights_redrawn(first, variant, names)
    if difference is None:
        return Outcome(variant, valid=True)
    return Outcome(variant, valid=True, counterexample=True, output=output,
                   difference=difference)


def _uninformative(output: Any) -> bool:
    """Every float output holds one value only (a dead ReLU's zeros, a saturated sigmoid's
    ones): any program reaching that value agrees with the model on it, the wrong branch
    included, so agreeing there shows nothing about the trace."""
    leaves = [t for _, t in _leaves(output) if isinstance(t, torch.Tensor)
              and t.dtype.is_floating_point and t.numel() > 0]
    return bool(leaves) and all(bool((t == t.reshape(-1)[0]).all()) for t in leaves)


class Redrawn:
    """Every float parameter of ``obj`` drawn again from a seeded normal at its own spread
    (1 where it has none: a constant bias), and put back afterwards. The trace holds the
    same parameter tensors, so both programs run with the new weights."""

    def __init__(self, obj: Any):
        self.params = [p for p in obj.parameters() if p.is_floating_point()] \
            if isinstance(obj, torch.nn.Module) else []

    def __enter__(self):
        self.saved = [p.detach().clone() for p in self.params]
        generator = torch.Generator().manual_seed(SEED)
        with torch.no_grad():
            for p in self.params:
                spread = float(p.detach().double().std()) if p.numel() > 1 else 0.0
                drawn = torch.randn(p.shape, generator=generator, dtype=torch.float64)
                p.copy_((drawn * (spread if spread > 0 else 1.0)).to(p.dtype))
        return self

    def __exit__(self, *exc):
        with torch.no_grad():
            for p, saved in zip(self.params, self.saved):
                p.copy_(saved)
        return False


def _with_weights_redrawn(first: Capture, variant: Variant, names: list[str] | None
                          ) -> tuple[str | None, str | None]:
    """The comparison made again with the weights redrawn (:class:`Redrawn`), where the
    model's own weights give one value everywhere; ``(None, None)`` when the two still
    agree, or either raises (the first comparison stands)."""
    with Redrawn(first.target.obj) as redrawn:
        if not redrawn.params:
            return None, None
        try:
            want = _run_model(first, variant.inputs, None, variant)
            got = _run_trace(first, variant.inputs)
        except Exception:  # noqa: BLE001 - new weights the model cannot run: no evidence
            return None, None
        output, difference = _differs(got, want, names, False)
    if difference is not None:
        difference += (" with the weights redrawn (the model's own give one value "
                       "everywhere on this input, which the trace's path reaches too)")
    return output, difference


def retrace_on(first: Capture, inputs: ExampleInputs) -> Capture | None:
    """A second trace of ``first``'s model on ``inputs`` (a counterexample), to see where
    its path leaves the first one's; None when it cannot be traced."""
    with warnings.catch_warnings(), Preserved(first.target.obj):
        warnings.simplefilter("ignore")
        try:
            return capture(first.target, "trace", inputs)
        except Exception:  # noqa: BLE001 - the first trace still stands as evidence
            return None


def lines_run(first: Capture, inputs: ExampleInputs) -> frozenset[tuple[str, int]]:
    """The lines of the model's code its Python runs on ``inputs``: where a second trace
    cannot be made (a model that caches state while traced), the path the model took
    still shows which branch differs."""
    from .eager_run import LineRecorder

    lines = LineRecorder()
    with _Quiet(), Preserved(first.target.obj):
        try:
            with lines:
                first.run_python(inputs)
        except Exception:  # noqa: BLE001 - it ran in verify(): a flaky model says less
            pass
    return lines.executed()
