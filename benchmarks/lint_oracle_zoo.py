"""``irviz lint`` on a third-party zoo against an oracle written without irviz.

The zoo is ``benchmarks/oracle_zoo_models.py`` (timm, MONAI, segmentation-models-pytorch in
small configurations). Per model, child processes one after the other:

* **baseline**: build the model, ``torch.jit.script`` it (a failure is fine) and
  ``torch.jit.trace`` it at the example input: what a user's export script costs;
* **oracle** (no irviz imported; one process for every model, not timed): trace at the
  example input, then run the trace and the
  eager model (eval mode) on the other batch sizes and image sizes of ``VARIANTS``. An input
  the eager model rejects is not valid; the trace is **broken** when it raises on a valid
  input or gives other values (``|trace - eager| > 1e-4 * max|eager| + 1e-6``) or shapes;
* **lint**: ``python -m irviz lint SPEC --no-cache --format json``, its exit code, findings
  and wall time.

The goal: lint exits 1 on every model the oracle finds broken and 0 on every other, and
lint's wall time stays within 3x the baseline's at the 90th percentile.

The libraries come from ``build/corpus-site`` as installed libraries (``make lint-corpus``
puts torchvision there; add ``timm monai segmentation-models-pytorch tqdm`` with
``pip install --no-deps --target build/corpus-site``), with the CUDA stand-ins of
``../shared/tools/torchvision-cpu/build.sh`` on ``LD_LIBRARY_PATH``.

Usage::

    python benchmarks/lint_oracle_zoo.py [--only NAME ...] [--json OUT] [--label L]
    python benchmarks/lint_oracle_zoo.py --lint-only PREVIOUS.json ...   # re-lint, reuse
                                                     # the oracle and baseline of a run
    python benchmarks/lint_oracle_zoo.py --markdown RUN.json [RUN2.json]  # the table
"""
from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MODELS = HERE / "oracle_zoo_models.py"
RESULTS = HERE / "RESULTS-lint-oracle-zoo.md"
SPEC = "benchmarks/oracle_zoo_models.py"


def _models_module():
    spec = importlib.util.spec_from_file_location("oracle_zoo_models", MODELS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- children (no irviz) -------------------------------------------------------------------

def child_baseline(name: str) -> dict:
    import torch

    zoo = _models_module()
    model = getattr(zoo, name)()
    example = zoo.example_inputs[f"{name}()"]()
    scripted = True
    try:
        torch.jit.script(model)
    except Exception:  # noqa: BLE001 - not every model scripts; tracing is the point
        scripted = False
    with torch.no_grad():
        torch.jit.trace(model, example)
    return {"scripted": scripted}


def _differ(got, want) -> str | None:
    import torch

    if isinstance(want, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            return f"trace gives {type(got).__name__}"
        if got.shape != want.shape:
            return f"shape {tuple(got.shape)} vs eager {tuple(want.shape)}"
        diff = float((got.double() - want.double()).abs().max()) if want.numel() else 0.0
        scale = float(want.double().abs().max()) if want.numel() else 0.0
        if diff != diff or diff > 1e-4 * scale + 1e-6:
            return f"values differ by {diff:.3g} (max |eager| {scale:.3g})"
        return None
    if isinstance(want, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(want):
            return "another output structure"
        return next((d for g, w in zip(got, want) if (d := _differ(g, w))), None)
    if isinstance(want, dict):
        return next((d for k in want if (d := _differ(got[k], want[k]))), None)
    return None if got == want else f"{got!r} vs {want!r}"


def child_oracle(name: str) -> dict:
    import torch

    zoo = _models_module()
    model = getattr(zoo, name)()
    example = zoo.example_inputs[f"{name}()"]()
    out = {"valid": 0, "invalid": 0, "broken": False, "why": "", "tried": []}
    with torch.no_grad():
        trace = torch.jit.trace(model, example, check_trace=False)
        for batch, side in [(example[0].shape[0], example[0].shape[-1])] + zoo.VARIANTS:
            x = zoo._image(batch, side)
            label = f"{batch}x{side}"
            try:
                want = model(x)
            except Exception as exc:  # noqa: BLE001 - not a valid input of this model
                out["invalid"] += 1
                out["tried"].append(f"{label}: eager raises {type(exc).__name__}")
                continue
            out["valid"] += 1
            try:
                got = trace(x)
            except Exception as exc:  # noqa: BLE001 - the broken trace
                why = f"{label}: trace raises {type(exc).__name__}: {str(exc).splitlines()[0][:80]}"
            else:
                why = _differ(got, want)
                why = f"{label}: {why}" if why else None
            out["tried"].append(why or f"{label}: same")
            if why and not out["broken"]:
                out["broken"], out["why"] = True, why
    return out


# -- parent --------------------------------------------------------------------------------

def names() -> list[str]:
    import ast

    tree = ast.parse(MODELS.read_text())
    return [n.name for n in tree.body if isinstance(n, ast.FunctionDef)
            and n.name.startswith(("timm_", "monai_", "smp_"))]


def _child(kind: str, name: str, env: dict, timeout: float) -> tuple[dict, float]:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, __file__, "--child", kind, name], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return {"error": tail[:200]}, wall
    return json.loads(proc.stdout.strip().splitlines()[-1]), wall


def _lint(name: str, env: dict, timeout: float) -> dict:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "irviz", "lint", f"{SPEC}:{name}()",
                           "--no-cache", "--format", "json"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - started
    try:
        findings = json.loads(proc.stdout or "[]")
    except ValueError:
        findings = []
    shown = [f"{f['code']}:{f['line']}" for f in findings
             if f.get("severity") in ("error", "warning")]
    err = "" if proc.returncode in (0, 1) else (proc.stderr.strip().splitlines() or ["?"])[-1]
    return {"exit": proc.returncode, "findings": shown, "wall": wall, "error": err[:200]}


def run(selected: list[str], previous: dict | None, timeout: float,
        out: Path | None = None) -> dict:
    sys.path.insert(0, str(HERE))
    from lint_corpus import child_env

    env = child_env(None, torchvision=True)
    rows = {}
    todo = [n for n in selected if n not in (previous or {}).get("models", {})]
    oracles = _child("oracle", ",".join(todo), env, timeout * len(todo))[0] if todo else {}
    for name in selected:
        old = (previous or {}).get("models", {}).get(name)
        if old is not None:
            row = {k: old[k] for k in ("oracle", "baseline", "baseline_wall")}
        else:
            base, base_wall = _child("baseline", name, env, timeout)
            row = {"oracle": oracles[name], "baseline": base, "baseline_wall": base_wall}
        row["lint"] = _lint(name, env, timeout)
        row["ratio"] = row["lint"]["wall"] / row["baseline_wall"]
        rows[name] = row
        if out is not None:   # after every model: a run cut short keeps what it measured
            out.write_text(json.dumps({"date": _now(), "models": rows}, indent=1))
        print(f"{name}: oracle {'broken' if row['oracle'].get('broken') else 'ok'} "
              f"lint exit {row['lint']['exit']} {row['lint']['findings']} "
              f"ratio {row['ratio']:.2f}", file=sys.stderr, flush=True)
    return {"date": _now(), "models": rows}


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def agreement(row: dict) -> str:
    oracle = row["oracle"]
    if "error" in oracle:
        return "oracle failed"
    want = 1 if oracle["broken"] else 0
    got = row["lint"]["exit"]
    if got == want:
        return "agree"
    return "MISSED (exit 0 on a broken trace)" if want else f"FALSE ALARM (exit {got})"


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def summary(run_: dict) -> str:
    rows = run_["models"].values()
    ratios = [r["ratio"] for r in rows]
    agree = sum(agreement(r) == "agree" for r in rows)
    return (f"{agree} of {len(ratios)} agree; lint / baseline wall: median "
            f"{statistics.median(ratios):.2f}x, p90 {_pct(ratios, 0.9):.2f}x, "
            f"max {max(ratios):.2f}x")


def markdown(runs: list[tuple[str, dict]]) -> str:
    first = runs[0][1]["models"]
    head = ["model", "oracle", "oracle's evidence", "scripts"]
    for label, _ in runs:
        head += [f"lint exit ({label})", f"errors/warnings ({label})", f"verdict ({label})",
                 f"lint/baseline ({label})"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, row in first.items():
        oracle = row["oracle"]
        cells = [name, "error" if "error" in oracle else
                 ("**broken**" if oracle["broken"] else f"ok ({oracle['valid']} valid)"),
                 (oracle.get("why") or oracle.get("error") or "").replace("|", "/"),
                 "yes" if row["baseline"].get("scripted") else "no"]
        for _, run_ in runs:
            r = run_["models"].get(name)
            if r is None:
                cells += ["", "", "", ""]
                continue
            cells += [str(r["lint"]["exit"]), " ".join(r["lint"]["findings"]) or "-",
                      agreement(r), f"{r['ratio']:.2f}x"]
        lines.append("| " + " | ".join(cells) + " |")
    out = [f"- {label} ({run_['date']}): {summary(run_)}" for label, run_ in runs]
    return "\n".join(out) + "\n\n" + "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", nargs=2, metavar=("KIND", "NAME"), help=argparse.SUPPRESS)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--json", type=Path, help="write the run's raw results here")
    ap.add_argument("--lint-only", type=Path, help="reuse oracle and baseline of this run")
    ap.add_argument("--markdown", nargs="+", type=Path, help="print the table of these runs")
    ap.add_argument("--labels", nargs="+", default=None)
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args(argv)
    if args.child:
        kind, name = args.child
        if kind == "baseline":
            result = child_baseline(name)
        else:   # one process for every model's oracle: its time is not measured
            result = {}
            for one in name.split(","):
                try:
                    result[one] = child_oracle(one)
                except Exception as exc:  # noqa: BLE001 - a model that does not build or trace
                    result[one] = {"error": f"{type(exc).__name__}: {str(exc)[:150]}"}
                print(one, result[one].get("why") or result[one].get("error") or "ok",
                      file=sys.stderr, flush=True)
        print(json.dumps(result))
        return 0
    if args.markdown:
        labels = args.labels or [p.stem for p in args.markdown]
        print(markdown([(label, json.loads(p.read_text()))
                        for label, p in zip(labels, args.markdown)]))
        return 0
    previous = json.loads(args.lint_only.read_text()) if args.lint_only else None
    result = run(args.only or names(), previous, args.timeout, args.json)
    print(summary(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
