"""The TracerWarnings a command shows: each once per run, at a path relative to the
working directory, and in irviz's words where a lint rule knows the warning.

torch warns once per traced call: a sample file with five LSTM models used to print the
same check inside ``torch/nn/modules/rnn.py`` ten times, at absolute paths. A warning
raised inside torch (``origin``) is torch checking its own arguments, so it is shown once
per torch line, naming every line of the model that called it, after the models are done.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..lint.rule_words import first_sentence as _first_sentence, rule_words as _rule_words
from ..paths import display_path, is_torch_file, torch_relative

#: what irviz says of torch's BatchNorm check (lint: IRV130, traced in training mode)
_BATCHNORM = ("a BatchNorm ran in training mode while tracing (the trace normalises by each "
              "batch's statistics): call .eval() before tracing (lint rule IRV130)")


def _shown(path: str) -> str:
    """A file as the user reads it: relative to the working directory, torch's own from
    the torch package (``torch/nn/modules/container.py``)."""
    return f"torch/{torch_relative(path)}" if is_torch_file(path) else display_path(path)


@dataclass
class WarningLines:
    """What torch warned while capturing, printed through ``say`` without repeats."""

    say: Callable[[str], None]
    _shown: set = field(default_factory=set)
    #: (category, origin, first sentence) -> the model lines that called into torch there
    _inside_torch: dict = field(default_factory=dict)

    def found(self, findings: Iterable) -> None:
        """Findings already printed (``render --lint``): a warning on their line is not
        printed again."""
        for d in findings or ():
            self._shown.add(("line", _shown(d.path), int(d.line)))

    def add(self, captured: Iterable, graph=None) -> None:
        """Print the warnings of one capture that were not printed yet; those raised
        inside torch wait for :meth:`flush`. ``graph`` (the capture's): torch's BatchNorm
        check is said to mean training mode only where a ``batch_norm`` of it used the
        batch's statistics; elsewhere (GroupNorm) it is torch checking its input, not
        shown."""
        from ..analyses.traced_control_flow import is_batchnorm_check, normalised_by_batch

        batch_statistics = None
        for w in captured:
            path = _shown(w.filename)
            if is_batchnorm_check(w):
                if graph is not None and batch_statistics is None:
                    batch_statistics = normalised_by_batch(graph)
                if batch_statistics is False:
                    continue
                key = ("batchnorm", None, _BATCHNORM)
                sites = self._inside_torch.setdefault(key, [])
                if (path, w.lineno) not in sites:
                    sites.append((path, w.lineno))
                continue
            if w.origin is not None:
                key = (w.category, w.origin, _first_sentence(w.message))
                site = getattr(w, "called_from", None)
                where = (_shown(site[0]), int(site[1])) if site else (path, w.lineno)
                sites = self._inside_torch.setdefault(key, [])
                if where not in sites:
                    sites.append(where)
                continue
            if ("line", path, int(w.lineno)) in self._shown:
                continue
            key = (w.category, w.message, path, int(w.lineno))
            if key in self._shown:
                continue
            self._shown.add(key)
            words = (_rule_words(w.message, w.filename, w.lineno)
                     if w.category == "TracerWarning" else None)
            words = f"{w.category}: {words or w.message.splitlines()[0]}"
            site = getattr(w, "called_from", None)
            called = f" (called from {_shown(site[0])}:{site[1]})" if site else ""
            self.say(f"{path}:{w.lineno}{called}: {words}")

    def flush(self) -> None:
        """One line per torch line that warned, naming the model lines that called it."""
        for (category, origin, sentence), sites in self._inside_torch.items():
            if origin is None:  # irviz's own words for it
                self.say(f"{_sites(sites)}: {sentence}")
                continue
            self.say(f"{_sites(sites)}: {category} raised inside torch/{origin} (torch's "
                     f"own code; lint rule IRV404, off by default): {sentence}")
        self._inside_torch.clear()


def _sites(sites: list[tuple[str, int]]) -> str:
    """``a.py:26, 28, b.py:3``: the lines, each file named once."""
    parts, last = [], None
    for path, line in sites:
        parts.append(f"{line}" if path == last else f"{path}:{line}")
        last = path
    return ", ".join(parts)
