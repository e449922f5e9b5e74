"""IRV141: forward returns a Python number or string (alone or in a tuple).

torch.jit.trace fails with "Only tensors, lists, tuples of tensors, or dictionary of
tensors can be output from traced functions", the error IRV141 documents.
"""
import torch


class Number(torch.nn.Module):
    def forward(self, x):
        return 3  # expect: IRV141


class NumberInTuple(torch.nn.Module):
    def forward(self, x):
        return x * 2, 3  # expect: IRV141


class StringInTuple(torch.nn.Module):
    def forward(self, x):
        return x, "tag"  # expect: IRV141


example_inputs = {name: (lambda: (torch.rand(3, 4),))
                  for name in ("Number", "NumberInTuple", "StringInTuple")}
