"""How irviz's stages grow with the model: synthetic models of 10 to 1,000 stacked blocks.

    make bench                                    # runs this after harness.py
    .venv/bin/python benchmarks/scaling.py        # this part alone (~1.5 min on 2 CPUs)

Each block is ``x + relu(linear(x))`` (``benchmarks/models.py:stacked(n)``, a user module
per block, traced: 6 IR nodes per block). For every size, interleaved rounds (one warm-up
round, then ``--repeats``): capture, graph build, the analyses, DOT and the default
render's layout (``dot`` binary), the drawn node count, and the time per IR node of each
stage; the log-log slope over the sizes from 100 blocks up says how a stage grows
(1.0 = linear, 2.0 = quadratic).

Then the ~10,000-IR-node model (1,667 blocks) is drawn the way a user would get it:
``irviz render benchmarks/models.py:stacked(1667) --mode trace`` as a CLI process (wall
time, peak RSS, drawn nodes, SVG size), next to a process that only builds and traces it,
and once in-process stage by stage. Results: ``benchmarks/out/scaling.json`` and the
``scaling`` block of ``benchmarks/RESULTS.md``.
"""
from __future__ import annotations

import argparse
import gc
import json
import math
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (OUT, HostLoad, command_line, facts_md, fmt_bytes,  # noqa: E402
                    fmt_ratio, fmt_s, fmt_stat, machine_facts, med, ratio, run_process,
                    scrub, summary, svg_facts, write_results)

SIZES = (10, 30, 100, 300, 1000)
BIG = 1667            # blocks: 6 IR nodes each + 2 -> 10,004 IR nodes
TIMEOUT = 300.0
STAGES = ("capture", "build", "analyses", "dot", "layout")


def _now() -> float:
    return time.perf_counter()


def one_run(target, inputs, steps, layout: bool = True) -> dict:
    from irviz.api import Visualization
    from irviz.frontends.capture import capture
    from irviz.analyses import pipeline
    from irviz.render import engines

    st: dict[str, float] = {}
    t = _now()
    cap = capture(target, "trace", inputs)
    st["capture"] = _now() - t
    t = _now()
    G = pipeline.graph_of(cap)
    st["build"] = _now() - t
    t = _now()
    for step in steps:
        pipeline.run_step(step, G, cap)
    st["analyses"] = _now() - t
    view = Visualization(cap, G)
    t = _now()
    dot = view.dot()
    st["dot"] = _now() - t
    svg = None
    if layout:
        t = _now()
        svg = engines.render(dot, "svg", "dot")
        st["layout"] = _now() - t
    return {"stages": st, "ir_nodes": G.number_of_nodes(), "svg": svg,
            "render_notes": list(getattr(view, "render_notes", []) or [])}


def slope(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of log(time) over log(nodes)."""
    pts = [(math.log(n), math.log(t)) for n, t in points if n > 0 and t and t > 0]
    if len(pts) < 2:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    den = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / den if den else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)),
                    help="block counts (default: %(default)s)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--big", type=int, default=BIG, help="blocks of the ~10k-node model "
                    "(0: skip it)")
    ap.add_argument("--big-repeats", type=int, default=3,
                    help="CLI and floor processes of the ~10k-node model (default: %(default)s)")
    ap.add_argument("--no-write", action="store_true", help="do not touch RESULTS.md")
    args = ap.parse_args(argv)
    cmd = command_line("benchmarks/scaling.py", sys.argv[1:] if argv is None else argv)
    sizes = [int(s) for s in args.sizes.split(",")]

    from harness import analysis_steps
    from irviz.frontends.inputs import resolve_inputs
    from irviz.frontends.loader import load

    start = _now()
    facts = machine_facts()
    steps = analysis_steps()
    targets = {}
    for n in sizes:
        [target] = load(f"benchmarks/models.py:stacked({n})").targets
        targets[n] = (target, resolve_inputs(target, None))
    runs: dict[int, list[dict]] = {n: [] for n in sizes}
    with HostLoad() as meter:
        for r in range(1 + args.repeats):
            for n in (sizes if r % 2 == 0 else sizes[::-1]):
                gc.collect()
                runs[n].append(one_run(*targets[n], steps))
            print(f"round {r} done", flush=True)
    rows = []
    for n in sizes:
        measured = runs[n][1:] or runs[n]
        last = runs[n][-1]
        row = {"blocks": n, "ir_nodes": last["ir_nodes"], **svg_facts(last["svg"]),
               "render_notes": last["render_notes"],
               "stages": {s: summary([x["stages"][s] for x in measured],
                                     first=runs[n][0]["stages"][s]) for s in STAGES}}
        rows.append(row)
    result = {"facts": facts, "command": cmd, "rows": rows, "other_load_cpus": meter.value,
              "analysis_steps": [s.name for s in steps]}
    del targets
    gc.collect()

    if args.big:
        spec = f"benchmarks/models.py:stacked({args.big})"
        big: dict = {"blocks": args.big, "spec": spec}
        py = sys.executable
        here = Path(__file__).resolve().parent
        (OUT / "scaling").mkdir(parents=True, exist_ok=True)
        svg_path = OUT / "scaling" / f"stacked{args.big}.svg"
        svg_path.unlink(missing_ok=True)
        hwm = OUT / "scaling" / "hwm.txt"
        hwm.unlink(missing_ok=True)
        env = {**os.environ, "BENCH_HWM_FILE": str(hwm)}
        cli_runs, floor_runs, proc = [], [], None
        with HostLoad() as meter:
            for r in range(args.big_repeats):   # CLI and floor process, alternating
                for who in (("cli", "floor") if r % 2 == 0 else ("floor", "cli")):
                    if who == "cli":
                        hwm.unlink(missing_ok=True)
                        proc = run_process([py, str(here / "peak_rss.py"), "irviz", "render",
                                            spec, "--mode", "trace", "-o", str(svg_path)],
                                           TIMEOUT, env=env)
                        try:
                            peak = int(hwm.read_text())
                        except (OSError, ValueError):
                            peak = None
                        cli_runs.append((proc, peak))
                        if proc["rc"] != 0:
                            break
                    else:
                        fp = run_process([py, str(here / "harness.py"), "--child", "floor",
                                          "--spec", spec, "--mode", "trace"], TIMEOUT)
                        for line in fp["stdout"].splitlines():
                            if line.startswith("BENCH-RESULT "):
                                floor_runs.append({"wall": fp["wall"], **json.loads(line[13:])})
        ok = [(p, k) for p, k in cli_runs if p["rc"] == 0]
        big["cli"] = {"wall": summary([p["wall"] for p, _ in ok]),
                      "walls": [p["wall"] for p, _ in cli_runs],
                      "rc": proc["rc"], "timed_out": proc["timed_out"],
                      "stderr": scrub(proc["stderr"].strip())[-2000:],
                      "peak_kb": med(summary([k for _, k in ok if k is not None])),
                      "other_load_cpus": meter.value}
        if svg_path.exists():
            big["cli"].update(svg_facts(svg_path.read_bytes()))
        if floor_runs:
            big["floor"] = {"wall": summary([f["wall"] for f in floor_runs]),
                            "hwm_kb": med(summary([f["hwm_kb"] for f in floor_runs])),
                            "run_s": summary([f["run_s"] for f in floor_runs if "run_s" in f])}
        print(f"10k model CLI: {fmt_stat(big['cli']['wall'])}", flush=True)
        [target] = load(spec).targets
        inputs = resolve_inputs(target, None)
        runs = [one_run(target, inputs, steps) for _ in range(3)]   # one run may hold a full GC
        res = runs[-1]
        res["stages"] = {s: med(summary([r["stages"][s] for r in runs])) for s in res["stages"]}
        big["inproc"] = {"ir_nodes": res["ir_nodes"], "stages": res["stages"],
                         "render_notes": res["render_notes"], **svg_facts(res["svg"])}
        result["big"] = big

    result["elapsed_s"] = _now() - start
    result["load_end"] = [round(v, 2) for v in os.getloadavg()]
    write_results("scaling", result, render_md(result), write=not args.no_write)
    return 0


def render_md(res: dict) -> str:
    rows = res["rows"]
    L = [f"Command: `{res['command']}` (took {fmt_s(res['elapsed_s'])}).", "",
         facts_md(res["facts"], res.get("load_end")),
         f"- CPU time other processes used meanwhile: {res['other_load_cpus']} CPUs.", "",
         "In-process medians (± half the min–max range); µs/node = stage time ÷ IR nodes; "
         "layout = `dot` on the default render (drawn-node budget and all).", "",
         "| blocks | IR nodes | drawn nodes | capture | build | analyses | DOT | layout+SVG "
         "| build µs/node | analyses µs/node | DOT µs/node | layout µs/drawn node |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        st = row["stages"]
        per = [f"{med(st[s]) / row['ir_nodes'] * 1e6:.0f}" for s in ("build", "analyses", "dot")]
        lay = f"{med(st['layout']) / row['nodes'] * 1e6:.0f}" if row.get("nodes") else "–"
        L.append(" | ".join([f"| {row['blocks']}", str(row["ir_nodes"]), str(row.get("nodes")),
                             *(fmt_stat(st[s]) for s in STAGES), *per, lay]) + " |")
    big = res.get("big")
    fit_rows = [r for r in rows if r["blocks"] >= 100]
    L += ["", "Growth (least-squares slope of log time over log IR nodes, sizes ≥ 100 blocks"
          + (" plus the in-process 10k run" if big and big.get("inproc") else "")
          + "; 1.0 = linear, 2.0 = quadratic; layout is left out: the drawn-node budget "
          "changes what is drawn, so its input does not grow with the model):", ""]
    fits = []
    for s in STAGES[:-1]:
        pts = [(r["ir_nodes"], med(r["stages"][s])) for r in fit_rows]
        if big and big.get("inproc") and s in big["inproc"]["stages"]:
            pts.append((big["inproc"]["ir_nodes"], big["inproc"]["stages"][s]))
        k = slope(pts)
        fits.append(f"{s} {k:.2f}" if k is not None else f"{s} –")
    L += ["- " + ", ".join(fits), ""]
    res["slopes"] = fits
    if big:
        cli, ip, fl = big.get("cli", {}), big.get("inproc", {}), big.get("floor", {})
        L += [f"### The ~10k-IR-node model, default render ({big['blocks']} blocks)", "",
              f"`irviz render {big['spec']} --mode trace` as a CLI process:", "",
              "| what | wall | peak RSS | IR nodes | drawn nodes | SVG size | SVG pt (w × h) |",
              "|---|---|---|---|---|---|---|"]
        pt = cli.get("svg_pt")
        status = "" if cli.get("rc") == 0 else (" (timed out)" if cli.get("timed_out")
                                               else f" (exit {cli.get('rc')})")
        L.append(f"| irviz CLI{status} | {fmt_stat(cli.get('wall'))} | "
                 f"{_mb(cli.get('peak_kb'))} | {ip.get('ir_nodes', '–')} | "
                 f"{cli.get('nodes', '–')} | {fmt_bytes(cli.get('svg_bytes'))} | "
                 + (f"{pt[0]:.0f} × {pt[1]:.0f}" if pt else "–") + " |")
        if fl:
            L.append(f"| floor process (import torch, build, trace; the trace alone "
                     f"{fmt_stat(fl.get('run_s'))}) | {fmt_stat(fl.get('wall'))} | "
                     f"{_mb(fl.get('hwm_kb'))} | | | | |")
        st = ip.get("stages", {})
        L += ["", "In-process, median of 3 runs: " + ", ".join(f"{s} {fmt_s(st.get(s))}" for s in STAGES)
              + f" = {fmt_s(sum(st.values()))}; drawn nodes {ip.get('nodes')}.", ""]
        notes = ip.get("render_notes") or []
        if notes:
            L += ["irviz said: " + " / ".join(f"“{n}”" for n in notes), ""]
        if cli.get("rc") != 0 and cli.get("stderr"):
            L += ["CLI stderr (end):", "", "```", cli["stderr"][-800:], "```", ""]
        wall = med(cli.get("wall")) if cli.get("rc") == 0 else None
        walls = ", ".join(fmt_s(w) for w in cli.get("walls", []))
        L += [f"CLI runs: {walls}; CPU time other processes used meanwhile: "
              f"{cli.get('other_load_cpus')} CPUs.", "",
              "| target | figure | met? |", "|---|---|---|",
              f"| 10k-IR-node default render < 10 s | CLI median {fmt_s(wall)} "
              f"(in-process {fmt_s(sum(st.values()) if st else None)}; floor process "
              f"{fmt_s(med(fl.get('wall')))}) | "
              + ("**yes**" if wall is not None and wall < 10 else "**no**") + " |",
              f"| SVG < 5 MB (10k model) | {fmt_bytes(cli.get('svg_bytes'))} | "
              + ("**yes**" if cli.get("svg_bytes") and cli["svg_bytes"] < 5 * 1024 * 1024
                 else "**no**") + " |",
              f"| peak memory ≤ 1.5× tracing alone (10k model) | "
              f"{fmt_ratio(ratio(cli.get('peak_kb'), fl.get('hwm_kb')))} "
              f"({_mb(cli.get('peak_kb'))} vs {_mb(fl.get('hwm_kb'))}) | "
              + ("**yes**" if (ratio(cli.get('peak_kb'), fl.get('hwm_kb')) or 9) <= 1.5
                 else "**no**") + " |", ""]
    return "\n".join(L)


def _mb(kb) -> str:
    return "–" if kb is None else f"{kb / 1024:.0f} MB"


if __name__ == "__main__":
    sys.exit(main())
