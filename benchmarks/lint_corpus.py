"""What ``irviz lint`` reports on three corpora of real models, per model, and how long it takes.

The corpora, each linted by one child process (``python -m irviz lint CORPUS --format json
--exit-zero``, run from the repository root so paths in findings are relative):

* ``tests/corpus/transformers_models.py``: 13 Hugging Face models and a user's classifier;
* ``tests/corpus/detection_style.py:make_detector()``: scripted detection-style control flow;
* ``benchmarks/torchvision_lint_models.py``: a torchvision subset, one model per family
  (skipped with a note when torchvision does not import: it is installed beside the CPU
  torch in ``build/corpus-site``, which needs the CUDA stand-ins; ``make lint-corpus`` sets
  both up).

Per model: findings that are errors or warnings, info findings, counterexamples (findings
whose ``evidence.verdict`` is ``"counterexample"``) and certainties (``"certain"``); an
irviz without the ``evidence`` key counts none of either. Per corpus: the wall time of its
child. When a corpus's child fails (exit code other than 0/1, e.g. an internal error), its
models are linted one child each so that those that work are still counted; the others are
marked failed with irviz's last line of stderr.

Usage::

    make lint-corpus                                  # torchvision set up, then this script
    eval "$(../shared/tools/torchvision-cpu/build.sh build/cudastub)"   # or by hand
    python benchmarks/lint_corpus.py [--tree DIR] [--label NAME] [--out FILE.json]
                                     [--markdown] [--compare OLD.json] [--corpus NAME ...]

``--tree DIR`` lints with the irviz of another checkout (``PYTHONPATH=DIR``, same venv; the
corpus files are always this checkout's, so both sides lint the same models), e.g. a
before/after pair::

    git worktree add --detach "$(mktemp -d)/irviz-before" HEAD
    python benchmarks/lint_corpus.py --tree THAT_DIR --label before --out build/lint-before.json --markdown
    git worktree remove THAT_DIR
    python benchmarks/lint_corpus.py --label after --compare build/lint-before.json --markdown

``--label`` names the column set (default ``this``), ``--out`` writes the raw counts as
JSON, ``--markdown`` appends a section to ``benchmarks/RESULTS-lint.md`` (date, command,
``/proc/loadavg`` before and after, ``nproc``), ``--compare`` puts an earlier ``--out``'s
columns beside these.
"""
from __future__ import annotations

import argparse
import ast
import datetime
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "RESULTS-lint.md"
SITE = ROOT / "build" / "corpus-site"   # torchvision beside the CPU torch (make corpus)
#: children run in ROOT (relative paths in findings) without ROOT put first on sys.path
#: (``-P``, Python 3.11+), so that ``--tree``'s PYTHONPATH decides which irviz they import
PYTHON = [sys.executable, "-P"] if sys.version_info >= (3, 11) else [sys.executable]

#: name -> (lint target, file the target list is read from, needs torchvision)
CORPORA = {
    "transformers": ("tests/corpus/transformers_models.py",
                     "tests/corpus/transformers_models.py", False),
    "detection_style": ("tests/corpus/detection_style.py:make_detector()",
                        "tests/corpus/detection_style.py", False),
    "torchvision": ("benchmarks/torchvision_lint_models.py",
                    "benchmarks/torchvision_lint_models.py", True),
}


# -- machine and checkout facts ------------------------------------------------------------

def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def nproc() -> str:
    return str(os.cpu_count() or "?")


def short_sha(tree: Path) -> str:
    """The checkout's commit, with ``+uncommitted`` when its irviz/ has local changes."""
    def git(*args):
        return subprocess.run(["git", "-C", str(tree), *args], capture_output=True,
                              text=True).stdout.strip()
    sha = git("rev-parse", "--short", "HEAD") or "?"
    return sha + ("+uncommitted" if git("status", "--porcelain", "--", "irviz") else "")


def scrub(text: str, tree: Path | None) -> str:
    """Text written to a file names no directory of this machine."""
    if tree is not None:
        text = text.replace(str(tree), "<tree>")
    text = text.replace(str(ROOT), ".")
    return text.replace(tempfile.gettempdir() + os.sep, "<tmp>/")


# -- children ------------------------------------------------------------------------------

#: build/corpus-site seen through a folder named site-packages: torchvision's files are then
#: an installed library's, as in a real install (irviz.paths.is_installed_library_file)
INSTALLED = ROOT / "build" / "corpus-installed" / "site-packages"


def _installed_site() -> Path:
    """:data:`SITE` under the name an installed library's folder has (a symlink)."""
    if not INSTALLED.exists():
        INSTALLED.parent.mkdir(parents=True, exist_ok=True)
        INSTALLED.symlink_to(SITE, target_is_directory=True)
    return INSTALLED


def child_env(tree: Path | None, torchvision: bool) -> dict:
    env = dict(os.environ)
    paths = [str(tree)] if tree is not None else []
    if torchvision and SITE.is_dir():
        paths.append(str(_installed_site()))
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def irviz_location(env: dict) -> str:
    """The irviz package a child with ``env`` imports (to check --tree took effect)."""
    out = subprocess.run([*PYTHON, "-c", "import irviz; print(irviz.__file__)"],
                         cwd=ROOT, env=env, capture_output=True, text=True)
    return out.stdout.strip() or out.stderr.strip().splitlines()[-1:][0]


def torchvision_problem(env: dict) -> str | None:
    """None when torchvision imports in a child with ``env``, else why not (one line)."""
    out = subprocess.run([*PYTHON, "-c", "import torchvision"], cwd=ROOT, env=env,
                         capture_output=True, text=True)
    if out.returncode == 0:
        return None
    lines = out.stderr.strip().splitlines()
    return lines[-1] if lines else f"exit code {out.returncode}"


def run_lint(target: str, env: dict, timeout: float, extra: tuple[str, ...] = ()) -> dict:
    """One child ``python -m irviz lint TARGET --format json --exit-zero [EXTRA...]``."""
    with tempfile.TemporaryDirectory(prefix="lint-corpus-") as tmp:
        out = Path(tmp) / "findings.json"
        cmd = [*PYTHON, "-m", "irviz", "lint", target, "--format", "json",
               "--exit-zero", "-o", str(out), *extra]
        start = time.perf_counter()
        try:
            proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True,
                                  timeout=timeout)
            rc, stderr = proc.returncode, proc.stderr
        except subprocess.TimeoutExpired as exc:
            rc = None
            stderr = (exc.stderr or b"").decode(errors="replace") if isinstance(
                exc.stderr, bytes) else (exc.stderr or "")
            stderr += f"\ntimed out after {timeout:.0f} s"
        wall = time.perf_counter() - start
        findings = None
        if rc in (0, 1) and out.exists():
            try:
                findings = json.loads(out.read_text())
            except ValueError as exc:
                stderr += f"\nunreadable JSON output: {exc}"
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    notes = [ln for ln in lines if ln.startswith("note:")]
    errors = [ln for ln in lines if ln.startswith(("error", "internal error", "timed out"))]
    error = None
    if findings is None:
        error = (errors or lines or [f"exit code {rc}"])[-1]
    return {"rc": rc, "wall": wall, "findings": findings, "notes": notes, "error": error,
            "stderr_tail": lines[-12:], "stderr_lines": lines}


# -- counting ------------------------------------------------------------------------------

def declared_targets(path: Path) -> list[str]:
    """The keys of the file's literal ``example_inputs`` dict (its models, in order)."""
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)
                and any(isinstance(t, ast.Name) and t.id == "example_inputs"
                        for t in node.targets)):
            return [k.value for k in node.value.keys
                    if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    return []


def verdict(finding: dict) -> str | None:
    evidence = finding.get("evidence")
    return evidence.get("verdict") if isinstance(evidence, dict) else None


def count(findings: list[dict]) -> dict:
    return {
        "errors_warnings": sum(f.get("severity") in ("error", "warning") for f in findings),
        "errors": sum(f.get("severity") == "error" for f in findings),
        "warnings": sum(f.get("severity") == "warning" for f in findings),
        "info": sum(f.get("severity") == "info" for f in findings),
        "counterexamples": sum(verdict(f) == "counterexample" for f in findings),
        "certain": sum(verdict(f) == "certain" for f in findings),
        "findings": len(findings),
        "codes": sorted({f.get("code", "?") for f in findings}),
    }


def lint_corpus(name: str, tree: Path | None, timeout: float) -> dict:
    target, listing, needs_tv = CORPORA[name]
    env = child_env(tree, needs_tv)
    result = {"corpus": name, "target": target, "loadavg_start": loadavg()}
    if needs_tv:
        problem = torchvision_problem(env)
        if problem:
            result.update(skipped=f"torchvision does not import ({problem}); set it up as "
                                  "`make lint-corpus` does")
            return result
    if ":" in target:
        models = [target.split(":", 1)[1]]
    else:
        models = declared_targets(ROOT / listing)
    run = run_lint(target, env, timeout)
    result.update(wall=run["wall"], rc=run["rc"], notes=run["notes"])
    per_model: dict[str, dict] = {}
    if run["findings"] is not None:
        for m in models:
            per_model[m] = {"status": "ok", "findings": []}
        for f in run["findings"]:
            per_model.setdefault(f.get("target") or "?", {"status": "ok", "findings": []})
            per_model[f.get("target") or "?"]["findings"].append(f)
    elif ":" in target:
        result.update(error=run["error"], stderr_tail=run["stderr_tail"])
        per_model[models[0]] = {"status": "failed", "error": run["error"], "findings": []}
    else:
        # the corpus's child failed: one child per model, so the models that work count
        result.update(error=run["error"], stderr_tail=run["stderr_tail"], per_model_walls={})
        base = target.split(":", 1)[0]
        for m in models:
            one = run_lint(f"{base}:{m}", env, timeout)
            result["per_model_walls"][m] = one["wall"]
            if one["findings"] is None:
                per_model[m] = {"status": "failed", "error": one["error"], "findings": []}
            else:
                per_model[m] = {"status": "ok", "findings": one["findings"]}
    result["models"] = {m: {"status": v["status"], "error": v.get("error"), **count(v["findings"])}
                        for m, v in per_model.items()}
    result["totals"] = count([f for v in per_model.values() for f in v["findings"]])
    result["loadavg_end"] = loadavg()
    return result


# -- output --------------------------------------------------------------------------------

def fmt_wall(seconds: float | None) -> str:
    return "–" if seconds is None else f"{seconds:.1f} s"


def cells(model: dict | None) -> list[str]:
    if model is None:
        return ["–"] * 4
    if model["status"] != "ok":
        return ["failed"] + ["–"] * 3
    return [str(model[k]) for k in ("errors_warnings", "info", "counterexamples", "certain")]


def wall_text(res: dict | None) -> str:
    """A corpus's wall time; a failed corpus run says so (and the per-model runs' sum)."""
    if not res or res.get("skipped"):
        return "skipped" if res else "–"
    text = fmt_wall(res.get("wall"))
    if res.get("per_model_walls"):
        text += (f" (failed; then one child per model: "
                 f"{fmt_wall(sum(res['per_model_walls'].values()))})")
    elif res.get("error"):
        text += " (failed)"
    return text


def markdown(run: dict, old: dict | None) -> str:
    label = run["label"]
    labels = [old["label"], label] if old else [label]
    heads = ["errors+warnings", "info", "counterexamples", "certain"]
    head = "| corpus | model | " + " | ".join(f"{h} ({lb})" for lb in labels for h in heads) + " |"
    lines = [head, "|" + "---|" * (2 + 4 * len(labels))]
    failures, walls = [], []
    for name, res in run["corpora"].items():
        prev = (old or {}).get("corpora", {}).get(name) if old else None
        if res.get("skipped"):
            walls.append(f"| {name} | skipped: {res['skipped']} |" + " |" * len(labels))
            continue
        models = list(res["models"])
        for m in (prev or {}).get("models", {}):
            if m not in models:
                models.append(m)
        for m in models:
            row = []
            if old:
                row += cells((prev or {}).get("models", {}).get(m))
            row += cells(res["models"].get(m))
            lines.append(f"| {name} | `{m}` | " + " | ".join(row) + " |")
            if res["models"].get(m, {}).get("status") == "failed":
                failures.append(f"- {name} `{m}`: {res['models'][m]['error']}")
        tot = []
        if old:
            tot += cells({"status": "ok", **prev["totals"]}) if prev and prev.get(
                "totals") else ["–"] * 4
        tot += cells({"status": "ok", **res["totals"]})
        lines.append(f"| **{name}** | **all** | " + " | ".join(f"**{c}**" for c in tot) + " |")
        walls.append(f"| {name} | " + (f"{wall_text(prev)} | " if old else "")
                     + f"{wall_text(res)} |")
    out = ["\n".join(lines), ""]
    out += ["| corpus | " + " | ".join(f"wall time ({lb})" for lb in labels) + " |",
            "|---|" + "---|" * len(labels), *walls, ""]
    if failures:
        out += ["Models whose lint failed (irviz's last line of stderr):", "", *failures, ""]
    return "\n".join(out)


def section(run: dict, old: dict | None, command: str) -> str:
    title = f"## {run['label']} (commit {run['commit']})"
    if old:
        title += f" beside {old['label']} (commit {old['commit']})"
    head = [title, "",
            f"Run on {run['date']}, {run['nproc']} CPUs, `/proc/loadavg` {run['loadavg_start']} "
            f"before and {run['loadavg_end']} after; irviz from {run['irviz']}.", "",
            "```", command, "```", ""]
    if any(not r.get("skipped") for n, r in run["corpora"].items() if CORPORA[n][2]):
        head[-4:-4] = [f"torchvision {run.get('torchvision', '?')} from `build/corpus-site` beside "
                       "the CPU torch, set up as `make lint-corpus` does.", ""]
    return "\n".join(head) + "\n" + markdown(run, old)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tree", type=Path, help="lint with the irviz of this checkout")
    ap.add_argument("--label", default="this", help="name of this column set")
    ap.add_argument("--out", type=Path, help="write the raw counts here (JSON)")
    ap.add_argument("--markdown", action="store_true",
                    help="append a section to benchmarks/RESULTS-lint.md")
    ap.add_argument("--compare", type=Path, help="an earlier --out to put beside this run")
    ap.add_argument("--corpus", action="append", choices=list(CORPORA),
                    help="only these corpora (repeatable; default all)")
    ap.add_argument("--timeout", type=float, default=3600, help="per child, seconds")
    args = ap.parse_args(argv)

    tree = args.tree.resolve() if args.tree else None
    if tree is not None and not (tree / "irviz" / "__init__.py").is_file():
        ap.error(f"--tree {args.tree}: no irviz package there")
    located = irviz_location(child_env(tree, False))
    expected = (tree or ROOT) / "irviz"
    if not located.startswith(str(expected)):
        print(f"error: the child imports irviz from {located}, not {expected}",
              file=sys.stderr)
        return 2
    old = json.loads(args.compare.read_text()) if args.compare else None

    run = {"label": args.label, "commit": short_sha(tree or ROOT),
           "irviz": "--tree (a checkout of that commit)" if tree else "this checkout",
           "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
           "nproc": nproc(), "loadavg_start": loadavg(), "corpora": {}}
    for name in args.corpus or list(CORPORA):
        print(f"{name}: linting ...", file=sys.stderr, flush=True)
        res = lint_corpus(name, tree, args.timeout)
        run["corpora"][name] = res
        if res.get("skipped"):
            print(f"note: {name} skipped: {res['skipped']}", file=sys.stderr)
        else:
            t = res["totals"]
            print(f"{name}: {fmt_wall(res['wall'])}, {len(res['models'])} models, "
                  f"{t['errors_warnings']} errors+warnings, {t['info']} info, "
                  f"{t['counterexamples']} counterexamples, {t['certain']} certain"
                  + (f"; the corpus run failed ({res['error']}), linted per model"
                     if res.get("error") else ""), file=sys.stderr, flush=True)
    run["loadavg_end"] = loadavg()
    if "torchvision" in run["corpora"] and not run["corpora"]["torchvision"].get("skipped"):
        out = subprocess.run([*PYTHON, "-c", "import torchvision; print(torchvision.__version__)"],
                             cwd=ROOT, env=child_env(tree, True), capture_output=True, text=True)
        run["torchvision"] = out.stdout.strip() or "?"

    argv_shown = ["python", "benchmarks/lint_corpus.py"]
    raw = list(argv if argv is not None else sys.argv[1:])
    for i, a in enumerate(raw):
        if i > 0 and raw[i - 1] == "--tree":
            a = f"<checkout of {run['commit']}>"
        elif a.startswith("--tree="):
            a = f"--tree=<checkout of {run['commit']}>"
        argv_shown.append(a)
    command = scrub(" ".join(shlex.quote(a) if not a.startswith("<") else a
                             for a in argv_shown), tree)
    run["command"] = command

    text = scrub(markdown(run, old), tree)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(scrub(json.dumps(run, indent=1), tree) + "\n")
    if args.markdown:
        new = not RESULTS.exists()
        with RESULTS.open("a") as fh:
            if new:
                fh.write("# irviz lint on three corpora\n\n"
                         "`benchmarks/lint_corpus.py` (`make lint-corpus`): findings per model "
                         "(errors+warnings, info, counterexamples, certainties) and the wall "
                         "time per corpus; `benchmarks/lint_verify.py`: lint with and without "
                         "verification.\n")
            fh.write("\n" + scrub(section(run, old, command), tree))
    return 0


if __name__ == "__main__":
    sys.exit(main())
