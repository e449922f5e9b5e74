"""A finding needs evidence: the eval-mode trace's run says which source guesses were wrong.

* IRV122 once for the signature, naming only the arguments the example inputs leave out
  (``mask``, ``use_cache``; not ``x``), and no IRV123 for the ``bool`` flag: the same fact;
* ``x.dtype == torch.float16 and not torch.isfinite(x).all()``: the line ran in fp32 without
  a TracerWarning (the data half never ran), so only the metadata branch stands;
* ``not drop or use_cache``: ``drop`` is a tensor only in training mode; in this eval trace
  it was ``False`` and torch did not warn, so only the ``self.training`` dependence stands
  (this file is the user's own: an unconfirmed IRV131 here is shown);
* ``x.sum() > 0``: torch warned, the finding stands;
* ``drop = self.training and ...``: TorchScript keeps the ``and`` as an ``if``, the trace a
  constant (IRV150). That confirms something was frozen there, not that it was tensor data:
  it does not bring back the IRV101 the run contradicts.
"""
from typing import Optional

import torch


class _Model(torch.nn.Module):
    def forward(self, x, mask: Optional[torch.Tensor] = None, use_cache: bool = False):  # expect: IRV122
        if x.dtype == torch.float16 and not torch.isfinite(x).all():  # expect: IRV102
            x = x.clamp(-1.0, 1.0)
        drop = self.training and x.sum() > 0  # expect: IRV150
        if not drop or use_cache:  # expect: IRV131
            x = x * 2
        if x.sum() > 0:  # expect: IRV101
            x = x + 1
        return x


def eval_model():
    return _Model().eval()


example_inputs = {"eval_model()": lambda: (torch.rand(3, 4),)}
