"""``irviz lint`` on a model zoo: cold ``--jobs 1`` against ``--jobs 2``, a warm re-run from
the result cache, an edit to one model file, and ``--shard 1/2`` + ``2/2`` against the
whole run, side by side in one run.

The zoo (copied into a temporary project with its own ``pyproject.toml``, so the cache
and the edit stay out of this checkout):

* the folders ``samples/`` and ``tests/lint_models/`` (each file one spec);
* each model of ``tests/corpus/transformers_models.py`` as its own spec
  (``transformers_models.py:bert()`` ...), listed as ``benchmarks/lint_corpus.py`` does;
* ``benchmarks/torchvision_lint_models.py``, one spec per factory, when torchvision
  imports (``make lint-corpus`` sets it up); otherwise skipped with a note.

Every lint is a child ``python -m irviz lint SPECS --format json --exit-zero -v`` in the
zoo's directory; ``-v``'s last line says how many specs were linted and how many came from
the cache. Interpreter start (``python -c pass``) and ``irviz --version`` are measured
beside it, since a cached run is bounded by them.

Usage::

    python benchmarks/lint_zoo.py [--markdown]     # --markdown: write RESULTS-lint-zoo.md
"""
from __future__ import annotations

import argparse
import ast
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "RESULTS-lint-zoo.md"
SITE = ROOT / "build" / "corpus-site"
TRANSFORMERS = "tests/corpus/transformers_models.py"
TORCHVISION = "benchmarks/torchvision_lint_models.py"
EDITED = "samples/decision_gate.py"


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def factories(path: Path) -> list[str]:
    """The zero-argument model factories (``name()``) and model classes of a corpus file."""
    tree = ast.parse(path.read_text())
    out = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_") \
                and not node.args.args and node.name != "example_inputs":
            out.append(f"{node.name}()")
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            out.append(node.name)
    return out


def env() -> dict:
    e = dict(os.environ)
    e.pop("IRVIZ_NO_CACHE", None)
    paths = [str(ROOT)] + ([str(SITE)] if SITE.is_dir() else [])
    if e.get("PYTHONPATH"):
        paths.append(e["PYTHONPATH"])
    e["PYTHONPATH"] = os.pathsep.join(paths)
    return e


def torchvision_problem() -> str | None:
    out = subprocess.run([sys.executable, "-c", "import torchvision"], env=env(),
                         capture_output=True, text=True)
    return None if out.returncode == 0 else (out.stderr.strip().splitlines() or ["?"])[-1]


def build_zoo(zoo: Path) -> tuple[list[str], list[str]]:
    """Copy the zoo into ``zoo``; its specs and notes."""
    notes = []
    (zoo / "pyproject.toml").write_text("[tool.irviz]\n")
    for folder in ("samples", "tests/lint_models"):
        shutil.copytree(ROOT / folder, zoo / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pt"))
    specs = ["samples", "tests/lint_models"]   # each file one spec (folders expand)
    (zoo / "tests/corpus").mkdir(parents=True)
    shutil.copy(ROOT / TRANSFORMERS, zoo / TRANSFORMERS)
    specs += [f"{TRANSFORMERS}:{name}" for name in factories(ROOT / TRANSFORMERS)]
    problem = torchvision_problem()
    if problem is None:
        (zoo / "benchmarks").mkdir()
        shutil.copy(ROOT / TORCHVISION, zoo / TORCHVISION)
        specs += [f"{TORCHVISION}:{name}" for name in factories(ROOT / TORCHVISION)]
    else:
        notes.append(f"torchvision skipped: it does not import ({problem}); "
                     "`make lint-corpus` sets it up")
    return specs, notes


def lint(zoo: Path, specs: list[str], *args: str) -> dict:
    """One child lint; its wall time, output, exit code and the -v cache line."""
    out = zoo / f"out-{time.monotonic_ns()}.json"
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "irviz", "lint", *specs, "--format", "json",
                           "--exit-zero", "-v", "-o", str(out), *args], cwd=zoo, env=env(),
                          capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1, 2):
        raise SystemExit(f"irviz lint {' '.join(args)} failed ({done.returncode}):\n"
                         + done.stderr[-3000:])
    line = re.search(r"^lint: (\d+) linted, (\d+) from the cache.*$", done.stderr, re.M)
    text = out.read_text()
    out.unlink()
    return {"seconds": seconds, "output": text, "code": done.returncode,
            "linted": int(line.group(1)) if line else None,
            "cached": int(line.group(2)) if line else None,
            "models": re.search(r"in (\d+) models?", done.stderr)}


def median_time(argv: list[str], n: int = 5) -> float:
    times = []
    for _ in range(n):
        started = time.perf_counter()
        subprocess.run(argv, env=env(), capture_output=True, check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def first_difference(a: str, b: str) -> str:
    """Where two outputs part (printed, for a DIFFERS row)."""
    for i, (x, y) in enumerate(zip(a.splitlines(), b.splitlines())):
        if x != y:
            return f"line {i + 1}: {x.strip()[:160]} | {y.strip()[:160]}"
    return f"lengths {len(a)} and {len(b)}"


def findings(output: str) -> list[str]:
    return sorted(json.dumps(f, sort_keys=True) for f in json.loads(output))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--markdown", action="store_true", help=f"write {RESULTS.name}")
    args = parser.parse_args()
    load_before = loadavg()
    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory(prefix="irviz-zoo-") as tmp:
        zoo = Path(tmp)
        specs, notes = build_zoo(zoo)
        python = median_time([sys.executable, "-c", "pass"])
        version = median_time([sys.executable, "-m", "irviz", "--version"])
        rows.append(("interpreter start: `python -c pass` (median of 5)", f"{python:.2f} s", ""))
        rows.append(("`irviz --version` (median of 5)", f"{version:.2f} s", ""))

        serial = lint(zoo, specs, "--no-cache", "--jobs", "1")
        models = serial["models"].group(1) if serial["models"] else "?"
        rows.append((f"cold, `--jobs 1 --no-cache` ({serial['linted']} specs, {models} models)",
                     f"{serial['seconds']:.1f} s", f"{serial['linted']} linted"))
        subprocess.run([sys.executable, "-m", "irviz", "clean"], cwd=zoo, env=env(),
                       capture_output=True)
        parallel = lint(zoo, specs, "--jobs", "2")
        rows.append(("cold, `--jobs 2` (empty cache, writes it)", f"{parallel['seconds']:.1f} s",
                     f"{serial['seconds'] / parallel['seconds']:.2f}x faster; output "
                     + ("byte-identical" if parallel["output"] == serial["output"]
                        else "DIFFERS")))
        warm = [lint(zoo, specs) for _ in range(3)]
        best = statistics.median(w["seconds"] for w in warm)
        rows.append(("warm re-run from the cache (median of 3)", f"{best:.2f} s",
                     f"{best - python:.2f} s beyond interpreter start; "
                     f"{warm[0]['linted']} linted, {warm[0]['cached']} from the cache; output "
                     + ("byte-identical" if all(w["output"] == serial["output"] for w in warm)
                        else "DIFFERS")))
        edited = zoo / EDITED
        edited.write_text(edited.read_text() + "\n# edited\n")
        after_edit = lint(zoo, specs)
        rows.append((f"after editing `{EDITED}`", f"{after_edit['seconds']:.2f} s",
                     f"{after_edit['linted']} linted, {after_edit['cached']} from the cache; "
                     "output " + ("byte-identical" if after_edit["output"] == serial["output"]
                                  else "DIFFERS")))
        started = time.perf_counter()
        shards = [subprocess.Popen([sys.executable, "-m", "irviz", "lint", *specs, "--format",
                                    "json", "--exit-zero", "--no-cache", "--shard",
                                    f"{k}/2"], cwd=zoo, env=env(), stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, text=True) for k in (1, 2)]
        parts = [p.communicate()[0] for p in shards]
        shard_seconds = time.perf_counter() - started
        union = sorted(f for part in parts for f in findings(part))
        whole = findings(serial["output"])
        places = {(f["code"], f["path"], f["line"]) for part in parts for f in json.loads(part)}
        same_places = places == {(f["code"], f["path"], f["line"])
                                 for f in json.loads(serial["output"])}
        rows.append(("`--shard 1/2` and `--shard 2/2` (`--no-cache`, both at once)",
                     f"{shard_seconds:.1f} s",
                     f"{len(union)} findings; concatenated: "
                     + ("== the whole run's" if union == whole else
                        f"the whole run has {len(whole)}; same (code, path, line) set: "
                        + ("yes" if same_places else "NO"))))
        for k, part in enumerate(parts, 1):
            (zoo / f"shard-{k}.json").write_text(part)
        merged = subprocess.run([sys.executable, "-m", "irviz", "lint", "--merge",
                                 "shard-1.json", "shard-2.json", "--format", "json",
                                 "--exit-zero"], cwd=zoo, env=env(), capture_output=True,
                                text=True).stdout
        rows.append(("`irviz lint --merge shard-1.json shard-2.json`", "",
                     f"{len(json.loads(merged or '[]'))} findings; "
                     + ("byte-identical to the whole run" if merged == serial["output"]
                        else "DIFFERS from the whole run")))
        if merged != serial["output"]:
            notes.append("merged shards differ from the whole run at "
                         + first_difference(serial["output"], merged))
        for name, other in (("--jobs 2", parallel["output"]), ("warm", warm[0]["output"]),
                            ("edited", after_edit["output"])):
            if other != serial["output"]:
                notes.append(f"{name} differs from the serial run at "
                             + first_difference(serial["output"], other))
        if union != whole:
            only = sorted(set(union) ^ set(whole))[:3]
            notes.append(f"shards vs whole: {len(union)} vs {len(whole)} findings; e.g. "
                         + "; ".join(o[:200] for o in only))
    load_after = loadavg()
    command = "python benchmarks/lint_zoo.py --markdown"
    table = ["| step | wall time | |", "| --- | --- | --- |"]
    table += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    text = "\n".join([
        f"## {datetime.date.today().isoformat()}: `{command}`", "",
        f"{os.cpu_count()} CPUs (shared with other work); /proc/loadavg {load_before} before, "
        f"{load_after} after. Each row is a child `python -m irviz lint SPECS --format json "
        f"--exit-zero -v` in a copy of the zoo.", "",
        *table, "", *(f"- {n}" for n in notes), ""])
    print(text)
    if args.markdown:
        header = ("# `irviz lint` on a model zoo: --jobs, the result cache, --shard\n\n"
                  "Written by `benchmarks/lint_zoo.py` (see its docstring for the zoo).\n\n")
        old = RESULTS.read_text() if RESULTS.exists() else header
        RESULTS.write_text(old.rstrip() + "\n\n" + text)


if __name__ == "__main__":
    main()
