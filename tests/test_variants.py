"""Variant inputs (irviz.frontends.variants) and running them (irviz.frontends.verification):
generic, from the example inputs alone."""
from __future__ import annotations

import torch

from irviz.frontends.inputs import ExampleInputs
from irviz.frontends.variants import variants


def _by_kind(found):
    out = {}
    for v in found:
        out.setdefault(v.kind, []).append(v)
    return out


def test_every_size_grows_and_shrinks_and_equal_sizes_move_together():
    ids = torch.randint(0, 100, (2, 16))
    mask = torch.ones(2, 16, dtype=torch.long)
    inputs = ExampleInputs((), {"input_ids": ids, "attention_mask": mask})
    found = _by_kind(variants(inputs, ["input_ids", "attention_mask"]))
    shapes = {v.change: tuple(t.shape for t in v.inputs.flat) for v in found["shape"]}
    assert shapes == {
        "input_ids, attention_mask: dim 0 2 -> 3": ((3, 16), (3, 16)),
        "input_ids, attention_mask: dim 0 2 -> 1": ((1, 16), (1, 16)),
        "input_ids, attention_mask: dim 1 16 -> 17": ((2, 17), (2, 17)),
        "input_ids, attention_mask: dim 1 16 -> 1": ((2, 1), (2, 1)),
        "input_ids, attention_mask: dim 0 2 -> 4": ((4, 16), (4, 16)),
        "input_ids, attention_mask: dim 1 16 -> 32": ((2, 32), (2, 32))}
    grown = next(v for v in found["shape"] if v.change.endswith("16 -> 17"))
    assert torch.equal(grown.inputs.kwargs["input_ids"][:, :16], ids)  # same data, one more
    assert "dtype" not in found and "value" not in found  # integer inputs only
    [padded] = found["mask"]
    m = padded.inputs.kwargs["attention_mask"]
    assert m[0, -4:].tolist() == [0] * 4 and bool(m[0, :12].all()) and bool(m[1].all())
    assert torch.equal(padded.inputs.kwargs["input_ids"], ids)


def test_float_inputs_get_dtypes_and_values_that_flip_data_branches():
    x = torch.rand(3, 4)
    found = _by_kind(variants(ExampleInputs((x,)), ["x"]))
    assert [v.short for v in found["dtype"]] == ["float64", "float16", "bfloat16"]
    assert all(v.inputs.args[0].dtype == getattr(torch, v.short) for v in found["dtype"])
    negated, resampled = found["value"]
    assert torch.equal(negated.inputs.args[0], -x)
    r = resampled.inputs.args[0]
    assert r.shape == x.shape and not torch.equal(r, x)
    assert float(r.min()) >= float(x.min()) - 1e-6 and float(r.max()) <= float(x.max()) + 1e-6
    again = _by_kind(variants(ExampleInputs((x,)), ["x"]))["value"][1].inputs.args[0]
    assert torch.equal(r, again)  # the same variant on every run


def test_the_cap_takes_every_kind_in_turn_and_dynamic_dims_restrict_shapes():
    inputs = ExampleInputs((torch.rand(2, 5, 4), torch.ones(2, 5, dtype=torch.long)))
    capped = variants(inputs, ["x", "mask"], limit=4)
    assert [v.kind for v in capped] == ["shape", "dtype", "value", "mask"]
    only = variants(inputs, ["x", "mask"], {"mask": [1]})
    assert {v.change for v in only if v.kind == "shape"} == {
        "x, mask: dim 1 5 -> 6", "x, mask: dim 1 5 -> 1", "x, mask: dim 1 5 -> 10"}


def test_tensors_inside_a_list_input_vary_where_they_are():
    images = [torch.rand(3, 40, 40), torch.rand(3, 40, 40)]
    found = variants(ExampleInputs((images,)), ["images"])
    grown = next(v for v in found if v.change == "images[0], images[1]: dims 1,2 40 -> 41")
    [new] = grown.inputs.args
    assert isinstance(new, list) and [tuple(t.shape) for t in new] == [(3, 41, 41)] * 2
    assert [tuple(t.shape) for t in images] == [(3, 40, 40)] * 2  # the example is untouched
    assert any(v.kind == "dtype" and v.inputs.args[0][1].dtype == torch.float64 for v in found)
