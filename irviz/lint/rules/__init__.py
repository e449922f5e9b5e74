"""irviz's lint rules: importing this package registers every rule in ``REGISTRY``.

One module per family, one class per rule (code, name, message and documentation;
detection lives in the checkers):

* :mod:`.passthrough` - IRV0xx, torch's own warnings and errors no other rule claims;
* :mod:`.tracing` - IRV1xx, what ``torch.jit.trace`` freezes or cannot record;
* :mod:`.fork_wait` - IRV2xx, ``torch.jit.fork``/``wait`` patterns without parallelism;
* :mod:`.scripting` - IRV3xx scripting problems, and the noisy IRV4xx (off by default);
* :mod:`.export` - IRV5xx, the TorchScript -> ``torch.export`` migration (``--mode export``).
"""
from __future__ import annotations

from . import export, fork_wait, passthrough, scripting, tracing

__all__ = ["passthrough", "tracing", "fork_wait", "scripting", "export"]
