"""The "Dynamic Parallelism in TorchScript" tutorial's ensembles: predicted vs measured.

    .venv/bin/python benchmarks/tutorial_parallelism.py            # ~5-8 minutes on 2 cores

Times ``samples/lstm_ensemble.py``'s ``SerialLSTMEnsemble`` (the reference),
``BiForkLSTMEnsemble`` (forward LSTM forked) and ``LSTMEnsemble`` (plus every
member forked) - scripted, same weights, T = B = 50 - at C = 64, 128, 256 and 512
and the thread matrix of ``irviz report --measure`` (torch's default, intra-op 1 with
2 and with 4 inter-op threads). Each (C, setting) runs in its own child process (torch
sets the inter-op count once per process); inside it the variants are warmed up and
then called round-robin under ``torch.no_grad()``. Speed-up = serial median / variant
median, in the same process. The whole matrix runs ``--passes`` times, each pass over
every C and setting in turn, so the machine's load changes hit every cell alike.

Next to each measured speed-up it prints irviz's static prediction
(:func:`irviz.analyses.prediction.predict`: no run) and the calibrated one (the same
simulation with op times and cores from the serial model's wall and CPU time in the
same C and setting, taken from *another* pass: fit on one run, check on another),
with the error and how often each held (static within 30%, calibrated within 15%).
Writes the table, the command, the date, the load and the machine to
``benchmarks/RESULTS-parallelism.md`` (``--out``).
"""
from __future__ import annotations

import argparse
import datetime
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

from irviz.measure.child import MIN_SAMPLE_S, PHASE_PREFIX  # noqa: E402
from irviz.measure.result import summarize  # noqa: E402
from irviz.measure.run import run_child  # noqa: E402
from irviz.measure.settings import machine_facts  # noqa: E402

SAMPLE = ROOT / "samples" / "lstm_ensemble.py"
SAMPLE_SHOWN = "samples/lstm_ensemble.py"
#: (key, class, column title)
VARIANTS = [("serial", "SerialLSTMEnsemble", "SerialLSTMEnsemble"),
            ("bifork", "BiForkLSTMEnsemble", "BiForkLSTMEnsemble"),
            ("ensemble", "LSTMEnsemble", "LSTMEnsemble")]
#: a run is calm when other jobs kept fewer CPUs than this busy while it was timed
CALM = 0.3
#: the matrix of irviz.measure.settings.default_settings on 2 CPUs
DEFAULT_SETTINGS = "d,d 1,2 1,4"


# --------------------------------------------------------------------------- child


def _phase(name: str) -> None:
    sys.stderr.write(f"{PHASE_PREFIX}{name}\n")
    sys.stderr.flush()


def child() -> None:
    """One thread setting per request (a role of irviz.child): its timings."""
    from irviz.child.protocol import serve

    code = serve(lambda requests: map(_time_setting, requests))
    sys.stderr.flush()
    os._exit(code)


def _time_setting(p: dict) -> dict:
    """Time every variant round-robin at the request's thread setting."""
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
        from irviz.measure.child import (calibration_figures, calibration_probes, round_robin,
                                         sizing_calls, wake_us)

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
        if p.get("irviz_serial"):
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
            timed = dict(fns)            # the probes sampled in the same rounds
            probe_fns, probe = calibration_probes(fns["serial"], (x,), forks=True)
            timed.update(probe_fns)
            calls = sizing_calls(timed, (x,), p["min_sample_s"])
            out["calls_per_sample"] = calls
            _phase("timing")
            wall, cpu, out["other_load"] = round_robin(timed, (x,), p["repeats"], calls)
        out["wake_us"] = wake_us()
        out.update(calibration_figures(probe, wall))
        out["paired"] = {k: statistics.median(s / v for s, v in zip(wall["serial"], wall[k]))
                         for k in fns if k != "serial"}
        out["stats"] = {k: summarize(wall[k], cpu[k]).to_dict() for k in timed}
    except Exception as exc:  # noqa: BLE001
        out["error"] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
    _phase("done")
    return out


# --------------------------------------------------------------------------- parent


def _settings(text: str) -> list[tuple[int | None, int | None]]:
    out = []
    for pair in text.split():
        a, b = pair.split(",")
        out.append((None if a == "d" else int(a), None if b == "d" else int(b)))
    return out


def _graphs(channels: int, seq: int, batch: int) -> dict:
    """The forked variants' annotated IR graphs (irviz.api.visualize, one run each)."""
    from irviz import api

    return {key: api.visualize(f"{SAMPLE}:{cls}(channels={channels})",
                               inputs=f"torch.rand({seq}, {batch}, {channels})")[0].graph
            for key, cls, _ in VARIANTS[1:]}


def _static(G, intra: int, inter: int, cpus: int) -> float:
    from irviz.analyses.prediction import predict

    return predict(G, intra, inter, cpus).speedup


def _calibrated(G, intra: int, inter: int, cpus: int, serial: dict,
                other_load: float | None, wake: float | None, pair: float | None,
                handoff: dict | None, pool_pair: float | None) -> float:
    """The calibrated prediction from one child's serial run, pair, pool-pair and hand-off
    probes and the CPUs other jobs took meanwhile (what `irviz report --measure` computes)."""
    from irviz.analyses.prediction import Calibration, calibrated

    found, _, _ = calibrated(G, intra, inter, cpus, Calibration(
        serial["median_s"], serial.get("cpu_median_s"), other_load, pair, wake, handoff,
        pool_pair))
    return found.speedup


def _err(pred: float, meas: float) -> float:
    return abs(pred - meas) / meas


def _spread(values: list[float]) -> str:
    return f"{min(values):.2f}–{max(values):.2f}" if len(values) > 1 else f"{values[0]:.2f}"


def _setting_name(requested, row) -> str:
    if requested == [None, None]:
        return f"default ({row['intra_op']}, {row['inter_op']})"
    return f"({row['intra_op']}, {row['inter_op']})"


def _run_matrix(args):
    started = time.monotonic()
    facts0 = machine_facts()
    cpus = facts0["cpu_count"]
    date = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    channels = [int(c) for c in args.channels.split()]
    settings = _settings(args.settings)
    print("  static analysis (one run of each forked variant per C)...", file=sys.stderr)
    graphs = {c: _graphs(c, args.seq, args.batch) for c in channels}
    rows = []
    for n in range(1, args.passes + 1):          # interleaved: C and settings inside a pass
        for c in channels:
            for intra, inter in settings:
                load = machine_facts()["load_avg"]
                payload = {"intra_op": intra, "inter_op": inter, "sample": str(SAMPLE),
                           "channels": c, "seq": args.seq, "batch": args.batch,
                           "warmup": args.warmup, "repeats": args.repeats,
                           "min_sample_s": args.min_sample,
                           "irviz_serial": args.irviz_serial}
                result, error, elapsed = run_child(payload, args.timeout,
                                                   module="benchmarks.tutorial_parallelism",
                                                   cwd=str(ROOT), args=("--child",))
                row = result or {"intra_op": intra, "inter_op": inter, "error": error}
                row.update(requested=[intra, inter], child_s=round(elapsed, 1), pass_no=n,
                           channels=c, load_start=load)
                rows.append(row)
                print(f"  pass {n} C={c} intra={row.get('intra_op')} inter={row.get('inter_op')}"
                      f" load {load[0] if load else '?'}: "
                      f"{'error: ' + row['error'] if row.get('error') else 'done'} "
                      f"({elapsed:.0f} s)", file=sys.stderr)
    facts1 = machine_facts()
    total = time.monotonic() - started
    return rows, facts0, facts1, date, total, channels, settings, cpus, graphs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--channels", default="64 128 256 512",
                    help="channel sizes C to run (default: '64 128 256 512')")
    ap.add_argument("--seq", type=int, default=50, help="T, the sequence length")
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=5, help="timed rounds per child")
    ap.add_argument("--min-sample", type=float, default=MIN_SAMPLE_S,
                    help="seconds of back-to-back calls in one timed sample "
                         f"(default {MIN_SAMPLE_S}; 0 = one call, the protocol before)")
    ap.add_argument("--passes", type=int, default=3,
                    help="run the whole matrix this many times, interleaved (noise shows)")
    ap.add_argument("--settings", default=DEFAULT_SETTINGS,
                    help=f"intra,inter pairs, d = torch's default (default: {DEFAULT_SETTINGS!r})")
    ap.add_argument("--irviz-serial", action="store_true",
                    help="also time irviz's own serial baseline of LSTMEnsemble")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per child process")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "RESULTS-parallelism.md"))
    ap.add_argument("--json-out", default=None, help="also write every row as JSON here")
    ap.add_argument("--from-json", default=None,
                    help="do not time: analyse the rows a --json-out run wrote (the "
                         "predictions are recomputed with the current code)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child()
        return 0

    shown_argv = [a for a in (argv if argv is not None else sys.argv[1:])]
    command = ".venv/bin/python benchmarks/tutorial_parallelism.py" + \
        ("" if not shown_argv else " " + " ".join(shlex.quote(a) for a in shown_argv))
    if args.from_json:
        stored = json.loads(Path(args.from_json).read_text(encoding="utf-8"))
        rows = stored["rows"]
        command = f"{stored['command']}` (timing), then `{command}"
        facts0 = stored.get("facts0") or {"cpu_count": 2, "load_avg": None}
        facts1 = stored.get("facts1") or {"load_avg": None}
        date, total = stored.get("date", "?"), stored.get("total", 0.0)
        channels = sorted({r["channels"] for r in rows})
        settings = []
        for r in rows:
            if tuple(r["requested"]) not in settings:
                settings.append(tuple(r["requested"]))
        args.passes = max(r["pass_no"] for r in rows)
        cpus = facts0["cpu_count"]
        graphs = {c: _graphs(c, args.seq, args.batch) for c in channels}
    else:
        rows, facts0, facts1, date, total, channels, settings, cpus, graphs = \
            _run_matrix(args)
        if args.json_out:
            Path(args.json_out).write_text(json.dumps(
                {"rows": rows, "command": command, "facts0": facts0, "facts1": facts1,
                 "date": date, "total": total}, default=str), encoding="utf-8")
    import torch

    ok = [r for r in rows if not r.get("error")]
    # the calibration of pass n comes from the serial run of the next pass (another child):
    # fit on one run, check on another
    serial_of = {(r["pass_no"], r["channels"], tuple(r["requested"])):
                 (r["stats"]["serial"], r.get("other_load"), r.get("wake_us"), r.get("pair_s"),
                  r.get("handoff"), r.get("pool_pair_s"))
                 for r in ok}
    cells: dict = {}
    for r in ok:
        key = (r["channels"], tuple(r["requested"]))
        other = [p for p in range(1, args.passes + 1) if p != r["pass_no"]
                 and (p, *key) in serial_of]
        # the other pass whose machine was most like this one's (other jobs' CPUs): a
        # calibration describes the machine as it was; no pass is ever fitted on itself
        mine = r.get("other_load") or 0.0
        other.sort(key=lambda p: (abs((serial_of[(p, *key)][1] or 0.0) - mine),
                                  (p - r["pass_no"]) % (args.passes + 1)))
        fit = serial_of[(other[0] if other else r["pass_no"], *key)]
        own = serial_of[(r["pass_no"], *key)]   # what `irviz report --measure` calibrates on
        for variant in ("bifork", "ensemble"):
            st = r["stats"]
            measured = st["serial"]["median_s"] / st[variant]["median_s"]
            G = graphs[r["channels"]][variant]
            cell = cells.setdefault((r["channels"], tuple(r["requested"]), variant), {
                "name": _setting_name(r["requested"], r), "measured": [], "calibrated": [],
                "same_pass": [],
                "static": _static(G, r["intra_op"], r["inter_op"], cpus), "load": [],
                "other": [], "serial_cpu_wall": []})
            cell["measured"].append(measured)
            cell["calibrated"].append(_calibrated(G, r["intra_op"], r["inter_op"], cpus, *fit))
            cell["same_pass"].append(_calibrated(G, r["intra_op"], r["inter_op"], cpus, *own))
            cell["load"].append(r["load_start"][0] if r.get("load_start") else None)
            cell["other"].append(r.get("other_load"))
            cell["serial_cpu_wall"].append(st["serial"]["cpu_median_s"] / st["serial"]["median_s"])
    head = ["C", "threads (intra, inter)", "variant",
            "measured: median of the calm runs (all runs' spread)",
            "static (error)", "calibrated median (error)", "static held (calm/all)",
            "calibrated held (calm/all)", "calibrated on its own pass (error)",
            "serial CPU/wall", "other jobs' CPUs per pass"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    held = {"static": [0, 0, 0, 0], "calibrated": [0, 0, 0, 0]}   # calm held/runs, all
    cell_ok = {"static": [0, 0], "calibrated": [0, 0], "same_pass": [0, 0]}
    unjudged = []
    titles = {"bifork": "BiFork", "ensemble": "LSTMEnsemble"}
    for (c, _, variant), cell in sorted(cells.items(),
                                        key=lambda kv: (kv[0][0], str(kv[0][1]), kv[0][2])):
        st = cell["static"]
        runs = list(zip(cell["measured"], cell["calibrated"], cell["other"]))
        calm = [(m, p) for m, p, o in runs if (o or 0.0) < CALM]
        hs = [sum(_err(st, m) <= 0.30 for m, _ in group) for group in
              (calm, [(m, p) for m, p, _ in runs])]
        hc = [sum(_err(p, m) <= 0.15 for m, p in group) for group in
              (calm, [(m, p) for m, p, _ in runs])]
        for key, h in (("static", hs), ("calibrated", hc)):
            held[key][0] += h[0]
            held[key][1] += len(calm)
            held[key][2] += h[1]
            held[key][3] += len(runs)
        others = ", ".join(f"{v}" for v in cell["other"])
        spread = _spread(cell["measured"])
        label = f"| {c} | {cell['name']} | {titles[variant]} "
        if not calm:
            unjudged.append(f"C = {c}, {cell['name']}, {titles[variant]}")
            lines.append(label + f"| no calm run ({spread}) | {st:.2f}× | "
                         f"{statistics.median(cell['calibrated']):.2f}× | 0/0, {hs[1]}/{len(runs)} "
                         f"| 0/0, {hc[1]}/{len(runs)} "
                         f"| {statistics.median(cell['same_pass']):.2f}× "
                         f"| {_spread(cell['serial_cpu_wall'])} "
                         f"| {others} |")
            continue
        meas = statistics.median(m for m, _ in calm)
        cal = statistics.median(p for _, p in calm)
        same = statistics.median(q for q, (_, _, o) in zip(cell["same_pass"], runs)
                                 if (o or 0.0) < CALM)
        cell_ok["same_pass"][0] += _err(same, meas) <= 0.15
        cell_ok["same_pass"][1] += 1
        cell_ok["static"][0] += _err(st, meas) <= 0.30
        cell_ok["calibrated"][0] += _err(cal, meas) <= 0.15
        cell_ok["static"][1] += 1
        cell_ok["calibrated"][1] += 1
        lines.append(
            label + f"| {meas:.2f}× ({spread}) "
            f"| {st:.2f}× ({_err(st, meas) * 100:.0f}%) "
            f"| {cal:.2f}× ({_err(cal, meas) * 100:.0f}%) "
            f"| {hs[0]}/{len(calm)}, {hs[1]}/{len(runs)} | {hc[0]}/{len(calm)}, {hc[1]}/{len(runs)} "
            f"| {same:.2f}× ({_err(same, meas) * 100:.0f}%) "
            f"| {_spread(cell['serial_cpu_wall'])} | {others} |")
    table = "\n".join(lines)
    serial_lines = ["| C | threads | SerialLSTMEnsemble ms per pass |", "|---|---|---|"]
    for c in channels:
        for s in settings:
            per = [r for r in ok if r["channels"] == c and tuple(r["requested"]) == s]
            if per:
                serial_lines.append(f"| {c} | {_setting_name(list(s), per[0])} | "
                                    + ", ".join(f"{r['stats']['serial']['median_s'] * 1000:.0f}"
                                                for r in per) + " |")
    failed = [r for r in rows if r.get("error")]
    mism = sorted({k for r in ok for k, v in r.get("outputs_match", {}).items() if not v})
    notes = [
        f"Cells within the target, judged on the median of the calm runs (other jobs below "
        f"{CALM} CPU): static (≤ 30%) {cell_ok['static'][0]}/{cell_ok['static'][1]}, "
        f"calibrated (≤ 15%) {cell_ok['calibrated'][0]}/{cell_ok['calibrated'][1]}; "
        f"calibrated on its own pass, as `irviz report --measure` does (≤ 15%) "
        f"{cell_ok['same_pass'][0]}/{cell_ok['same_pass'][1]}."
        + (f" Not judged (no calm run): {'; '.join(unjudged)}." if unjudged else ""),
        f"Single runs within the target: calm runs static {held['static'][0]}/"
        f"{held['static'][1]}, calibrated {held['calibrated'][0]}/{held['calibrated'][1]}; "
        f"all runs static {held['static'][2]}/{held['static'][3]}, calibrated "
        f"{held['calibrated'][2]}/{held['calibrated'][3]}.",
        "All variants computed the same output as SerialLSTMEnsemble in every setting."
        if not mism else f"Outputs differed from SerialLSTMEnsemble for: {', '.join(mism)}.",
    ]
    if failed:
        notes.append(f"{len(failed)} child process(es) failed: "
                     + "; ".join(f"pass {r['pass_no']} C={r['channels']} {r['requested']}: "
                                 f"{r['error']}" for r in failed))
    md = [
        "# TorchScript fork/wait: predicted vs measured speed-ups of the tutorial's ensembles",
        "",
        f"Command (from the repository root): `{command}`",
        "",
        f"- date: {date}; total run time {total:.0f} s",
        f"- machine: {cpus} usable CPUs ({os.cpu_count()} online), {platform.machine()}, "
        f"Python {platform.python_version()}, torch {torch.__version__}",
        f"- load average (1, 5, 15 min): {facts0['load_avg']} at the start, "
        f"{facts1['load_avg']} at the end",
        f"- model: `{SAMPLE_SHOWN}`, 4 members, T = {args.seq}, B = {args.batch}, "
        f"C = {', '.join(map(str, channels))}, scripted, same weights, `torch.no_grad()`",
        f"- per C, setting and pass: one child process; {args.warmup} warm-up round(s), then "
        f"{args.repeats} round-robin rounds of SerialLSTMEnsemble, BiForkLSTMEnsemble, "
        "LSTMEnsemble, the pair probe (two SerialLSTMEnsembles side by side)"
        + (", the pool pair (two forked onto the pool at once)"
           if any(r.get("pool_pair_s") for r in ok) else "")
        + (" and the hand-off probe (`irviz/measure/handoff_probe.py`)"
           if any(r.get("handoff") for r in ok) else "") + ", each sample "
        + (f"{min(r['calls_per_sample'] for r in ok)}–{max(r['calls_per_sample'] for r in ok)}"
           f" calls back to back (at least "
           f"{args.min_sample} s of the slowest); "
           if all(r.get("calls_per_sample") for r in ok) else "one call; ")
        + "speed-up = SerialLSTMEnsemble median / variant median (same process). "
        f"{args.passes} passes, each over every C and setting in turn (interleaved)",
        "- static = `irviz.analyses.prediction.predict` (op costs from shapes, intra-op threads "
        "from op sizes against the grain size, the schedule simulated); calibrated = the same "
        "simulation with op times scaled to SerialLSTMEnsemble's wall time and CPU/wall, on "
        "the cores two copies of it got side by side (a traced fork/run/wait pair), each "
        "start on a sleeping pool thread charged what the hand-off probe fits (the trivial "
        "wake-up probe where a row has no hand-off probe), all measured in the same C and "
        "setting **in another "
        "pass** (another child process, the one whose other-jobs load was closest); held = "
        "|predicted − measured| / measured within 30% (static) or 15% (calibrated), per "
        "pass; a run is calm when other jobs kept fewer than 0.3 CPUs busy",
        "",
        table,
        "",
        *[f"- {x}" for x in notes],
        "",
        "Serial times (the calibration's input):",
        "",
        "\n".join(serial_lines),
        "",
        "CPU/wall = process CPU time per call / wall time per call (OpenMP threads spin, so "
        "an op on 2 threads shows about 2). Other jobs' CPUs = (the machine's CPU time from "
        "/proc/stat - this child's) / wall time, over the timed rounds.",
        "",
    ]
    text = "\n".join(md)
    print(text)
    Path(args.out).write_text(text, encoding="utf-8")
    print(f"written to {os.path.relpath(args.out)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
