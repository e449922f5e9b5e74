"""What verification costs ``irviz lint``: the transformers corpus with and without it.

Verification (issue 29) runs the trace against the Python model on generated variant inputs
to find a counterexample for a finding; ``--verify 0`` turns it off. This script lints
``tests/corpus/transformers_models.py`` both ways, side by side in one run: each round runs
one child ``python -m irviz lint CORPUS --format json --exit-zero --verify 0`` and one
without ``--verify 0`` (irviz's default), the order alternating from round to round so that
a change in the machine's load falls on both. It reports the median wall time of each, the
ratio (default / off), the findings of each (errors+warnings, info, counterexamples),
``/proc/loadavg`` before and after and ``nproc``.

An irviz whose ``lint --help`` lists no ``--verify`` cannot be compared: the script says so
and exits 2 before linting anything.

Usage::

    python benchmarks/lint_verify.py [--rounds 3] [--tree DIR] [--verify N] [--target T]
                                     [--out FILE.json] [--markdown]

``--tree DIR`` uses the irviz of another checkout (``PYTHONPATH=DIR``, same venv);
``--verify N`` passes ``--verify N`` on the verifying side instead of leaving irviz's
default; ``--markdown`` appends a section to ``benchmarks/RESULTS-lint.md`` with the command.
"""
from __future__ import annotations

import argparse
import datetime
import json
import shlex
import statistics
import subprocess
import sys
from pathlib import Path

from lint_corpus import (PYTHON, RESULTS, ROOT, child_env, count, irviz_location, loadavg,
                         nproc, run_lint, scrub, short_sha)

CORPUS = "tests/corpus/transformers_models.py"


def lint_help(env: dict) -> str:
    out = subprocess.run([*PYTHON, "-m", "irviz", "lint", "--help"], cwd=ROOT, env=env,
                         capture_output=True, text=True)
    return out.stdout + out.stderr


def has_verify(help_text: str) -> bool:
    return any(word.strip(",") == "--verify" for word in help_text.split())


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def fmt(seconds: float | None) -> str:
    return "–" if seconds is None else f"{seconds:.1f} s"


def report(run: dict) -> str:
    lines = ["| lint | median | min | max | runs | errors+warnings | info | counterexamples |",
             "|---|---|---|---|---|---|---|---|"]
    for side in ("off", "on"):
        r = run[side]
        walls = r["walls"]
        c = r["counts"]
        lines.append(f"| {r['name']} | {fmt(median(walls))} | {fmt(min(walls))} | "
                     f"{fmt(max(walls))} | {len(walls)} | {c['errors_warnings']} | {c['info']} | "
                     f"{c['counterexamples']} |")
    ratio = run.get("ratio")
    lines += ["", f"Ratio (median with verification / median without): "
                  f"{'–' if ratio is None else f'{ratio:.2f}'}."]
    if run.get("unstable"):
        lines += ["", "Findings differed between rounds of one side: " + run["unstable"] + "."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="rounds (one run of each side)")
    ap.add_argument("--tree", type=Path, help="use the irviz of this checkout")
    ap.add_argument("--verify", type=int, metavar="N",
                    help="pass --verify N on the verifying side (default: irviz's default)")
    ap.add_argument("--target", default=CORPUS, help=f"what to lint (default {CORPUS})")
    ap.add_argument("--timeout", type=float, default=3600, help="per child, seconds")
    ap.add_argument("--out", type=Path, help="write the raw times and counts here (JSON)")
    ap.add_argument("--markdown", action="store_true",
                    help="append a section to benchmarks/RESULTS-lint.md")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")

    tree = args.tree.resolve() if args.tree else None
    if tree is not None and not (tree / "irviz" / "__init__.py").is_file():
        ap.error(f"--tree {args.tree}: no irviz package there")
    env = child_env(tree, False)
    located, expected = irviz_location(env), (tree or ROOT) / "irviz"
    if not located.startswith(str(expected)):
        print(f"error: the child imports irviz from {located}, not {expected}", file=sys.stderr)
        return 2
    commit = short_sha(tree or ROOT)
    if not has_verify(lint_help(env)):
        print(f"error: `irviz lint --help` of commit {commit} lists no --verify option: "
              "this irviz has no verification to turn off (issue 29 adds `--verify N`), so "
              "there is nothing to compare; nothing was run", file=sys.stderr)
        return 2

    on_extra = ("--verify", str(args.verify)) if args.verify is not None else ()
    sides = {
        "off": {"name": "`--verify 0` (off)", "extra": ("--verify", "0")},
        "on": {"name": f"`--verify {args.verify}`" if on_extra else "default (verifying)",
               "extra": on_extra},
    }
    run = {"commit": commit, "target": args.target, "rounds": args.rounds, "nproc": nproc(),
           "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
           "loadavg_start": loadavg()}
    for side in sides.values():
        side.update(walls=[], findings=[], loadavg=[])
    for i in range(args.rounds):
        order = ("off", "on") if i % 2 == 0 else ("on", "off")
        for key in order:
            side = sides[key]
            side["loadavg"].append(loadavg())
            res = run_lint(args.target, env, args.timeout, side["extra"])
            if res["findings"] is None:
                print(f"error: round {i + 1}, {side['name']}: the lint failed: {res['error']}",
                      file=sys.stderr)
                return 1
            side["walls"].append(res["wall"])
            side["findings"].append(res["findings"])
            print(f"round {i + 1}: {key:3} {res['wall']:.1f} s, {len(res['findings'])} findings",
                  file=sys.stderr, flush=True)
    run["loadavg_end"] = loadavg()

    unstable = []
    for key, side in sides.items():
        counts = [count(f) for f in side["findings"]]
        side["counts"] = counts[-1]
        if any(c != counts[0] for c in counts):
            unstable.append(side["name"])
        run[key] = {"name": side["name"], "walls": side["walls"], "counts": side["counts"],
                    "loadavg": side["loadavg"], "median": median(side["walls"])}
    run["unstable"] = ", ".join(unstable)
    off, on = run["off"]["median"], run["on"]["median"]
    run["ratio"] = on / off if off else None

    raw = list(argv if argv is not None else sys.argv[1:])
    shown = ["python", "benchmarks/lint_verify.py"] + [
        f"<checkout of {commit}>" if i and raw[i - 1] == "--tree" else shlex.quote(a)
        for i, a in enumerate(raw)]
    run["command"] = scrub(" ".join(shown), tree)
    text = report(run)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(scrub(json.dumps(run, indent=1), tree) + "\n")
    if args.markdown:
        section = [
            f"\n## lint with and without verification (commit {commit})", "",
            f"`{args.target}`, {args.rounds} rounds, each one child with `--verify 0` and one "
            f"{'with `--verify ' + str(args.verify) + '`' if on_extra else 'with the default'}"
            ", the order alternating. Run on "
            f"{run['date']}, {run['nproc']} CPUs, `/proc/loadavg` {run['loadavg_start']} "
            f"before and {run['loadavg_end']} after.", "",
            "```", run["command"], "```", "", text]
        with RESULTS.open("a") as fh:
            fh.write(scrub("\n".join(section), tree))
    return 0


if __name__ == "__main__":
    sys.exit(main())
