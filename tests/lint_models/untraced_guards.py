"""Code a trace never runs has no tracing pitfalls: the body of ``if
torch.jit.is_scripting():`` (and the ``else`` of ``if not torch.jit.is_scripting():``), the
body of ``if not torch.jit.is_tracing():`` (and the ``else`` of ``if
torch.jit.is_tracing():``), what follows ``torch.jit.is_tracing() or`` or ``if
torch.jit.is_tracing(): return``, and functions called only from there. Scripting still
compiles those branches: its checks see them, and where a guard shares its ``if`` with a
tensor test the scripted graph keeps a branch the trace does not (IRV150). TorchScript in
turn never compiles the ``else`` of ``if torch.jit.is_scripting():``: the scripting checks
do not look there. The guarded code leaves the output alone, so the trace matches eager
Python.
"""
import torch


def _is_tracing():
    """A library's own guard (torchvision has this one)."""
    return torch._C._get_tracing_state()


def eager_only_after_guard(x):
    if _is_tracing():
        return x
    while x.sum() < 0:  # a trace returned above
        x = x + 1
    return x


def scripted_only(x):
    if x.sum() > 0:
        return x
    return -x


class Model(torch.nn.Module):
    @torch.jit.ignore
    def debug_dump(self, x):
        return x

    @torch.jit.unused
    def eager_outputs(self, x):
        return x

    def forward(self, x):
        if torch.jit.is_scripting():
            n = x.sum().item()
            x = scripted_only(x)
            x = self.debug_dump(x)  # expect: IRV304
        else:
            n = 1.0
        if not torch.jit.is_scripting():
            pass
        else:
            n = float(x.max())
        if not torch.jit.is_tracing():
            if x.max() > 1:
                x = x * 1
        if torch.jit.is_tracing():
            pass
        else:
            m = x.min().item()
        if torch.jit.is_scripting() or _is_tracing():
            pass
        else:  # eager Python only
            m = x.max().item()
        x = eager_only_after_guard(x)
        if not torch.jit.is_tracing() and x.sum() > 0:  # expect: IRV150
            x = x * 1
        if torch.jit.is_tracing() or bool(x.sum() > 0):  # expect: IRV150
            x = x * 1
        if torch.jit.is_scripting() or x.sum() > 0:  # expect: IRV101
            x = x * 1
        if torch.jit.is_scripting():
            return x * n
        else:
            return self.eager_outputs(x * n)  # never compiled: no IRV305


example_inputs = {"Model": lambda: (torch.rand(3, 4),)}
