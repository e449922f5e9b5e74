"""For how many proven findings ``irviz lint`` verifies a remedy, by kind, and why not.

Lints the pitfall corpora (``tests/lint_models`` with its ``pitfalls/``, ``runtime/`` and
``remedies/`` folders, and ``samples/``) in one child process, ``--format json --no-cache``,
and counts the findings whose evidence is a counterexample (the errors a remedy is
searched for): those with a verified remedy by kind (``Remedy.kind``), and those with none
by rule, with the first reason each failed candidate gave.

Usage::

    python benchmarks/remedy_corpus.py [--markdown]   # --markdown: append to RESULTS-remedies.md
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "RESULTS-remedies.md"
CORPORA = ["tests/lint_models", "samples"]


def lint(paths: list[str]) -> tuple[list[dict], float]:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "irviz", "lint", *paths, "--format", "json",
                           "--exit-zero", "--no-cache"], cwd=ROOT, capture_output=True,
                          text=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"irviz lint failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(proc.stdout), time.perf_counter() - started


def _reason(why: str) -> str:
    """A failure's kind: ``does not compile``, ``outputs still differ``, ``the trace fails``."""
    for kind in ("does not compile", "outputs still differ", "the trace fails",
                 "no candidate"):
        if why.startswith(kind):
            return kind
    return why.split(":")[0]


def table(found: list[dict]) -> str:
    proven = [f for f in found if (f.get("evidence") or {}).get("verdict") == "counterexample"]
    kinds = Counter(f["remedy"]["kind"] + (" (whole model)" if f["remedy"]["module"] == ""
                                           else "")
                    for f in proven if f["remedy"])
    missing: dict[str, list[str]] = defaultdict(list)
    for f in proven:
        if not f["remedy"]:
            reasons = ", ".join(dict.fromkeys(_reason(a["why"]) for a in f["remedy_tried"]))
            missing[f"{f['code']} {f['name']}"].append(
                f"{os.path.basename(f['path'])}:{f['line']} ({reasons})")
    verified = sum(kinds.values())
    lines = [f"{verified} of {len(proven)} findings proven by a counterexample have a "
             "verified remedy.", "", "| remedy kind | findings |", "|---|---|"]
    lines += [f"| {kind} | {n} |" for kind, n in kinds.most_common()]
    lines += ["", "| no verified remedy: rule | findings (why the candidates failed) |",
              "|---|---|"]
    lines += [f"| {rule} | {len(where)}: {'; '.join(where)} |"
              for rule, where in sorted(missing.items())]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true",
                        help=f"append the table to {RESULTS.name}")
    args = parser.parse_args()
    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() \
        else []
    found, seconds = lint(CORPORA)
    text = table(found)
    print(text)
    print(f"(lint of {', '.join(CORPORA)}: {seconds:.1f} s wall, load {' '.join(load)})")
    if args.markdown:
        with open(RESULTS, "a", encoding="utf-8") as fh:
            fh.write(f"\n## {datetime.date.today()}: `python benchmarks/remedy_corpus.py "
                     f"--markdown`\n\nCorpora: {', '.join(CORPORA)}; {seconds:.1f} s wall, "
                     f"load {' '.join(load)}, nproc {os.cpu_count()}.\n\n{text}")


if __name__ == "__main__":
    main()
