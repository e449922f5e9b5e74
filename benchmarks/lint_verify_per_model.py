"""What verification costs per model, before and after a change: the transformers corpus
linted by two irviz trees side by side, with and without verification.

Each round runs four children in one alternating order (``python -m irviz lint CORPUS
--format json --exit-zero --no-cache -v``, this checkout and ``--tree BEFORE``, each with
``--verify 0`` and with the default), so that a change in the machine's load falls on
all four. Reported: per model, the errors and warnings each tree reports and the seconds ``-v``
prints for the variants (``verify SPEC: ... N s``, medians over rounds) before and after
and their difference (the extra time the change's variants cost); per tree, the median wall time with verification over the one
without (the cost of verifying against a process that builds and traces only).

Usage::

    python benchmarks/lint_verify_per_model.py --tree BEFORE_TREE [--rounds 2] [--markdown]
"""
from __future__ import annotations

import argparse
import datetime
import re
import statistics
from pathlib import Path

from lint_corpus import RESULTS, child_env, loadavg, nproc, run_lint

CORPUS = "tests/corpus/transformers_models.py"
_VERIFY = re.compile(r"^verify (?:\S+):(\S+): .*?, ([\d.]+) s$")


def _per_model(stderr_lines: list[str]) -> dict[str, float]:
    out = {}
    for line in stderr_lines:
        m = _VERIFY.match(line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, required=True, help="the 'before' checkout")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    sides = {"before": child_env(args.tree, False), "after": child_env(None, False)}
    walls: dict[tuple[str, str], list[float]] = {}
    verify: dict[str, dict[str, list[float]]] = {"before": {}, "after": {}}
    alarms: dict[str, dict[str, int]] = {"before": {}, "after": {}}
    load_before = loadavg()
    for r in range(args.rounds):
        order = [(s, v) for s in sides for v in ("off", "on")]
        for side, mode in (order if r % 2 == 0 else order[::-1]):
            extra = ("--no-cache", "-v") + (("--verify", "0") if mode == "off" else ())
            got = run_lint(CORPUS, sides[side], 3600, extra)
            walls.setdefault((side, mode), []).append(got["wall"])
            if mode == "on":
                for model, sec in _per_model(got["stderr_lines"]).items():
                    verify[side].setdefault(model, []).append(sec)
                alarms[side] = {}  # (the last round's: lint is deterministic)
                for f in got["findings"] or ():
                    alarms[side].setdefault(f.get("target"), 0)
                    alarms[side][f.get("target")] += f.get("severity") in ("error", "warning")
            print(f"round {r + 1}: {side} verify {mode}: {got['wall']:.1f} s", flush=True)
    med = {k: statistics.median(v) for k, v in walls.items()}
    rows = ["| model | errors+warnings before | after | verify before (s) | verify after (s) "
            "| extra (s) |", "|---|---|---|---|---|---|"]
    for model in verify["after"]:
        b = statistics.median(verify["before"].get(model, [0.0]))
        a = statistics.median(verify["after"][model])
        rows.append(f"| `{model}` | {alarms['before'].get(model, 0)} | "
                    f"{alarms['after'].get(model, 0)} | {b:.2f} | {a:.2f} | {a - b:+.2f} |")
    ratio = ["| tree | wall, --verify 0 | wall, default | ratio |", "|---|---|---|---|"]
    for side in sides:
        off, on = med[(side, "off")], med[(side, "on")]
        ratio.append(f"| {side} | {off:.1f} s | {on:.1f} s | {on / off:.2f}x |")
    text = "\n".join(rows + [""] + ratio)
    print(text)
    if args.markdown:
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        with RESULTS.open("a") as f:
            f.write(f"\n## verification cost per model, before and after (issue 42)\n\n"
                    f"Run on {now}, {nproc()} CPUs, `/proc/loadavg` {load_before} before and "
                    f"{loadavg()} after; {args.rounds} rounds, medians.\n\n```\npython "
                    f"benchmarks/lint_verify_per_model.py --tree BEFORE_TREE --rounds "
                    f"{args.rounds} --markdown\n```\n\n{text}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
