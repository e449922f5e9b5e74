"""The predicted speed-up of a model's forks for a thread setting: static and calibrated.

Why it exists: the report's headline number. Both predictions play the model's task
DAG out on the machine with :mod:`irviz.analyses.schedule` (the inter-op pool, the
caller, waits that suspend, ops sharing the cores); they differ in where the ops'
times and cores come from:

* **static** (no run): each op's cost from :mod:`irviz.analyses.cost`, its intra-op
  threads from its size (:mod:`irviz.analyses.intraop`: ``ceil(elements / 32768)``,
  at most the setting's intra-op threads), which decides how many cores it keeps busy
  and how much faster it runs;
* **calibrated** (``--calibrate`` / ``--measure``): the serial baseline timed in each
  setting (:mod:`irviz.measure`) gives its wall time and CPU time; the static op times
  are scaled so the serial program takes the measured wall time, and the ops that can
  use several threads get the cores that make the serial run's CPU per wall second
  come out as measured; the forks run on the cores the pair probe found, and a start on
  a sleeping pool thread costs what the hand-off probe (:mod:`irviz.measure.handoff_probe`)
  says (:func:`fit_wake_us`), and the ops on pool threads run as fast as two copies of
  the serial baseline forked at once ran there (:func:`pool_speed`).

Speed-up = the serial program's time (every op on the caller, alone) / the simulated
forked time, in the same setting.
"""
from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from ..ir.model import FORK_KINDS, WAIT_KINDS
from .cost import cost_of
from .fork_wait import block_runs, forks_waited, region, runs_on_thread
from .intraop import op_speed, usable_threads
from .schedule import MAIN, Fork, Program, Run, Wait, serial_us, simulate

#: how long a sleeping pool thread takes to start a queued task or continuation
#: (measured on the 2-vCPU VMs: a trivial fork+wait round trip took 100-210 us, a
#: wait that finds its task done 5-20 us)
WAKE_US = 100.0
#: a fitted pool speed this close to 1 is taken as 1: the serial and pool-pair medians of
#: one child's rounds differ by a few percent when nothing separates the threads
POOL_SPEED_NOISE = 0.05

__all__ = ["WAKE_US", "POOL_SPEED_NOISE", "pool_speed", "pair_cpus", "fit_wake_us", "OpTimes",
           "static_times", "calibrated_times", "available_cpus", "build_program", "predict",
           "Prediction", "Calibration", "calibrated", "calibrate_measured"]


@dataclass(frozen=True)
class OpTimes:
    """Each node's time alone (us, one execution) and the cores it keeps busy."""

    us: dict[str, float]
    cores: dict[str, float]


@dataclass(frozen=True)
class Prediction:
    intra_op: int
    inter_op: int
    cpus: float
    serial_us: float
    forked_us: float
    speedup: float
    basis: str          # "static" | "calibrated"


def static_times(G: nx.DiGraph, intra: int) -> OpTimes:
    """Static op times at ``intra`` intra-op threads (cost / speed-up of its threads)."""
    us, cores = {}, {}
    for node, data in G.nodes(data=True):
        cost = cost_of(data)
        if cost <= 0:
            continue
        threads = usable_threads(G, node, intra)
        us[node] = cost / op_speed(threads)
        cores[node] = float(threads)
    return OpTimes(us, cores)


def calibrated_times(G: nx.DiGraph, intra: int, serial_wall_s: float,
                     serial_cpu_s: float | None, cpus: float | None = None,
                     other_load: float | None = None) -> OpTimes:
    """Static times scaled to the measured serial wall time, and the cores of the ops that
    can use several threads set so the serial run's CPU/wall comes out as measured.

    ``other_load`` (CPUs other processes kept busy while the serial run was timed) leaves
    ``cpus - other_load`` cores to the model: the scaling is done on those (see
    :func:`available_cpus`), so a serial run slowed by other jobs is not taken for slow ops.
    """
    base = static_times(G, intra)
    program = build_program(G, base)
    cores = dict(base.cores)
    u = serial_cpu_s / serial_wall_s if serial_cpu_s and serial_wall_s > 0 else None
    if u is not None and u >= 1.0:
        u = min(u, float(max(intra, 1)))
        # time-weighted: (single-thread time + x * multi-thread time) / total = u
        weights = _executed_time(program)
        single = sum(t for n, t in weights.items() if base.cores.get(n, 1.0) <= 1.0)
        multi = sum(t for n, t in weights.items() if base.cores.get(n, 1.0) > 1.0)
        whole = single + multi
        if whole > 0 and multi > 0.05 * whole:
            x = min(max((u * whole - single) / multi, 1.0), float(intra))
            cores = {n: (x if c > 1.0 else 1.0) for n, c in base.cores.items()}
        elif u > 1.05:   # the sizes say one thread, the machine says more: believe it
            cores = {n: u for n in base.cores}
    shaped = OpTimes(base.us, cores)
    have = available_cpus(cpus, other_load) if cpus else None
    program = build_program(G, shaped)
    total = (simulate(_serial(program), 1, have).makespan_us if have
             else serial_us(program))
    scale = serial_wall_s * 1e6 / total if total > 0 else 1.0
    return OpTimes({n: v * scale for n, v in base.us.items()}, cores)


def pool_speed(serial_s: float, pool_pair_s: float | None, serial_cpu_s: float | None,
               inter: int, cpus: float, wake_us: float | None = None) -> float:
    """How much faster the ops run on busy pool threads than on the lone caller: the speed
    at which the simulated pool pair (two copies of the serial baseline forked at once,
    :func:`irviz.measure.child.make_pool_pair`) takes as long as measured, on ``cpus``
    cores with ``inter`` pool threads, each start costing ``wake_us``; at most 3.

    Never below 1: a pool pair slower than the simulation is two copies slowing each
    other (shared cores, caches), which the pair probe's cores already charge
    (:func:`pair_cpus`); counted here too, the calibration held fewer single runs of the
    parallelism benchmark (60 of 72 instead of 65, eighth run). 1 as well without a
    figure or within :data:`POOL_SPEED_NOISE` of it."""
    if not pool_pair_s or pool_pair_s <= 0 or serial_s <= 0 or inter < 1 or cpus <= 0:
        return 1.0
    u = max(1.0, serial_cpu_s / serial_s) if serial_cpu_s else 1.0
    us = serial_s * 1e6
    program: Program = {"a": [Run(us, u)], "b": [Run(us, u)],
                        MAIN: [Fork("a"), Fork("b"), Wait("a"), Wait("b")]}
    target = pool_pair_s * 1e6

    def span(speed: float) -> float:
        return simulate(program, inter, cpus, wake_us=wake_us or 0.0,
                        pool_speed=speed).makespan_us

    if span(1.0 + POOL_SPEED_NOISE) <= target:
        return 1.0
    return _solve_decreasing(span, target, 1.0, 3.0)


def _solve_decreasing(f, target: float, low: float, high: float) -> float:
    """The x in [low, high] where the decreasing ``f`` reaches ``target`` (bisection; an
    end of the range when ``target`` lies beyond it)."""
    if f(high) >= target:
        return high
    if f(low) <= target:
        return low
    for _ in range(30):
        mid = (low + high) / 2
        low, high = (low, mid) if f(mid) <= target else (mid, high)
    return round((low + high) / 2, 4)


def pair_cpus(cpus: float, serial_wall_s: float, serial_cpu_s: float | None,
              pair_s: float | None, speed: float = 1.0) -> float | None:
    """The cores two concurrent copies of the serial model really got: each alone keeps
    u = CPU/wall cores busy and takes ``serial_wall_s`` on the caller (``/ speed`` on a
    pool thread); both at once (one on the caller, one on the pool) took ``pair_s``: the
    cores on which the simulated pair takes as long (at most ``cpus``, at least 0.5)."""
    if not pair_s or pair_s <= 0 or serial_wall_s <= 0:
        return None
    u = max(1.0, serial_cpu_s / serial_wall_s) if serial_cpu_s else 1.0
    us = serial_wall_s * 1e6
    program: Program = {"copy": [Run(us, u)], MAIN: [Fork("copy"), Run(us, u), Wait("copy")]}

    def span(cores: float) -> float:
        return simulate(program, 1, cores, pool_speed=speed).makespan_us

    return _solve_decreasing(span, pair_s * 1e6, 0.5, float(max(cpus, 0.5)))


def _handoff_program(pairs: int, task_us: float) -> Program:
    """The hand-off probe (:mod:`irviz.measure.handoff_probe`) as a program: ``pairs`` times
    fork a task, run as long on the caller, wait."""
    main: list = []
    program: Program = {}
    for i in range(pairs):
        task = f"probe {i}"
        program[task] = [Run(task_us)]
        main += [Fork(task), Run(task_us), Wait(task)]
    program[MAIN] = main
    return program


def fit_wake_us(probe: dict | None, inter: int, cpus: float) -> float | None:
    """The per-start cost (:func:`~irviz.analyses.schedule.simulate`'s ``wake_us``) that
    makes the simulated hand-off probe take as long as it was measured to, on ``cpus``
    cores (the pair probe's: what two busy copies slow each other by is not counted
    twice). None without a probe; 0 when the probe ran at least as fast as simulated."""
    if not probe or inter < 1 or cpus <= 0:
        return None
    pairs, serial_s, forked_s = probe.get("pairs"), probe.get("serial_s"), probe.get("forked_s")
    if not pairs or not serial_s or not forked_s or serial_s <= 0 or forked_s <= 0:
        return None
    task_us = serial_s * 1e6 / (2 * pairs)
    program = _handoff_program(int(pairs), task_us)
    target = forked_s * 1e6

    def span(wake: float) -> float:
        return simulate(program, inter, cpus, wake_us=wake, warm_us=0.0).makespan_us

    if span(0.0) >= target:
        return 0.0
    low, high = 0.0, task_us
    if span(high) < target:   # slower than any wake-up explains: charge the most
        return round(high, 1)
    for _ in range(40):
        mid = (low + high) / 2
        low, high = (mid, high) if span(mid) < target else (low, mid)
    return round((low + high) / 2, 1)


def _serial(program: Program) -> Program:
    """Every stretch on the caller, one after another: the serial baseline."""
    return {MAIN: [s for steps in program.values() for s in steps if isinstance(s, Run)]}


def available_cpus(cpus: float, other_load: float | None) -> float:
    """The cores left to the model while other processes kept ``other_load`` busy
    (at least half a core: the measuring process always got some)."""
    if not other_load or other_load <= 0:
        return float(cpus)
    return min(float(cpus), max(0.5, cpus - other_load))


def _executed_time(program: Program) -> dict[str, float]:
    """Node -> time it takes in the whole program (its executions counted)."""
    out: dict[str, float] = {}
    for steps in program.values():
        for step in steps:
            if isinstance(step, Run):
                for node, t in getattr(step, "_nodes", ()):
                    out[node] = out.get(node, 0.0) + t
    return out


def build_program(G: nx.DiGraph, times: OpTimes) -> Program:
    """The model as a :class:`~irviz.analyses.schedule.Program`: one step list per task
    instance (a loop of forks starts one instance per trip), ops merged into Runs."""
    levels: dict[str | None, list[str]] = {}
    for node in G:
        levels.setdefault(G.nodes[node]["subgraph_of"], []).append(node)
    program: Program = {}
    instances: dict[str, list[str]] = {}        # fork node -> every instance id
    mult_cache: dict[tuple, int] = {}
    runs = block_runs(G)

    def mult(node: str) -> int:
        key = (G.nodes[node]["block"], G.nodes[node]["subgraph_of"])
        if key not in mult_cache:
            mult_cache[key] = runs_on_thread(G, node, runs)
        return mult_cache[key]

    def build(level: str | None, task_id: str) -> list:
        steps: list = []
        pending: list[tuple[str, float]] = []
        pending_cores = [None]
        local: dict[str, list[str]] = {}
        waited: set[str] = set()
        lazy: dict[str, list] = {}

        def flush() -> None:
            if pending:
                run = Run(sum(t for _, t in pending), pending_cores[0])
                object.__setattr__(run, "_nodes", tuple(pending))
                steps.append(run)
                pending.clear()

        def add(node: str) -> None:
            us = times.us.get(node, 0.0) * mult(node)
            if us <= 0:
                return
            cores = times.cores.get(node, 1.0)
            if pending and pending_cores[0] != cores:
                flush()
            pending_cores[0] = cores
            pending.append((node, us))

        for node in levels.get(level, []):
            data = G.nodes[node]
            kind = data["kind"]
            add(node)
            if kind in FORK_KINDS:
                found = region(data)
                count = 1 if found is None or found.same_iteration else (
                    runs(data["block"])[1] or 1)
                for j in range(count):
                    tid = f"{task_id}/{node}#{j}"
                    body = build(node, tid)
                    instances.setdefault(node, []).append(tid)
                    if kind == "prim::awaitable":      # lazy: runs when awaited
                        lazy.setdefault(node, []).extend(body)
                        continue
                    flush()
                    program[tid] = body
                    steps.append(Fork(tid))
                    local.setdefault(node, []).append(tid)
            elif kind in WAIT_KINDS:
                for fork in forks_waited(data):
                    if fork in lazy:
                        flush()
                        steps.extend(lazy.pop(fork))
                        continue
                    for tid in local.get(fork) or instances.get(fork, []):
                        if tid not in waited and tid in program:
                            flush()
                            steps.append(Wait(tid))
                            waited.add(tid)
        flush()
        return steps

    program[MAIN] = build(None, "")
    return program


def predict(G: nx.DiGraph, intra: int, inter: int, cpus: float,
            times: OpTimes | None = None, basis: str = "static",
            wake_us: float | None = None, warm_us: float | None = None,
            speed: float = 1.0) -> Prediction:
    """Serial vs simulated forked time of ``G`` at (intra, inter) on ``cpus`` cores (the
    serial program alone on the caller, on the same cores); ``wake_us``/``warm_us`` and
    ``speed`` (``pool_speed``) as :func:`~irviz.analyses.schedule.simulate` takes them."""
    times = times or static_times(G, intra)
    program = build_program(G, times)
    serial = simulate(_serial(program), 1, cpus).makespan_us
    forked = simulate(program, max(inter, 1), cpus,
                      wake_us=WAKE_US if wake_us is None else wake_us,
                      warm_us=warm_us, pool_speed=speed).makespan_us
    return Prediction(intra, inter, cpus, round(serial, 3), round(forked, 3),
                      round(serial / forked, 3) if forked > 0 else 1.0, basis)


@dataclass(frozen=True)
class Calibration:
    """What one setting's serial run measured (:mod:`irviz.measure`), for
    :func:`calibrated`: wall and CPU seconds per call, the CPUs other jobs took, the pair
    probe's wall seconds, the trivial wake-up probe (us), the hand-off probe and the
    wall seconds of two copies of the serial baseline forked onto the pool at once."""

    serial_s: float
    serial_cpu_s: float | None = None
    other_load: float | None = None
    pair_s: float | None = None
    wake_us: float | None = None
    handoff: dict | None = None
    pool_pair_s: float | None = None


def calibrated(G: nx.DiGraph, intra: int, inter: int, cpus: float,
               cal: Calibration) -> tuple[Prediction, float | None, float]:
    """The calibrated prediction, the hand-off cost it charged (None: no hand-off
    probe, the wake-up probe's was) and the pool threads' speed it used. Op times are
    scaled to the serial run; the forks get the cores the pair probe found (else what
    other jobs left); every start on a sleeping pool thread pays the cost fitted to the
    hand-off probe on those cores (without one, every start pays the trivial wake-up
    probe's); the ops on pool threads run at the speed the pool pair measured
    (:func:`pool_speed`)."""
    times = calibrated_times(G, intra, cal.serial_s, cal.serial_cpu_s, cpus=cpus,
                             other_load=cal.other_load)
    speed = pool_speed(cal.serial_s, cal.pool_pair_s, cal.serial_cpu_s, inter,
                       available_cpus(cpus, cal.other_load), cal.wake_us)
    have = pair_cpus(cpus, cal.serial_s, cal.serial_cpu_s, cal.pair_s, speed)
    cores = have if have else available_cpus(cpus, cal.other_load)
    fitted = fit_wake_us(cal.handoff, inter, cores)
    if fitted is None:   # the trivial wake-up probe, charged at every start
        found = predict(G, intra, inter, cores, times=times, basis="calibrated",
                        wake_us=cal.wake_us, speed=speed)
    else:                # as the probe was fitted: a thread that never slept starts at once
        found = predict(G, intra, inter, cores, times=times, basis="calibrated",
                        wake_us=fitted, warm_us=0.0, speed=speed)
    return found, fitted, speed


def calibrate_measured(G: nx.DiGraph, measured) -> None:
    """Write ``predicted_speedup`` (calibrated) and ``static_predicted_speedup`` on every
    row of a :class:`irviz.measure.result.MeasureResult` that timed its serial baseline
    (:func:`calibrated`), the schedule simulated for the row's thread setting."""
    for row in measured.settings:
        cpus = row.cpu_count or measured.cpu_count or 1
        intra, inter = row.intra_op, row.inter_op
        if not intra or not inter:
            continue
        try:
            row.static_predicted_speedup = predict(G, intra, inter, cpus).speedup
            if row.serial is None or row.serial.median_s <= 0:
                continue
            cal = Calibration(row.serial.median_s, row.serial.cpu_median_s, row.other_load,
                              row.pair_s, row.wake_us, row.handoff, row.pool_pair_s)
            found, row.handoff_wake_us, row.pool_speed = calibrated(G, intra, inter, cpus, cal)
        except (ValueError, KeyError, RecursionError):
            continue
        row.predicted_speedup = found.speedup
        row.predicted_forked_s = round(row.serial.median_s / found.speedup, 9) \
            if found.speedup > 0 else None
