"""Variant inputs: the example inputs changed the ways deployment changes them.

``torch.jit.trace`` records the path one example took. Whether that path is the one every
valid input takes is a question for execution (docs/lint.md: the evidence ladder): run the
trace and the Python model on inputs that differ from the example in the ways real inputs
do, and compare. The variants are generic, made from the example inputs alone:

* **shape**: each size grown by one, shrunk to 1 where it is larger, and doubled (a size
  that divides where the example's did not: ``if h % 16 != 0: pad``). Equal sizes
  across inputs move together (a mask as long as its ids, an image's height and width),
  as ``--dynamic-dims`` does for the re-trace; with ``--dynamic-dims`` only the named
  dimensions (and the sizes they share) move.
* **dtype**: the float inputs in float64, float16 and bfloat16.
* **value**: the float inputs negated, and resampled from their range, so that a branch
  on the data (``if x.sum() > 0``) flips.
* **mask**: a 0/1 or bool input with its first row's trailing positions set to 0 (a
  padded sequence in a batch).

Which variants are *valid* is not decided here: a variant is valid when the Python model
runs it without raising (:mod:`irviz.lint.layers.verify`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import torch

from .inputs import ExampleInputs

__all__ = ["Variant", "variants", "aimed", "grown_by_one", "KINDS", "AIMS", "GIVEN"]

KINDS = ("shape", "dtype", "value", "mask")
#: the kind of a variant the user gave (``variants`` in ``[tool.irviz]``), and its distance
#: from the example: after the ones made here (it changes what they could not)
GIVEN = "given"
GIVEN_DISTANCE = 30
#: the decisions a variant can be aimed at (:meth:`irviz.lint.registry.Rule.decides`)
AIMS = ("value", "size", "rank", "shapes", "dtype", "machine", "mode", "argument", "state")
#: distance from the example of each kind of variant (a generic shape change: by size)
_DISTANCE = {"state": 0, "mode": 1, "argument": 2, "size": 5, "rank": 12, "shapes": 8,
             "value": 15, "dtype": 20, "mask": 18}
#: the float dtypes a float input is also tried in (CPU kernels exist for all three)
OTHER_FLOATS = (torch.float64, torch.float16, torch.bfloat16)
#: a resampled input draws from this generator: the same variant on every run
SEED = 20261203


@dataclass(frozen=True)
class Variant:
    """One changed call of the model."""

    inputs: ExampleInputs
    #: the change in full: ``input_ids, attention_mask: dim 1 16 -> 17``
    change: str
    #: one of :data:`KINDS`, :data:`AIMS` or :data:`GIVEN`
    kind: str
    #: the change in a few words, for "held on: ..." lists: ``size 16 -> 17``
    short: str
    #: how far from the example (lower: simpler): the counterexample reported is the
    #: simplest, as a shrinking property tester reports
    distance: int = 50
    #: ``eval``/``train``: the Python model runs in that mode (the trace keeps its own)
    mode: str | None = None


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def grown_by_one(t: torch.Tensor, dims: list[int]) -> torch.Tensor:
    """``t`` one larger along ``dims``, the last slice repeated: a new shape with the
    same kind of data (ids stay ids, a mask stays a mask)."""
    for d in dims:
        t = torch.cat([t, t.narrow(d, t.shape[d] - 1, 1)], dim=d)
    return t.clone()


def _doubled(t: torch.Tensor, dims: list[int]) -> torch.Tensor:
    """``t`` twice as large along ``dims``, its data repeated: a size that divides where the
    example's did not (``if h % 16 != 0``: pad)."""
    repeats = [1] * t.dim()
    for d in dims:
        repeats[d] = 2
    return t.repeat(*repeats)


def _shrunk(t: torch.Tensor, dims: list[int]) -> torch.Tensor:
    for d in dims:
        t = t.narrow(d, 0, 1)
    return t.clone()


def _is_mask(t: torch.Tensor) -> bool:
    """A 0/1 integer or bool tensor with at least one 1 (an all-zero one pads nothing)."""
    if t.dim() == 0 or t.numel() == 0 or t.dtype.is_floating_point or t.dtype.is_complex:
        return False
    if t.dtype == torch.bool:
        return bool(t.any())
    return bool(((t == 0) | (t == 1)).all()) and bool((t == 1).any())


def _padded(t: torch.Tensor) -> torch.Tensor | None:
    """``t`` with the trailing quarter (at least one position) of its first row set to 0
    along the last dimension; None when that changes nothing."""
    out = t.clone()
    n = t.shape[-1]
    k = max(1, n // 4)
    if n < 2:
        return None
    row = out.reshape(-1, n)[0] if out.dim() > 1 else out
    row[n - k:] = False if t.dtype == torch.bool else 0
    return None if torch.equal(out, t) else out


def _size_groups(leaves: _Leaves, dynamic: dict[str, list[int]]
                 ) -> list[tuple[int, dict[int, list[int]]]]:
    """Each size that may change, with the ``{leaf index: [dims]}`` holding it: every
    dimension of every tensor, grouped by size (equal sizes move together). With
    ``dynamic`` (``--dynamic-dims``) only the sizes of the named inputs' dimensions."""
    values = leaves.values
    sizes: dict[int, dict[int, list[int]]] = {}
    allowed: set[int] | None = None
    if dynamic:
        allowed = set()
        for i, (name, value) in enumerate(zip(leaves.tops, values)):
            if isinstance(value, torch.Tensor) and name in dynamic:
                allowed |= {value.shape[d] for d in dynamic[name]
                            if -value.dim() <= d < value.dim()}
    for i, value in enumerate(values):
        if not isinstance(value, torch.Tensor):
            continue
        for d, size in enumerate(value.shape):
            if size == 0 or (allowed is not None and size not in allowed):
                continue
            sizes.setdefault(size, {}).setdefault(i, []).append(d)
    return sorted(sizes.items())


class _Leaves:
    """The tensors of a call, each with a name, also inside list, tuple and dict inputs
    (a detection model's list of images): variants change them where they are."""

    def __init__(self, inputs: ExampleInputs, names: list[str]):
        self.inputs = inputs
        self.paths: list[tuple[int, tuple]] = []
        self.values: list[torch.Tensor] = []
        self.names: list[str] = []
        self.tops: list[str] = []  # the input each leaf belongs to (for --dynamic-dims)
        for i, (name, value) in enumerate(zip(names, inputs.flat)):
            self._walk(value, i, (), name, name)

    def _walk(self, value: Any, i: int, path: tuple, label: str, top: str) -> None:
        if isinstance(value, torch.Tensor):
            self.paths.append((i, path))
            self.values.append(value)
            self.names.append(label)
            self.tops.append(top)
        elif isinstance(value, (list, tuple)):
            for j, item in enumerate(value):
                self._walk(item, i, path + (j,), f"{label}[{j}]", top)
        elif isinstance(value, dict):
            for key, item in value.items():
                self._walk(item, i, path + (key,), f"{label}[{key!r}]", top)

    def with_(self, changed: dict[int, torch.Tensor]) -> ExampleInputs:
        """The call with the leaves ``changed`` (by index) replaced."""
        flat = list(self.inputs.flat)
        for leaf, new in changed.items():
            i, path = self.paths[leaf]
            flat[i] = _set_in(flat[i], path, new)
        return self.inputs.replaced(tuple(flat))


def _set_in(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _set_in(value[head], rest, new)}
    items = list(value)
    items[head] = _set_in(items[head], rest, new)
    return items if isinstance(value, list) else tuple(items)


def _shape_variants(leaves: _Leaves, dynamic: dict[str, list[int]]) -> list[Variant]:
    values, names = leaves.values, leaves.names
    out = []
    for size, where in _size_groups(leaves, dynamic):
        holders = ", ".join(names[i] for i in where)
        dims = sorted({d for ds in where.values() for d in ds})
        label = f"dim {dims[0]}" if len(dims) == 1 else "dims " + ",".join(map(str, dims))
        for new, make in ((size + 1, grown_by_one), (1, _shrunk), (2 * size, _doubled)):
            if new == size or new == 2 and make is _doubled:  # 1 -> 2 is grown already
                continue
            changed = {i: make(values[i], ds) for i, ds in where.items()}
            out.append(Variant(leaves.with_(changed),
                               f"{holders}: {label} {size} -> {new}", "shape",
                               f"size {size} -> {new}", 3 + min(abs(new - size), 40)))
    return out


def _floats(leaves: _Leaves) -> tuple[list[int], str]:
    """The non-empty float tensors (by leaf index), and their names for a variant's text."""
    floats = [i for i, v in enumerate(leaves.values) if v.dtype.is_floating_point and v.numel()]
    return floats, ", ".join(leaves.names[i] for i in floats)


def _dtype_variants(leaves: _Leaves) -> list[Variant]:
    values = leaves.values
    floats, holders = _floats(leaves)
    if not floats:
        return []
    was = _dtype_name(values[floats[0]].dtype)
    out = []
    for dtype in OTHER_FLOATS:
        if any(values[i].dtype == dtype for i in floats):
            continue
        changed = {i: values[i].to(dtype) for i in floats}
        out.append(Variant(leaves.with_(changed),
                           f"{holders} {was} -> {_dtype_name(dtype)}", "dtype",
                           _dtype_name(dtype), _DISTANCE["dtype"]))
    return out


def _value_variants(leaves: _Leaves) -> list[Variant]:
    values = leaves.values
    floats, holders = _floats(leaves)
    if not floats:
        return []
    negated = {i: -values[i] for i in floats}
    generator = torch.Generator().manual_seed(SEED)
    resampled = {}
    for i in floats:
        v = values[i]
        low, high = float(v.min()), float(v.max())
        if low == high:  # a constant input: resample around it
            low, high = low - 1.0, high + 1.0
        draw = torch.rand(v.shape, generator=generator, dtype=torch.float64)
        resampled[i] = (low + (high - low) * draw).to(v.dtype)
    return [Variant(leaves.with_(negated), f"{holders} negated", "value", "negated", 14),
            Variant(leaves.with_(resampled),
                    f"{holders} resampled from their range", "value", "resampled", 15)]


def _mask_variants(leaves: _Leaves) -> list[Variant]:
    values, names = leaves.values, leaves.names
    out = []
    for i, v in enumerate(values):
        if not isinstance(v, torch.Tensor) or not _is_mask(v):
            continue
        padded = _padded(v)
        if padded is None:
            continue
        k = max(1, v.shape[-1] // 4)
        out.append(Variant(leaves.with_({i: padded}),
                           f"{names[i]} padded (last {k} of {v.shape[-1]} positions of its "
                           "first row set to 0)", "mask", f"padded {names[i]}",
                           _DISTANCE["mask"]))
    return out


def variants(inputs: ExampleInputs, names: list[str], dynamic: dict[str, list[int]] | None = None,
             limit: int | None = None) -> list[Variant]:
    """The variants of ``inputs`` (``names``: what each of :attr:`ExampleInputs.flat` is
    called), at most ``limit`` of them, taken in turn from each kind so a small cap still
    tries every kind: shapes first (the commonest change in deployment), then dtypes,
    values and masks."""
    leaves = _Leaves(inputs, names)
    by_kind = [_shape_variants(leaves, dynamic or {}),
               _dtype_variants(leaves),
               _value_variants(leaves),
               _mask_variants(leaves)]
    out: list[Variant] = []
    while any(by_kind) and (limit is None or len(out) < limit):
        for group in by_kind:
            if group and (limit is None or len(out) < limit):
                out.append(group.pop(0))
    return out


# --------------------------------------------------------------------------- aimed

#: the change of a ``state`` variant: the same inputs again (the trace's run was the first)
SECOND_CALL = "a second call on the example inputs"
#: scales of the random-normal draws aimed at a condition on values (mixed signs each)
SCALES = (1.0, 0.01, 100.0)
#: at most this many aimed variants of one kind
_PER_AIM = 4
#: a size asked for by a condition (``x.size(1) > 4096``) is made only up to this many
#: elements
_MAX_NUMEL = 1 << 22


def _resized(t: torch.Tensor, dim: int, size: int) -> torch.Tensor:
    """``t`` with ``size`` along ``dim``: cut, or its last slice repeated."""
    have = t.shape[dim]
    if size <= have:
        return t.narrow(dim, 0, size).clone()
    last = t.narrow(dim, have - 1, 1)
    return torch.cat([t] + [last] * (size - have), dim=dim)


def _chosen(leaves: _Leaves, names: set[str]) -> list[int]:
    """The tensor leaves an aim names (all of them when it names none of the inputs)."""
    picked = [i for i, top in enumerate(leaves.tops) if top in names]
    return picked or list(range(len(leaves.values)))


def _aim_rank(leaves: _Leaves, names: set[str]) -> list[Variant]:
    out = []
    for i in _chosen(leaves, names):
        v = leaves.values[i]
        n = leaves.names[i]
        out.append(Variant(leaves.with_({i: v.unsqueeze(0).clone()}),
                           f"{n}: rank {v.dim()} -> {v.dim() + 1} (a leading dim of 1)",
                           "rank", f"rank {v.dim() + 1}", _DISTANCE["rank"]))
        if v.dim() >= 1 and v.shape[0] > 0:
            out.append(Variant(leaves.with_({i: v[0].clone()}),
                               f"{n}: rank {v.dim()} -> {v.dim() - 1} (its first row)",
                               "rank", f"rank {v.dim() - 1}", _DISTANCE["rank"]))
    return out[:_PER_AIM]


def _aim_shapes(leaves: _Leaves, names: set[str]) -> list[Variant]:
    """One input's shape changed on its own (a comparison of two inputs' shapes)."""
    out = []
    for i in _chosen(leaves, names):
        v = leaves.values[i]
        for d in range(v.dim() - 1, -1, -1):
            size = v.shape[d]
            if size == 0:
                continue
            out.append(Variant(leaves.with_({i: grown_by_one(v, [d])}),
                               f"{leaves.names[i]} alone: dim {d} {size} -> {size + 1}",
                               "shapes", f"{leaves.names[i]} alone", _DISTANCE["shapes"]))
            break
    return out[:_PER_AIM]


_SIZE_TEST = re.compile(r"(\w+)\s*\.\s*(?:size\(\s*(-?\d+)\s*\)|shape\[\s*(-?\d+)\s*\])"
                        r"\s*(?:[<>]=?|[!=]=)\s*(\d+)")


def _aim_size(leaves: _Leaves, statement: str) -> list[Variant]:
    """The sizes a size test names (``x.size(1) > 4096``): its bound and one either side,
    for that input alone."""
    out = []
    for m in _SIZE_TEST.finditer(statement):
        name, dim, bound = m.group(1), int(m.group(2) or m.group(3)), int(m.group(4))
        for i, top in enumerate(leaves.tops):
            v = leaves.values[i]
            if top != name or not -v.dim() <= dim < v.dim() or v.shape[dim] == 0:
                continue
            have = v.shape[dim]
            for size in (bound + 1, bound, bound - 1):
                if size < 0 or size == have or v.numel() // have * size > _MAX_NUMEL:
                    continue
                out.append(Variant(leaves.with_({i: _resized(v, dim, size)}),
                                   f"{leaves.names[i]}: dim {dim % v.dim()} {have} -> {size}",
                                   "size", f"size {have} -> {size}",
                                   _DISTANCE["size"] + min(abs(size - have), 40)))
    return out[:_PER_AIM]


def _aim_values(leaves: _Leaves, names: set[str]) -> list[Variant]:
    """Seeded random-normal draws at other scales, with mixed signs."""
    floats = [i for i in _chosen(leaves, names) if leaves.values[i].dtype.is_floating_point
              and leaves.values[i].numel()]
    if not floats:
        return _aim_masks(leaves, names)
    holders = ", ".join(leaves.names[i] for i in floats)
    generator = torch.Generator().manual_seed(SEED + 1)
    out = _aim_masks(leaves, names)
    for scale in SCALES:
        drawn = {i: (torch.randn(leaves.values[i].shape, generator=generator,
                                 dtype=torch.float64) * scale).to(leaves.values[i].dtype)
                 for i in floats}
        out.append(Variant(leaves.with_(drawn), f"{holders} drawn from N(0, {scale:g}^2)",
                           "value", f"normal x{scale:g}", _DISTANCE["value"]))
    return out


def _aim_masks(leaves: _Leaves, names: set[str]) -> list[Variant]:
    """A 0/1 or bool input the condition reads with every position 0 (all padded): the
    side ``if mask.any()`` or ``if mask.all()`` did not take on an all-ones example."""
    out = []
    for i in _chosen(leaves, names):
        v = leaves.values[i]
        if _is_mask(v):
            out.append(Variant(leaves.with_({i: torch.zeros_like(v)}),
                               f"{leaves.names[i]} padded everywhere (every position 0)",
                               "value", f"{leaves.names[i]} all 0", _DISTANCE["mask"]))
    return out[:_PER_AIM]


def _aim_dtype(leaves: _Leaves, names: set[str]) -> list[Variant]:
    """Integer inputs where the example's were float, and float where they were integer
    (a test of ``x.is_floating_point()``; float to float is a generic variant)."""
    out = []
    for i in _chosen(leaves, names):
        v = leaves.values[i]
        if v.dtype.is_floating_point:
            new = (v * 10).round().to(torch.int64)
        elif v.dtype != torch.bool and not v.dtype.is_complex:
            new = v.to(torch.float32)
        else:
            continue
        out.append(Variant(leaves.with_({i: new}),
                           f"{leaves.names[i]} {_dtype_name(v.dtype)} -> {_dtype_name(new.dtype)}",
                           "dtype", _dtype_name(new.dtype), _DISTANCE["dtype"]))
    return out[:_PER_AIM]


def _aim_mode(obj: Any, inputs: ExampleInputs) -> list[Variant]:
    """The other module mode, where the trace was made in training mode (deployment
    runs ``eval()``)."""
    if isinstance(obj, torch.nn.Module) and obj.training:
        return [Variant(inputs, "the model in eval mode (traced in training mode)", "mode",
                        "eval mode", _DISTANCE["mode"], mode="eval")]
    return []


def _aim_arguments(inputs: ExampleInputs, leaves: _Leaves, obj: Any,
                   arguments: set[str]) -> list[Variant]:
    """Each defaulted argument the example leaves out, passed: a tensor shaped like the
    first tensor input for a ``None`` default, the other value of a bool."""
    import inspect

    forward = getattr(obj, "forward", obj)
    try:
        params = inspect.signature(forward).parameters
    except (TypeError, ValueError):
        return []
    passed = inputs.passed(forward) or set()
    sibling = next((v for v in leaves.values), None)
    out = []
    for name, p in params.items():
        if name in passed or p.default is inspect.Parameter.empty or (
                arguments and name not in arguments):
            continue
        if isinstance(p.default, bool):
            value, text = (not p.default), f"{name}={not p.default}"
        elif p.default is None and sibling is not None:
            value = sibling.clone()
            text = f"{name} passed (a tensor shaped like the first input, {tuple(value.shape)})"
        else:
            continue
        out.append(Variant(ExampleInputs(inputs.args, {**inputs.kwargs, name: value}),
                           text, "argument", f"{name} passed", _DISTANCE["argument"]))
    return out[:_PER_AIM]


def aimed(inputs: ExampleInputs, names: list[str], aims: dict[str, set[str]], obj: Any,
          statements: list[str] = (), limit: int = 16) -> list[Variant]:
    """Variants aimed at the decisions findings rest on, at most ``limit``, the simplest
    first. ``aims``: each kind of :data:`AIMS` asked for, with the inputs its statements
    name (``{"rank": {"x"}}``); ``statements``: their source lines (a size test's bound is
    read off them)."""
    leaves = _Leaves(inputs, names)
    out: list[Variant] = []
    for kind, named in aims.items():
        if kind == "rank":
            out += _aim_rank(leaves, named)
        elif kind == "shapes":
            out += _aim_shapes(leaves, named)
        elif kind == "size":
            for statement in statements:
                out += _aim_size(leaves, statement)
        elif kind == "value":
            out += _aim_values(leaves, named)
        elif kind == "dtype":
            out += _aim_dtype(leaves, named)
        elif kind == "mode":
            out += _aim_mode(obj, inputs)
        elif kind == "argument":
            out += _aim_arguments(inputs, leaves, obj, named)
        elif kind == "state":
            out.append(Variant(inputs, SECOND_CALL, "state", "second call",
                               _DISTANCE["state"]))
    by_kind: dict[str, list[Variant]] = {}
    seen = set()
    for v in sorted(out, key=lambda v: v.distance):  # the simplest of each kind first
        if v.change not in seen:
            seen.add(v.change)
            by_kind.setdefault(v.kind, []).append(v)
    groups, unique = list(by_kind.values()), []
    while any(groups) and len(unique) < limit:  # in turn from each kind, within the cap
        for group in groups:
            if group and len(unique) < limit:
                unique.append(group.pop(0))
    return unique
