"""What ``irviz lint`` costs on the transformers corpus beside a process that only builds and
traces the same models (issue 42: at most 2x).

Each round runs two children, the order alternating from round to round so that a change
in the machine's load falls on both:

* **trace only** (no irviz imported): import ``tests/corpus/transformers_models.py``, build
  every model its ``example_inputs`` names and ``torch.jit.trace`` it at those inputs
  (``strict=False``; keyword inputs passed by a wrapper, which returns the output's
  tensors: a decoder's cache object cannot be a traced output);
* **lint**: ``python -m irviz lint CORPUS --format json --exit-zero`` (irviz's defaults,
  verification included), as ``benchmarks/lint_corpus.py`` runs it, with ``--no-cache``
  (the corpus is a file spec: a second round would be answered from ``.irviz_cache``).

Usage::

    python benchmarks/lint_vs_trace.py [--rounds 3] [--tree DIR] [--before DIR] [--markdown]

``--before DIR`` lints with another checkout's irviz in the same rounds (a before/after
pair measured side by side, the order rotating), and says whether the two gave the same
findings. The ratio is of CPU time (the children's user + system): on a shared machine
the wall time of one process moves 2x from round to round, its CPU time much less.
``--markdown`` appends a section to ``benchmarks/RESULTS-lint.md`` with the command.
"""
from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import resource
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

from lint_corpus import (PYTHON, RESULTS, ROOT, child_env, count, irviz_location, loadavg,
                         nproc, run_lint, short_sha)

CORPUS = "tests/corpus/transformers_models.py"


def _tensors(value) -> list:
    """The tensors of a model's output (a ModelOutput, tuple or dict; a cache object holds
    none torch.jit.trace can return)."""
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):   # transformers' ModelOutput is an OrderedDict
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def trace_only() -> dict:
    """The child that builds and traces every corpus model (no irviz). Each model is
    wrapped so that it returns its output's tensors: torch.jit.trace cannot return the
    cache objects the decoders give (irviz drops them too)."""
    import torch

    class Tensors(torch.nn.Module):
        def __init__(self, model, keys):
            super().__init__()
            self.model, self.keys = model, keys

        def forward(self, *args):
            if self.keys:
                return tuple(_tensors(self.model(**dict(zip(self.keys, args)))))
            return tuple(_tensors(self.model(*args)))

    spec = importlib.util.spec_from_file_location("transformers_models", ROOT / CORPUS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    traced, failed = 0, []
    with torch.no_grad():
        for key, make in module.example_inputs.items():
            name = key[:-2] if key.endswith("()") else key
            inputs = make()
            keys = list(inputs) if isinstance(inputs, dict) else None
            model = Tensors(getattr(module, name)(), keys)
            try:
                torch.jit.trace(model, tuple(inputs.values()) if keys else inputs,
                                strict=False)
                traced += 1
            except Exception as exc:  # noqa: BLE001 - counted, so the floor is honest
                failed.append(f"{key}: {type(exc).__name__}: {str(exc)[:80]}")
    return {"traced": traced, "failed": failed}


def _children_cpu() -> float:
    """CPU seconds (user + system) of the finished children so far: a shared machine's load
    stretches wall time, much less the CPU a child spends."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _floor(env: dict, timeout: float) -> tuple[float, dict]:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, __file__, "--child"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"trace-only child failed: {proc.stderr.strip()[-400:]}")
    return wall, json.loads(proc.stdout.strip().splitlines()[-1])


def _findings(items: list[dict]) -> list[tuple]:
    """What a finding is, without its wording: rule, target, place, severity, verdict."""
    return sorted((f["code"], f["target"], f["path"], f["line"], f["severity"],
                   (f.get("evidence") or {}).get("verdict")) for f in items)


def _summary(xs: list[float]) -> str:
    return f"{statistics.median(xs):.1f} s | {min(xs):.1f} s | {max(xs):.1f} s | {len(xs)}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tree", type=Path, default=None)
    ap.add_argument("--before", type=Path, default=None,
                    help="another checkout whose lint runs in the same rounds (before/after "
                         "side by side); their findings are compared too")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(trace_only()))
        return 0
    envs = {"lint": child_env(args.tree, torchvision=False)}
    if args.before is not None:
        envs["before"] = child_env(args.before, torchvision=False)
    sides = ["floor", *envs]
    load_before = loadavg()
    wall: dict[str, list[float]] = {side: [] for side in sides}
    cpu: dict[str, list[float]] = {side: [] for side in sides}
    floor_info, counts, findings = None, {}, {}
    for i in range(args.rounds):
        for side in sides[i % len(sides):] + sides[:i % len(sides)]:   # rotating order
            cpu_before = _children_cpu()
            if side == "floor":
                seconds, floor_info = _floor(envs["lint"], args.timeout)
            else:
                res = run_lint(CORPUS, envs[side], args.timeout, ("--no-cache",))
                seconds, findings[side] = res["wall"], res["findings"] or []
                counts[side] = count(findings[side])
            wall[side].append(seconds)
            cpu[side].append(_children_cpu() - cpu_before)
            print(f"round {i + 1} {side}: {seconds:.1f} s wall, {cpu[side][-1]:.1f} s CPU",
                  file=sys.stderr, flush=True)
    floor_cpu = statistics.median(cpu["floor"])
    ratios = {side: statistics.median(cpu[side]) / floor_cpu for side in envs}
    for side in ("floor", *envs):
        print(f"{side}: wall median {statistics.median(wall[side]):.1f} s, CPU median "
              f"{statistics.median(cpu[side]):.1f} s"
              + (f", CPU ratio {ratios[side]:.2f}x, findings {counts[side].get('findings')}, "
                 f"errors+warnings {counts[side].get('errors_warnings')}"
                 if side != "floor" else f", traced {floor_info['traced']}, failed "
                                         f"{floor_info['failed']}"))
    same = None
    if "before" in findings:
        same = _findings(findings["before"]) == _findings(findings["lint"])
        print(f"findings before and after: {'the same' if same else 'DIFFERENT'} (rule, "
              f"place, severity, verdict); JSON "
              f"{'identical' if findings['before'] == findings['lint'] else 'not identical'}")
    if args.markdown:
        command = "python benchmarks/lint_vs_trace.py " + " ".join(
            shlex.quote(str(a)) for a in (argv if argv is not None else sys.argv[1:]))
        when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        extra = (f" per model: {(statistics.median(cpu['lint']) - floor_cpu) / 14:.2f} s CPU"
                 f" over the trace-only process")
        rows = [f"| build + `torch.jit.trace` only ({floor_info['traced']} models) | "
                f"{_summary(wall['floor'])} | {_summary(cpu['floor'])} | 1.00x |"]
        if "before" in envs:
            rows.append(f"| `irviz lint`, before ({short_sha(args.before)}) | "
                        f"{_summary(wall['before'])} | {_summary(cpu['before'])} | "
                        f"{ratios['before']:.2f}x |")
        rows.append(f"| `irviz lint` ({short_sha(args.tree or ROOT)}) | "
                    f"{_summary(wall['lint'])} | {_summary(cpu['lint'])} | "
                    f"{ratios['lint']:.2f}x |")
        text = (f"\n## lint beside a process that only builds and traces (commit "
                f"{short_sha(args.tree or ROOT)})\n\n`{CORPUS}`, {args.rounds} rounds, each "
                f"one child per process below, the order rotating. Run on {when}, "
                f"{nproc()} CPUs, `/proc/loadavg` {load_before} before and {loadavg()} after."
                f"\n\n```\n{command.strip()}\n```\n\n"
                f"| process | wall median | min | max | runs | CPU median | min | max | runs "
                f"| CPU ratio |\n|---|---|---|---|---|---|---|---|---|---|\n"
                + "\n".join(rows) + f"\n\nlint's extra{extra}."
                + ("" if same is None else " Findings before and after (rule, place, "
                   "severity, verdict): " + ("the same." if same else "different.")) + "\n")
        with open(RESULTS, "a", encoding="utf-8") as handle:
            handle.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
