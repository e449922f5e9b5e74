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

from dataclasses import dataclass
from typing import Any

import torch

from .inputs import ExampleInputs

__all__ = ["Variant", "variants", "grown_by_one", "KINDS"]

KINDS = ("shape", "dtype", "value", "mask")
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
    #: one of :data:`KINDS`
    kind: str
    #: the change in a few words, for "held on: ..." lists: ``size 16 -> 17``
    short: str


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
                               f"size {size} -> {new}"))
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
                           _dtype_name(dtype)))
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
    return [Variant(leaves.with_(negated), f"{holders} negated", "value", "negated"),
            Variant(leaves.with_(resampled),
                    f"{holders} resampled from their range", "value", "resampled")]


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
                           "first row set to 0)", "mask", f"padded {names[i]}"))
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
