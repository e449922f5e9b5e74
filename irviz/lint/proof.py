"""How a finding is proven, in words: the verdicts, and what each kind of decision needs.

The verify layer (:mod:`irviz.lint.layers.verify`) says *undecided* with the input that
would decide (:data:`UNDECIDED`), and every rule page (``irviz rule CODE``,
``docs/rules/``) ends with the section :func:`evidence_section` writes from the rule's
``proof`` and ``decision``: the four verdicts, each with an example of its own kind.
"""
from __future__ import annotations

import textwrap

__all__ = ["UNDECIDED", "EVIDENCE_TITLE", "evidence_section"]

#: what an undecided finding asks for: the input that would drive its decision
UNDECIDED = {
    "value": ("no example took the other side: pass --inputs whose values do, or add them "
              "to `variants` in [tool.irviz]"),
    "size": ("no example had a size that changes it: pass --inputs of other sizes (or add "
             "them to `variants` in [tool.irviz]), or name the dimension with --dynamic-dims"),
    "rank": ("no example had another rank: pass --inputs of another rank, or add them to "
             "`variants` in [tool.irviz]"),
    "shapes": ("no example had inputs of different shapes: pass --inputs whose shapes differ, "
               "or add them to `variants` in [tool.irviz]"),
    "dtype": ("no example had another dtype: pass --inputs of the dtype you deploy, or add "
              "them to `variants` in [tool.irviz]"),
    "mode": "no variant ran the model in the other mode",
    "argument": "no variant passed it: pass it in --inputs",
    "state": "no second call ran",
}

EVIDENCE_TITLE = "How a finding is proven"

#: a counterexample of each kind of decision, as lint prints it
_COUNTEREXAMPLES = {
    "value": ("x drawn from N(0, 1^2): output 0: the trace's values differ from the "
              "model's by up to 6.62 (tolerance 1e-05 + 0.0001 x |value|)"),
    "size": ("x: dim 1 8 -> 9: the trace raises \"RuntimeError: shape '[2, -1, 2]' is "
             "invalid for input of size 18\"; the model runs"),
    "rank": ("x: rank 2 -> 3 (a leading dim of 1): output 0: the trace gives shape "
             "(1, 3, 4) where the model gives (3, 4)"),
    "shapes": ("a alone: dim 1 5 -> 6: the trace raises \"RuntimeError: The size of tensor a "
               "(6) must match the size of tensor b (5) at non-singleton dimension 1\"; the "
               "model runs"),
    "dtype": ("img float32 -> int64: the trace raises \"RuntimeError: mean(): could not "
              "infer output dtype...\"; the model runs"),
    "mode": ("the model in eval mode (traced in training mode): output 0: the trace's "
             "values differ from the model's by up to 0.0426"),
    "argument": ("bias passed (a tensor shaped like the first input, (4, 2)): the trace "
                 "raises \"RuntimeError: forward() expected at most 2 argument(s) but "
                 "received 3 argument(s).\"; the model runs"),
    "state": ("a second call on the example inputs: output 0: the trace's values differ "
              "from the model's by up to 2"),
}
_HELD = {
    "mode": "held: the model in eval mode (traced in training mode): every output matched",
    "argument": "held: unit=True: every output matched",
    "state": "held: a second call on the example inputs: every output matched",
    "size": "held: the loop was 7 iterations on the example, 8, 1, 14 on 3 of 12 variants",
}
_SAME = {"value": "the if took the same side on every variant",
         "size": "the loop ran 7 iterations on the example and on every variant",
         "mode": "no variant changed it", "argument": "no variant changed it",
         "state": "no variant changed it"}
_WHAT = {"value": "the values it tests", "size": "the size it reads", "rank": "the rank",
         "shapes": "one input's shape alone", "dtype": "the dtype", "mode": "the module's mode",
         "argument": "the argument passed", "state": "a second call"}


def evidence_section(rule) -> str:
    """The rule page's last section: what each verdict means for ``rule``'s findings."""
    if rule.severity == "info":
        return ("Findings of this rule are info whatever their evidence: they never fail a "
                "run (`--show-info` shows them).")
    if rule.proof == "certain":
        return (f"Findings of this rule are **certain** ({rule.severity}): "
                f"{rule.certainty or 'a fact no input changes'}.\n\n"
                f"```text\ncertain: {rule.certainty or rule.name}\n```")
    kind = rule.decision
    lines = []
    if kind:
        lines += [f"A finding rests on a Python decision ({_WHAT[kind]}). irviz runs the "
                  "trace and the Python model on variants of the example inputs, some aimed "
                  "at that decision, and records what the decision was on each run.", ""]
    example = _COUNTEREXAMPLES.get(kind or "size")
    lines += ["- **counterexample** (error): a variant the Python model accepts on which "
              "the trace gives another result; the simplest one found is reported.",
              "", f"  ```text\n  counterexample: {example}\n  ```", ""]
    if kind:
        held = _HELD.get(kind, "held: the if took both sides on 7 variants")
        lines += ["- **held** (info): some variant drove the decision the other way and "
                  "every output still matched.", "", f"  ```text\n  {held}\n  ```", "",
                  "- **undecided**: no variant drove the decision the other way, so no run "
                  "shows the trace right: a warning in your own code, info in an installed "
                  "library (it deploys by tracing), or when nothing ran (`--no-exec`, "
                  "`--verify 0`). It names the input that would decide it.", "",
                  f"  ```text\n  undecided: {_SAME.get(kind, _SAME['value'])}: "
                  f"{UNDECIDED[kind]}\n  ```", ""]
        if rule.code in ("IRV101", "IRV102"):
            lines += ["- **certain** (warning): a branch the machine decides "
                      "(`torch.cuda.is_available()`, `x.is_cuda`, `x.device.type`): the "
                      "trace keeps the side the tracing machine took.", "",
                      "  ```text\n  certain: the machine decides this branch, and the trace "
                      "keeps the side this one took (a machine with CUDA takes the other)\n"
                      "  ```", ""]
    else:
        lines += ["- **held** (info): the trace agreed with the model on every valid "
                  "variant.", "", "  ```text\n  held on: size 2 -> 3, float64, negated\n"
                  "  ```", "",
                  "- **undecided** (info): nothing ran that could tell (`--no-exec`, no "
                  "example inputs, `--verify 0`).", "",
                  "  ```text\n  undecided: --no-exec: the model did not run\n  ```", ""]
    return _wrapped("\n".join(lines).rstrip())


def _wrapped(markdown: str, width: int = 88) -> str:
    """Paragraphs and bullets wrapped like the hand-written sections; code kept whole."""
    out, code = [], False
    for line in markdown.split("\n"):
        if line.strip().startswith("```"):
            code = not code
        if code or len(line) <= width or line.strip().startswith("```"):
            out.append(line)
        else:
            out += textwrap.wrap(line, width, subsequent_indent="  " if
                                 line.startswith("- ") else "", break_on_hyphens=False)
    return "\n".join(out)
