"""The "Dynamic Parallelism in TorchScript" tutorial's three-way comparison, in one run.

    .venv/bin/python benchmarks/tutorial_parallelism.py            # ~2-3 minutes on 2 cores

Times ``samples/lstm_ensemble.py``'s ``SerialLSTMEnsemble`` (the reference),
``BiForkLSTMEnsemble`` (forward LSTM forked) and ``LSTMEnsemble`` (plus every
member forked) - and, as a check of :mod:`irviz.measure`, irviz's own
serial baseline of ``LSTMEnsemble`` - scripted, same weights, at
``T, B, C = 50, 50, 256`` (the tutorial's C = 1024 is too big for 2 cores).
Each (intra-op, inter-op) thread setting runs in its own child process (torch
sets the inter-op count once per process); inside it the variants are warmed
up and then called round-robin under ``torch.no_grad()``. Speed-up = serial
median / variant median, in the same process. The whole matrix runs twice
(``--passes``): on a shared machine the same setting can give different
outcomes in different processes, and two passes show it.

Next to the measurement it prints irviz's static prediction when
``irviz.api.visualize(spec)[0].graph.graph["irviz.parallelism"]`` exists:
``min(work / span, P)`` with ``P = min(inter-op threads, CPUs)`` per setting.
Writes the table, the command, the date and the machine to
``benchmarks/RESULTS-parallelism.md`` (``--out``).
"""
from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import platform
import shlex
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from irviz.measure.child import PHASE_PREFIX  # noqa: E402
from irviz.measure.result import summarize  # noqa: E402
from irviz.measure.run import run_child  # noqa: E402
from irviz.measure.settings import OtherLoad, machine_facts  # noqa: E402

SAMPLE = ROOT / "samples" / "lstm_ensemble.py"
SAMPLE_SHOWN = "samples/lstm_ensemble.py"
#: (key, class, column title)
VARIANTS = [("serial", "SerialLSTMEnsemble", "SerialLSTMEnsemble"),
            ("bifork", "BiForkLSTMEnsemble", "BiForkLSTMEnsemble"),
            ("ensemble", "LSTMEnsemble", "LSTMEnsemble")]
#: torch's default, and intra-op off with 1/2/4 inter-op threads
DEFAULT_SETTINGS = "d,d 1,1 1,2 1,4"


# --------------------------------------------------------------------------- child


def _phase(name: str) -> None:
    sys.stderr.write(f"{PHASE_PREFIX}{name}\n")
    sys.stderr.flush()


def child() -> None:
    """One thread setting: time every variant round-robin; print one JSON line."""
    real_stdout = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    p = json.loads(sys.stdin.read())
    import torch

    if p["inter_op"] is not None:
        torch.set_num_interop_threads(p["inter_op"])
    if p["intra_op"] is not None:
        torch.set_num_threads(p["intra_op"])
    out = {"intra_op": torch.get_num_threads(), "inter_op": torch.get_num_interop_threads(),
           **machine_facts(), "error": None}
    try:
        from irviz.frontends.capture import capture
        from irviz.frontends.loader import load
        from irviz.ir.serial_baseline import build_serial_baseline, outputs_equal

        _phase("load")
        torch.manual_seed(0)
        x = torch.rand(p["seq"], p["batch"], p["channels"])
        models = {}
        for key, cls, _ in VARIANTS:
            [target] = load(f"{p['sample']}:{cls}(channels={p['channels']})").targets
            models[key] = target
        state = models["serial"].obj.state_dict()
        for key in ("bifork", "ensemble"):  # the same weights everywhere
            models[key].obj.load_state_dict(state)
        _phase("capture")
        fns = {key: capture(t, "script", (x,)).scripted.eval() for key, t in models.items()}
        baseline = build_serial_baseline(fns["ensemble"])
        fns["irviz_serial"] = baseline
        out["baseline"] = baseline.description
        with torch.no_grad():
            _phase("check")
            ref = fns["serial"](x)
            out["outputs_match"] = {k: outputs_equal(ref, f(x)) for k, f in fns.items()}
            _phase("warm-up")
            for _ in range(p["warmup"]):
                for f in fns.values():
                    f(x)
            _phase("timing")
            wall = {k: [] for k in fns}
            cpu = {k: [] for k in fns}
            gc.collect()
            gc.disable()
            with OtherLoad() as others:
                for _ in range(p["repeats"]):
                    for k, f in fns.items():  # round-robin: serial, bifork, ensemble, irviz_serial
                        c0, t0 = time.process_time(), time.perf_counter()
                        f(x)
                        t1, c1 = time.perf_counter(), time.process_time()
                        wall[k].append(t1 - t0)
                        cpu[k].append(c1 - c0)
            gc.enable()
        out["other_load"] = others.value
        out["stats"] = {k: summarize(wall[k], cpu[k]).to_dict() for k in fns}
    except Exception as exc:  # noqa: BLE001
        out["error"] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
    _phase("done")
    real_stdout.write(json.dumps(out) + "\n")
    real_stdout.flush()
    os._exit(0)


# --------------------------------------------------------------------------- parent


def _settings(text: str) -> list[tuple[int | None, int | None]]:
    out = []
    for pair in text.split():
        a, b = pair.split(",")
        out.append((None if a == "d" else int(a), None if b == "d" else int(b)))
    return out


def _predictions(channels: int, seq: int, batch: int) -> dict:
    """irviz's static facts for the forked variants, or the reason they are missing."""
    try:
        from irviz import api
    except Exception as exc:  # noqa: BLE001
        return {"error": f"irviz.api not importable ({exc})"}
    facts = {}
    for key, cls, _ in VARIANTS[1:]:
        try:
            view = api.visualize(f"{SAMPLE}:{cls}(channels={channels})",
                                 inputs=f"torch.rand({seq}, {batch}, {channels})")[0]
            from dataclasses import asdict

            from irviz.analyses.parallelism import facts as parallelism_facts

            found = parallelism_facts(view.graph)
            par = asdict(found) if found is not None else None
        except Exception as exc:  # noqa: BLE001 - the analysis is work in progress
            return {"error": f"visualize failed: {type(exc).__name__}: {exc}"}
        if not par:
            return {"error": "no irviz.parallelism facts on the graph (analysis not available)"}
        facts[key] = {k: par.get(k) for k in ("work", "span", "parallelism", "predicted_speedup",
                                              "limit", "unit", "caller_works")}
    return facts


def _predicted(par: dict | None, inter: int, cpus: int, intra: int = 1) -> float | None:
    if not par:
        return None
    ratio = par.get("parallelism")
    if ratio is None and par.get("work") and par.get("span"):
        ratio = par["work"] / par["span"]
    if ratio is None:
        return par.get("predicted_speedup")
    # the same limit as irviz.analyses.parallelism, for this setting's inter-op threads
    workers = inter + (1 if par.get("caller_works") else 0)
    return min(ratio, max(1.0, min(workers, cpus / max(1, intra))))


def _cpu_wall(row: dict, key: str) -> float:
    st = row["stats"][key]
    return st["cpu_median_s"] / st["median_s"] if st["median_s"] > 0 else 0.0


def _one_core(row: dict) -> bool:
    """No variant in this child ever ran two threads at once while other jobs kept at least
    half a CPU busy: the machine, not the model, limited it."""
    others = row.get("other_load")
    return all(_cpu_wall(row, k) < 1.15 for k in row["stats"]) and (others is None or others >= 0.5)


def _ms(s: float) -> str:
    return f"{s * 1000:.0f}" if s >= 0.1 else f"{s * 1000:.1f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--channels", type=int, default=256)
    ap.add_argument("--seq", type=int, default=50, help="T, the sequence length")
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--passes", type=int, default=2,
                    help="run the whole settings matrix this many times (noise shows)")
    ap.add_argument("--settings", default=DEFAULT_SETTINGS,
                    help=f"intra,inter pairs, d = torch's default (default: {DEFAULT_SETTINGS!r})")
    ap.add_argument("--timeout", type=float, default=150.0, help="seconds per child process")
    ap.add_argument("--no-predict", action="store_true", help="skip irviz's static prediction")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "RESULTS-parallelism.md"))
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child()
        return 0

    shown_argv = [a for a in (argv if argv is not None else sys.argv[1:])]
    command = ".venv/bin/python benchmarks/tutorial_parallelism.py" + \
        ("" if not shown_argv else " " + " ".join(shlex.quote(a) for a in shown_argv))
    started = time.monotonic()
    facts0 = machine_facts()
    date = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    rows = []
    for n in range(1, args.passes + 1):
        for intra, inter in _settings(args.settings):
            payload = {"intra_op": intra, "inter_op": inter, "sample": str(SAMPLE),
                       "channels": args.channels, "seq": args.seq, "batch": args.batch,
                       "warmup": args.warmup, "repeats": args.repeats}
            result, error, elapsed = run_child(payload, args.timeout,
                                               module="benchmarks.tutorial_parallelism",
                                               cwd=str(ROOT), args=("--child",))
            row = result or {"intra_op": intra, "inter_op": inter, "error": error}
            row.update(requested=[intra, inter], child_s=round(elapsed, 1), pass_no=n)
            rows.append(row)
            print(f"  pass {n} intra={row.get('intra_op')} inter={row.get('inter_op')}: "
                  f"{'error: ' + row['error'] if row.get('error') else 'done'} ({elapsed:.0f} s)",
                  file=sys.stderr)
    predictions = {} if args.no_predict else _predictions(args.channels, args.seq, args.batch)
    facts1 = machine_facts()
    total = time.monotonic() - started

    import torch

    cpus = facts0["cpu_count"]
    have_pred = bool(predictions) and "error" not in predictions
    head = ["pass", "intra-op", "inter-op", "CPUs used by other jobs", "SerialLSTMEnsemble ms",
            "BiForkLSTMEnsemble ms (speed-up)", "LSTMEnsemble ms (speed-up)"]
    if have_pred:
        head[6:6] = ["BiFork predicted"]
        head.append("LSTMEnsemble predicted")
    head += ["CPU/wall BiFork, Ensemble", "irviz serial baseline of LSTMEnsemble ms (vs Serial)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        intra = f"{row.get('intra_op')}" + (" (default)" if row["requested"][0] is None else "")
        inter = f"{row.get('inter_op')}" + (" (default)" if row["requested"][1] is None else "")
        if row.get("error"):
            lines.append(f"| {row['pass_no']} | {intra} | {inter} | | error: {row['error']} |"
                         + " |" * (len(head) - 5))
            continue
        st = row["stats"]
        load = row["other_load"] if row.get("other_load") is not None else "?"
        ser = st["serial"]["median_s"]

        def cell(k: str) -> str:
            paired = statistics.median(a / b for a, b in zip(st["serial"]["runs"], st[k]["runs"]))
            return f"{_ms(st[k]['median_s'])} ({ser / st[k]['median_s']:.2f}×; paired {paired:.2f}×)"

        mark = " †" if _one_core(row) else ""
        cells = [f"{row['pass_no']}{mark}", intra, inter, f"{load}", _ms(ser), cell("bifork")]
        if have_pred:
            pb = _predicted(predictions.get("bifork"), row["inter_op"], cpus, row["intra_op"])
            cells.append(f"{pb:.2f}×" if pb is not None else "n/a")
        cells.append(cell("ensemble"))
        if have_pred:
            pe = _predicted(predictions.get("ensemble"), row["inter_op"], cpus, row["intra_op"])
            cells.append(f"{pe:.2f}×" if pe is not None else "n/a")
        cells.append(", ".join(f"{st[k]['cpu_median_s'] / st[k]['median_s']:.2f}"
                               for k in ("bifork", "ensemble")))
        cells.append(f"{_ms(st['irviz_serial']['median_s'])} "
                     f"({st['irviz_serial']['median_s'] / ser:.2f}×)")
        lines.append("| " + " | ".join(cells) + " |")
    table = "\n".join(lines)

    ok = [r for r in rows if not r.get("error")]
    one_core = [r for r in ok if _one_core(r)]
    fair = [r for r in ok if not _one_core(r)]  # the rows the notes below are about
    notes = []
    if one_core and fair:
        notes.append("The notes below leave out the rows marked † (see the last notes).")
    for key, cls, _ in VARIANTS[1:]:
        if not fair:
            break
        sp = [(r["stats"]["serial"]["median_s"] / r["stats"][key]["median_s"], r) for r in fair]
        best, brow = max(sp, key=lambda t: t[0])
        where = f"intra-op {brow['intra_op']}, inter-op {brow['inter_op']}, pass {brow['pass_no']}"
        if best < 1.1:
            verdict = ("forking cost more than the overlap gained" if best < 0.95
                       else "forking cost about as much as the overlap gained")
            notes.append(f"**{cls}: the forks did not pay off on this machine** - best speed-up "
                         f"{best:.2f}× ({where}); {verdict}.")
        else:
            notes.append(f"{cls}: best speed-up {best:.2f}× ({where}).")
        dflt = [(v, r) for v, r in sp if r["requested"] == [None, None]]
        if dflt:
            speedups = ", ".join(f"{v:.2f}×" for v, _ in dflt)
            busy = ", ".join(f"{_cpu_wall(r, 'serial'):.2f}" for _, r in dflt)
            if max(v for v, _ in dflt) < 1.1:
                why = (f"; the serial model alone already kept the cores busy with intra-op threads "
                       f"(its CPU/wall {busy})" if all(_cpu_wall(r, "serial") >= 1.3 for _, r in dflt)
                       else "")
                notes.append(f"**With torch's default threads the forks of {cls} did not pay off**: "
                             f"{speedups}{why}.")
            else:
                notes.append(f"{cls} with torch's default threads: {speedups} (serial CPU/wall "
                             f"{busy}).")
        by_setting: dict = {}
        for v, r in sp:
            by_setting.setdefault(tuple(r["requested"]), []).append(v)
        for setting, values in by_setting.items():
            if len(values) > 1 and max(values) - min(values) > 0.3:
                shown = ", ".join("d" if x is None else str(x) for x in setting)
                notes.append(f"{cls} at ({shown}): {' vs '.join(f'{v:.2f}×' for v in values)} "
                             "in different passes - the same setting, a different outcome.")
    if one_core:
        shown = "; ".join(f"pass {r['pass_no']} ({r['intra_op']}, {r['inter_op']}): other jobs "
                          f"used {r.get('other_load', '?')} CPUs" for r in one_core)
        notes.append(f"† In {len(one_core)} child process(es) - {shown} - no variant ever ran "
                     "two threads at once (CPU/wall of every variant, serial included, below "
                     "1.15) although the setting allowed it, while other jobs kept a CPU busy: "
                     "on this shared VM a process sometimes gets about one core for many "
                     "seconds. Those rows measure the machine, not the forks.")
    too_fast = [r for r in ok for k in ("bifork", "ensemble")
                if r["stats"]["serial"]["median_s"] / r["stats"][k]["median_s"] > 1.05 * cpus]
    if too_fast:
        notes.append(f"Speed-ups above {cpus}× cannot come from overlap on {cpus} CPUs alone "
                     f"({len(too_fast)} case(s)): something else differed between the serial and "
                     "the forked calls - the load changing while the child ran, or intra-op "
                     "threads behaving differently on the caller thread and on pool threads.")
    mism = sorted({k for r in ok for k, v in r.get("outputs_match", {}).items() if not v})
    notes.append("All variants computed the same output as SerialLSTMEnsemble in every setting."
                 if not mism else f"Outputs differed from SerialLSTMEnsemble for: {', '.join(mism)}.")
    if fair:
        ratios = [statistics.median(a / b for a, b in zip(r["stats"]["irviz_serial"]["runs"],
                                                          r["stats"]["serial"]["runs"]))
                  for r in fair]
        lo, hi = min(ratios), max(ratios)
        verdict = ("close to it, so it stands in fairly for a hand-written serial model"
                   if 0.9 <= lo and hi <= 1.1 else "not within 10 % of it - read speed-ups "
                   "against irviz's baseline with care")
        notes.append(f"irviz's own serial baseline of LSTMEnsemble (the graph rewrite of "
                     f"`irviz.ir.serial_baseline`: {fair[0].get('baseline', '?')}) took "
                     f"{lo:.2f}-{hi:.2f}× the time of the hand-written SerialLSTMEnsemble "
                     "(paired, per round): "
                     f"{verdict}.")
    if predictions and "error" in predictions:
        notes.append(f"irviz predicted speed-up: not available ({predictions['error']}).")
    elif have_pred:
        for key, cls, _ in VARIANTS[1:]:
            f = predictions[key]
            notes.append(f"irviz static facts for {cls}: work {f['work']} {f['unit']}, span "
                         f"{f['span']} {f['unit']}, work/span {f['parallelism']}; the predicted "
                         "column is min(work/span, P), P = min(CPUs / intra-op threads, inter-op "
                         "threads + 1 when the caller works beside its tasks (here: "
                         f"{'yes' if f.get('caller_works') else 'no'})).")
    if facts1["load_avg"] and max(facts0["load_avg"][0], facts1["load_avg"][0]) > 0.5 * cpus:
        notes.append(f"The machine was shared (1-min load {facts0['load_avg'][0]} at the start, "
                     f"{facts1['load_avg'][0]} at the end, on {cpus} CPUs): other jobs competed for "
                     "the cores, so single numbers are noisy.")

    md = [
        "# TorchScript fork/wait: the tutorial's three-way comparison, measured",
        "",
        f"Command (from the repository root): `{command}`",
        "",
        f"- date: {date}; total run time {total:.0f} s",
        f"- machine: {cpus} usable CPUs ({os.cpu_count()} online), {platform.machine()}, "
        f"Python {platform.python_version()}, torch {torch.__version__}",
        f"- load average (1, 5, 15 min): {facts0['load_avg']} at the start, "
        f"{facts1['load_avg']} at the end",
        f"- model: `{SAMPLE_SHOWN}`, 4 members, T = {args.seq}, B = {args.batch}, "
        f"C = {args.channels} (the tutorial used 50, 50, 1024), scripted, same weights, "
        "`torch.no_grad()`",
        f"- per setting and pass: one child process; {args.warmup} warm-up rounds, then "
        f"{args.repeats} round-robin rounds of all variants; median wall time per call; "
        "speed-up = SerialLSTMEnsemble median / variant median (same process); paired = "
        "median over the rounds of serial time / variant time in the same round (robust when "
        f"the machine's load shifts during a child); the matrix ran {args.passes} time(s), one "
        "pass after the other",
        "",
        table,
        "",
        *[f"- {n}" for n in notes],
        "",
        "CPU/wall = process CPU time per call / wall time per call: above 1 means threads really "
        "ran at the same time. CPUs used by other jobs = (CPU time of the whole machine from "
        "/proc/stat - this child's CPU time) / wall time, over the timed rounds.",
        "",
    ]
    text = "\n".join(md)
    print(text)
    Path(args.out).write_text(text, encoding="utf-8")
    print(f"written to {os.path.relpath(args.out)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
